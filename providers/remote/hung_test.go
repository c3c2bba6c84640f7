package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

// hungLab is a lab of one machine whose SFTP subsystem is a real
// sftp-server started through a wrapper that records its pid, and a
// trial that ran there; hang stops (SIGSTOP) the sftp-servers started so
// far, as an sftp-server stuck on a stalled NFS home would be, while sshd
// goes on answering (keepalives included). After hangNew(""), each new
// sftp-server hangs after the SFTP handshake (sftpHangingAfterInit);
// after hangNew(match), at the first request that names a path holding
// match, having answered the ones before.
// tweak, if any, changes the platform's configuration first.
func hungLab(t *testing.T, tweak ...func(*Config)) (r *Remote, key string, hang func(), hangNew func(match string)) {
	r, srv, hang, hangNew := hungLabServer(t, tweak...)
	return r, srv.Addr(), hang, hangNew
}

// hungLabServer is hungLab, with its machine's sshd (to stop and start).
func hungLabServer(t *testing.T, tweak ...func(*Config)) (r *Remote, srv *sshtest.Server, hang func(), hangNew func(match string)) {
	testLab(t) // sshd is there
	const server = "/usr/lib/openssh/sftp-server"
	missing := ""
	if _, err := os.Stat(server); err != nil {
		missing = server + " is missing (Debian's openssh-sftp-server)"
	}
	testdeps.Require(t, "sftp-server", missing)
	dir := t.TempDir()
	pids := filepath.Join(dir, "sftp.pids")
	wrapper := filepath.Join(dir, "sftp-wrapper")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	on := filepath.Join(dir, "hang-new")
	script := "#!/bin/sh\necho $$ >> " + pids + "\n" +
		"if [ -f " + on + " ]; then " + hangEnv + "=\"x$(cat " + on + ")\" exec " + self + "; fi\n" +
		"exec " + server + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := sshtest.NewLabConfig(filepath.Join(dir, "lab"), 1, "Subsystem sftp "+wrapper)
	if err != nil {
		t.Fatal(err)
	}
	signalAll := func(sig syscall.Signal) {
		b, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, sig)
			}
		}
	}
	t.Cleanup(l.Close)
	cfg := labConfig(t, l)
	for _, f := range tweak {
		f(&cfg)
	}
	r = newRemote(t, cfg)
	// Before r.Close, which waits for the SFTP sessions to end.
	t.Cleanup(func() { signalAll(syscall.SIGKILL) })
	if _, err := r.Start(ctx(t), trialReq("hang", "t1", "echo hello", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
	hangNew = func(match string) {
		if err := os.WriteFile(on, []byte(match), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return r, l.Servers[0], func() { signalAll(syscall.SIGSTOP) }, hangNew
}

// returns runs f and gives what it returned, failing the test when it
// is still blocked after a minute (far past the deadlines f is given).
func returns(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: still blocked after 60 s", what)
		return nil
	}
}

func wantHung(t *testing.T, what string, err error, key string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "SFTP") {
		t.Fatalf("%s: %v, want an error naming %s and SFTP", what, err, key)
	}
	t.Logf("%s: %v", what, err)
}

// A machine whose sftp-server hangs after the login does not hang a
// refresh or logs: each call returns with its context, saying which
// machine and what hung, and the connection is dropped, so that the next
// call dials again (and gets a fresh sftp-server here).
func TestHungSFTPServerAfterLogin(t *testing.T) {
	r, key, hang, _ := hungLab(t)
	hang()
	err := returns(t, "Read", func() error {
		c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := r.Read(c, providers.ReadRequest{Experiment: "hang", TrialID: "t1"})
		return err
	})
	wantHung(t, "Read", err, key)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Read past the caller's deadline: %v does not unwrap to context.DeadlineExceeded", err)
	}
	// Dropped: the next reads dial again.
	waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
	if got := logs(t, r, "hang", "t1"); !strings.Contains(got, "hello") {
		t.Fatalf("logs after the re-dial: %q", got)
	}
	hang()
	err = returns(t, "Logs", func() error {
		c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return r.Logs(c, providers.LogsRequest{Experiment: "hang", TrialID: "t1", Out: &strings.Builder{}})
	})
	wantHung(t, "Logs", err, key)
}

// A caller without a deadline (the controller's loop, watch) is bounded
// by sftpTimeout per operation.
func TestHungSFTPServerNoDeadline(t *testing.T) {
	r, key, hang, _ := hungLab(t)
	defer func(d time.Duration) { sftpTimeout = d }(sftpTimeout)
	sftpTimeout = 3 * time.Second
	hang()
	err := returns(t, "Read", func() error {
		_, err := r.Read(context.Background(), providers.ReadRequest{Experiment: "hang", TrialID: "t1"})
		return err
	})
	wantHung(t, "Read", err, key)
	// The machine hung; no deadline of the caller's passed: a caller
	// must be able to tell the two apart.
	if errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errNoAnswer) {
		t.Errorf("Read bounded by sftpTimeout: %v unwraps to context.DeadlineExceeded, or not to errNoAnswer", err)
	}
	waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
}

// hangEnv makes the test binary an sftp subsystem (TestMain): the real
// sftp-server behind a relay that passes the SFTP handshake (INIT) and
// stops, for ever, at the first request, as an sftp-server whose home is
// on a stalled network file system would. Every connection gets a fresh
// one: the login and the SFTP handshake of a dial work, its next
// operation hangs. Its value is "x" and what the first request to hang
// names (nothing: the first request hangs).
const hangEnv = "TRIALFORM_TEST_SFTP_HANG"

func sftpHangingAfterInit() int {
	match := []byte(strings.TrimPrefix(os.Getenv(hangEnv), "x"))
	srv := exec.Command("/usr/lib/openssh/sftp-server")
	srv.Stdout, srv.Stderr = os.Stdout, os.Stderr
	in, err := srv.StdinPipe()
	if err != nil {
		return 1
	}
	if err := srv.Start(); err != nil {
		return 1
	}
	// SFTP packets: a uint32 length, then the packet.
	r := bufio.NewReader(os.Stdin)
	for {
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			break
		}
		pkt := make([]byte, binary.BigEndian.Uint32(n[:]))
		if _, err := io.ReadFull(r, pkt); err != nil {
			break
		}
		if len(pkt) > 0 && pkt[0] != 1 && (len(match) == 0 || bytes.Contains(pkt, match)) { // not SSH_FXP_INIT
			select {} // hung (killed by the test's cleanup)
		}
		if _, err := in.Write(append(n[:], pkt...)); err != nil {
			break
		}
	}
	in.Close()
	_ = srv.Wait()
	return 0
}

// A machine whose re-dial works but whose next operation hangs again
// (each new connection's sftp-server hangs after the SFTP handshake) is
// not "back" because the dial worked: it stays down since its first failure, and its trial is LOST
// after lost_grace, so that the planner can resume it. Before, every
// successful re-dial started its "down since" again, and the trial was
// never LOST.
func TestHungAgainAfterRedialGoesLost(t *testing.T) {
	const grace = 3 * time.Second
	r, key, _, hangNew := hungLab(t, func(c *Config) { c.LostGrace = grace })
	defer func(d time.Duration) { sftpTimeout = d }(sftpTimeout)
	sftpTimeout = time.Second
	o := waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
	hangNew("")
	// The pooled connection's sftp-server does not hang: drop it.
	r.machines[0].close()
	readUntilLost(t, r, providers.ReadRequest{Experiment: "hang", TrialID: "t1", Handle: o.Handle}, grace, "the machine began to hang", nil, key, "lost_grace")
}

// readUntilLost reads rr's trial, on a machine that began to hang, until
// it is LOST: not before grace, the reason naming each of want and an
// outage of at least grace; the test fails if it is not LOST within 10
// graces (what says what began). between, if not nil, runs after each
// read that is not LOST.
func readUntilLost(t *testing.T, r *Remote, rr providers.ReadRequest, grace time.Duration, what string, between func(), want ...string) {
	t.Helper()
	start := time.Now()
	var errs []error
	for {
		var got providers.Observation
		err := returns(t, "Read", func() (err error) {
			got, err = r.Read(context.Background(), rr)
			return err
		})
		if err == nil && got.Phase == providers.PhaseLost {
			if took := time.Since(start); took < grace {
				t.Fatalf("LOST after %s, before lost_grace %s: %s", took, grace, got.Reason)
			}
			for _, w := range want {
				if !strings.Contains(got.Reason, w) {
					t.Fatalf("reason %q: want %q named", got.Reason, w)
				}
			}
			// The outage it names is at least lost_grace: it is measured
			// to now, not to the last failed try (which said "unreachable
			// for 2s (lost_grace 3s)").
			wantOutage(t, got.Reason, grace)
			t.Logf("LOST after %s (%d reads): %s", time.Since(start).Round(time.Second), len(errs)+1, got.Reason)
			return
		}
		if err == nil {
			t.Fatalf("Read of a trial whose status cannot be read: %+v, want an error or LOST", got)
		}
		errs = append(errs, err)
		if time.Since(start) > 10*grace {
			t.Fatalf("not LOST %s after %s (lost_grace %s), %d reads; the last said: %v", time.Since(start).Round(time.Second), what, grace, len(errs), err)
		}
		if between != nil {
			between()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantOutage fails the test unless reason ("machine M unreachable for D
// (lost_grace G): ...") names an outage of at least grace.
func wantOutage(t *testing.T, reason string, grace time.Duration) {
	t.Helper()
	m := regexp.MustCompile(` for (\S+) \(lost_grace `).FindStringSubmatch(reason)
	if m == nil {
		t.Fatalf("reason %q: want \"for DURATION (lost_grace\"", reason)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil || d < grace {
		t.Fatalf("reason %q: an outage of %s, shorter than lost_grace %s, made the trial LOST", reason, m[1], grace)
	}
}

// A machine whose sftp-server answers some requests and hangs on others
// (spec.json is read, the status file hangs: a work_dir half on a stalled
// network file system) is not up because spec.json answered: it stays
// down since the first hang, and its trial is LOST after lost_grace.
// Before, each read's spec.json marked it up, starting its "unreachable
// since" again, and the trial was never LOST.
func TestPartlyHungMachineGoesLost(t *testing.T) {
	const grace = 3 * time.Second
	r, key, _, hangNew := hungLab(t, func(c *Config) { c.LostGrace = grace })
	defer func(d time.Duration) { sftpTimeout = d }(sftpTimeout)
	sftpTimeout = time.Second
	o := waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
	hangNew("/t1/" + statusFile)
	r.machines[0].close()
	readUntilLost(t, r, providers.ReadRequest{Experiment: "hang", TrialID: "t1", Handle: o.Handle}, grace, "the status file began to hang", nil, key, "/t1/"+statusFile)
}

// A trial whose own status or metrics file hangs, on a machine whose
// other trials read fine (a work_dir partly on a stalled network file
// system), is LOST after lost_grace, the reason naming the file that
// hangs, while the other trials go on being read: the outage is the
// trial's, not only the machine's. Before, each good read of another
// trial, or `logs` of one, marked the machine up, the hung trial's outage
// started again at its next read, and it was never LOST; one whose
// metrics hung was an error at every read, never LOST.
func TestHungTrialOnAnsweringMachineGoesLost(t *testing.T) {
	for _, c := range []struct{ file, other string }{{statusFile, "read"}, {nniMetrics, "read"}, {statusFile, "logs"}} {
		t.Run(c.file+" "+c.other, func(t *testing.T) { testHungTrialGoesLost(t, c.file, c.other == "logs") })
	}
}

// testHungTrialGoesLost: t1's file hangs, and between two reads of it t2
// is read (logs: its logs are copied) until that answers.
func testHungTrialGoesLost(t *testing.T, file string, logs bool) {
	const grace = 3 * time.Second
	r, key, hangNew, o, o2 := hungTwoTrials(t, func(c *Config) { c.LostGrace = grace })
	hangNew("/t1/" + file)
	r.machines[0].close()
	good := 0
	// Between two reads of t1, t2 is read until it reads (the machine is
	// not dialled again within a second of a hang), as a refresh of many
	// trials would.
	rr2 := providers.ReadRequest{Experiment: "hang", TrialID: "t2", Handle: o2.Handle}
	readT2 := func() { readsFine(t, r, rr2); good++ }
	if logs {
		readT2 = func() {
			deadline := time.Now().Add(time.Minute)
			for {
				var out bytes.Buffer
				err := returns(t, "Logs of t2", func() error {
					return r.Logs(context.Background(), providers.LogsRequest{Experiment: "hang", TrialID: "t2", Handle: o2.Handle, Out: &out})
				})
				if err == nil {
					if !strings.Contains(out.String(), "hello") {
						t.Fatalf("logs of t2: %q, want hello", out.String())
					}
					good++
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("logs of t2, whose files read fine, not read in a minute: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	readUntilLost(t, r, providers.ReadRequest{Experiment: "hang", TrialID: "t1", Handle: o.Handle}, grace, "t1's "+file+" began to hang", readT2, key, "/t1/"+file)
	// One good read of t2 between two of t1 is the case: before, it
	// marked the machine up, and t1's next read started its outage again.
	// (Under load a read of t1 can take seconds: only one may fit in.)
	if good < 1 {
		t.Fatalf("t2 read fine %d times while t1 hung, want the machine to answer for it in between", good)
	}
	readT2() // and still does
}

// readsFine reads rr's trial, whose files read fine on a machine where
// another trial's files hang, until a read answers (within a minute), and
// fails the test unless it is SUCCEEDED.
func readsFine(t *testing.T, r *Remote, rr providers.ReadRequest) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var got providers.Observation
		err := returns(t, "Read of "+rr.TrialID, func() (err error) {
			got, err = r.Read(context.Background(), rr)
			return err
		})
		if err == nil {
			if got.Phase != providers.PhaseSucceeded {
				t.Fatalf("%s, whose files read fine: %s (%s), want SUCCEEDED", rr.TrialID, got.Phase, got.Reason)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s, whose files read fine, not read in a minute: %v", rr.TrialID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A trial's outage is remembered across CLI runs, as its machine's is:
// when each command reads another trial of the machine fine (the machine
// is up) and then the trial whose status file hangs, that trial is LOST
// after lost_grace. Before, each command's first hang started it again.
func TestHungTrialLostAcrossCommands(t *testing.T) {
	const grace = 3 * time.Second
	state := t.TempDir()
	r, key, hangNew, o, o2 := hungTwoTrials(t, func(c *Config) { c.LostGrace = grace; c.StateDir = state })
	hangNew("/t1/" + statusFile)
	r.Close()
	start := time.Now()
	for runs := 1; ; runs++ {
		rc := newRemote(t, r.cfg) // the next CLI command
		readsFine(t, rc, providers.ReadRequest{Experiment: "hang", TrialID: "t2", Handle: o2.Handle})
		var got providers.Observation
		err := returns(t, "Read of t1", func() (err error) {
			got, err = rc.Read(context.Background(), providers.ReadRequest{Experiment: "hang", TrialID: "t1", Handle: o.Handle})
			return err
		})
		rc.Close()
		if err == nil && got.Phase == providers.PhaseLost {
			for _, w := range []string{key, "/t1/" + statusFile} {
				if !strings.Contains(got.Reason, w) {
					t.Fatalf("reason %q: want %q named", got.Reason, w)
				}
			}
			wantOutage(t, got.Reason, grace)
			t.Logf("LOST after %s (%d commands): %s", time.Since(start).Round(time.Second), runs, got.Reason)
			return
		}
		if err == nil {
			t.Fatalf("Read of a trial whose status cannot be read: %+v, want an error or LOST", got)
		}
		if time.Since(start) > 10*grace {
			t.Fatalf("not LOST %s after its status file began to hang (lost_grace %s), %d commands; the last said: %v", time.Since(start).Round(time.Second), grace, runs, err)
		}
	}
}

// hungTwoTrials is hungLab with SFTP reads timing out after 1 s (for the
// test) and two succeeded trials, hang/t1 and hang/t2, whose
// observations it returns; nothing hangs yet.
func hungTwoTrials(t *testing.T, tweak func(*Config)) (r *Remote, key string, hangNew func(string), o1, o2 providers.Observation) {
	t.Helper()
	r, key, _, hangNew = hungLab(t, tweak)
	old := sftpTimeout
	t.Cleanup(func() { sftpTimeout = old })
	sftpTimeout = time.Second
	o1 = waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
	if _, err := r.Start(ctx(t), trialReq("hang", "t2", "echo hello", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	o2 = waitPhase(t, r, "hang", "t2", providers.PhaseSucceeded)
	return r, key, hangNew, o1, o2
}
