package apply

import (
	"context"
	"fmt"
	"testing"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/state"
)

// unreachableStopper cannot stop a trial while its machine is away (the
// first down calls), as the remote platform's backed-off machine.
type unreachableStopper struct {
	*recorder
	down, calls int
}

func (u *unreachableStopper) Stop(ctx context.Context, req providers.StopRequest) error {
	u.calls++
	if u.calls <= u.down {
		return fmt.Errorf("stop of trial %s waits for its machine m1:22: machine m1:22 unreachable: %w", req.TrialID, providers.ErrUnreachable)
	}
	return u.recorder.Stop(ctx, req)
}

// In the run loop (apply -wait, watch), a teardown whose trial's machine
// cannot be reached now waits for it: the pass does not fail (five failed
// passes in a row end the loop), the trial keeps its teardown intent, and
// a later pass stops it. A single apply still says it failed.
func TestTeardownWaitsForUnreachableMachine(t *testing.T) {
	store := &memStore{}
	s, rec := newSession(config(1, 1), store)
	p, err := s.Plan(context.Background(), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	us := &unreachableStopper{recorder: rec, down: 7}
	s.Providers = oneProvider{us}
	stop := &plan.Plan{Experiments: []*plan.ExperimentPlan{{Name: "exp", Trials: []*plan.TrialAction{
		{Action: plan.Teardown, Experiment: "exp", TrialID: "t0000", Cause: plan.CauseStop, Reason: "stopped"},
	}}}}
	if err := s.Apply(context.Background(), stop); err == nil || IsSkipped(err) {
		t.Errorf("single apply, machine away: %v, want the failure", err)
	}
	s.handoff = true // as in Run
	for pass := 2; pass <= 7; pass++ {
		if err := s.Apply(context.Background(), stop); err != nil && !onlySkipped(err) {
			t.Fatalf("pass %d of the run loop, machine away: %v, want the teardown to wait", pass, err)
		}
		tr := store.last().Experiments["exp"].Trials["t0000"]
		if tr.Status != state.Running || tr.Stopping == nil {
			t.Fatalf("pass %d: t0000 %s stopping %v, want RUNNING with its teardown intent kept", pass, tr.Status, tr.Stopping)
		}
	}
	if err := s.Apply(context.Background(), stop); err != nil {
		t.Fatalf("machine back: %v", err)
	}
	if tr := store.last().Experiments["exp"].Trials["t0000"]; !state.Terminal(tr.Status) || rec.stopped["t0000"] != 1 {
		t.Errorf("machine back: t0000 %s, stopped %d times, want it stopped once", tr.Status, rec.stopped["t0000"])
	}
}
