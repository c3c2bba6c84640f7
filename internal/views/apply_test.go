package views

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

var errWaits = errors.New("waiting for capacity")

// drive plays one apply through a view: three trials started, resumed and
// torn down, one skipped, one failed, an observed failure, a failed
// experiment, the summary.
func drive(v Apply) {
	acts := []*plan.TrialAction{
		{Experiment: "e", TrialID: "t0", Action: plan.Create, Params: map[string]any{"lr": 0.1}},
		{Experiment: "e", TrialID: "t1", Action: plan.Resume},
		{Experiment: "e", TrialID: "t2", Action: plan.Teardown, Reason: "generation 2"},
		{Experiment: "e", TrialID: "t3", Action: plan.Create},
		{Experiment: "e", TrialID: "t4", Action: plan.Create},
	}
	errs := []error{nil, nil, nil, errWaits, errors.New("quota exceeded")}
	for i, a := range acts {
		v.TrialAction(a, false, nil)
		v.TrialAction(a, true, errs[i])
	}
	v.Observed(plan.Observed{Experiment: "e", TrialID: "t0", Before: state.Running, After: state.Failed, Reason: "exit 1"})
	v.ExperimentFailed(&plan.ExperimentPlan{Name: "e", Failed: true, DoneReason: "max_failed_trials reached"})
	v.Summary(true)
}

// The human and the JSON view report the same things: each done action,
// each observed change, the failed experiment, the same counts.
func TestApplyViewsAgree(t *testing.T) {
	var human, stream bytes.Buffer
	skipped := func(err error) bool { return errors.Is(err, errWaits) }
	where := func(exp, id string) string { return "gpu-" + id }
	hv := NewApply(ApplyOptions{Out: &human, Skipped: skipped, Where: where})
	jv := NewApply(ApplyOptions{Events: NewEvents(&stream), Skipped: skipped, Where: where})
	drive(hv)
	drive(jv)

	wantHuman := []string{
		"  + e/t0 started on gpu-t0  lr=0.1",
		"  ~ e/t1 resumed on gpu-t1",
		"  - e/t2 torn down (generation 2)",
		"  . e/t3: waiting for capacity",
		"  ! e/t4: create failed: quota exceeded",
		"  e/t0 FAILED (exit 1); see `trialform logs e t0`",
		"Error: experiment e failed: max_failed_trials reached",
		"Apply complete, but an experiment failed (exit status 4). Trials: 1 created, 1 resumed, 1 torn down.",
	}
	for _, w := range wantHuman {
		if !strings.Contains(human.String(), w+"\n") {
			t.Errorf("human output lacks %q:\n%s", w, human.String())
		}
	}

	var types []string
	var summary *ChangeSummaryJSON
	sc := bufio.NewScanner(&stream)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		types = append(types, e.Type)
		if e.Type == "apply_complete" && e.Hook.Machine != "gpu-"+e.Hook.Trial && e.Hook.Action != plan.Teardown {
			t.Errorf("apply_complete of %s names machine %q", e.Hook.Trial, e.Hook.Machine)
		}
		if e.Changes != nil {
			summary = e.Changes
		}
	}
	count := func(typ string) int {
		n := 0
		for _, x := range types {
			if x == typ {
				n++
			}
		}
		return n
	}
	if count("apply_start") != 5 || count("apply_complete") != 3 || count("apply_errored") != 2 || count("trial_status") != 1 || count("diagnostic") != 1 {
		t.Errorf("events %v", types)
	}
	if summary == nil || *summary != (ChangeSummaryJSON{Operation: "apply", Create: hv.Count(plan.Create), Resume: hv.Count(plan.Resume), Teardown: hv.Count(plan.Teardown)}) {
		t.Errorf("JSON summary %+v, human counts %d/%d/%d", summary, hv.Count(plan.Create), hv.Count(plan.Resume), hv.Count(plan.Teardown))
	}
}

// TestApplyHumanSaysAWaitOnce: apply -wait and watch retry a waiting
// trial every pass; its reason is printed when it changes, not each time
// (a remote run repeated "skipped: no free GPU" for every trial, every
// pass).
func TestApplyHumanSaysAWaitOnce(t *testing.T) {
	var out bytes.Buffer
	v := NewApply(ApplyOptions{Out: &out, Skipped: func(err error) bool { return errors.Is(err, errWaits) }})
	a := &plan.TrialAction{Experiment: "e", TrialID: "t0", Action: plan.Create}
	other := fmt.Errorf("no free GPU on gpu-1: %w", errWaits)
	for _, err := range []error{errWaits, errWaits, errWaits, other, other, nil, errWaits} {
		v.TrialAction(a, true, err)
	}
	if got, want := strings.Count(out.String(), "e/t0: waiting for capacity"), 2; got != want {
		t.Errorf("the same wait said %d times, want %d (once, and again after the trial started):\n%s", got, want, out.String())
	}
	if got := strings.Count(out.String(), "no free GPU on gpu-1"); got != 1 {
		t.Errorf("a new reason said %d times, want 1:\n%s", got, out.String())
	}
}

// apply -wait and watch print a warning that came with a pass's plan
// (which they do not print) once, and not one the plan shown held.
func TestPassPrintsNewWarningsOnce(t *testing.T) {
	var human bytes.Buffer
	var stream bytes.Buffer
	for _, v := range []Apply{NewApply(ApplyOptions{Out: &human}), NewApply(ApplyOptions{Events: NewEvents(&stream)})} {
		v.Plan(&plan.Plan{Warnings: []string{"foreign trial"}}, false)
		v.Pass(&plan.Plan{Warnings: []string{"foreign trial", "platform kubernetes.k: cannot watch"}}, nil)
		v.Pass(&plan.Plan{Warnings: []string{"foreign trial", "platform kubernetes.k: cannot watch"}}, nil)
	}
	if n := strings.Count(human.String(), "Warning: platform kubernetes.k: cannot watch"); n != 1 {
		t.Errorf("human: the new warning printed %d times, want 1:\n%s", n, human.String())
	}
	if n := strings.Count(human.String(), "foreign trial"); n != 1 {
		t.Errorf("human: the plan's warning printed %d times, want 1:\n%s", n, human.String())
	}
	if n := strings.Count(stream.String(), `"@message":"platform kubernetes.k: cannot watch"`); n != 1 {
		t.Errorf("json: the new warning emitted %d times, want 1:\n%s", n, stream.String())
	}
}

// apply -wait's bar counted the max_trials of every experiment in the
// configuration: with -target experiment.a (2 trials) beside b (3), it
// ended at 40% (2/5); an experiment done before its budget (max_duration)
// left it short too. It ends full.
func TestApplyBarEndsFull(t *testing.T) {
	for _, c := range []struct {
		name string
		ep   *plan.ExperimentPlan
		want string
	}{
		{"a target", &plan.ExperimentPlan{Name: "a", Done: true, DoneReason: "budget used (2 trials)", Settings: plan.Settings{MaxTrials: 2},
			Progress: plan.Progress{Total: 2, ByStatus: map[string]int{"SUCCEEDED": 2}, Generation: 1, GenerationTotal: 2,
				GenerationByStatus: map[string]int{"SUCCEEDED": 2}, GenerationEnded: 2}}, "(2/2"},
		{"max_duration", &plan.ExperimentPlan{Name: "a", Done: true, DoneReason: "max_duration (1m) reached", Settings: plan.Settings{MaxTrials: 5},
			Progress: plan.Progress{Total: 3, ByStatus: map[string]int{"SUCCEEDED": 1, "CANCELED": 2}, Generation: 1, GenerationTotal: 3,
				GenerationByStatus: map[string]int{"SUCCEEDED": 1, "CANCELED": 2}, GenerationEnded: 1}}, "(1/1"},
	} {
		var b bytes.Buffer
		v := NewApply(ApplyOptions{Out: &b, TTY: true})
		v.WaitStart(5)
		v.Pass(&plan.Plan{Experiments: []*plan.ExperimentPlan{c.ep}}, nil)
		v.WaitEnd()
		if !strings.Contains(b.String(), "100%") || !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: want 100%% and %s in the bar:\n%q", c.name, c.want, b.String())
		}
	}
	// A running experiment counts its max_trials.
	var b bytes.Buffer
	v := NewApply(ApplyOptions{Out: &b, TTY: true})
	v.WaitStart(9)
	v.Pass(&plan.Plan{Experiments: []*plan.ExperimentPlan{{Name: "a", Settings: plan.Settings{MaxTrials: 4},
		Progress: plan.Progress{Total: 2, ByStatus: map[string]int{"SUCCEEDED": 1, "RUNNING": 1}, Generation: 1, GenerationTotal: 2,
			GenerationByStatus: map[string]int{"SUCCEEDED": 1, "RUNNING": 1}, GenerationEnded: 1}}}}, nil)
	v.WaitEnd()
	if !strings.Contains(b.String(), "(1/4") {
		t.Errorf("running: want (1/4 in the bar:\n%q", b.String())
	}
}

// Trials that wait for the same thing (every start skipped because a
// machine does not answer) are told it once: the others say they wait
// too, naming the trial whose line said why.
func TestApplyHumanSaysASharedWaitOnce(t *testing.T) {
	var out bytes.Buffer
	v := NewApply(ApplyOptions{Out: &out, Skipped: func(err error) bool { return errors.Is(err, errWaits) }})
	down := fmt.Errorf("no machine of lab can be reached: machine m1:22 unreachable: connection refused: %w", errWaits)
	for _, id := range []string{"t0", "t1", "t2"} {
		v.TrialAction(&plan.TrialAction{Experiment: "e", TrialID: id, Action: plan.Create}, true, down)
	}
	if n := strings.Count(out.String(), "machine m1:22 unreachable"); n != 1 {
		t.Errorf("the shared reason said %d times, want 1:\n%s", n, out.String())
	}
	for _, w := range []string{"e/t1: waits too, as e/t0", "e/t2: waits too, as e/t0"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output does not say %q:\n%s", w, out.String())
		}
	}
	// Once t0 started, the next trial that waits for it says why again.
	v.TrialAction(&plan.TrialAction{Experiment: "e", TrialID: "t0", Action: plan.Create}, true, nil)
	v.TrialAction(&plan.TrialAction{Experiment: "e", TrialID: "t3", Action: plan.Create}, true, down)
	if n := strings.Count(out.String(), "machine m1:22 unreachable"); n != 2 {
		t.Errorf("the reason said %d times after the trial that said it started, want 2:\n%s", n, out.String())
	}
}
