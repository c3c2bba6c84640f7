package apply

import (
	"context"
	"testing"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// A start handed off to the platform's supervisor (the run loop's) is not
// saved on its own: the trial is recorded as being created before Start,
// and the next save carries the start. A single apply saves each start.
func TestHandedOffStartIsSavedWithTheNextChange(t *testing.T) {
	for _, handoff := range []bool{false, true} {
		store := &memStore{}
		s, _ := newSession(config(2, 2), store)
		s.handoff = handoff
		p, err := s.Plan(context.Background(), plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Apply(context.Background(), p)
		last := store.last()
		for _, id := range []string{"t0000", "t0001"} {
			tr := last.Experiments["exp"].Trials[id]
			switch {
			case tr == nil:
				t.Fatalf("handoff=%v: %s not saved at all", handoff, id)
			case !handoff && tr.Status != state.Running:
				t.Errorf("handoff=%v: saved %s is %s, want RUNNING", handoff, id, tr.Status)
			case handoff && tr.Status != state.Waiting:
				t.Errorf("handoff=%v: saved %s is %s, want WAITING (its start not saved on its own)", handoff, id, tr.Status)
			}
			if got := s.view().Experiments["exp"].Trials[id]; got.Status != state.Running {
				t.Errorf("handoff=%v: %s in memory is %s, want RUNNING", handoff, id, got.Status)
			}
		}
		if !handoff {
			continue
		}
		if err := s.change(func(st *state.State) { st.Experiments["exp"].Trials["t0000"].Reason = "x" }); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"t0000", "t0001"} {
			if tr := store.last().Experiments["exp"].Trials[id]; tr.Status != state.Running || tr.Attempts != 1 {
				t.Errorf("after the next save %s is %s (%d attempts), want RUNNING (1)", id, tr.Status, tr.Attempts)
			}
		}
	}
}
