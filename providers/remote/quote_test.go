package remote

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestShellQuoting runs every quoted word through a real /bin/sh.
func TestShellQuoting(t *testing.T) {
	words := []string{"", "plain", "a b", "it's", `"; rm -rf ~; "`, "$(id)", "`id`", "x=1", "-n", "~", "*", "a\nb", "\\", "'", "''", "%s"}
	for _, w := range words {
		out, err := exec.Command("/bin/sh", "-c", "printf '%s' "+shq(w)).Output()
		if err != nil || string(out) != w {
			t.Errorf("shq(%q) -> %s printed %q (%v)", w, shq(w), out, err)
		}
	}
	// An assignment-looking first word stays a command name.
	if got := shline("x=1", "y"); got != "'x=1' y" {
		t.Errorf("shline = %s", got)
	}
}

// A file of the code dir that vanishes between the walk and the hash
// (a trial writing into its code dir, another trial's files under it) is
// left out of the bundle instead of failing every start with "no such
// file" (seen in injection_remote.txtar under load).
func TestCodeBundleFileVanishes(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"keep.py", "gone.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := codeBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "gone.log")); err != nil {
		t.Fatal(err)
	}
	if err := b.computeHash(); err != nil {
		t.Fatalf("hash after a file vanished: %v", err)
	}
	var names []string
	for _, e := range b.entries {
		names = append(names, e.rel)
	}
	if len(names) != 1 || names[0] != "keep.py" {
		t.Fatalf("entries %v, want [keep.py]", names)
	}
}
