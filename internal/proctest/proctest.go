// Package proctest finds the processes a test left running: trials and
// supervisors whose working directory is under the test's folder.
//
// A test that releases its trials (by creating a file they poll for) and
// ends at once races its own cleanup: the folder, release file included,
// can be removed before a trial sees the file, and the trial then polls
// for ever. WaitGone waits for them to end instead.
package proctest

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Under returns the processes whose working directory is dir or under it
// (a removed directory reads with a " (deleted)" suffix, which still
// matches).
func Under(dir string) []int {
	dir = filepath.Clean(dir)
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue
		}
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// WaitGone waits up to d for every process under dir to end. Those still
// running then fail the test, named with their command lines, and are
// killed so that they do not outlive it.
func WaitGone(t testing.TB, dir string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		pids := Under(dir)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, pid := range pids {
				b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
				names = append(names, strconv.Itoa(pid)+": "+strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")))
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("%d processes still run in %s %s after the test was done with them (killed now):\n%s", len(pids), dir, d, strings.Join(names, "\n"))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
