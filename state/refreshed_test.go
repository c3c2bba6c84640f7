package state

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestRefreshedAt(t *testing.T) {
	m := NewManager(t.TempDir())
	if got := m.RefreshedAt("L"); len(got) != 0 {
		t.Fatalf("fresh dir: %v", got)
	}
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	if err := m.MarkRefreshed("L", []string{"a", "b"}, t0); err != nil {
		t.Fatal(err)
	}
	if err := m.MarkRefreshed("L", []string{"b"}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got := m.RefreshedAt("L")
	if !got["a"].Equal(t0) || !got["b"].Equal(t0.Add(time.Minute)) || len(got) != 2 {
		t.Errorf("RefreshedAt = %v", got)
	}
	// Another state's record (the state replaced) counts as never refreshed.
	if got := m.RefreshedAt("other"); len(got) != 0 {
		t.Errorf("foreign lineage: %v", got)
	}
	// A garbled file is advisory: never refreshed, and the next mark repairs it.
	os.WriteFile(filepath.Join(m.Dir(), refreshedFile), []byte("{garbage"), 0o644)
	if got := m.RefreshedAt("L"); len(got) != 0 {
		t.Errorf("garbled: %v", got)
	}
	if err := m.MarkRefreshed("L", []string{"a"}, t0); err != nil || !m.RefreshedAt("L")["a"].Equal(t0) {
		t.Errorf("repair: %v %v", err, m.RefreshedAt("L"))
	}
}

// Marks closer together than a second leave the file alone (apply's loop
// refreshes many times a second; each write replaces the file); a later
// one, another experiment, or a file changed meanwhile is written.
func TestMarkRefreshedWithinResolution(t *testing.T) {
	m := NewManager(t.TempDir())
	path := filepath.Join(m.Dir(), refreshedFile)
	ino := func() uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	if err := m.MarkRefreshed("L", []string{"a"}, t0); err != nil {
		t.Fatal(err)
	}
	first := ino()
	if err := m.MarkRefreshed("L", []string{"a"}, t0.Add(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if ino() != first || !m.RefreshedAt("L")["a"].Equal(t0) {
		t.Errorf("a mark 300 ms later rewrote the file: %v", m.RefreshedAt("L"))
	}
	if err := m.MarkRefreshed("L", []string{"a", "b"}, t0.Add(400*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if got := m.RefreshedAt("L"); !got["b"].Equal(t0.Add(400 * time.Millisecond)) {
		t.Errorf("a new experiment was not marked: %v", got)
	}
	if err := m.MarkRefreshed("L", []string{"a"}, t0.Add(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if got := m.RefreshedAt("L"); !got["a"].Equal(t0.Add(1500 * time.Millisecond)) {
		t.Errorf("a mark 1.5 s later was not written: %v", got)
	}
}
