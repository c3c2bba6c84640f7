package remote

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

// TestShellsUnderASlowLogin: a machine whose login shell is slow (a heavy
// ~/.bashrc: conda, pyenv) behind OpenSSH's default MaxSessions of 10, and
// 16 commands at once (apply starts 16 trials at a time). One login is
// never ends (past the shell start timeout). Only that command fails: the
// connection and the other commands' shells stay up, and no more than
// maxShells logins run at once, so the sessions stay within MaxSessions.
// (Before: each command opened a shell of its own, 16 sessions on one
// connection, and the one that timed out dropped the connection, failing
// every command in flight: "start a shell: EOF".)
func TestShellsUnderASlowLogin(t *testing.T) {
	testdeps.Require(t, "sshd", sshtest.Available())
	if sh := loginShell(t); filepath.Base(sh) != "bash" {
		t.Fatalf("this test slows the login through ~/.bashrc, and this user's login shell is %q, not bash", sh)
	}
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	if err := os.Mkdir(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	// The ~/.bashrc of this user's logins: the server sets HOME to a
	// folder of the test's (SetEnv), and the bash that sshd starts for a
	// command reads ~/.bashrc (Debian builds bash to do so when sshd runs
	// it), as a heavy one would run. (BASH_ENV, used before, is not read by
	// that bash: the test passed only where the machine's own ~/.bashrc
	// started more bash processes, as pyenv's does, and failed on a
	// minimal Debian.) The first login waits (past the timeout) until the
	// test ends; the others note how many logins run at once.
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	slow := filepath.Join(home, ".bashrc")
	script := `D=` + marks + `
if mkdir "$D/first" 2>/dev/null; then
	i=0
	while [ ! -e "$D/release" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
else
	mkdir "$D/in.$$"
	ls -d "$D"/in.* | wc -l >>"$D/concurrency"
	sleep 0.2
	rmdir "$D/in.$$"
fi
`
	if err := os.WriteFile(slow, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := sshtest.NewLabConfig(filepath.Join(dir, "lab"), 1, "MaxSessions 10\nSetEnv HOME="+home)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer os.WriteFile(filepath.Join(marks, "release"), nil, 0o644)
	// Long enough for the other logins on a loaded machine (this user's
	// ~/.bashrc may be slow too: each waits for a free shell first).
	defer func(d time.Duration) { shellStartTimeout = d }(shellStartTimeout)
	shellStartTimeout = 10 * time.Second

	r := newRemote(t, labConfig(t, l))
	m := r.machines[0]
	if _, _, err := m.connected(ctx(t)); err != nil {
		t.Fatal(err)
	}
	const n = 16
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := m.sh(ctx(t), "echo ok "+strconv.Itoa(i))
			outs[i], errs[i] = string(out), err
		}(i)
	}
	wg.Wait()
	failed := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			failed++
			if !strings.Contains(errs[i].Error(), "no answer within") {
				t.Errorf("command %d: %v (want only the slow login's timeout)", i, errs[i])
			}
			continue
		}
		if want := "ok " + strconv.Itoa(i); strings.TrimSpace(outs[i]) != want {
			t.Errorf("command %d printed %q, want %q", i, outs[i], want)
		}
	}
	if failed != 1 {
		t.Errorf("%d commands failed, want exactly 1 (the login past the timeout)", failed)
	}
	f, err := os.Open(filepath.Join(marks, "concurrency"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	most, logins := 0, 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		k, _ := strconv.Atoi(strings.TrimSpace(sc.Text()))
		most = max(most, k)
		logins++
	}
	if logins == 0 || most > maxShells {
		t.Errorf("%d logins, at most %d at once; want at most maxShells (%d) at once", logins, most, maxShells)
	}
	// The connection survived: the machine is not marked down and a new
	// command runs on it.
	if _, down := r.downSince(m); down {
		t.Errorf("the machine was marked down")
	}
	if out, err := m.sh(ctx(t), "echo again"); err != nil || strings.TrimSpace(string(out)) != "again" {
		t.Errorf("after: %q, %v", out, err)
	}
}

// loginShell is the current user's login shell (/etc/passwd).
func loginShell(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	uid := strconv.Itoa(os.Getuid())
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) == 7 && f[2] == uid {
			return f[6]
		}
	}
	t.Fatalf("uid %s is not in /etc/passwd", uid)
	return ""
}

// A command in a persistent shell ends when the caller's context is
// cancelled (Ctrl-C of apply, a controller stopping), not only at a
// deadline: the caller's context here has none, and the command never
// ends by itself. Its shell is closed and the connection dropped (the
// machine may be hanging). Before, the call waited for the shell's own
// 2 min timeout.
func TestShellCommandEndsOnCancel(t *testing.T) {
	l := testLab(t)
	r := newRemote(t, labConfig(t, l))
	m := r.machines[0]
	c, _, err := m.connected(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	defer os.WriteFile(release, nil, 0o644)
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.sh(cctx, "touch "+shq(started)+"; while [ ! -e "+shq(release)+" ]; do sleep 0.1; done")
		done <- err
	}()
	for deadline := time.Now().Add(eventWait); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the command ended before it was cancelled: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
	}
	cancel()
	err = returns(t, "a shell command whose caller was cancelled", func() error { return <-done })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), m.key) {
		t.Fatalf("cancelled command: %v, want context.Canceled naming %s", err, m.key)
	}
	m.mu.Lock()
	same := m.conn == c
	m.mu.Unlock()
	if same {
		t.Error("the connection of the cancelled command is still pooled")
	}
	// The machine is not down for it: the next command dials again.
	if out, err := m.sh(ctx(t), "echo again"); err != nil || strings.TrimSpace(string(out)) != "again" {
		t.Fatalf("next command: %q %v", out, err)
	}
}
