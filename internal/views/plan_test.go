package views

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trialform/trialform/plan"
)

func TestPlanShowsDrift(t *testing.T) {
	diff := "--- running/exp/t0000\n+++ configured/exp/t0000\n@@ -1 +1 @@\n-image: a\n+image: b\n"
	ep := &plan.ExperimentPlan{Name: "exp", Action: plan.NoOp, Settings: plan.Settings{MaxTrials: 2},
		Progress: plan.Progress{ByStatus: map[string]int{"RUNNING": 2}},
		Drift:    []plan.TrialDrift{{TrialID: "t0000", Diff: diff}}}
	p := &plan.Plan{Experiments: []*plan.ExperimentPlan{ep}}
	var b bytes.Buffer
	Plan(&b, p, Colors{})
	want := `No changes. Trials are running; nothing to do until they finish.
  experiment.exp: 0/2 trials done, 2 running
    # trial t0000 runs with another spec than trialform would start it with now:
      --- running/exp/t0000
      +++ configured/exp/t0000
      @@ -1 +1 @@
      -image: a
      +image: b
    # trialform does not change running trials (restarting training is costly): they finish as they are;
    # new trials and resumes get the new spec. To restart one with it now, delete it on its platform
    # (on kubernetes, its Job): the next plan resumes it with the same id and parameters.
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	// Inside an experiment that changes, and in the JSON model.
	ep.Action = plan.Update
	ep.Trials = []*plan.TrialAction{{Action: plan.Create, TrialID: "t0002"}}
	p.Summary.Create = 1
	b.Reset()
	Plan(&b, p, Colors{})
	if !strings.Contains(b.String(), "      # trial t0000 runs with another spec") || !strings.Contains(b.String(), "        +image: b\n") {
		t.Errorf("in an update:\n%s", b.String())
	}
	b.Reset()
	PlanJSON(&b, p)
	if !strings.Contains(b.String(), `"drift": [`) || !strings.Contains(b.String(), `"trial_id": "t0000"`) {
		t.Errorf("json:\n%s", b.String())
	}
}

// A create that repeats an earlier trial (metis) shows why, in both
// renderings.
func TestPlanShowsRepeatOf(t *testing.T) {
	ep := &plan.ExperimentPlan{Name: "exp", Action: plan.Update, Settings: plan.Settings{MaxTrials: 20},
		Trials: []*plan.TrialAction{{Action: plan.Create, TrialID: "t0017", Seq: 17, Params: map[string]any{"x": 0.6},
			RepeatOf: 9, Reason: "repeat_of t0009: the result of trial 9 lies 4.2 standard deviations from what the other trials predict"}}}
	p := &plan.Plan{Experiments: []*plan.ExperimentPlan{ep}}
	p.Summary.Create = 1
	var b bytes.Buffer
	Plan(&b, p, Colors{})
	if !strings.Contains(b.String(), "+ trial t0017  x=0.6\n        # repeat_of t0009: the result of trial 9 lies 4.2") {
		t.Errorf("human:\n%s", b.String())
	}
	b.Reset()
	PlanJSON(&b, p)
	if !strings.Contains(b.String(), `"repeat_of": 9`) {
		t.Errorf("json:\n%s", b.String())
	}
}

// Issue 25, item 1: the status line counts the generation the budget
// counts and, once other generations exist, says so ("16/8 trials done"
// mixed every generation's trials).
func TestStatusLinePerGeneration(t *testing.T) {
	best := 0.9
	ep := &plan.ExperimentPlan{Name: "exp", Settings: plan.Settings{MaxTrials: 8}, Done: true, DoneReason: "budget used (8 trials)",
		Progress: plan.Progress{Total: 16, ByStatus: map[string]int{"SUCCEEDED": 14, "FAILED": 2}, Best: &best, BestTrial: "t0003",
			Generation: 2, GenerationTotal: 8, GenerationByStatus: map[string]int{"SUCCEEDED": 7, "FAILED": 1}, GenerationEnded: 8, BudgetUsed: 8}}
	want := "experiment.exp: generation 2: 8/8 trials done, 1 failed; 16 in all, best 0.9 (t0003); done: budget used (8 trials)"
	if got := StatusLine(ep); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if n := Ended(ep); n != 8 {
		t.Errorf("Ended = %d, want the generation's 8", n)
	}
	// One generation only: the line as it always was.
	ep.Progress = plan.Progress{Total: 8, ByStatus: map[string]int{"SUCCEEDED": 7, "FAILED": 1}, Best: &best, BestTrial: "t0003",
		Generation: 1, GenerationTotal: 8, GenerationByStatus: map[string]int{"SUCCEEDED": 7, "FAILED": 1}, GenerationEnded: 8, BudgetUsed: 8}
	want = "experiment.exp: 8/8 trials done, 1 failed, best 0.9 (t0003); done: budget used (8 trials)"
	if got := StatusLine(ep); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A plan with nothing to do because the experiment is paused said
// "Trials are running; nothing to do until they finish." with every
// trial PAUSED and none running.
func TestNoChangesNamesPaused(t *testing.T) {
	paused := &plan.ExperimentPlan{Name: "p", Action: plan.NoOp, Paused: true, Settings: plan.Settings{MaxTrials: 4},
		Progress: plan.Progress{Total: 2, ByStatus: map[string]int{"PAUSED": 2}}}
	running := &plan.ExperimentPlan{Name: "r", Action: plan.NoOp, Settings: plan.Settings{MaxTrials: 4},
		Progress: plan.Progress{Total: 1, ByStatus: map[string]int{"RUNNING": 1}}}
	done := &plan.ExperimentPlan{Name: "d", Action: plan.NoOp, Done: true, Settings: plan.Settings{MaxTrials: 1},
		Progress: plan.Progress{Total: 1, ByStatus: map[string]int{"SUCCEEDED": 1}}}
	for _, c := range []struct {
		exps []*plan.ExperimentPlan
		want string
	}{
		{[]*plan.ExperimentPlan{paused}, "No changes. Nothing to run: every experiment is done or paused (paused: p; they resume when paused is removed).\n"},
		{[]*plan.ExperimentPlan{done, paused}, "No changes. Nothing to run: every experiment is done or paused (paused: p; they resume when paused is removed).\n"},
		{[]*plan.ExperimentPlan{paused, running}, "No changes. Trials are running; nothing to do until they finish (paused: p; they resume when paused is removed).\n"},
		{[]*plan.ExperimentPlan{running}, "No changes. Trials are running; nothing to do until they finish.\n"},
	} {
		var b bytes.Buffer
		Plan(&b, &plan.Plan{Experiments: c.exps}, Colors{})
		if first, _, _ := strings.Cut(b.String(), "  experiment."); first != c.want {
			t.Errorf("got  %q\nwant %q", first, c.want)
		}
	}
}

// A new experiment's header names each trial's own max_duration (past it
// the platform stops the trial), aligned with the other settings: it was
// only in plan -json.
func TestPlanCreateShowsTrialMaxDuration(t *testing.T) {
	ep := &plan.ExperimentPlan{Name: "exp", Action: plan.Create, Platform: "local.default",
		Settings: plan.Settings{Tuner: "tpe", MaxTrials: 4, Concurrency: 2, MaxFailedTrials: 3, TrialMaxDuration: "10m"},
		Trials:   []*plan.TrialAction{{Action: plan.Create, TrialID: "t0000", Params: map[string]any{"x": 0.5}}}}
	p := &plan.Plan{Experiments: []*plan.ExperimentPlan{ep}}
	p.Summary.Create = 1
	var b bytes.Buffer
	Plan(&b, p, Colors{})
	for _, want := range []string{"      max_failed_trials  = 3\n", "      trial.max_duration = 10m\n", "      concurrency        = 2\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}

// A plan whose only change is an experiment's settings says so in its
// summary line: it read "Plan: 0 to create, 0 to resume, 0 to tear down."
// under the change it showed.
func TestSummaryLineCountsInPlaceChanges(t *testing.T) {
	ep := &plan.ExperimentPlan{Name: "exp", Action: plan.Update, Settings: plan.Settings{MaxTrials: 4},
		Changes: []plan.Change{{Path: "concurrency", Before: "4", After: "5", InPlace: true}}}
	p := &plan.Plan{Experiments: []*plan.ExperimentPlan{ep}}
	p.Summary.Update = 1
	if got, want := SummaryLine(p), "Plan: 0 to create, 0 to resume, 0 to tear down, 1 experiment to change."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	ep.NewGeneration = true // shown as its teardowns and creates
	if got, want := SummaryLine(p), "Plan: 0 to create, 0 to resume, 0 to tear down."; got != want {
		t.Errorf("new generation: got %q, want %q", got, want)
	}
}
