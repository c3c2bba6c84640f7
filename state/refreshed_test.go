package state

import (
	"os"
	"path/filepath"
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
