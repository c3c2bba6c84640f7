package command

import (
	"testing"

	"github.com/trialform/trialform/plan"
)

// A held plan is printed once, not again each time one of the trials it
// would tear down finishes (issue 25 item 17); a plan that would destroy
// something else is printed again.
func TestHeldPlanKeyIgnoresCounts(t *testing.T) {
	held := func(n int, name string) string {
		ep := &plan.ExperimentPlan{Name: name}
		for range n {
			ep.Trials = append(ep.Trials, &plan.TrialAction{Action: plan.Teardown, Cause: plan.CauseGeneration})
		}
		return heldKey((&plan.Plan{Experiments: []*plan.ExperimentPlan{ep}}).Destructive())
	}
	if a, b := held(3, "w"), held(2, "w"); a != b {
		t.Errorf("3 then 2 trials to tear down print the held plan again: %q != %q", a, b)
	}
	if a, b := held(3, "w"), held(3, "v"); a == b {
		t.Errorf("another experiment's teardown is not printed: %q", a)
	}
}
