package cloudtest

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/procfs"
	"golang.org/x/sys/unix"
)

// A fake job runs under a small init of its own, as a container's
// processes run under its init: the test binary itself, re-executed with
// jobInitVar set (this package's init catches it before any test runs).
// The init is a child subreaper (PR_SET_CHILD_SUBREAPER), so whatever the
// job leaves behind, in a new session too (`setsid cmd &`), is reparented
// to it rather than to the machine's init. When the job's shell ends, the
// init SIGKILLs its children until wait reports none left; a child whose
// own children are alive cannot be missed, since they become the init's
// when it dies. Nothing depends on reading a process's environment (empty
// while it is in an exec, or cleared with env -i) or on a timer: the fake
// job's end is the end of everything it started, however loaded the
// machine.
//
// The init runs `/bin/sh -c` jobInitVar's command in its own process
// group; SIGTERM to the init is forwarded to that group and, jobInitGrace
// later (the runtime's grace), everything left is SIGKILLed: what ignores
// SIGTERM keeps running until then even when the shell has ended. It
// exits as the shell did.
const (
	jobInitVar   = "TRIALFORM_CLOUDTEST_JOB_INIT"
	jobInitGrace = "TRIALFORM_CLOUDTEST_JOB_GRACE"
)

func init() {
	if os.Getenv(jobInitVar) == "" {
		return
	}
	os.Exit(jobInit())
}

func jobInit() int {
	cmd := os.Getenv(jobInitVar)
	grace, _ := time.ParseDuration(os.Getenv(jobInitGrace))
	os.Unsetenv(jobInitVar)
	os.Unsetenv(jobInitGrace)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		os.Stderr.WriteString("cloudtest job init: PR_SET_CHILD_SUBREAPER: " + err.Error() + "\n")
		return 127
	}
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	c := exec.Command("/bin/sh", "-c", cmd)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	var kill <-chan time.Time
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-terms:
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
			kill = time.After(grace)
		case <-kill:
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
	}
	if kill != nil {
		// Stopping: what ignores SIGTERM has the rest of the grace, as a
		// container runtime gives it, unless everything ends before.
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			var ws syscall.WaitStatus
			for {
				if _, err := syscall.Wait4(-1, &ws, 0, nil); errors.Is(err, syscall.ECHILD) {
					return
				}
			}
		}()
		select {
		case <-drained:
		case <-kill:
		}
	}
	killDescendants()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// Die as the shell died, so the runner sees the same end.
			signal.Reset(ws.Signal())
			_ = syscall.Kill(os.Getpid(), ws.Signal())
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 127
	}
	return 0
}

// killDescendants SIGKILLs the init's children, and reaps them, until it
// has none: their own children are reparented to it as they die.
func killDescendants() {
	self := os.Getpid()
	for {
		for _, pid := range procfs.ChildrenByParent(true)[self] {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); errors.Is(err, syscall.ECHILD) {
			return
		}
	}
}
