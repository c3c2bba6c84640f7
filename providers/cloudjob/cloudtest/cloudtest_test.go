package cloudtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStateNames(t *testing.T) {
	n := StateNames{Unknown: "U", Waiting: "W", Running: "R", Stopping: "S", Succeeded: "OK", Failed: "F", Stopped: "X"}
	for _, c := range []struct {
		st              State
		known, stopping bool
		want            string
	}{
		{Running, false, false, "U"},
		{Waiting, true, false, "W"},
		{Running, true, false, "R"},
		{Running, true, true, "S"},
		{Succeeded, true, true, "OK"},
		{Failed, true, false, "F"},
		{Stopped, true, true, "X"},
	} {
		if got := n.Name(Status{State: c.st}, c.known, c.stopping); got != c.want {
			t.Errorf("Name(%s, known=%v, stopping=%v) = %q, want %q", c.st, c.known, c.stopping, got, c.want)
		}
	}
}

// What a fake job starts in a new session dies with it, at its end and at
// Stop, whatever its environment says: `env -i` clears the marker an
// environment scan looked for (as an exec in progress reads empty, which
// left a process behind on a loaded machine: openpai's
// TestConformance/KillNewSession). The job's end is the end of all it
// started, with no timer involved.
func TestJobsTakeTheirNewSessionsWithThem(t *testing.T) {
	r := NewRunner()
	defer r.Close()
	for _, tc := range []struct {
		id, tail string
		stop     bool
	}{
		{"exits", "exit 0", false},
		{"stopped", "wait", true},
	} {
		dir := t.TempDir()
		mark := filepath.Join(dir, "pid")
		cmd := "setsid env -i /bin/sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > pid.tmp; mv pid.tmp pid; " + tc.tail
		if err := r.Start(tc.id, cmd, nil, dir); err != nil {
			t.Fatal(err)
		}
		var pid int
		for pid == 0 {
			if b, err := os.ReadFile(mark); err == nil {
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			} else if st, _ := r.Status(tc.id); st.Done() {
				t.Fatalf("%s ended before writing its pid: %s", tc.id, mustLog(r, tc.id))
			}
			time.Sleep(5 * time.Millisecond)
		}
		if tc.stop {
			r.Stop(tc.id)
		} else {
			r.Wait(tc.id)
		}
		st, _ := r.Status(tc.id)
		if err := syscall.Kill(pid, 0); err == nil {
			// Alive, or a zombie not yet reaped by the machine's init.
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !bytes.Contains(b, []byte(") Z ")) {
				t.Errorf("%s (%s): the process it started in a new session with an empty environment (%d) outlived it", tc.id, st.State, pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

func mustLog(r *Runner, id string) string {
	b, _ := r.Log(id, 0)
	return string(b)
}
