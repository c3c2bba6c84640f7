package ui

import (
	"path/filepath"
	"testing"

	"github.com/trialform/trialform/state"
)

// Saves append to the state journal and leave state.json as it is: the
// dashboard's cached snapshot must still see each of them.
func TestStoreSeesJournalChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".trialform")
	m := state.NewManager(dir)
	st := state.New()
	st.Experiments["e"] = &state.Experiment{Name: "e", ID: "abcdefgh", Trials: map[string]*state.Trial{}}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	d := newStore(Options{StateDir: dir})
	if sn := d.current(); sn.err != nil || sn.st.Serial != 1 {
		t.Fatalf("first snapshot: serial %d, %v", sn.st.Serial, sn.err)
	}
	for i, id := range []string{"t0000", "t0001", "t0002"} {
		st.Experiments["e"].Trials[id] = &state.Trial{ID: id, Status: state.Running}
		if err := m.Save(st); err != nil {
			t.Fatal(err)
		}
		sn := d.current()
		if sn.err != nil || sn.st.Serial != uint64(i+2) || len(sn.st.Experiments["e"].Trials) != i+1 {
			t.Fatalf("after save %d: serial %d, %d trials, %v", i+2, sn.st.Serial, len(sn.st.Experiments["e"].Trials), sn.err)
		}
	}
}
