package fsx

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadWrite(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 511, 512, 513, 70000} {
		want := bytes.Repeat([]byte("x"), n)
		p := filepath.Join(dir, "f")
		if err := WriteFile(p, want, 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: read %d, %v", n, len(got), err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&^0o640 != 0 {
			t.Fatalf("mode %v, %v", fi.Mode(), err)
		}
	}
	// A /proc file says its size is 0 but is not empty.
	b, err := ReadFile("/proc/self/stat")
	if err != nil || !strings.Contains(string(b), "(") {
		t.Fatalf("/proc/self/stat: %q, %v", b, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// The descriptors are close-on-exec, and blocking (not in the poller).
func TestOpenFileFlags(t *testing.T) {
	f, err := OpenFile(filepath.Join(t.TempDir(), "f"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fdFlags, _, e := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFD, 0)
	if e != 0 || fdFlags&syscall.FD_CLOEXEC == 0 {
		t.Errorf("F_GETFD = %#x, %v: not close-on-exec", fdFlags, e)
	}
	flFlags, _, e := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	if e != 0 || flFlags&syscall.O_NONBLOCK != 0 || flFlags&syscall.O_APPEND == 0 {
		t.Errorf("F_GETFL = %#x, %v", flFlags, e)
	}
	if _, err := f.WriteString("a"); err != nil {
		t.Fatal(err)
	}
}

func TestCreateTemp(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for range 50 {
		f, err := CreateTemp(dir, ".x.tmp-")
		if err != nil {
			t.Fatal(err)
		}
		name := f.Name()
		f.Close()
		if seen[name] || !strings.HasPrefix(filepath.Base(name), ".x.tmp-") || filepath.Dir(name) != dir {
			t.Fatalf("temp name %q", name)
		}
		seen[name] = true
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", name, fi, err)
		}
	}
}
