package views

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/results"
)

func TestSparkline(t *testing.T) {
	for _, tc := range []struct {
		in    []float64
		width int
		want  string
	}{
		{nil, 10, ""},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8}, 10, "▁▂▃▄▅▆▇█"},
		{[]float64{3, 3, 3}, 10, "▅▅▅"},
		{[]float64{0, 0, 10, 10}, 2, "▁█"},
	} {
		if got := Sparkline(tc.in, tc.width); got != tc.want {
			t.Errorf("Sparkline(%v, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

func TestAgo(t *testing.T) {
	for d, want := range map[time.Duration]string{
		3*time.Minute + 12*time.Second + 300*time.Millisecond: "3m12s",
		5 * time.Second: "5s",
		2*time.Hour + 5*time.Minute + 10*time.Second: "2h5m",
		50 * time.Hour: "2d2h",
	} {
		if got := Ago(d); got != want {
			t.Errorf("Ago(%v) = %q, want %q", d, got, want)
		}
	}
	if s := Staleness(time.Time{}, time.Now()); !strings.Contains(s, "never refreshed") {
		t.Errorf("zero time: %q", s)
	}
}

// Hostile parameter values: escape sequences never reach the terminal
// raw, a | does not break a markdown row, CSV quotes what it must.
func TestHostileValues(t *testing.T) {
	v := 0.5
	rows := []*results.Row{{
		Experiment: "e", ID: "t0000", Status: "SUCCEEDED", Objective: "default", Metric: &v,
		Params:  map[string]any{"evil": "\x1b[2J\x1b[31mred|pipe\nline", "ok": "a,b\"c"},
		Metrics: map[string]float64{"default": 0.5},
	}}
	var b bytes.Buffer
	ResultsTableText(&b, ResultsTable{Rows: rows})
	if strings.Contains(b.String(), "\x1b") || strings.Count(b.String(), "\n") != 2 {
		t.Errorf("table lets control characters through:\n%q", b.String())
	}
	b.Reset()
	ResultsMarkdown(&b, ResultsTable{Rows: rows})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || strings.Count(lines[2], " | ") != strings.Count(lines[0], " | ") {
		t.Errorf("markdown rows:\n%s", b.String())
	}
	b.Reset()
	if err := ResultsCSV(&b, rows, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("CSV: %v %v", recs, err)
	}
	got := map[string]string{}
	for i, h := range recs[0] {
		got[h] = recs[1][i]
	}
	if got["params.evil"] != "\x1b[2J\x1b[31mred|pipe\nline" || got["params.ok"] != "a,b\"c" || got["metric"] != "0.5" {
		t.Errorf("CSV does not round-trip values: %v", got)
	}
}
