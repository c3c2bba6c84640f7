package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

func moPoint(d int, x ...float64) space.Params {
	p := space.Params{}
	for i := 0; i < d; i++ {
		v := 0.0
		if i < len(x) {
			v = x[i]
		}
		p[fmt.Sprintf("x%d", i)] = v
	}
	return p
}

// TestMOProblemsFronts checks each benchmark problem on points of its
// known Pareto front.
func TestMOProblemsFronts(t *testing.T) {
	probs := map[string]*MOProblem{}
	for _, p := range MOProblems() {
		probs[p.Name] = p
	}
	for _, f1 := range []float64{0, 0.25, 1} {
		// ZDT: x1.. = 0 gives g = 1.
		v := probs["zdt1"].Eval(moPoint(10, f1))
		if math.Abs(v[0]-f1) > 1e-12 || math.Abs(v[1]-(1-math.Sqrt(f1))) > 1e-12 {
			t.Errorf("zdt1 at %v: %v", f1, v)
		}
		v = probs["zdt2"].Eval(moPoint(10, f1))
		if math.Abs(v[1]-(1-f1*f1)) > 1e-12 {
			t.Errorf("zdt2 at %v: %v", f1, v)
		}
	}
	// DTLZ2: the distance variables at 0.5 put f on the unit sphere.
	for _, name := range []string{"dtlz2-2", "dtlz2-3"} {
		p := probs[name]
		m := len(p.Ref)
		x := []float64{0.3, 0.7}[:m-1]
		for i := m - 1; i < len(p.Space.Params); i++ {
			x = append(x, 0.5)
		}
		v := p.Eval(moPoint(len(p.Space.Params), x...))
		s := 0.0
		for _, f := range v {
			s += f * f
		}
		if len(v) != m || math.Abs(s-1) > 1e-12 {
			t.Errorf("%s: %v (sum of squares %v)", name, v, s)
		}
	}
	// The HPO-shaped problem's objectives conflict: the best error is
	// not the cheapest model.
	hpo := probs["hpo-mixed"]
	good := space.Params{"lr": 1e-2, "width": 3.0, "depth": 4.0, "batch": 64.0, "opt": mixedCentres[0].opt}
	cheap := space.Params{"lr": 1e-2, "width": 0.0, "depth": 1.0, "batch": 64.0, "opt": mixedCentres[0].opt}
	a, b := hpo.Eval(good), hpo.Eval(cheap)
	if !(a[1] > b[1]) || len(a) != 2 {
		t.Errorf("hpo-mixed: %v vs %v", a, b)
	}
}

// TestOptunaPeerMulti runs Optuna's NSGA-II and MOTPE through the peer on
// a short ZDT1 and checks that every run is complete and deterministic.
func TestOptunaPeerMulti(t *testing.T) {
	needPython(t, "optuna")
	c := &moConfig{trials: 12, python: python, dir: "."}
	ps := &procs{python: python, dir: "."}
	defer ps.closeAll()
	p := MOProblems()[0]
	for _, s := range []string{"nsga2", "motpe"} {
		r1, err := moRunOptuna(c, ps, p, s, 3)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		r2, _ := moRunOptuna(c, ps, p, s, 3)
		if len(r1.Values) != 12 || fmt.Sprint(r1.Values) != fmt.Sprint(r2.Values) {
			t.Errorf("%s: %d values, again %v vs %v", s, len(r1.Values), r1.Values[:2], r2.Values[:2])
		}
	}
}

// TestOptunaMultiShortCacheIsRunAgain: a cached run shorter than -trials
// (an earlier run at fewer trials) is run again from its first trial, and
// the cache then holds exactly that new run. The cached values used to be
// kept in front of the new run's, so a 100-trial cache read at 200 trials
// gave the old 100 trials and the new run's first 100.
func TestOptunaMultiShortCacheIsRunAgain(t *testing.T) {
	needPython(t, "optuna")
	dir := t.TempDir()
	ps := &procs{python: python, dir: "."}
	defer ps.closeAll()
	p := MOProblems()[0]
	fresh, err := moRunOptuna(&moConfig{trials: 8, python: python, dir: "."}, ps, p, "nsga2", 5)
	if err != nil {
		t.Fatal(err)
	}
	stale := moRun{Values: [][]float64{{9, 9}, {8, 8}, {7, 7}}}
	b, _ := json.Marshal(stale)
	cache := filepath.Join(dir, fmt.Sprintf("mo-nsga2-%s-5.json", p.Name))
	if err := os.WriteFile(cache, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c := &moConfig{trials: 8, python: python, dir: ".", cache: dir}
	got, err := moRunOptuna(c, ps, p, "nsga2", 5)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Values) != fmt.Sprint(fresh.Values) {
		t.Errorf("run after a 3-trial cache: %d values %v, want the fresh run's %d %v", len(got.Values), got.Values, len(fresh.Values), fresh.Values)
	}
	var kept moRun
	b, _ = os.ReadFile(cache)
	if json.Unmarshal(b, &kept) != nil || fmt.Sprint(kept.Values) != fmt.Sprint(fresh.Values) {
		t.Errorf("cache now holds %d values, want the fresh run's %d", len(kept.Values), len(fresh.Values))
	}
}
