package local

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/internal/procfs"
	"github.com/trialform/trialform/providers/trialproto"
)

// The supervisor makes itself a child subreaper (prctl
// PR_SET_CHILD_SUBREAPER): a process the trial starts in a new session or
// process group (setsid, a double fork) and then orphans is re-parented to
// the supervisor instead of to init, so the supervisor still finds it
// among its descendants and kills it with the trial. Killing the trial's
// process group alone would miss it, and it would outlive stop and destroy.

func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// descendants lists the live processes below root, read from /proc: the
// children files of root's threads, and of theirs (Linux 3.5+ with
// CONFIG_PROC_CHILDREN, a few reads), else a scan of every process's stat.
func descendants(root int) []int {
	if out, ok := childrenTree(root); ok {
		return out
	}
	return scanDescendants(root)
}

// childrenTree walks /proc/PID/task/TID/children from root; ok is false
// when the kernel has no children files.
func childrenTree(root int) (out []int, ok bool) {
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		base := "/proc/" + strconv.Itoa(p) + "/task/"
		tasks, err := os.ReadDir(base)
		if err != nil {
			if p == root {
				return nil, false
			}
			continue // it exited meanwhile
		}
		for _, t := range tasks {
			b, err := fsx.ReadFile(base + t.Name() + "/children")
			if err != nil {
				if p == root && errors.Is(err, fs.ErrNotExist) {
					return nil, false
				}
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				c, err := strconv.Atoi(f)
				if err != nil {
					continue
				}
				if state, _, err := procInfo(c); err != nil || state == 'Z' || state == 'X' {
					continue
				}
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out, true
}

// scanDescendants is descendants from a scan of every process's stat.
func scanDescendants(root int) []int { return procfs.Descendants(root, false) }

// signalDescendants sends sig to every live descendant of this process.
func signalDescendants(sig syscall.Signal) int {
	ds := descendants(os.Getpid())
	for _, p := range ds {
		_ = syscall.Kill(p, sig)
	}
	return len(ds)
}

// signalOutsideGroup sends sig to each of ps that is not in the process
// group pgid, which the caller signalled as a whole (pgid 0: to all of
// them). Signalling a member of the group a second time would kill what
// a trap started on the first: a trial's SIGTERM handler that spawns a
// process to save its work.
func signalOutsideGroup(ps []int, pgid int, sig syscall.Signal) {
	for _, p := range ps {
		if g, err := syscall.Getpgid(p); pgid > 0 && err == nil && g == pgid {
			continue
		}
		_ = syscall.Kill(p, sig)
	}
}

// killDescendants SIGKILLs every descendant of this process and reaps
// them, until none is left or d passed.
func killDescendants(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		n := signalDescendants(syscall.SIGKILL)
		reapAll()
		if n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reapAll collects every exited child (orphans re-parented to the
// subreaper), without blocking.
func reapAll() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// killStragglers SIGKILLs every process, whatever its session or parent,
// whose environment says it belongs to the trial in dir (NNI_SYS_DIR=dir,
// which every process the trial starts inherits unless it clears its
// environment). Stop and destroy use it when the supervisor, which kills
// such processes itself, is gone.
func killStragglers(dir string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	marker := []byte("\x00" + trialproto.EnvSysDir + "=" + dir + "\x00")
	self := os.Getpid()
	n := 0
	var killed []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := fsx.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, b...), marker) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
			killed = append(killed, pid)
		}
	}
	// A signal is delivered when its process next runs: on a loaded
	// machine that is after kill returns. Nothing of the lost attempt may
	// run beside the next one, so wait (a while at most) until each is
	// gone or a zombie.
	for deadline := time.Now().Add(5 * time.Second); len(killed) > 0 && time.Now().Before(deadline); {
		killed = slices.DeleteFunc(killed, func(p int) bool { return !alive(p, 0) })
		if len(killed) > 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	return n
}
