package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

// silentThenLive is a machine on 127.0.0.1 that accepts connections but
// sends nothing (a firewall that holds them, a hung sshd) until live is
// called; from then on it forwards to srv. dials counts the connections
// it accepted.
type silentThenLive struct {
	host  string
	port  int
	dials atomic.Int32
	live  atomic.Bool
}

func newSilentThenLive(t *testing.T, srv *sshtest.Server) *silentThenLive {
	s := &silentThenLive{}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	s.host, s.port = hostile(t, func(c net.Conn) {
		s.dials.Add(1)
		if !s.live.Load() {
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			return
		}
		defer c.Close()
		up, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			return
		}
		defer up.Close()
		go io.Copy(up, c)
		io.Copy(c, up)
	})
	return s
}

// A machine that accepts TCP but never greets is dialled once, not on
// every pass of a long-running session (apply -wait, watch, the
// controller): while it is backed off its trials' reads and the lists
// say why at once, new trials go to the other machine, a stop there
// waits for it, and the warnings are not given again on every pass. When
// the back-off ends it is dialled once more; when it answers, the user is
// told it is back and its trials are read again.
func TestSilentMachineBackedOff(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	healthy := l.Servers[0]
	silent := newSilentThenLive(t, l.Servers[1])
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(sshtest.KnownHostsLine(healthy.Host, healthy.Port, healthy.HostKey)+
		sshtest.KnownHostsLine(silent.host, silent.port, l.Servers[1].HostKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.KnownHosts = kh
	cfg.Machines[1].Host, cfg.Machines[1].Port = silent.host, silent.port
	silentKey := net.JoinHostPort(silent.host, strconv.Itoa(silent.port))
	cfg.Redial, cfg.RedialMax = time.Minute, 4*time.Minute
	r := newRemote(t, cfg)
	var clock atomic.Int64 // the back-off's clock: seconds added to now
	r.now = func() time.Time { return time.Now().Add(time.Duration(clock.Load()) * time.Second) }

	code := t.TempDir()
	// A trial on the healthy machine, and one the state says runs on the
	// silent one.
	h, err := r.Start(ctx(t), trialReq("bo", "t1", "sleep 300", code))
	if err != nil || h["machine"] != healthy.Addr() {
		t.Fatalf("start t1: %v %v, want it on %s", h, err, healthy.Addr())
	}
	defer r.Stop(context.Background(), providers.StopRequest{Experiment: "bo", TrialID: "t1", Grace: time.Second})
	onSilent := providers.Handle{"machine": silentKey}

	// pass is what a refresh asks of the provider: the list, then a read
	// of each trial. The silent dial is cut at 5 s (10 s without a
	// deadline): only the first pass dials it, and the healthy machine's
	// listing under the same deadline keeps room on a loaded machine.
	pass := func(i int) (readErr string, warnings []string) {
		t.Helper()
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		if _, err := r.ListUnknown(c, "bo", func(string) bool { return false }); err != nil {
			t.Fatalf("pass %d: list: %v", i, err)
		}
		if _, err := r.Read(ctx(t), providers.ReadRequest{Experiment: "bo", TrialID: "t1", Handle: h}); err != nil {
			t.Fatalf("pass %d: read of the trial on the healthy machine: %v", i, err)
		}
		_, err := r.Read(c, providers.ReadRequest{Experiment: "bo", TrialID: "t2", Handle: onSilent})
		if err == nil {
			t.Fatalf("pass %d: read of the trial on the silent machine: no error", i)
		}
		t.Logf("pass %d: %s, %d dials of the silent machine", i, time.Since(start).Round(time.Millisecond), silent.dials.Load())
		return err.Error(), r.Warnings()
	}
	first, w := pass(1)
	if !strings.Contains(first, "sent no SSH greeting") || !strings.Contains(lines(w), "were not listed") {
		t.Fatalf("first pass: read %q, warnings %q: want the silent machine named and why", first, w)
	}
	for i := 2; i <= 5; i++ {
		// The run loop's -interval (1 s by default) between passes.
		time.Sleep(1100 * time.Millisecond)
		msg, w := pass(i)
		if msg != first {
			t.Errorf("pass %d: read says %q, the first said %q: want the same words (said once)", i, msg, first)
		}
		if len(w) != 0 {
			t.Errorf("pass %d: warnings again: %q", i, w)
		}
	}
	if n := silent.dials.Load(); n != 1 {
		t.Fatalf("the silent machine was dialled %d times in 5 passes, want once (backed off)", n)
	}
	// New trials go to the healthy machine; a stop there waits for it.
	h3, err := r.Start(ctx(t), trialReq("bo", "t3", "true", code))
	if err != nil || h3["machine"] != healthy.Addr() {
		t.Errorf("start t3: %v %v, want it on %s", h3, err, healthy.Addr())
	}
	err = r.Stop(ctx(t), providers.StopRequest{Experiment: "bo", TrialID: "t2", Handle: onSilent, Grace: time.Second})
	if !errors.Is(err, providers.ErrUnreachable) || providers.IsPermanent(err) || !strings.Contains(err.Error(), silentKey) {
		t.Errorf("stop of a trial on the backed-off machine: %v, want a wait for it (ErrUnreachable) naming it", err)
	}
	if n := silent.dials.Load(); n != 1 {
		t.Fatalf("dialled %d times after a start and a stop, want once (backed off)", n)
	}

	// The back-off ends and the machine answers again: one dial, and
	// its trial reads again (absent: nothing runs there).
	silent.live.Store(true)
	clock.Add(61)
	deadline := time.Now().Add(eventWait)
	var back []string
	for {
		_, err := r.Read(ctx(t), providers.ReadRequest{Experiment: "bo", TrialID: "t2", Handle: onSilent})
		back = append(back, r.Warnings()...)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the machine back: read still fails: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := silent.dials.Load(); n != 2 {
		t.Errorf("dialled %d times in all, want 2 (once more when the back-off ended)", n)
	}
	if !strings.Contains(lines(back), silentKey+" answers again") {
		t.Errorf("warnings %q do not say that %s is back", back, silentKey)
	}
	if err := r.Stop(ctx(t), providers.StopRequest{Experiment: "bo", TrialID: "t2", Handle: onSilent, Grace: time.Second}); err != nil {
		t.Errorf("stop once the machine is back: %v", err)
	}
}
