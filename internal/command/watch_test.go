package command

import (
	"bytes"
	"testing"

	"github.com/trialform/trialform/plan"
)

func TestStatusWriter(t *testing.T) {
	var buf bytes.Buffer
	s := &statusWriter{w: &buf, tty: true}
	s.Write([]byte("line 1\n"))
	s.setStatus("watch · 2 running")
	s.Write([]byte("line 2\n"))
	s.setStatus("watch · 3 running")
	s.clearStatus()
	want := "line 1\n" +
		"watch · 2 running" +
		"\r\x1b[2K" + "line 2\n" + "watch · 2 running" +
		"\r\x1b[2K" + "watch · 3 running" +
		"\r\x1b[2K"
	if got := buf.String(); got != want {
		t.Fatalf("terminal output\n got %q\nwant %q", got, want)
	}

	// Not a terminal: lines only, never a status line or escape codes.
	buf.Reset()
	s = &statusWriter{w: &buf}
	s.setStatus("watch · 2 running")
	s.Write([]byte("line\n"))
	s.clearStatus()
	if got := buf.String(); got != "line\n" {
		t.Fatalf("plain output %q", got)
	}
}

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
