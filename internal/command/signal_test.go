package command_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// syncBuffer is an output buffer a test can wait on.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	ch chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{ch: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the output contains want (each write wakes it).
func (s *syncBuffer) waitFor(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.ch:
		case <-deadline:
			t.Fatalf("output lacks %q after %s:\n%s", want, timeout, s.String())
		}
	}
}

// exited waits for cmd to end within timeout and returns its exit code.
func exited(t *testing.T, done <-chan error, timeout time.Duration, out fmtStringer) int {
	t.Helper()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(timeout):
		t.Fatalf("still running %s after the signal:\n%s", timeout, out.String())
	}
	return -1
}

type fmtStringer interface{ String() string }

// startTrialform starts the built trialform in dir with args, its output
// (both streams) in out; done receives its end. It is killed at cleanup.
func startTrialform(t *testing.T, dir string, args ...string) (cmd *exec.Cmd, out *syncBuffer, done <-chan error) {
	t.Helper()
	cmd = exec.Command(filepath.Join(binDir, "trialform"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out = newSyncBuffer()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, out, ch
}

// A command that has nothing to finish ends at the first SIGTERM or
// SIGINT, even blocked in a read (it used to catch the signal and ignore
// it: `timeout 5 trialform validate` ran for ten minutes).
func TestSignalEndsNonGracefulCommand(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pw.Close()
			cmd := exec.Command(filepath.Join(binDir, "trialform"), "fmt", "-")
			cmd.Stdin = pr
			out := newSyncBuffer()
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pr.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Synchronise: once the command has read this byte from the
			// pipe it is in its read loop, long after signal set-up.
			if _, err := pw.Write([]byte("#")); err != nil {
				t.Fatal(err)
			}
			waitPipeDrained(t, pw)
			cmd.Process.Signal(sig)
			code := exited(t, done, 10*time.Second, out)
			if code == 0 {
				t.Fatalf("exit 0 after %s", sig)
			}
		})
	}
}

// validate blocked on a FIFO among the *.hcl files (opened, never
// written) ends at the first SIGTERM: the signal is not swallowed.
func TestSignalEndsValidateBlockedOnFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "blocked.hcl")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "trialform"), "validate")
	cmd.Dir = dir
	out := newSyncBuffer()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Synchronise on the open: a non-blocking open for writing succeeds
	// once validate has opened the FIFO for reading. (A validate that
	// refuses special files ends by itself, with an error.)
	deadline := time.Now().Add(30 * time.Second)
	var w *os.File
	for w == nil {
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("validate accepted a FIFO:\n%s", out)
			}
			return
		default:
		}
		fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0)
		if err == nil {
			w = os.NewFile(uintptr(fd), fifo)
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("validate never opened the FIFO:\n%s", out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	defer w.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exited(t, done, 10*time.Second, out); code == 0 {
		t.Fatalf("exit 0 after SIGTERM:\n%s", out)
	}
}

// waitPipeDrained waits until the reader has taken every byte written to w.
func waitPipeDrained(t *testing.T, w *os.File) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := unix.IoctlGetInt(int(w.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatalf("FIONREAD: %v", err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command did not read its standard input")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Ctrl-C during apply -wait, while a platform call is in flight (a trial
// supervisor that never reports ready, as a platform call stuck in its
// retries): the first interrupt stops launching and lets the call finish,
// the second cancels it at once; the CLI ends with "Interrupted" and no
// "context canceled" error, and leaves the lock free.
func TestSecondInterruptCancelsCallsInFlight(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(filepath.Join(binDir, "trialform"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "trialform"), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	// The supervisor next to the CLI: records that it runs, then hangs
	// without signalling readiness.
	marker := filepath.Join(dir, "supervisor.pid")
	script := "#!/bin/sh\necho $$ > " + marker + ".tmp && mv " + marker + ".tmp " + marker + "\nexec sleep 300\n"
	if err := os.WriteFile(filepath.Join(bin, "trialform-supervisor"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	hcl := `search_space "s" {
  param "x" { choice = [1, 2] }
}
experiment "e" {
  search_space = search_space.s
  tuner "grid" {}
  max_trials   = 2
  concurrency  = 1
  trial {
    command = "true"
  }
}
`
	if err := os.WriteFile(filepath.Join(work, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "trialform"), "apply", "-auto-approve", "-wait", "-interval=100ms")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	stdout, stderr := newSyncBuffer(), newSyncBuffer()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if b, err := os.ReadFile(marker); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		cmd.Process.Kill()
	}()
	// Synchronise on the call in flight: the supervisor runs.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("apply ended before starting the supervisor (%v):\n%s\n%s", err, stdout, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor never ran:\n%s\n%s", stdout, stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}

	cmd.Process.Signal(syscall.SIGINT)
	stderr.waitFor(t, "Interrupt received", 10*time.Second)
	select {
	case err := <-done:
		t.Fatalf("the first interrupt abandoned the call in flight (exit %v):\n%s\n%s", err, stdout, stderr)
	default:
	}

	cmd.Process.Signal(syscall.SIGINT)
	// The supervisor wait would last 60 s; the second interrupt ends it now.
	code := exited(t, done, 20*time.Second, stderr)
	if code != 130 {
		t.Errorf("exit %d, want 130 (Ctrl-C):\n%s", code, stderr)
	}
	all := stdout.String() + stderr.String()
	for _, want := range []string{"Second interrupt received", "Interrupted: running trials keep running"} {
		if !strings.Contains(all, want) {
			t.Errorf("output lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "context canceled") {
		t.Errorf("output reports the cancellation as an error:\n%s", all)
	}
	// The lock is free and the state holds the trial's intent.
	list := exec.Command(filepath.Join(bin, "trialform"), "state", "list")
	list.Dir = work
	b, err := list.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "experiment.e.trial.t0000") {
		t.Fatalf("state list after the interrupt (%v):\n%s", err, b)
	}
	rm := exec.Command(filepath.Join(bin, "trialform"), "state", "rm", "experiment.e")
	rm.Dir = work
	if b, err := rm.CombinedOutput(); err != nil {
		t.Fatalf("the state lock is still held (%v):\n%s", err, b)
	}
}

// Ctrl-C while apply -wait reconciles (passes every 10 ms) reports only
// "Interrupted": a pass that the interrupt cut short used to print
// "Error: context canceled" first (2 runs in 20).
func TestInterruptDuringWaitSaysInterruptedOnly(t *testing.T) {
	work := t.TempDir()
	hcl := `search_space "s" {
  param "x" { choice = [301, 302] }
}
experiment "e" {
  search_space = search_space.s
  tuner "grid" {}
  max_trials   = 2
  concurrency  = 2
  trial {
    command = "sleep ${param.x}"
  }
}
`
	if err := os.WriteFile(filepath.Join(work, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() {
		out, code := trialform(t, work, "", "destroy", "-auto-approve")
		if code != 0 {
			t.Errorf("destroy: exit %d\n%s", code, out)
		}
	}()
	for i := 0; i < 10; i++ {
		cmd := exec.Command(filepath.Join(binDir, "trialform"), "apply", "-auto-approve", "-wait", "-interval=10ms")
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		out := newSyncBuffer()
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		out.waitFor(t, "Waiting for every experiment to finish", 60*time.Second)
		cmd.Process.Signal(syscall.SIGINT)
		if code := exited(t, done, 30*time.Second, out); code != 130 {
			t.Fatalf("run %d: exit %d, want 130:\n%s", i, code, out)
		}
		if s := out.String(); strings.Contains(s, "context canceled") || strings.Contains(s, "Error:") || !strings.Contains(s, "Interrupted: running trials keep running") {
			t.Fatalf("run %d: want only the interruption reported:\n%s", i, s)
		}
	}
}

// A command a signal cuts short exits 128+N, as the README says: apply
// -wait 143 after SIGTERM and 130 after Ctrl-C (it exited 1); ui, which
// runs until it is stopped, exits 0 and answers Ctrl-C with its own
// message, not apply's "stopping gracefully".
func TestSignalExitCodes(t *testing.T) {
	work := t.TempDir()
	hcl := `search_space "s" {
  param "x" { choice = [301] }
}
experiment "e" {
  search_space = search_space.s
  tuner "grid" {}
  max_trials   = 1
  trial {
    command = "sleep ${param.x}"
  }
}
`
	if err := os.WriteFile(filepath.Join(work, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if out, code := trialform(t, work, "", "destroy", "-auto-approve"); code != 0 {
			t.Errorf("destroy: exit %d\n%s", code, out)
		}
	}()
	start := func(args ...string) (*exec.Cmd, *syncBuffer, <-chan error) { return startTrialform(t, work, args...) }
	for _, c := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		cmd, out, done := start("apply", "-auto-approve", "-wait")
		out.waitFor(t, "Waiting for every experiment to finish", 60*time.Second)
		cmd.Process.Signal(c.sig)
		if code := exited(t, done, 30*time.Second, out); code != c.want {
			t.Errorf("apply -wait after %s: exit %d, want %d:\n%s", c.sig, code, c.want, out)
		}
		if s := out.String(); !strings.Contains(s, "stopping gracefully") || !strings.Contains(s, "Interrupted: running trials keep running") {
			t.Errorf("apply -wait after %s: want the graceful stop reported:\n%s", c.sig, s)
		}
	}
	cmd, out, done := start("ui", "-addr", "127.0.0.1:0", "-token", "t")
	out.waitFor(t, "serving the dashboard", 60*time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	if code := exited(t, done, 30*time.Second, out); code != 0 {
		t.Errorf("ui after Ctrl-C: exit %d, want 0:\n%s", code, out)
	}
	if s := out.String(); strings.Contains(s, "trials start") || !strings.Contains(s, "stopping the dashboard") {
		t.Errorf("ui after Ctrl-C: want the dashboard's own message:\n%s", s)
	} // watch without -auto-approve only plans: Ctrl-C must not claim it
	// saves the state.
	cmd, out, done = start("watch")
	out.waitFor(t, "Watching", 60*time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	exited(t, done, 30*time.Second, out)
	if s := out.String(); !strings.Contains(s, "stopping watching") || strings.Contains(s, "the state is saved") {
		t.Errorf("watch (plan only) after Ctrl-C:\n%s", s)
	}
}

// Ctrl-C while destroy stops the last trial: the stop in flight finishes
// (a graceful stop), the experiment is removed, and destroy says it is
// complete; it used to say "running trials keep running", when none was
// left. The trial tells the test when its stop began (a file written by
// its SIGTERM trap, which then takes a while), so Ctrl-C lands during it.
func TestInterruptedDestroyThatFinished(t *testing.T) {
	work := t.TempDir()
	hcl := `search_space "s" {
  param "x" { choice = [1] }
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "trap 'touch termed; sleep 2; exit 0' TERM; touch trapped; sleep 600 & wait"
  }
}
`
	if err := os.WriteFile(filepath.Join(work, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := trialform(t, work, "", "apply", "-auto-approve"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	waitFile := func(path string, out fmtStringer) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(path); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 60s:\n%s", filepath.Base(path), out)
			}
		}
	}
	waitFile(filepath.Join(work, "trapped"), newSyncBuffer()) // its trap is set
	cmd, out, done := startTrialform(t, work, "destroy", "-auto-approve")
	waitFile(filepath.Join(work, "termed"), out) // its stop began
	cmd.Process.Signal(syscall.SIGINT)
	exited(t, done, 60*time.Second, out)
	s := out.String()
	if !strings.Contains(s, "Destroy complete! 1 experiment, 1 trial") || strings.Contains(s, "keep running") {
		t.Errorf("destroy interrupted during its last stop: want it reported complete:\n%s", s)
	}
	if st, code := trialform(t, work, "", "state", "list"); code != 0 || strings.Contains(st, "experiment.e") {
		t.Errorf("state list after destroy: exit %d\n%s", code, st)
	}
}
