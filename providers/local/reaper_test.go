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

// Stop's SIGTERM goes to the trial's process group as a whole, then to
// its processes outside the group: signalling a member of the group again
// raced with what its trap started on the first signal (a trial's
// handler that spawns a process to save its work was killed, 1 stop in 3).
func TestSignalOutsideGroupSparesTheGroup(t *testing.T) {
	leader := exec.Command("sh", "-c", "sleep 30 & wait")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outside := exec.Command("sleep", "30")
	outside.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	for _, c := range []*exec.Cmd{leader, outside} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Process.Kill()
	}
	pg := leader.Process.Pid
	defer syscall.Kill(-pg, syscall.SIGKILL)
	var member int
	for deadline := time.Now().Add(10 * time.Second); member == 0; time.Sleep(10 * time.Millisecond) {
		for _, p := range descendants(pg) {
			if g, err := syscall.Getpgid(p); err == nil && g == pg {
				member = p
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the group's sleep did not start")
		}
	}
	signalOutsideGroup([]int{pg, member, outside.Process.Pid}, pg, syscall.SIGTERM)
	err := outside.Wait()
	if ws, ok := err.(*exec.ExitError); !ok || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("the process outside the group: %v, want ended by SIGTERM", err)
	}
	for _, p := range []int{pg, member} {
		if err := syscall.Kill(p, 0); err != nil {
			t.Errorf("process %d of the group was signalled: %v", p, err)
		}
	}
	// pgid 0: every one of them.
	signalOutsideGroup([]int{member}, 0, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(member, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if state, _, err := procInfo(member); err == nil && state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after SIGKILL", member)
		}
	}
}
