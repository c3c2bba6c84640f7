package views

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trialform/trialform/plan"
)

func TestStatusWriter(t *testing.T) {
	var buf bytes.Buffer
	s := &StatusWriter{W: &buf, TTY: true}
	s.Write([]byte("line 1\n"))
	s.SetStatus("watch · 2 running")
	s.Write([]byte("line 2\n"))
	s.SetStatus("watch · 3 running")
	s.ClearStatus()
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
	s = &StatusWriter{W: &buf}
	s.SetStatus("watch · 2 running")
	s.Write([]byte("line\n"))
	s.ClearStatus()
	if got := buf.String(); got != "line\n" {
		t.Fatalf("plain output %q", got)
	}
}

// A paused experiment is not done: watch says what it waits for, not that
// every experiment is done.
func TestWatchAllDoneNamesPaused(t *testing.T) {
	var b bytes.Buffer
	v := NewWatch(&b, false, Colors{}, nil)
	v.AllDone(&plan.Plan{Experiments: []*plan.ExperimentPlan{{Name: "a", Done: true}, {Name: "h", Paused: true}}})
	if s := b.String(); !strings.Contains(s, "every experiment is done or paused (paused: h)") || strings.Contains(s, "All experiments are done") {
		t.Errorf("with a paused experiment: %q", s)
	}
	b.Reset()
	v.AllDone(&plan.Plan{Experiments: []*plan.ExperimentPlan{{Name: "a", Done: true}}})
	if !strings.Contains(b.String(), "All experiments are done") {
		t.Errorf("all done: %q", b.String())
	}
}

// When every experiment is done watch prints each one's status line (its
// budget and best trial), as apply -wait does at its end: it said only
// "All experiments are done".
func TestWatchAllDoneShowsStatus(t *testing.T) {
	var b bytes.Buffer
	v := NewWatch(&b, false, Colors{}, nil)
	best := 0.25
	ep := &plan.ExperimentPlan{Name: "a", Done: true, DoneReason: "max_trials (2) reached"}
	ep.Settings.MaxTrials = 2
	ep.Progress = plan.Progress{Total: 2, Generation: 1, GenerationTotal: 2, GenerationEnded: 2, BudgetUsed: 2,
		ByStatus: map[string]int{"SUCCEEDED": 2}, GenerationByStatus: map[string]int{"SUCCEEDED": 2}, Best: &best, BestTrial: "t0001"}
	v.AllDone(&plan.Plan{Experiments: []*plan.ExperimentPlan{ep}})
	s := b.String()
	if !strings.Contains(s, "experiment.a: ") || !strings.Contains(s, "best 0.25 (t0001)") || !strings.Contains(s, "done: max_trials (2) reached") ||
		strings.Index(s, "experiment.a") > strings.Index(s, "All experiments are done") {
		t.Errorf("all done without the status lines first:\n%s", s)
	}
}
