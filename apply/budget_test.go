package apply

import (
	"context"
	"testing"
	"time"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// Issue 25, item 1: a trial torn down past its own max_duration used its
// budget slot. It ended CANCELED, which max_trials does not count, so an
// experiment whose trials all ran too long started new ones for ever.
func TestTrialMaxDurationUsesTheBudget(t *testing.T) {
	store := &memStore{}
	cfg := config(1, 2)
	cfg.Experiments["exp"].Trial.MaxDuration = time.Minute
	s, _ := newSession(cfg, store)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	var p *plan.Plan
	for pass := 0; pass < 8; pass++ {
		var err error
		p, err = s.Plan(context.Background(), plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * time.Minute) // every trial runs past its max_duration
	}
	e := store.last().Experiments["exp"]
	if len(e.Trials) != 2 {
		t.Fatalf("%d trials started for max_trials = 2", len(e.Trials))
	}
	for _, tr := range e.Trials {
		if tr.Status != state.EarlyStopped || tr.Reason != "trial max_duration (1m0s) exceeded" {
			t.Errorf("%s: %s %q, want EARLY_STOPPED past its max_duration", tr.ID, tr.Status, tr.Reason)
		}
	}
	ep := p.Experiments[0]
	if !ep.Done || ep.Progress.BudgetUsed != 2 {
		t.Errorf("done %v (%s), budget used %d; want done with 2 of 2 used", ep.Done, ep.DoneReason, ep.Progress.BudgetUsed)
	}
}
