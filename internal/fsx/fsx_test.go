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
	"time"

	"golang.org/x/sys/unix"
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

// A FIFO in a file's place (a trial's .nni/metrics, our own state files)
// is refused at once, for reading and for writing, instead of blocking in
// open(2) for a writer or a reader that never comes (issue 25, item E).
func TestOpenRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, open := range []func() error{
			func() error { _, err := Open(p); return err },
			func() error { _, err := ReadFile(p); return err },
			func() error { _, err := OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); return err },
			func() error { _, err := OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644); return err },
			func() error { return WriteFile(p, []byte("x"), 0o644) },
		} {
			err := open()
			var nr *NotRegularError
			if !errors.As(err, &nr) || nr.Mode&fs.ModeNamedPipe == 0 || !strings.Contains(err.Error(), "named pipe (FIFO)") {
				t.Errorf("got %v, want a *NotRegularError for a FIFO", err)
			}
		}
		if _, err := Open("/dev/zero"); !IsNotRegular(err) {
			t.Errorf("/dev/zero: got %v, want a *NotRegularError", err)
		}
		if _, err := Open(filepath.Dir(p)); !IsNotRegular(err) {
			t.Errorf("a directory: got %v, want a *NotRegularError", err)
		}
		if f, err := OpenFile(filepath.Dir(p), os.O_RDONLY|syscall.O_DIRECTORY, 0); err != nil {
			t.Errorf("a directory with O_DIRECTORY: %v", err)
		} else {
			f.Close()
		}
		// A regular file opens blocking, as before.
		r := filepath.Join(filepath.Dir(p), "r")
		if err := WriteFile(r, []byte("ok"), 0o644); err != nil {
			t.Error(err)
		}
		f, err := Open(r)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		if fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
			t.Errorf("a regular file's flags %#x, %v: want blocking", fl, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a guard only: the opens above return at once or hang for ever
		t.Fatal("an open of a FIFO blocked")
	}
}
