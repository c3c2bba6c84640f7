package main

import (
	"reflect"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

// TestSettingsOf checks the NAME:key=value variant syntax of -go.
func TestSettingsOf(t *testing.T) {
	got, err := settingsOf("tpe:prior_weight=0.5:candidates=48:multivariate=true:liar=min")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"prior_weight": 0.5, "candidates": int64(48), "multivariate": true, "liar": "min"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("settings %v, want %v", got, want)
	}
	if registeredName("tpe:prior_weight=0.5") != "tpe" || registeredName("tpe-mv") != "tpe" {
		t.Errorf("registeredName")
	}
	if s, err := settingsOf("auto"); s != nil || err != nil {
		t.Errorf("plain name: %v, %v", s, err)
	}
	if _, err := settingsOf("tpe:candidates"); err == nil {
		t.Errorf("a setting without = was accepted")
	}
}

// TestCurveAndBudgets checks that a run's curve is its best-so-far regret
// and that the regret at a smaller budget is read off it.
func TestCurveAndBudgets(t *testing.T) {
	pr := &Problem{Name: "line", Space: box(1, 0, 1), Optimum: -1, Eval: func(p space.Params) float64 { return p["x0"].(float64) }}
	var e runEnv
	o := e.Run(Sampler{"go", "random"}, pr, 3, 30, 1)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	if len(o.Curve) != 30 || o.Curve[29] != o.Regret {
		t.Fatalf("curve of %d points ending %v, regret %v", len(o.Curve), o.Curve[len(o.Curve)-1], o.Regret)
	}
	for i := 1; i < len(o.Curve); i++ {
		if o.Curve[i] > o.Curve[i-1] {
			t.Fatalf("curve rises at %d: %v", i, o.Curve)
		}
	}
	// A 10-trial run is the 30-trial run's first 10 trials.
	short := e.Run(Sampler{"go", "random"}, pr, 3, 10, 1)
	cut := atBudget(results{"line": {{"go", "random"}: {o}}}, 10)["line"][Sampler{"go", "random"}][0]
	if cut.Regret != short.Regret || !reflect.DeepEqual(cut.Curve, short.Curve) {
		t.Errorf("budget 10 of a 30-trial run: %v, a 10-trial run: %v", cut.Regret, short.Regret)
	}
	if bad := atBudget(results{"line": {{"go", "random"}: {short}}}, 20)["line"][Sampler{"go", "random"}][0]; bad.Err == nil {
		t.Errorf("budget 20 of a 10-trial run has no error")
	}
}

// TestCache checks that a kept peer run comes back, cut to fewer trials,
// and that Go runs are never kept.
func TestCache(t *testing.T) {
	c := &config{cache: t.TempDir(), trials: 4}
	pr := &Problem{Name: "p"}
	s := Sampler{"optuna", "tpe"}
	if _, ok := c.cached(s, pr, 1, 1); ok {
		t.Fatal("hit in an empty cache")
	}
	c.store(s, pr, 1, 1, Outcome{Regret: 0.5, Curve: []float64{3, 2, 1, 0.5}})
	c.trials = 3
	o, ok := c.cached(s, pr, 1, 1)
	if !ok || o.Regret != 1 || len(o.Curve) != 3 {
		t.Errorf("cut to 3 trials: %+v, %v", o, ok)
	}
	c.trials = 5
	if _, ok := c.cached(s, pr, 1, 1); ok {
		t.Errorf("a 4-trial run served 5 trials")
	}
	if _, ok := c.cached(s, pr, 2, 1); ok {
		t.Errorf("seed 2 served from seed 1")
	}
	c.trials = 2
	c.store(Sampler{"go", "tpe"}, pr, 1, 1, Outcome{Regret: 0.5, Curve: []float64{1, 0.5}})
	if _, ok := c.cached(Sampler{"go", "tpe"}, pr, 1, 1); ok {
		t.Errorf("a Go run was kept")
	}
}
