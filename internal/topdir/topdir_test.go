package topdir

import (
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// On ext4 (this machine's and CI's file system) Mark sets +T, as lsattr
// shows; elsewhere it may refuse, quietly.
func TestMark(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	ext4 := fs.Type == unix.EXT4_SUPER_MAGIC
	ok := Mark(dir)
	if ext4 && !ok {
		t.Fatalf("Mark(%s) on ext4 = false", dir)
	}
	if ok {
		out, err := exec.Command("lsattr", "-d", dir).Output()
		if err != nil {
			t.Fatalf("lsattr: %v", err)
		}
		if attrs := strings.Fields(string(out))[0]; !strings.Contains(attrs, "T") {
			t.Fatalf("Mark = true, lsattr says %q", attrs)
		}
		if !Mark(dir) {
			t.Fatal("a second Mark says false")
		}
	}
	if Mark(dir + "/missing") {
		t.Fatal("Mark of a missing dir = true")
	}
}
