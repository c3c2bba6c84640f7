package local

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// The children-file walk finds the same processes as the scan of every
// process: two children of a child (one in its own session).
func TestDescendantsWalkMatchesScan(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & setsid sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for _, p := range scanDescendants(os.Getpid()) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = cmd.Wait()
	})
	var walk, scan []int
	deadline := time.Now().Add(eventWait)
	for {
		var ok bool
		walk, ok = childrenTree(cmd.Process.Pid)
		if !ok {
			t.Fatal("no /proc/PID/task/TID/children here (a kernel without CONFIG_PROC_CHILDREN): descendants falls back to scanning /proc, untested by this test")
		}
		scan = scanDescendants(cmd.Process.Pid)
		slices.Sort(walk)
		slices.Sort(scan)
		if len(scan) == 2 && slices.Equal(walk, scan) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("walk %v, scan %v (want the same 2 processes)", walk, scan)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Its direct children, both ways (the host's fallback without
	// children files): here, the same two.
	direct, scanned := directChildren(cmd.Process.Pid), scanChildren(cmd.Process.Pid)
	slices.Sort(direct)
	slices.Sort(scanned)
	if !slices.Equal(direct, walk) || !slices.Equal(scanned, walk) {
		t.Fatalf("children of %d: from children files %v, from a scan %v; want %v", cmd.Process.Pid, direct, scanned, walk)
	}
	// And from this process: the child is found, with them.
	all, _ := childrenTree(os.Getpid())
	for _, p := range append(walk, cmd.Process.Pid) {
		if !slices.Contains(all, p) {
			t.Fatalf("the walk from this process %v lacks %d", all, p)
		}
	}
}
