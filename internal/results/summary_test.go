package results

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// TestSummaryMatchesSeries: the latest and best intermediate results a
// view takes from the state's summary (kept by the refresh, report by
// report) are the ones it would take from reading the whole series, for
// either goal, reports without the objective, plain numbers, values that
// are not numbers, ties, attempts and replayed reports.
func TestSummaryMatchesSeries(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for _, goal := range []string{"maximize", "minimize"} {
		for seed := range uint64(200) {
			r := rand.New(rand.NewPCG(seed, 7))
			tr := &state.Trial{ID: "t0000", Status: state.Succeeded}
			var pts []state.MetricPoint
			attempt, seq := 1, 0
			for i := range 1 + r.IntN(12) {
				var v string
				switch r.IntN(6) {
				case 0:
					v = fmt.Sprintf(`{"loss":%d,"acc":0.5}`, r.IntN(4))
				case 1:
					v = `{"acc":0.5}` // no objective
				case 2:
					v = fmt.Sprint(r.IntN(4)) // a plain number: "default"
				case 3:
					v = `"text"` // not a number: not a point
				case 4:
					v = `null`
				default:
					v = fmt.Sprintf(`{"default":%d}`, r.IntN(4))
				}
				if r.IntN(8) == 0 {
					attempt, seq = attempt+1, 0
				}
				s := seq
				if seq > 0 && r.IntN(6) == 0 {
					s = seq - 1 // a replay
				} else {
					seq++
				}
				p := state.MetricPoint{Type: "PERIODICAL", Sequence: s, Attempt: attempt, Value: json.RawMessage(v), Time: t0.Add(time.Duration(i) * time.Second)}
				pts = append(pts, p)
				tr.NoteIntermediate(p, "loss", goal)
				tr.Intermediate++
			}
			e := &state.Experiment{Name: "e", Metric: "loss", Goal: goal, Trials: map[string]*state.Trial{tr.ID: tr}}
			fromSummary := FromExperiment(e, t0)[0]
			fromSeries := FromExperiment(&state.Experiment{Name: "e", Metric: "loss", Goal: goal, Trials: map[string]*state.Trial{tr.ID: {ID: tr.ID, Status: tr.Status, Intermediate: tr.Intermediate}}}, t0)[0]
			if fromSeries.Summarized || fromSeries.Latest != nil {
				t.Fatalf("a trial without a summary got %+v", fromSeries.Latest)
			}
			var lines []byte
			for _, p := range pts {
				b, _ := json.Marshal(p)
				lines = append(append(lines, b...), '\n')
			}
			parsed, err := ParseSeries(lines, "loss")
			if err != nil {
				t.Fatal(err)
			}
			fromSeries.AddPoints(parsed, false)
			if got, want := pointString(fromSummary.Latest), pointString(fromSeries.Latest); got != want {
				t.Fatalf("%s seed %d: latest from the summary %s, from the series %s\n%s", goal, seed, got, want, lines)
			}
			if got, want := pointString(fromSummary.BestIntermediate), pointString(fromSeries.BestIntermediate); got != want {
				t.Fatalf("%s seed %d: best from the summary %s, from the series %s\n%s", goal, seed, got, want, lines)
			}
		}
	}
}

func pointString(p *Point) string {
	if p == nil {
		return "none"
	}
	v := "nil"
	if p.Value != nil {
		v = fmt.Sprint(*p.Value)
	}
	return fmt.Sprintf("attempt %d step %d value %s at %s", p.Attempt, p.Step, v, p.Time.Format(time.TimeOnly))
}

// TestSummaryOfAnotherObjective: a summary kept while the experiment
// judged by another objective or goal is not used (the view reads the
// series), and one that missed earlier reports is never started.
func TestSummaryOfAnotherObjective(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	p := func(seq int, v string) state.MetricPoint {
		return state.MetricPoint{Type: "PERIODICAL", Sequence: seq, Attempt: 1, Value: json.RawMessage(v), Time: t0}
	}
	tr := &state.Trial{ID: "t0000", Status: state.Succeeded}
	tr.NoteIntermediate(p(0, `{"loss":1,"acc":2}`), "loss", "minimize")
	tr.Intermediate++
	for _, c := range []struct{ metric, goal string }{{"acc", "minimize"}, {"loss", "maximize"}, {"", ""}} {
		e := &state.Experiment{Name: "e", Metric: c.metric, Goal: c.goal, Trials: map[string]*state.Trial{tr.ID: tr}}
		if r := FromExperiment(e, t0)[0]; r.Summarized || r.Latest != nil {
			t.Errorf("%q %q: the summary for loss/minimize was used", c.metric, c.goal)
		}
	}
	// The next report under another goal drops the summary.
	tr.NoteIntermediate(p(1, `{"loss":0}`), "loss", "maximize")
	tr.Intermediate++
	if tr.Summary != nil {
		t.Fatalf("a summary judged by two goals was kept: %+v", tr.Summary)
	}
	tr.NoteIntermediate(p(2, `{"loss":0}`), "loss", "maximize")
	if tr.Summary != nil {
		t.Fatalf("a summary was started after reports it missed: %+v", tr.Summary)
	}
}

// ObjectiveValue: a trial of an earlier generation under a strategy shows
// the value apply took again for the objective as it is (state.Retaken),
// not its Value (another objective's), and nothing for a Retaken of
// another objective.
func TestObjectiveValueRetaken(t *testing.T) {
	e := &state.Experiment{Name: "e", Metric: "acc", Goal: "maximize", Strategy: "max", Generation: 2}
	v, w := 0.1, 0.9
	tr := &state.Trial{ID: "t0000", Generation: 1, Status: state.Succeeded, Value: &v,
		ValueFor: &state.ValueFor{Metric: "loss", Strategy: "min"}}
	if got := ObjectiveValue(e, tr); got != nil {
		t.Fatalf("no Retaken: %v, want none", *got)
	}
	tr.Retaken = &state.Retaken{ValueFor: state.ValueFor{Metric: "acc", Strategy: "max"}, Value: &w}
	if got := ObjectiveValue(e, tr); got == nil || *got != w {
		t.Fatalf("Retaken for acc max: %v, want %v", got, w)
	}
	tr.Retaken.Strategy = "min"
	if got := ObjectiveValue(e, tr); got != nil {
		t.Fatalf("Retaken for acc min: %v, want none", *got)
	}
}
