package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The lock tests need a holder in another process: the test binary
// re-executed with helperEnv set runs lockHolder instead of the tests.
const helperEnv = "TRIALFORM_STATE_TEST_LOCK_HOLDER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(lockHolder(dir))
	}
	os.Exit(m.Run())
}

// lockHolder takes the lock of dir, prints "locked ID", and holds it until
// its stdin is closed.
func lockHolder(dir string) int {
	l, err := NewManager(dir).Lock(context.Background(), "apply", "v-test", time.Minute)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("locked", l.Info().ID)
	io.Copy(io.Discard, os.Stdin)
	if err := l.Unlock(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	return 0
}

type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	id    string
}

// startHolder starts a process holding the lock of dir and waits until it
// has it.
func startHolder(t *testing.T, dir string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "locked ") {
		t.Fatalf("lock holder: %q, %v", line, err)
	}
	h.id = strings.TrimSpace(strings.TrimPrefix(line, "locked "))
	return h
}

// release makes the holder unlock and exit.
func (h *holder) release(t *testing.T) {
	t.Helper()
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("lock holder exited: %v", err)
	}
}

func TestLockHeldByAnotherProcessFailsAtOnce(t *testing.T) {
	m := newManager(t)
	h := startHolder(t, m.Dir())

	start := time.Now()
	l, err := m.Lock(t.Context(), "plan", "v1", 0)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("Lock while another process holds it: %v, %v", l, err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("timeout 0 took %s", elapsed)
	}
	i := le.Info
	if i.PID != h.cmd.Process.Pid || i.Operation != "apply" || i.ID != h.id || i.Version != "v-test" || !strings.Contains(i.Who, "@") ||
		i.Path != filepath.Join(m.Dir(), "state.json") || time.Since(i.Created) > time.Hour {
		t.Errorf("lock info = %+v (holder pid %d, id %s)", i, h.cmd.Process.Pid, h.id)
	}
	msg := err.Error()
	for _, want := range []string{"locked by apply", fmt.Sprintf("pid %d", i.PID), i.Who, "lock ID " + h.id, "-lock-timeout", "trialform force-unlock " + h.id} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	cur, err := m.CurrentLock()
	if err != nil || cur == nil || cur.ID != h.id {
		t.Errorf("CurrentLock = %+v, %v", cur, err)
	}
	// A cancelled context stops a wait.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.Lock(ctx, "plan", "v1", time.Hour); !errors.Is(err, context.Canceled) || !errors.As(err, &le) {
		t.Errorf("Lock with a cancelled context: %v", err)
	}

	h.release(t)
	cur, err = m.CurrentLock()
	if err != nil || cur != nil {
		t.Errorf("CurrentLock after release = %+v, %v", cur, err)
	}
	l, err = m.Lock(t.Context(), "plan", "v1", 0)
	if err != nil {
		t.Fatalf("Lock after the holder released it: %v", err)
	}
	l.Unlock()
}

func TestLockWaitsForHolderToExit(t *testing.T) {
	m := newManager(t)
	h := startHolder(t, m.Dir())
	type result struct {
		l   *Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := m.Lock(t.Context(), "apply", "v1", 2*time.Minute)
		done <- result{l, err}
	}()
	// Still waiting while the holder holds it (not a timing assertion:
	// a Lock that wrongly succeeded would have had plenty of time).
	select {
	case r := <-done:
		t.Fatalf("Lock did not wait: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	h.release(t)
	r := <-done
	if r.err != nil {
		t.Fatalf("Lock with timeout: %v", r.err)
	}
	if r.l.Info().PID != os.Getpid() || r.l.Info().Operation != "apply" {
		t.Errorf("lock info %+v", r.l.Info())
	}
	cur, _ := m.CurrentLock()
	if cur == nil || cur.ID != r.l.Info().ID {
		t.Errorf("CurrentLock = %+v", cur)
	}
	r.l.Unlock()
}

func TestLockTimeoutExpires(t *testing.T) {
	m := newManager(t)
	h := startHolder(t, m.Dir())
	_, err := m.Lock(t.Context(), "apply", "v1", 200*time.Millisecond)
	var le *LockedError
	if !errors.As(err, &le) || le.Info.ID != h.id || !strings.Contains(err.Error(), "gave up after waiting 200ms") {
		t.Errorf("Lock with an expiring timeout: %v", err)
	}
	// After a wait that ran out, it advises a longer one, not the 30s it
	// advises with none.
	if s := fmt.Sprint(err); !strings.Contains(s, "wait longer (-lock-timeout=5m)") || strings.Contains(s, "-lock-timeout=30s") {
		t.Errorf("Lock with an expiring timeout, its advice: %v", err)
	}
	_, err = LockScope(t.Context(), m, nil, "apply", "v1", 0)
	if s := fmt.Sprint(err); !strings.Contains(s, "use -lock-timeout=30s") {
		t.Errorf("LockScope without a timeout: %v", err)
	}
}

func TestLockReleasedWhenHolderKilled(t *testing.T) {
	m := newManager(t)
	h := startHolder(t, m.Dir())
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.cmd.Wait()
	// The lock file is left behind with the dead holder's info, but the
	// lock is free.
	if _, err := os.Stat(filepath.Join(m.Dir(), "state.lock")); err != nil {
		t.Errorf("lock file of the killed holder: %v", err)
	}
	cur, err := m.CurrentLock()
	if err != nil || cur != nil {
		t.Errorf("CurrentLock after the holder was killed = %+v, %v", cur, err)
	}
	l, err := m.Lock(t.Context(), "apply", "v1", 0)
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	cur, _ = m.CurrentLock()
	if cur == nil || cur.ID != l.Info().ID || cur.PID != os.Getpid() {
		t.Errorf("lock info not rewritten: %+v", cur)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Errorf("second Unlock: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.Dir(), "state.lock")); !os.IsNotExist(err) {
		t.Errorf("Unlock left the lock file (stat: %v)", err)
	}
}

func TestLockExclusiveWithinProcess(t *testing.T) {
	m := newManager(t)
	l, err := m.Lock(t.Context(), "apply", "v1", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Another manager of the same directory (flock locks are per open
	// file, so this holds within one process too).
	other := NewManager(m.Dir())
	_, err = other.Lock(t.Context(), "destroy", "v1", 0)
	var le *LockedError
	if !errors.As(err, &le) || le.Info.ID != l.Info().ID || le.Info.Operation != "apply" {
		t.Fatalf("second Lock: %v", err)
	}
	l.Unlock()
	l2, err := other.Lock(t.Context(), "destroy", "v1", 0)
	if err != nil {
		t.Fatal(err)
	}
	l2.Unlock()
}

func TestForceUnlock(t *testing.T) {
	m := newManager(t)
	if err := m.ForceUnlock("nope"); err == nil || !strings.Contains(err.Error(), "not locked") {
		t.Errorf("ForceUnlock without a lock: %v", err)
	}
	h := startHolder(t, m.Dir())

	err := m.ForceUnlock("wrong-id")
	if err == nil || !strings.Contains(err.Error(), h.id) || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("ForceUnlock with the wrong id: %v", err)
	}
	if _, err := m.Lock(t.Context(), "apply", "v1", 0); err == nil {
		t.Fatal("wrong-id ForceUnlock released the lock")
	}

	if err := m.ForceUnlock(h.id); err != nil {
		t.Fatalf("ForceUnlock with the right id: %v", err)
	}
	l, err := m.Lock(t.Context(), "apply", "v1", 0)
	if err != nil {
		t.Fatalf("Lock after ForceUnlock: %v", err)
	}
	// The old holder, still alive, unlocks: it must not remove the new
	// holder's lock file.
	h.release(t)
	cur, err := m.CurrentLock()
	if err != nil || cur == nil || cur.ID != l.Info().ID {
		t.Errorf("after the old holder unlocked, CurrentLock = %+v, %v", cur, err)
	}
	if _, err := NewManager(m.Dir()).Lock(t.Context(), "plan", "v1", 0); err == nil {
		t.Error("a third Lock succeeded while the new holder holds it")
	}
	l.Unlock()
}

// TestLockContention has several goroutines take and release the lock
// (with file removal in between); at most one may hold it at a time.
func TestLockContention(t *testing.T) {
	m := newManager(t)
	var holders, maxHolders int32
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	errc := make(chan error, 4)
	for g := range 4 {
		go func() {
			mm := NewManager(m.Dir())
			for range 25 {
				l, err := mm.Lock(context.Background(), fmt.Sprint("g", g), "v", time.Minute)
				if err != nil {
					errc <- err
					return
				}
				<-mu
				holders++
				maxHolders = max(maxHolders, holders)
				mu <- struct{}{}
				time.Sleep(time.Millisecond)
				<-mu
				holders--
				mu <- struct{}{}
				if err := l.Unlock(); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range 4 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if maxHolders != 1 {
		t.Errorf("%d holders at once", maxHolders)
	}
}
