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
