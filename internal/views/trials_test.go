package views

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

func testExperiment() *state.Experiment {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	end := t0.Add(-2373 * time.Millisecond) // ended "before" it started: two clocks
	later := t0.Add(1500 * time.Millisecond)
	v1, v2 := 0.5, 0.25
	return &state.Experiment{
		Name: "exp", ID: "abcd1234", Platform: "local.default", Goal: "minimize", Metric: "loss",
		MaxTrials: 2, Concurrency: 2,
		Trials: map[string]*state.Trial{
			"t0000": {ID: "t0000", Seq: 0, Status: state.Succeeded, Params: map[string]any{"lr": 0.1, "optimizer": "adam"},
				Value: &v1, StartedAt: &t0, EndedAt: &end},
			"t0001": {ID: "t0001", Seq: 1, Status: state.Succeeded, Params: map[string]any{"lr": 0.01, "optimizer": "sgd"},
				Value: &v2, StartedAt: &t0, EndedAt: &later},
		},
	}
}

// A trial whose end was stamped by another clock than its start never
// shows a negative duration.
func TestTrialsNoNegativeDuration(t *testing.T) {
	var b bytes.Buffer
	Trials(&b, testExperiment(), time.Date(2026, 1, 1, 13, 0, 0, 0, time.UTC))
	if strings.Contains(b.String(), "-2.") || strings.Contains(b.String(), " -") {
		t.Fatalf("negative duration in the table:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "0s") {
		t.Fatalf("want the clamped duration 0s:\n%s", b.String())
	}
}

// show's table is the trials table indented by two spaces: every column
// starts at the same offset as in `trials`, plus two.
func TestShowStateColumnsAligned(t *testing.T) {
	e := testExperiment()
	var table, show bytes.Buffer
	now := time.Date(2026, 1, 1, 13, 0, 0, 0, time.UTC)
	Trials(&table, e, now)
	ShowState(&show, &state.State{Serial: 3, Lineage: "l", Experiments: map[string]*state.Experiment{"exp": e}}, Colors{}, nil, now)
	for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n") {
		want := "  " + line
		if line == "" {
			want = ""
		}
		if !strings.Contains(show.String(), want+"\n") {
			t.Fatalf("show lacks the line %q (columns shifted?):\n%s", want, show.String())
		}
	}
}

func TestDestroySummary(t *testing.T) {
	for _, c := range []struct {
		e, t, left int
		want       string
	}{
		{2, 20, 0, "Destroy complete! 2 experiments, 20 trials destroyed."},
		{1, 1, 0, "Destroy complete! 1 experiment, 1 trial destroyed."},
		{0, 0, 0, "Destroy complete! 0 experiments, 0 trials destroyed."},
		{0, 0, 1, "Destroy incomplete! 0 of 1 experiment destroyed (0 trials); the errors above say why, run destroy again once they are fixed."},
		{1, 20, 1, "Destroy incomplete! 1 of 2 experiments destroyed (20 trials); the errors above say why, run destroy again once they are fixed."},
	} {
		if got := DestroySummary(c.e, c.t, c.left); got != c.want {
			t.Errorf("DestroySummary(%d, %d) = %q, want %q", c.e, c.t, got, c.want)
		}
	}
}

// A parameter value of 200 KB is cut in the terminal table (not in -o
// json or csv); a metric name with control characters is quoted after it
// is upper-cased, so the quote stays a valid one ("\x1b", not "\X1B").
func TestTrialsClipsLongCellsAndQuotesHeaders(t *testing.T) {
	e := testExperiment()
	long := strings.Repeat("a", 200<<10)
	e.Trials["t0000"].Params["optimizer"] = long
	e.Metric = "\x1b[31mevil"
	var b bytes.Buffer
	Trials(&b, e, time.Date(2026, 1, 1, 13, 0, 0, 0, time.UTC))
	out := b.String()
	if len(out) > 4096 {
		t.Errorf("the table is %d bytes for a 200 KB value", len(out))
	}
	if !strings.Contains(out, strings.Repeat("a", maxCell-1)+"…") {
		t.Errorf("the long value is not cut with an ellipsis:\n%.500s", out)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, `\X1B`) || !strings.Contains(out, `\x1b[31MEVIL`) {
		t.Errorf("header of a metric with control characters:\n%.500s", out)
	}
}

// show said "objective: maximize default" for an experiment with two
// objectives (the second, and a strategy, were left out) and nothing of
// paused = true, which plan, trials' JSON and the dashboard say.
func TestShowStateObjectivesAndPaused(t *testing.T) {
	e := testExperiment()
	e.Objectives = []state.Objective{{Metric: "loss", Goal: "minimize"}, {Metric: "latency", Goal: "minimize"}}
	e.Paused = true
	var b bytes.Buffer
	ShowState(&b, &state.State{Experiments: map[string]*state.Experiment{"exp": e}}, Colors{}, nil, time.Now())
	if want := "  objectives: minimize loss, minimize latency (Pareto front); max_trials 2, concurrency 2; paused\n"; !strings.Contains(b.String(), want) {
		t.Errorf("want %q in:\n%s", want, b.String())
	}
	e = testExperiment()
	e.Strategy = "min"
	b.Reset()
	ShowState(&b, &state.State{Experiments: map[string]*state.Experiment{"exp": e}}, Colors{}, nil, time.Now())
	if want := "  objective: minimize loss (strategy min: the least value reported); max_trials 2"; !strings.Contains(b.String(), want) {
		t.Errorf("want %q in:\n%s", want, b.String())
	}
}
