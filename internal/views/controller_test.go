package views

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trialform/trialform/plan"
)

// The controller's view of apply's progress logs each action done (not
// its start), a failure as an error, and each observed change, one JSON
// record a line.
func TestApplyLog(t *testing.T) {
	var b bytes.Buffer
	h := ApplyLog{Log: ControllerLog(&b)}
	a := &plan.TrialAction{Action: plan.Create, Experiment: "mnist", TrialID: "t0001"}
	h.TrialAction(a, false, nil)
	h.TrialAction(a, true, nil)
	h.TrialAction(a, true, errors.New("no capacity"))
	h.Observed(plan.Observed{Experiment: "mnist", TrialID: "t0001", Before: "running", After: "succeeded"})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d records, want 3:\n%s", len(lines), b.String())
	}
	want := []map[string]string{
		{"level": "INFO", "msg": "trial create", "experiment": "mnist", "trial": "t0001"},
		{"level": "ERROR", "msg": "trial action failed", "action": "create", "error": "no capacity"},
		{"level": "INFO", "msg": "observed", "before": "running", "after": "succeeded"},
	}
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("record %d is not JSON: %v: %s", i, err, l)
		}
		for k, v := range want[i] {
			if rec[k] != v {
				t.Errorf("record %d: %s = %v, want %q (%s)", i, k, rec[k], v, l)
			}
		}
	}
}
