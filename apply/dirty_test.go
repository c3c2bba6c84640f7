package apply

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/trialform/trialform/state"
)

// refStore is a real state.Manager that records what each save was told
// changed.
type refStore struct {
	*state.Manager
	mu    sync.Mutex
	named [][]state.TrialRef // one entry per PrepareTrials
	whole int                // Prepare calls (the whole state compared)
}

func (r *refStore) Prepare(s *state.State) (func() error, error) {
	r.mu.Lock()
	r.whole++
	r.mu.Unlock()
	return r.Manager.Prepare(s)
}

func (r *refStore) PrepareTrials(s *state.State, refs []state.TrialRef) (func() error, error) {
	r.mu.Lock()
	r.named = append(r.named, append([]state.TrialRef(nil), refs...))
	r.mu.Unlock()
	return r.Manager.PrepareTrials(s, refs)
}

// A trial change names its trial to the store (the save costs what
// changed), is durable, and does not show through a view taken before it
// (views share trials copy-on-write); a change that names nothing compares
// the whole state.
func TestTrialChangesSaveOnlyWhatChanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".trialform")
	m := state.NewManager(dir)
	st := state.New()
	e := &state.Experiment{Name: "e", ID: "abcdefgh", Trials: map[string]*state.Trial{}}
	for _, id := range []string{"t0", "t1", "t2"} {
		e.Trials[id] = &state.Trial{ID: id, Status: state.Running, Params: map[string]any{"x": 1.0}}
	}
	st.Experiments["e"] = e
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	r := &refStore{Manager: m}
	s := NewSession(nil, st, r, nil)

	v := s.view()
	ref := []state.TrialRef{{Experiment: "e", ID: "t1"}}
	if err := s.changeTrials(ref, func(st *state.State) {
		st.Experiments["e"].Trials["t1"].Status = state.Failed
		st.Experiments["e"].Trials["t1"].Params["x"] = 2.0
	}); err != nil {
		t.Fatal(err)
	}
	if got := v.Experiments["e"].Trials["t1"]; got.Status != state.Running {
		t.Errorf("a view taken before the change sees status %s, want RUNNING", got.Status)
	}
	if len(r.named) != 1 || len(r.named[0]) != 1 || r.named[0][0] != ref[0] || r.whole != 0 {
		t.Errorf("saves named %v (whole-state saves %d), want one naming e/t1", r.named, r.whole)
	}
	if err := s.change(func(st *state.State) { st.Experiments["e"].Trials["t2"].Reason = "x" }); err != nil {
		t.Fatal(err)
	}
	if r.whole != 1 {
		t.Errorf("a change naming nothing made %d whole-state saves, want 1", r.whole)
	}
	got, err := state.NewManager(dir).Load()
	if err != nil {
		t.Fatal(err)
	}
	if g := got.Experiments["e"]; g.Trials["t1"].Status != state.Failed || g.Trials["t2"].Reason != "x" || g.Trials["t0"].Status != state.Running {
		t.Errorf("reloaded: t0 %s, t1 %s, t2 reason %q", g.Trials["t0"].Status, g.Trials["t1"].Status, g.Trials["t2"].Reason)
	}
}
