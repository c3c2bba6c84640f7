package procfs

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestParse: a command name with spaces and parentheses does not shift
// the fields; a line without them is an error.
func TestParse(t *testing.T) {
	line := []byte("4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615")
	st, err := Parse(4242, line)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'S' || st.PPID != 17 || st.PGID != 4242 || st.Start != 987654 || st.Gone() {
		t.Errorf("parsed %+v", st)
	}
	if _, err := Parse(1, []byte("1 (init S 0")); err == nil {
		t.Error("a line without ')' parsed")
	}
	if _, err := Parse(1, []byte("1 (x) S 0")); err == nil {
		t.Error("a short line parsed")
	}
}

// TestDescendants: a child and its grandchild are found below this
// process, and Read agrees on the parent.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var d []int
	for range 200 {
		if d = Descendants(os.Getpid(), false); len(d) >= 2 {
			break
		}
		exec.Command("sleep", "0.01").Run()
	}
	if !slices.Contains(d, cmd.Process.Pid) || len(d) < 2 {
		t.Fatalf("descendants %v lack the shell %d and its sleep", d, cmd.Process.Pid)
	}
	st, err := Read(cmd.Process.Pid)
	if err != nil || st.PPID != os.Getpid() {
		t.Errorf("Read(%d) = %+v, %v; want parent %d", cmd.Process.Pid, st, err, os.Getpid())
	}
}
