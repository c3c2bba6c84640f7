package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/tuner/space"
)

// TestOptunaSpace checks the kind mapping without Optuna.
func TestOptunaSpace(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "u", Kind: space.Uniform, Args: []float64{-1, 2}},
		{Name: "lu", Kind: space.Loguniform, Args: []float64{1e-3, 1}},
		{Name: "q", Kind: space.Quniform, Args: []float64{0, 10, 0.5}},
		{Name: "qoff", Kind: space.Quniform, Args: []float64{0.2, 10, 0.5}},
		{Name: "li", Kind: space.Qloguniform, Args: []float64{1, 1024, 1}},
		{Name: "lq", Kind: space.Qloguniform, Args: []float64{1, 1000, 10}},
		{Name: "ri", Kind: space.Randint, Args: []float64{1, 9}},
		{Name: "c", Kind: space.Choice, Options: []space.Option{{Value: "a"}, {Value: 2.0}, {Value: true}}},
	}}
	got, err := OptunaSpace(sp)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `[{"name":"u","type":"float","low":-1,"high":2},` +
		`{"name":"lu","type":"float","low":0.001,"high":1,"log":true},` +
		`{"name":"q","type":"float","low":0,"high":10,"step":0.5},` +
		`{"name":"qoff","type":"float","low":0.2,"high":10},` +
		`{"name":"li","type":"int","low":1,"high":1024,"log":true},` +
		`{"name":"lq","type":"float","low":1,"high":1000,"log":true},` +
		`{"name":"ri","type":"int","low":1,"high":8},` +
		`{"name":"c","type":"categorical","choices":["a",2,true]}]`
	if string(b) != want {
		t.Errorf("mapping:\n got %s\nwant %s", b, want)
	}
	// Values Optuna can return come back as NNI values, or are refused.
	p, err := FromOptuna(sp, map[string]any{"u": 0.5, "lu": 0.01, "q": 6.5, "qoff": 3.3, "li": 64.0, "lq": 123.4, "ri": 8.0, "c": true})
	if err != nil {
		t.Fatal(err)
	}
	if p["qoff"] != 3.5 || p["lq"] != 120.0 || p["ri"] != 8.0 {
		t.Errorf("FromOptuna rounding: %v", p)
	}
	if _, err := FromOptuna(sp, map[string]any{"u": 0.5, "lu": 0.01, "q": 6.5, "qoff": 3.3, "li": 64.0, "lq": 123.4, "ri": 9.0, "c": true}); err == nil {
		t.Errorf("randint 9 of [1, 9) was accepted")
	}
	for _, bad := range []space.Param{
		{Name: "n", Kind: space.Normal, Args: []float64{0, 1}},
		{Name: "nc", Kind: space.Choice, Options: []space.Option{{Name: "conv"}}},
	} {
		if _, err := OptunaSpace(&space.Space{Params: []space.Param{bad}}); err == nil {
			t.Errorf("%s: no error", bad.Kind)
		}
	}
}

// TestScheduleParallel: with 8 in flight, the first 8 asks come before any
// tell, and every tell answers the oldest pending trial.
func TestScheduleParallel(t *testing.T) {
	a := &recAsker{}
	best, _, _, err := schedule(a, 20, 8, func(p space.Params) (float64, error) { return p["x0"].(float64), nil })
	if err != nil {
		t.Fatal(err)
	}
	if a.log[:9] != "aaaaaaaat" {
		t.Errorf("order %q, want 8 asks before the first tell", a.log)
	}
	if len(a.told) != 20 || a.told[0] != 0 || a.told[19] != 19 {
		t.Errorf("told %v, want 0..19 in order", a.told)
	}
	if best != 0 {
		t.Errorf("best %v, want 0", best)
	}
}

type recAsker struct {
	log  string
	n    int
	told []int
}

func (r *recAsker) ask() (int, space.Params, error) {
	r.log += "a"
	r.n++
	return r.n - 1, space.Params{"x0": float64(r.n - 1)}, nil
}

func (r *recAsker) tell(h int, v float64) error {
	r.log += "t"
	r.told = append(r.told, h)
	return nil
}

const python = "/usr/bin/python3"

func needPython(t *testing.T, modules string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the Python peer")
	}
	testdeps.Require(t, "python3-optuna and python3-sklearn", testdeps.PythonModules(python, modules))
}

// TestOptunaPeerSmoke drives optuna_peer.py through a short study of each
// sampler on the mixed space, sequential and with 8 in flight, and checks
// that every answer lies in the space and that the seed fixes the answers.
func TestOptunaPeerSmoke(t *testing.T) {
	t.Parallel()
	needPython(t, "optuna")
	env := &runEnv{procs: procs{python: python, dir: "."}}
	defer env.procs.closeAll()
	pr := Problems()[8]
	if pr.Name != "mixed5" {
		t.Fatalf("problem 8 is %s", pr.Name)
	}
	for _, s := range []string{"random", "tpe"} {
		for _, par := range []int{1, 8} {
			o := env.Run(Sampler{"optuna", s}, pr, 3, 14, par)
			if o.Err != nil {
				t.Fatalf("%s, %d in flight: %v", s, par, o.Err)
			}
			if o.Regret < 0 || math.IsInf(o.Regret, 0) || math.IsNaN(o.Regret) {
				t.Errorf("%s: regret %v", s, o.Regret)
			}
			again := env.Run(Sampler{"optuna", s}, pr, 3, 14, par)
			if again.Regret != o.Regret {
				t.Errorf("%s, %d in flight: seed 3 gave regret %v then %v", s, par, o.Regret, again.Regret)
			}
		}
	}
	peer, _ := env.procs.get(peerScript)
	var r struct {
		Median float64 `json:"median_ms"`
	}
	spec, _ := OptunaSpace(mixedSpace())
	if err := peer.call(map[string]any{"op": "latency", "space": spec, "history": 20, "reps": 2}, &r); err != nil || r.Median <= 0 {
		t.Errorf("latency: %v, %v", r, err)
	}
	if err := peer.call(map[string]any{"op": "bogus"}, &r); err == nil {
		t.Errorf("an unknown op gave no error")
	}
}

// TestDigitsWorkerSmoke evaluates one SVM through digits_worker.py.
func TestDigitsWorkerSmoke(t *testing.T) {
	t.Parallel()
	needPython(t, "sklearn")
	env := &runEnv{procs: procs{python: python, dir: "."}}
	defer env.procs.closeAll()
	pr := Problems()[9]
	v, err := env.evaluate(pr, space.Params{"C": 10.0, "gamma": 0.03})
	if err != nil {
		t.Fatal(err)
	}
	if !(v >= 0 && v < 0.1) {
		t.Errorf("CV error of a good SVM = %v, want in [0, 0.1)", v)
	}
}
