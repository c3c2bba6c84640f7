package views

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
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

// A trial action whose save met someone else's write of the state is said
// at WARN (the controller retries at its next pass), not as a failure.
func TestApplyLogConflict(t *testing.T) {
	var b bytes.Buffer
	h := ApplyLog{Log: ControllerLog(&b)}
	a := &plan.TrialAction{Action: plan.Create, Experiment: "w", TrialID: "t0001"}
	conflict := &state.ConflictError{Path: "db, experiment w", FileLineage: "l", StateLineage: "l", FileSerial: 7, StateSerial: 6}
	h.TrialAction(a, true, fmt.Errorf("save state: %w", conflict))
	var rec map[string]any
	if err := json.Unmarshal(b.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	if rec["level"] != "WARN" || !strings.Contains(rec["msg"].(string), "changed by someone else") || rec["trial"] != "t0001" {
		t.Fatalf("the record of a conflicted save: %s", b.String())
	}
}
