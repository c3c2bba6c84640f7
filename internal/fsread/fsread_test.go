package fsread

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// No writer: a plain open would block for ever.
	var nr *NotRegularError
	if _, err := ReadFile(fifo, MaxConfig); !errors.As(err, &nr) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("fifo: %v", err)
	}
	if _, err := ReadFile("/dev/zero", MaxConfig); !errors.As(err, &nr) || !strings.Contains(err.Error(), "character device") {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := ReadFile(dir, MaxConfig); !errors.As(err, &nr) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("dir: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), MaxConfig); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1001), 0o644); err != nil {
		t.Fatal(err)
	}
	var tl *TooLargeError
	if _, err := ReadFile(big, 1000); !errors.As(err, &tl) || !IsRefused(err) {
		t.Errorf("big: %v", err)
	}
	if b, err := ReadFile(big, 1001); err != nil || len(b) != 1001 {
		t.Errorf("at the limit: %d, %v", len(b), err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(big, link); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(link, 2000); err != nil || len(b) != 1001 {
		t.Errorf("symlink to a regular file: %d, %v", len(b), err)
	}
}
