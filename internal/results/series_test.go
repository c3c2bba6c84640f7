package results

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// The fast path of ParseSeries reads what the state writes exactly as
// encoding/json + ToPoint do, and odd lines still go through the slow path.
func TestParseSeriesMatchesToPoint(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.UTC)
	vals := []string{`0.5`, `-1e-07`, `{"default":0.9,"loss":0.1}`, `{"loss":2,"acc":null}`, `{}`, `null`,
		`{"we\"ird":1,"default":3}`, `{"nested":{"a":1},"default":4}`, `"text"`, `{"loss":1e300}`}
	var b strings.Builder
	var want []Point
	for i, v := range vals {
		for _, typ := range []string{"PERIODICAL", "FINAL"} {
			mp := state.MetricPoint{Type: typ, Sequence: i, Value: json.RawMessage(v), Time: t0.Add(time.Duration(i) * time.Second)}
			line, err := json.Marshal(mp)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
			var back state.MetricPoint
			json.Unmarshal(line, &back)
			if p, ok := ToPoint(back, "loss"); ok {
				want = append(want, p)
			}
		}
	}
	got, err := ParseSeries([]byte(b.String()+`{"type":"PERIODICAL","seq`), "loss")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseSeries:\n got %+v\nwant %+v", got, want)
	}
	if _, err := ParseSeries([]byte("{bad\n"+`{"type":"PERIODICAL","sequence":0,"value":1,"time":"2024-01-01T00:00:00Z"}`+"\n"), ""); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a bad line in the middle: %v", err)
	}
}

func TestPointAppendJSON(t *testing.T) {
	v := 0.25
	p := Point{Step: 3, Value: &v, Metrics: map[string]float64{"z": 1, "a\"b": math.Inf(1), "loss": 0.25}, Time: time.Date(2024, 5, 1, 0, 0, 0, 5, time.UTC)}
	got := string(p.AppendJSON(nil))
	want := `{"step":3,"value":0.25,"metrics":{"a\"b":null,"loss":0.25,"z":1},"time":"2024-05-01T00:00:00.000000005Z"}`
	if got != want {
		t.Errorf("AppendJSON = %s\nwant %s", got, want)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Errorf("not JSON: %v", err)
	}
	p.Value = nil
	if !strings.Contains(string(p.AppendJSON(nil)), `"value":null`) {
		t.Errorf("nil value")
	}
}

// A series read whole: a point a replayed refresh appended again (its
// attempt's steps do not go up) is dropped, the next attempt's steps from
// 0 are kept, and a series without attempts is kept as it is.
func TestParseSeriesAttempts(t *testing.T) {
	line := func(attempt, step int, v float64) string {
		a := ""
		if attempt > 0 {
			a = fmt.Sprintf(`"attempt":%d,`, attempt)
		}
		return fmt.Sprintf(`{"type":"PERIODICAL","sequence":%d,%s"value":%g,"time":"2026-01-01T00:00:0%dZ"}`+"\n", step, a, v, step)
	}
	data := line(1, 0, 10) + line(1, 1, 9) + line(1, 1, 9) + line(2, 0, 10) + line(2, 1, 9) + line(2, 2, 8)
	pts, err := ParseSeries([]byte(data), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pts {
		got = append(got, fmt.Sprintf("%d/%d", p.Attempt, p.Step))
	}
	if strings.Join(got, " ") != "1/0 1/1 2/0 2/1 2/2" {
		t.Errorf("points %v", got)
	}
	old := line(0, 0, 10) + line(0, 1, 9) + line(0, 0, 10) + line(0, 1, 9)
	if pts, _ := ParseSeries([]byte(old), ""); len(pts) != 4 {
		t.Errorf("a series without attempts: %d points, want the 4", len(pts))
	}
}

// A report's value is its objective key, else its "default" when that is
// all it holds (a plain number, NNI's single-value report): a report of
// other keys without the objective ({"default": 5, "acc": 1} under an
// objective "loss") has no value. Before, it took "default"'s: metrics'
// LOSS column showed 5 where no loss was reported, and latest and the
// curve mixed two metrics.
func TestValueIsTheObjectiveKeyOnly(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	vals := []string{`{"default":9,"loss":0.5}`, `{"default":8}`, `7`, `{"default":6,"loss":0.2}`, `{"default":5,"acc":1}`}
	var b strings.Builder
	tr := &state.Trial{ID: "t0000", Status: state.Succeeded}
	for i, v := range vals {
		mp := state.MetricPoint{Type: "PERIODICAL", Sequence: i, Attempt: 1, Value: json.RawMessage(v), Time: t0.Add(time.Duration(i) * time.Second)}
		line, _ := json.Marshal(mp)
		b.Write(line)
		b.WriteByte('\n')
		tr.NoteIntermediate(mp, "loss", "maximize")
		tr.Intermediate++
	}
	for _, objective := range []struct {
		name string
		want []string
	}{{"loss", []string{"0.5", "8", "7", "0.2", "-"}}, {"default", []string{"9", "8", "7", "6", "5"}}} {
		pts, err := ParseSeries([]byte(b.String()), objective.name)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range pts {
			if p.Value == nil {
				got = append(got, "-")
			} else {
				got = append(got, fmt.Sprint(*p.Value))
			}
		}
		if !reflect.DeepEqual(got, objective.want) {
			t.Errorf("objective %s: values %v, want %v", objective.name, got, objective.want)
		}
	}
	row := FromExperiment(&state.Experiment{Name: "e", Metric: "loss", Goal: "maximize", Trials: map[string]*state.Trial{tr.ID: tr}}, t0)[0]
	if row.BestIntermediate == nil || row.BestIntermediate.Value == nil || *row.BestIntermediate.Value != 8 {
		t.Errorf("best_intermediate %+v, want the lone default 8 (not 9 beside a loss)", row.BestIntermediate)
	}
	if row.Latest == nil || row.Latest.Value != nil || row.Latest.Step != 4 {
		t.Errorf("latest %+v, want step 4 without a loss", row.Latest)
	}
}
