package apply

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

type moveRecorder struct {
	memStore
	moved []string
}

func (m *moveRecorder) MoveMetrics(from, to string) error {
	m.moved = append(m.moved, from+">"+to)
	return nil
}

func movedBlock(from, to string) *schema.Moved {
	return &schema.Moved{From: from, To: to, DeclRange: hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: 12}}}
}

// A moved block renames the experiment in the state before refresh (its
// metric series first), and the plan lists the move; a second plan has
// nothing to move.
func TestMovedBlockRenames(t *testing.T) {
	store := &moveRecorder{}
	cfg := config(1, 2)
	s, rec := newSession(cfg, &store.memStore)
	s.Store = store
	rec.store = &store.memStore
	p, err := s.Plan(context.Background(), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}

	cfg.Experiments["renamed"] = cfg.Experiments["exp"]
	delete(cfg.Experiments, "exp")
	cfg.Experiments["renamed"].Name = "renamed"
	cfg.Moved = []*schema.Moved{movedBlock("exp", "renamed")}
	p, err = s.Plan(context.Background(), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Moves) != 1 || p.Moves[0] != (plan.Move{From: "exp", To: "renamed", Pos: "main.hcl:12"}) {
		t.Fatalf("plan moves = %+v", p.Moves)
	}
	if strings.Join(store.moved, " ") != "exp>renamed" {
		t.Errorf("metrics moved: %v", store.moved)
	}
	saved := store.last()
	e := saved.Experiments["renamed"]
	if saved.Experiments["exp"] != nil || e == nil || e.OnPlatform() != "exp" || e.Trials["t0000"] == nil {
		t.Fatalf("saved state after the move: %+v", saved.Experiments)
	}
	for _, a := range p.Experiments[0].Trials {
		if a.Action == plan.Teardown {
			t.Errorf("the move tears down %s", a.TrialID)
		}
	}
	// the trial keeps being read under its platform name and stays RUNNING
	if st := s.State().Experiments["renamed"].Trials["t0000"].Status; st != state.Running {
		t.Errorf("t0000 is %s after the move", st)
	}
	p, err = s.Plan(context.Background(), plan.Options{})
	if err != nil || len(p.Moves) != 0 {
		t.Fatalf("second plan: moves %v, err %v", p.Moves, err)
	}
}

func TestMovedBlockOntoExistingExperiment(t *testing.T) {
	store := &memStore{}
	cfg := config(1, 2)
	s, _ := newSession(cfg, store)
	st := s.State()
	st.Experiments["old"] = &state.Experiment{Name: "old", Trials: map[string]*state.Trial{}}
	st.Experiments["exp"] = &state.Experiment{Name: "exp", Trials: map[string]*state.Trial{}}
	s = NewSession(cfg, st, store, s.Providers)
	cfg.Moved = []*schema.Moved{movedBlock("old", "exp")}
	_, err := s.Plan(context.Background(), plan.Options{})
	if err == nil || !strings.Contains(err.Error(), "main.hcl:12: moved block: cannot move experiment.old to experiment.exp: both are in the state") {
		t.Fatalf("err = %v", err)
	}
}
