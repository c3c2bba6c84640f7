package local

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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

// descendants lists the live processes below root, read from /proc.
func descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// signalDescendants sends sig to every live descendant of this process.
func signalDescendants(sig syscall.Signal) int {
	ds := descendants(os.Getpid())
	for _, p := range ds {
		_ = syscall.Kill(p, sig)
	}
	return len(ds)
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
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, b...), marker) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
