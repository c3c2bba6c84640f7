package ui_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/state"
)

// reorderedHCL is an experiment of two objectives; %s is their blocks.
const reorderedHCL = `search_space "s" {
  param "x" { choice = [1, 2] }
}

experiment "mo" {
  search_space = search_space.s
  tuner "grid" { repeat = true }
  max_trials  = 2
  concurrency = 1
%s
  trial {
    command = "python3 trial.py ${param.x}"
  }
}
`

const reorderedTrial = `import sys
import nni
x = int(sys.argv[1])
nni.report_final_result({"acc": {1: 0.9, 2: 0.8}[x], "%s": {1: 30, 2: 10}[x]})
`

// TestBrowserChartsOfReorderedObjectives: generation 1 has objectives
// acc, lat; generation 2 renames lat to latency; generation 3 makes
// latency the first. Every chart of the objective (latency) plots each
// trial's latency: generation 2's by its final result's latency (not its
// Value, which is acc), generation 1's not at all (it has no latency),
// and the page says so.
func TestBrowserChartsOfReorderedObjectives(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	testdeps.Python3(t)
	dir := t.TempDir()
	bin := trialformBin(t)
	accLat := "  objective { metric = \"acc\" }\n  objective {\n    metric = \"%s\"\n    goal = \"minimize\"\n  }"
	latAcc := "  objective {\n    metric = \"latency\"\n    goal = \"minimize\"\n  }\n  objective { metric = \"acc\" }"
	for gen, g := range []struct{ objectives, metric string }{
		{fmt.Sprintf(accLat, "lat"), "lat"},
		{fmt.Sprintf(accLat, "latency"), "latency"},
		{latAcc, "latency"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(reorderedHCL, g.objectives)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "trial.py"), []byte(fmt.Sprintf(reorderedTrial, g.metric)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "-chdir", dir, "apply", "-auto-approve", "-wait").CombinedOutput()
		if err != nil {
			t.Fatalf("apply %d: %v\n%s", gen+1, err, out)
		}
	}
	st, err := state.NewManager(filepath.Join(dir, ".trialform")).Load()
	if err != nil {
		t.Fatal(err)
	}
	e := st.Experiments["mo"]
	if e.Generation != 3 || len(e.Trials) != 6 {
		t.Fatalf("generation %d, %d trials; want 3 generations of 2", e.Generation, len(e.Trials))
	}
	// What every chart must plot: [seq, latency] of the 4 trials with one.
	var want []string
	for _, tr := range e.SortedTrials() {
		if v, ok := tr.Final["latency"]; ok && tr.Status == state.Succeeded {
			want = append(want, fmt.Sprintf("[%d,%v]", tr.Seq, v))
		}
	}
	if len(want) != 4 {
		t.Fatalf("%d trials with a latency, want 4", len(want))
	}
	base := strings.TrimSuffix(startUI(t, dir, "-addr", "127.0.0.1:0"), "/")
	b := newBrowser(t)
	b.open(base + "/e/mo")
	b.checkCharts(map[string]int{"history-seq": 2, "history-time": 2, "parallel": 2, "slice": 1, "importance": 1})
	var s string
	// Each chart's points as [seq, latency]: the time chart's and the
	// slice's by the trial they belong to (their x is not the seq).
	b.eval(`(() => {
	  const c = window.__trialform.charts;
	  const time = c['history-time'].getOption().series[0].data.map((d) => d[1]);
	  const par = c['parallel'].getOption().series.flatMap((x) => x.data.map((d) => d[d.length - 1]));
	  const slice = c['slice'].getOption().series[0].data.map((d) => d[1]);
	  return JSON.stringify({
	    seq: c['history-seq'].getOption().series[0].data.map((d) => '[' + d[0] + ',' + d[1] + ']'),
	    time: time.sort((a, b) => a - b), par: par.sort((a, b) => a - b), slice: slice.sort((a, b) => a - b),
	    front: [...document.querySelectorAll('#front-scatter circle.pt title')].map((t) => t.textContent).sort(),
	    text: document.body.innerText,
	  });
	})()`, &s)
	var got struct {
		Seq              []string
		Time, Par, Slice []float64
		Front            []string
		Text             string
	}
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	if g, w := strings.Join(got.Seq, " "), strings.Join(want, " "); g != w {
		t.Errorf("objective by trial sequence plots %s, want each trial's latency %s", g, w)
	}
	lat := []float64{10, 10, 30, 30}
	for name, vs := range map[string][]float64{"objective over time": got.Time, "parallel coordinates": got.Par, "slice": got.Slice} {
		if fmt.Sprint(vs) != fmt.Sprint(lat) {
			t.Errorf("%s plots latency %v, want %v", name, vs, lat)
		}
	}
	var front []string
	for _, tr := range e.SortedTrials() {
		if v, ok := tr.Final["latency"]; ok {
			front = append(front, fmt.Sprintf("latency=%v, acc=%v", v, tr.Final["acc"]))
		}
	}
	sort.Strings(front)
	var gotFront []string
	for _, f := range got.Front {
		gotFront = append(gotFront, f[strings.Index(f, ": ")+2:])
	}
	sort.Strings(gotFront)
	if fmt.Sprint(gotFront) != fmt.Sprint(front) {
		t.Errorf("the front's scatter shows %q, want %q", gotFront, front)
	}
	for _, w := range []string{
		"2 succeeded trials of earlier generations have no latency in their final result: not plotted.",
		"Fitted on latency (minimize)",
	} {
		if !strings.Contains(got.Text, w) {
			t.Errorf("the page does not say %q:\n%s", w, got.Text)
		}
	}
	b.screenshot("experiment-reordered-objectives")
	b.noErrors("reordered objectives")

	// The trials table's latency column shows each trial's latency (not
	// generation 2's acc, its Value), "–" for generation 1 (none), and
	// sorting by it (the server's sort=metric) orders by the same.
	b.open(base + "/e/mo?sort=metric")
	b.do(chromedp.Poll[chromedp.Void](`document.querySelectorAll('#trials .vt-row').length === 6`, chromedp.WithPollingTimeout(60*time.Second)))
	b.eval(`(() => {
	  const head = [...document.querySelectorAll('#trials-head .vt-cell')].map((c) => c.textContent.trim());
	  const k = head.findIndex((x) => x.startsWith('latency'));
	  return JSON.stringify([...document.querySelectorAll('#trials .vt-row')].map((r) => r.dataset.id + '=' + r.children[k].textContent));
	})()`, &s)
	var cells []string
	if err := json.Unmarshal([]byte(s), &cells); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	// Ascending latency, trials without one last, ties by sequence.
	ts := e.SortedTrials()
	sort.SliceStable(ts, func(i, j int) bool {
		vi, oki := ts[i].Final["latency"]
		vj, okj := ts[j].Final["latency"]
		return oki && (!okj || vi < vj)
	})
	var wantCells []string
	for _, tr := range ts {
		cell := "–"
		if v, ok := tr.Final["latency"]; ok {
			cell = fmt.Sprint(v)
		}
		wantCells = append(wantCells, tr.ID+"="+cell)
	}
	if fmt.Sprint(cells) != fmt.Sprint(wantCells) {
		t.Errorf("the trials table sorted by latency shows %v, want each trial's latency %v", cells, wantCells)
	}
	b.noErrors("reordered objectives, trials table")
	// A generation-2 trial's page names its latency the objective's value.
	var g2 *state.Trial
	for _, tr := range e.SortedTrials() {
		if tr.Generation == 2 && g2 == nil {
			g2 = tr
		}
	}
	b.open(base + "/e/mo/t/" + g2.ID)
	b.eval(`document.body.innerText`, &s)
	if want := fmt.Sprintf("latency (objective)\t%v\n", g2.Final["latency"]); !strings.Contains(s, want) {
		t.Errorf("trial page of %s does not say %q:\n%s", g2.ID, want, s)
	}
	b.noErrors("reordered objectives, trial page")
}

// TestImportanceNamesItsObjective: /importance says which objective it
// was fitted on, and the objectives reordered (a new generation whose
// first objective is another) are fitted afresh, not answered from the
// fit of the old first objective, though as many trials have a value.
func TestImportanceNamesItsObjective(t *testing.T) {
	dir := fixture(t, 30)
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := st.Experiments["demo"]
	first := state.Objective{Metric: e.Metric, Goal: e.Goal}
	e.Objectives = []state.Objective{first, {Metric: "cost", Goal: "maximize"}}
	for _, tr := range e.Trials {
		if tr.Final == nil {
			tr.Final = map[string]float64{}
		}
		if tr.Value != nil {
			tr.Final[e.Metric] = *tr.Value
		}
		tr.Final["cost"] = float64(tr.Seq)
	}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, dir, "")
	imp := func() (obj, goal string, n int) {
		_, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/importance")
		var r struct {
			Objective, Goal string
			Trials          int
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return r.Objective, r.Goal, r.Trials
	}
	obj, goal, n := imp()
	if obj != first.Metric || goal != first.Goal || n == 0 {
		t.Fatalf("importance of %q (%s) on %d trials, want %s (%s)", obj, goal, n, first.Metric, first.Goal)
	}
	if st, err = m.Load(); err != nil {
		t.Fatal(err)
	}
	e = st.Experiments["demo"]
	e.Objectives = []state.Objective{{Metric: "cost", Goal: "maximize"}, first}
	e.Metric, e.Goal = "cost", "maximize"
	e.Generation++
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	if obj, goal, n2 := imp(); obj != "cost" || goal != "maximize" || n2 != n {
		t.Errorf("after the reorder: importance of %q (%s) on %d trials, want cost (maximize) on %d", obj, goal, n2, n)
	}
}
