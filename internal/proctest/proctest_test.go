package proctest

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A process started in a folder is found there, WaitGone fails the test
// while it runs past the wait and kills it, and returns quietly once none
// is left.
func TestWaitGone(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "30")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	if got := Under(dir); len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Fatalf("Under(%s) = %v, want [%d]", dir, got, cmd.Process.Pid)
	}
	if got := Under(t.TempDir()); len(got) != 0 {
		t.Fatalf("Under(another folder) = %v, want none", got)
	}
	rec := &recorder{TB: t}
	WaitGone(rec, dir, 200*time.Millisecond)
	if !strings.Contains(rec.msg, "1 processes still run") || !strings.Contains(rec.msg, "sleep 30") {
		t.Fatalf("WaitGone reported %q, want the sleep still running", rec.msg)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WaitGone did not kill the process it reported")
	}
	rec2 := &recorder{TB: t}
	WaitGone(rec2, dir, time.Second)
	if rec2.msg != "" {
		t.Fatalf("WaitGone with nothing running reported %q", rec2.msg)
	}
}

type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.msg = strings.TrimSpace(r.msg + "\n" + fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}
