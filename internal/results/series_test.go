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
