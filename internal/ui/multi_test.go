package ui_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trialform/trialform/internal/testdeps"

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

const paretoHCL = `search_space "s" {
  param "x" { uniform = [0, 1] }
  param "y" { uniform = [0, 1] }
  param "z" { uniform = [0, 1] }
}

experiment "two" {
  search_space = search_space.s
  tuner "random" {
    seed = 5
  }
  max_trials  = 14
  concurrency = 4
  objective {}
  objective {
    metric = "cost"
    goal   = "minimize"
  }
  trial {
    command = "python3 mo.py 2"
  }
}

experiment "three" {
  search_space = search_space.s
  tuner "random" {
    seed = 6
  }
  max_trials  = 14
  concurrency = 4
  objective {}
  objective {
    metric = "cost"
    goal   = "minimize"
  }
  objective {
    metric = "size"
    goal   = "minimize"
  }
  trial {
    command = "python3 mo.py 3"
  }
}
`

const paretoTrial = `import sys
import nni
p = nni.get_next_parameter()
x, y = p["x"], p["y"]
r = {"default": x, "cost": x ** 2 + y}
if sys.argv[1] == "3":
    # z only makes things worse: trials with a large z leave the front.
    z = p["z"]
    r = {"default": x - z, "cost": x ** 2 + y + z, "size": 1 - y + z}
nni.report_final_result(r)
`

// TestBrowserParetoCharts: after a real apply of a 2-objective and a
// 3-objective experiment, the experiment page draws a point per trial
// with every objective, highlights as many as `trials -q pareto:1` lists,
// names the axes by metric and direction, joins the 2-objective front by
// a line, and for 3 objectives draws parallel coordinates and lets the
// scatter show another pair of objectives.
func TestBrowserParetoCharts(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	testdeps.Python3(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"main.hcl": paretoHCL, "mo.py": paretoTrial} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := trialformBin(t)
	if out, err := exec.Command(bin, "-chdir", dir, "apply", "-auto-approve", "-wait").CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	count := func(exp, q string) int {
		out, err := exec.Command(bin, "-chdir", dir, "trials", exp, "-q", q, "-o", "json").Output()
		if err != nil {
			t.Fatalf("trials %s -q %s: %v", exp, q, err)
		}
		var rows []map[string]any
		if err := json.Unmarshal(out, &rows); err != nil {
			t.Fatalf("trials %s -q %s: %v\n%s", exp, q, err, out)
		}
		return len(rows)
	}
	base := strings.TrimSuffix(startUI(t, dir, "-addr", "127.0.0.1:0"), "/")
	b := newBrowser(t)
	type view struct {
		Points, Front, LinePoints, Lines, FrontLines int
		X, Y                                         string
		Axes                                         []string
	}
	look := func() view {
		var s string
		b.eval(`JSON.stringify({
			Points: document.querySelectorAll('#front-scatter circle.pt').length,
			Front: document.querySelectorAll('#front-scatter circle.pt.front').length,
			LinePoints: (() => { const l = document.querySelector('#front-scatter .front-line'); return l ? l.points.numberOfItems : 0; })(),
			Lines: document.querySelectorAll('#front-parallel polyline.pc-line').length,
			FrontLines: document.querySelectorAll('#front-parallel polyline.pc-line.front').length,
			X: document.querySelector('#front-scatter .axis-x').textContent,
			Y: document.querySelector('#front-scatter .axis-y').textContent,
			Axes: [...document.querySelectorAll('#front-parallel .axis-name')].map((e) => e.textContent),
		})`, &s)
		var v view
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%v: %s", err, s)
		}
		return v
	}
	// The charts draw after the table: wait for them before reading.
	drawn := func() {
		b.do(chromedp.Poll[chromedp.Void](`document.querySelectorAll('#front-scatter circle.pt').length > 0`, chromedp.WithPollingTimeout(60*time.Second)))
	}

	b.open(base + "/e/two")
	drawn()
	v := look()
	n, front := count("two", "status:succeeded"), count("two", "pareto:1")
	if n != 14 || front < 2 {
		t.Fatalf("two: %d succeeded, front of %d: the fixture needs 14 and a front of several", n, front)
	}
	if v.Points != n || v.Front != front || v.LinePoints != front || v.Lines != 0 {
		t.Errorf("two: %+v; want %d points, %d on the front and on its line, no parallel coordinates", v, n, front)
	}
	if v.X != "default (maximize ↑)" || v.Y != "cost (minimize ↓)" {
		t.Errorf("two: axes %q, %q", v.X, v.Y)
	}
	b.screenshot("pareto-two")
	b.noErrors("pareto two")

	b.open(base + "/e/three")
	drawn()
	v = look()
	n, front = count("three", "status:succeeded"), count("three", "pareto:1")
	if n != 14 || front < 2 || front == n {
		t.Fatalf("three: %d succeeded, front of %d: the fixture needs 14 and a front of some", n, front)
	}
	if v.Points != n || v.Front != front || v.Lines != n || v.FrontLines != front || v.LinePoints != 0 {
		t.Errorf("three: %+v; want %d points and lines, %d of them the front, no front line in a projection", v, n, front)
	}
	if strings.Join(v.Axes, "|") != "default (maximize ↑)|cost (minimize ↓)|size (minimize ↓)" {
		t.Errorf("three: parallel axes %q", v.Axes)
	}
	// Choose size for the scatter's y axis.
	var s string
	b.eval(`(() => { const e = document.getElementById('front-y'); e.value = '2'; e.dispatchEvent(new Event('change')); return e.value; })()`, &s)
	b.do(chromedp.Poll[chromedp.Void](`document.querySelector('#front-scatter .axis-y').dataset.metric === 'size'`, chromedp.WithPollingTimeout(60*time.Second)))
	if v = look(); v.Y != "size (minimize ↓)" || v.X != "default (maximize ↑)" || v.Points != n || v.Front != front {
		t.Errorf("three after choosing size: %+v", v)
	}
	b.screenshot("pareto-three")
	b.noErrors("pareto three")
}
