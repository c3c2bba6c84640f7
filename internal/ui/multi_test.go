package ui_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/ui"
	"github.com/trialform/trialform/state"
)

// TestParetoFrontInAPI: with several objectives the overview has no best
// trial but the front (objectives, each front trial's values), and the
// trials' rows carry their Pareto rank with the front marked best.
func TestParetoFrontInAPI(t *testing.T) {
	dir := fixture(t, 30)
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := st.Experiments["other"]
	e.Objectives = []state.Objective{{Metric: e.Metric, Goal: e.Goal}, {Metric: "cost", Goal: "minimize"}}
	// The second objective is the seq: a later trial costs more, so a
	// trial is on the front unless an earlier one has a value as good.
	want := map[string]bool{}
	var bestSoFar *float64
	for _, tr := range e.SortedTrials() {
		if tr.Final == nil {
			tr.Final = map[string]float64{}
		}
		tr.Final["cost"] = float64(tr.Seq)
		if tr.Status != state.Succeeded || tr.Value == nil || tr.Generation != e.Generation {
			continue
		}
		if bestSoFar == nil || state.Better(e.Goal, *tr.Value, *bestSoFar) {
			want[tr.ID] = true
			v := *tr.Value
			bestSoFar = &v
		}
	}
	if len(want) < 2 {
		t.Fatalf("fixture gives a front of %d", len(want))
	}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, dir, "")
	_, body := get(t, ts.Client(), ts.URL+"/api/overview")
	var ov struct {
		Experiments []ui.ExperimentJSON `json:"experiments"`
	}
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatal(err)
	}
	for _, x := range ov.Experiments {
		if x.Name != "other" {
			continue
		}
		if x.Best != nil || len(x.Objectives) != 2 || len(x.Front) != len(want) {
			t.Fatalf("other: best %v, objectives %v, front %v; want the front %v", x.Best, x.Objectives, x.Front, want)
		}
		for _, f := range x.Front {
			if !want[f.ID] || len(f.Values) != 2 || f.Values[1] != float64(f.Seq) {
				t.Errorf("front member %+v", f)
			}
		}
	}
	_, body = get(t, ts.Client(), ts.URL+"/api/experiments/other/trials")
	var tr struct {
		Rows []ui.RowJSON `json:"rows"`
	}
	if err := json.Unmarshal([]byte(body), &tr); err != nil {
		t.Fatal(err)
	}
	front := 0
	for _, r := range tr.Rows {
		if r.Best != want[r.ID] || (r.Best && r.ParetoRank != 1) || (!r.Best && r.ParetoRank == 1) {
			t.Errorf("row %s: best %v rank %d", r.ID, r.Best, r.ParetoRank)
		}
		if r.Best {
			front++
		}
	}
	if front != len(want) {
		t.Errorf("%d rows marked, want %d", front, len(want))
	}
}

// TestBrowserParetoFront: with several objectives the overview and the
// experiment page name the front (its trials and their values) instead
// of one best trial, and the trials table stars the front.
func TestBrowserParetoFront(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	dir := fixture(t, 20)
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := st.Experiments["demo"]
	e.Objectives = []state.Objective{{Metric: e.Metric, Goal: e.Goal}, {Metric: "cost", Goal: "minimize"}}
	for _, tr := range e.Trials {
		if tr.Final == nil {
			tr.Final = map[string]float64{}
		}
		tr.Final["cost"] = float64(tr.Seq)
	}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	front := ranksFront(e)
	base := strings.TrimSuffix(startUI(t, dir, "-addr", "127.0.0.1:0"), "/")
	b := newBrowser(t)
	b.open(base + "/")
	var s string
	b.eval(`document.querySelector('#overview tbody').innerText`, &s)
	want := fmt.Sprintf("%d trial", len(front))
	if !strings.Contains(s, want) || !strings.Contains(s, front[0]) || !strings.Contains(s, "minimize cost") {
		t.Errorf("overview: want %q, %s and the objectives in %q", want, front[0], s)
	}
	b.open(base + "/e/demo")
	b.eval(`document.getElementById('app').innerText`, &s)
	if !strings.Contains(s, "Pareto front (") || !strings.Contains(s, front[0]) {
		t.Errorf("experiment page: no front (%v) in %q", front, s)
	}
	b.noErrors("pareto front")
}

func ranksFront(e *state.Experiment) []string {
	ranks := e.ParetoRanks(e.Generation)
	var out []string
	for _, t := range e.SortedTrials() {
		if ranks[t.ID] == 1 {
			out = append(out, t.ID)
		}
	}
	return out
}
