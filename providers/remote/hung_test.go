package remote

import (
	"context"
	"os"
	"path/filepath"
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
// goes on answering (keepalives included).
func hungLab(t *testing.T) (r *Remote, key string, hang func()) {
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
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\necho $$ >> "+pids+"\nexec "+server+"\n"), 0o755); err != nil {
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
	r = newRemote(t, labConfig(t, l))
	// Before r.Close, which waits for the SFTP sessions to end.
	t.Cleanup(func() { signalAll(syscall.SIGKILL) })
	if _, err := r.Start(ctx(t), trialReq("hang", "t1", "echo hello", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
	return r, l.Servers[0].Addr(), func() { signalAll(syscall.SIGSTOP) }
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
		t.Fatalf("%s on a machine whose sftp-server hangs: still blocked after 60 s", what)
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
	r, key, hang := hungLab(t)
	hang()
	err := returns(t, "Read", func() error {
		c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := r.Read(c, providers.ReadRequest{Experiment: "hang", TrialID: "t1"})
		return err
	})
	wantHung(t, "Read", err, key)
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
	r, key, hang := hungLab(t)
	defer func(d time.Duration) { sftpTimeout = d }(sftpTimeout)
	sftpTimeout = 3 * time.Second
	hang()
	err := returns(t, "Read", func() error {
		_, err := r.Read(context.Background(), providers.ReadRequest{Experiment: "hang", TrialID: "t1"})
		return err
	})
	wantHung(t, "Read", err, key)
	waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
}
