package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func lineageOfFile(t *testing.T, path string) (string, uint64) {
	t.Helper()
	var h struct {
		Lineage string
		Serial  uint64
	}
	if err := json.Unmarshal(readFile(t, path), &h); err != nil {
		t.Fatal(err)
	}
	return h.Lineage, h.Serial
}

func saveTrials(t *testing.T, m *Manager, s *State, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		e := s.Experiments["e"]
		if e == nil {
			e = &Experiment{Name: "e", ID: "abcdefgh", Trials: map[string]*Trial{}}
			s.Experiments["e"] = e
		}
		id := "t000" + string(rune('0'+i))
		e.Trials[id] = &Trial{ID: id, Seq: i, Status: Succeeded}
		if err := m.Save(s); err != nil {
			t.Fatal(err)
		}
	}
}

// A state that was lost (state.json removed) and started again must not
// overwrite the backup of the lost lineage (issue 11, bug 14).
func TestBackupOfAnotherLineageIsKept(t *testing.T) {
	m := newManager(t)
	m.noJournal = true // backups are what the whole-file path keeps
	old := New()
	saveTrials(t, m, old, 4) // serial 4; backup holds serial 3
	if err := os.Remove(m.Path()); err != nil {
		t.Fatal(err)
	}
	lost, err := m.Lost()
	if err != nil {
		t.Fatal(err)
	}
	if lost == nil || len(lost.Backups) != 1 || lost.Backups[0].Lineage != old.Lineage || lost.Backups[0].Serial != 3 || lost.Backups[0].Trials != 3 {
		t.Fatalf("Lost() = %+v, want the backup of lineage %s serial 3 with 3 trials", lost, old.Lineage)
	}
	if !strings.Contains(lost.String(), "import -all") || !strings.Contains(lost.String(), "state.json.backup") {
		t.Errorf("Lost().String() does not say how to recover:\n%s", lost)
	}

	m2 := NewManager(m.Dir()) // a new process
	m2.noJournal = true
	s := New()
	saveTrials(t, m2, s, 3)
	var found []string
	ents, _ := os.ReadDir(m.Dir())
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), FileName+backupSuffix) {
			continue
		}
		lin, serial := lineageOfFile(t, filepath.Join(m.Dir(), e.Name()))
		if lin == old.Lineage && serial == 3 {
			found = append(found, e.Name())
		}
	}
	if len(found) != 1 || found[0] != FileName+backupSuffix+"."+old.Lineage[:8] {
		t.Fatalf("backup of the lost lineage: found %v in %v, want it kept as %s", found, dirNames(t, m), FileName+backupSuffix+"."+old.Lineage[:8])
	}
	if lin, serial := lineageOfFile(t, m.Path()+backupSuffix); lin != s.Lineage || serial != 2 {
		t.Errorf("state.json.backup holds lineage %s serial %d, want the new lineage's serial 2", lin, serial)
	}
	if lost, err := m2.Lost(); err != nil || lost != nil {
		t.Errorf("Lost() with a state file = %v, %v; want nil", lost, err)
	}
}

func TestLostWithoutAnything(t *testing.T) {
	m := newManager(t)
	if lost, err := m.Lost(); err != nil || lost != nil {
		t.Fatalf("Lost() in an empty dir = %v, %v", lost, err)
	}
	// Metric series without a state are a trace of a lost state too.
	if err := m.AppendMetrics("exp", "t0000", []MetricPoint{{Type: "FINAL", Sequence: 0, Value: json.RawMessage("1")}}); err != nil {
		t.Fatal(err)
	}
	lost, err := m.Lost()
	if err != nil || lost == nil || len(lost.Experiments) != 1 || lost.Experiments[0] != "exp" {
		t.Fatalf("Lost() with metrics of exp = %+v, %v", lost, err)
	}
}

// Saving a symlinked state.json writes through the link: the link stays
// and its target gets the new content (issue 11, item 15).
func TestSaveThroughSymlink(t *testing.T) {
	m := newManager(t)
	if err := os.MkdirAll(m.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "kept")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(elsewhere, "real.json")
	s := New()
	if err := NewManager(elsewhere).Save(s); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(elsewhere, FileName), target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, m.Path()); err != nil {
		t.Fatal(err)
	}
	s, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	saveTrials(t, m, s, 2)
	fi, err := os.Lstat(m.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("state.json is a %v after Save, want the symlink kept", fi.Mode())
	}
	if _, serial := lineageOfFile(t, target); serial != s.Serial || serial != 3 {
		t.Fatalf("the link's target has serial %d, want %d", serial, s.Serial)
	}
	if _, serial := lineageOfFile(t, m.Path()+backupSuffix); serial != 2 {
		t.Fatalf("backup serial %d, want 2", serial)
	}
	for _, d := range []string{m.Dir(), elsewhere} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), tempPrefix) {
				t.Errorf("temporary file %s left in %s", e.Name(), d)
			}
		}
	}
}
