package apply

import (
	"testing"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// TestFinishedLeavesElsewhere: apply -wait stops waiting once what is left
// runs in another working copy (only that one records its end: waiting
// here would never end), but not while a trial of its own runs.
func TestFinishedLeavesElsewhere(t *testing.T) {
	elsewhere := []plan.ElsewhereTrial{{TrialID: "t0000", Status: state.Running, Where: "alice@lab:/x/.trialform"}}
	ep := func(running int, else_ []plan.ElsewhereTrial) *plan.Plan {
		return &plan.Plan{Experiments: []*plan.ExperimentPlan{{
			Name: "exp", Action: plan.NoOp, Elsewhere: else_,
			Progress: plan.Progress{ByStatus: map[string]int{state.Running: running}},
		}}}
	}
	if !Finished(ep(1, elsewhere)) {
		t.Error("only a trial elsewhere runs: not finished")
	}
	if Finished(ep(2, elsewhere)) {
		t.Error("a trial of this working copy runs too: finished")
	}
	if Finished(ep(1, nil)) {
		t.Error("a trial of this working copy runs: finished")
	}
}
