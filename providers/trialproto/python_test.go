package trialproto

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestInstallPython(t *testing.T) {
	dir := t.TempDir()
	if err := InstallPython(dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "nni", "__init__.py")
	fi1, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if err := InstallPython(dir); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(p); !fi2.ModTime().Equal(fi1.ModTime()) {
		t.Error("an unchanged helper was rewritten")
	}
	if err := os.WriteFile(filepath.Join(dir, "trialform.py"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := InstallPython(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "trialform.py")); string(b) == "stale" {
		t.Error("a stale helper was kept")
	}
}
