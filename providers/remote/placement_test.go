package remote

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

// A machine that accepts TCP but never greets, listed first, does not
// hold up the first Start of a process behind its dial (up to 10 s): the
// trial starts on the healthy machine while the silent machine's dial
// still waits for a greeting, its connection open and unanswered.
func TestSilentMachineDoesNotHoldUpPlacement(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	healthy := l.Servers[1]
	conns := make(chan net.Conn, 16)
	host, port := hostile(t, func(c net.Conn) { conns <- c })
	t.Cleanup(func() {
		for {
			select {
			case c := <-conns:
				c.Close()
			default:
				return
			}
		}
	})
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(sshtest.KnownHostsLine(host, port, l.Servers[0].HostKey)+
		sshtest.KnownHostsLine(healthy.Host, healthy.Port, healthy.HostKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.KnownHosts = kh
	cfg.Machines[0].Host, cfg.Machines[0].Port = host, port
	r := newRemote(t, cfg)

	start := time.Now()
	h, err := r.Start(ctx(t), trialReq("first", "t1", "true", t.TempDir()))
	t.Logf("start: %s", time.Since(start).Round(time.Millisecond))
	if err != nil || h["machine"] != healthy.Addr() {
		t.Fatalf("start: %v %v, want it on %s", h, err, healthy.Addr())
	}
	// The silent machine was dialled (its connection is accepted, if not
	// yet handed over) and the dial still waits: the client has sent its
	// version and neither closed the connection nor given up.
	var c net.Conn
	select {
	case c = <-conns:
		conns <- c // closed by the cleanup
	case <-time.After(eventWait):
		t.Fatal("the silent machine was never dialled")
	}
	buf := make([]byte, 256)
	for {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := c.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			break // open, nothing more sent: the dial still waits
		}
		if err != nil {
			t.Fatalf("the silent machine's connection was closed (%v) before Start returned: Start waited for its dial to give up", err)
		}
	}
	waitPhase(t, r, "first", "t1", providers.PhaseSucceeded)
}
