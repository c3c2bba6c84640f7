package tuner

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

// The tests in this file cover the optimisers added beside TPE: cmaes,
// auto, anneal and evolution, with settings small enough that their model
// is in use after a few trials.
var optimisers = []struct {
	name     string
	settings map[string]any
}{
	{"cmaes", map[string]any{"popsize": 4.0}},
	// The GP phase without its coordinate moves: once the optimum is
	// found in a corner, a move along a line through it takes the far
	// part of the line as often as not (nothing is left to gain, the
	// uncertainty is largest there), which TestOptimisersGoal reads as
	// not pulling towards the goal (median late x 0.17-0.32 over seeds
	// 3-6, against 0.00-0.12 without). TestAutoLineMoves and
	// TestAutoFindsEachBasin cover the moves.
	{"auto", map[string]any{"tpe_trials": 12.0, "line_every": 0.0}},
	{"auto", map[string]any{"gp_trials": 12.0, "popsize": 4.0}}, // CMA-ES after the GP in spaces without nested choices
	{"anneal", nil},
	{"evolution", map[string]any{"population_size": 8.0}},
	{"tpe", map[string]any{"startup_trials": 5.0}}, // multivariate, the default
	{"tpe", map[string]any{"multivariate": false, "startup_trials": 5.0}},
	{"gp", map[string]any{"startup_trials": 5.0}},
	{"smac", map[string]any{"startup_trials": 5.0}},
	{"metis", map[string]any{"startup_trials": 5.0}},
}

// TestOptimisersParallelDistinct: several trials asked for at once, with
// pending trials in the history, are distinct from each other and from
// the history.
func TestOptimisersParallelDistinct(t *testing.T) {
	sp := quadSpace()
	for _, o := range optimisers {
		tn := mustNew(t, o.name, o.settings, sp)
		hist := loop(t, tn, sp, Minimize, 5, 30, quad)
		for i := 24; i < 30; i++ {
			hist[i].State = Pending
		}
		out, err := tn.Suggest(Request{Space: sp, Goal: Minimize, Seed: 5, History: hist, Seqs: []int{31, 32, 33, 34, 35, 36, 37, 38}})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, h := range hist {
			seen[key(h.Params)] = true
		}
		for _, p := range out {
			if seen[key(p)] || !sp.Contains(p) {
				t.Fatalf("%s: repeated or invalid point %v", o.name, p)
			}
			seen[key(p)] = true
		}
	}
}

// TestOptimisersDiscreteDistinct: on a small all-discrete space, parallel
// suggestions of the model-free tuners avoid points already taken.
func TestOptimisersDiscreteDistinct(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "a", Kind: space.Randint, Args: []float64{0, 6}},
		{Name: "b", Kind: space.Choice, Options: []space.Option{{Value: "x"}, {Value: "y"}}},
	}}
	for _, name := range []string{"anneal", "evolution", "gp", "smac"} {
		tn := mustNew(t, name, map[string]any{"seed": 2.0}, sp)
		hist := loop(t, tn, sp, Minimize, 2, 3, func(p space.Params) float64 { return p["a"].(float64) })
		out, err := tn.Suggest(Request{Space: sp, Goal: Minimize, History: hist, Seqs: []int{4, 5, 6, 7, 8, 9}})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, h := range hist {
			seen[key(h.Params)] = true
		}
		for _, p := range out {
			if seen[key(p)] {
				t.Fatalf("%s: repeated point %v", name, p)
			}
			seen[key(p)] = true
		}
	}
}

// TestAutoGPPhase: in a space without nested choices and with line_every
// = 0, auto's trials 11 to gp_trials are the gp tuner's (with its defaults
// and the same seed), and later ones are not; in a space with a nested
// choice auto's first trials are the tpe tuner's.
func TestAutoGPPhase(t *testing.T) {
	sp := mixedSpace()
	flat := &space.Space{Params: sp.Params[:10]}
	gp := mustNew(t, "gp", nil, flat)
	for _, gpTrials := range []float64{100, 14} {
		auto := mustNew(t, "auto", map[string]any{"gp_trials": gpTrials, "line_every": 0}, flat)
		hist := loop(t, auto, flat, Maximize, 5, 16, objective)
		for i := 10; i < 16; i++ {
			// The GP sees the losses warped (warpHistory).
			req := Request{Space: flat, Goal: Minimize, Seed: 5, History: warpHistory(hist[:i], -1), Seqs: []int{i + 1}}
			want := suggest(t, gp, req, "gp")
			if got := hist[i].Params; reflect.DeepEqual(got, want[0]) != (i < int(gpTrials)) {
				t.Errorf("gp_trials %v, trial %d: auto %v, gp %v", gpTrials, i+1, got, want[0])
			}
		}
	}
	a := loop(t, mustNew(t, "auto", nil, sp), sp, Maximize, 5, 16, objective)
	b := loop(t, mustNew(t, "tpe", map[string]any{"multivariate": false}, sp), sp, Maximize, 5, 16, objective)
	if !reflect.DeepEqual(a, b) {
		t.Error("auto and tpe differ in a space with a nested choice")
	}
}

// TestAutoLineMoves: in the GP phase, auto's every second trial (by
// default) changes exactly one param of the best trial so far (a number
// of any kind: log, stepped, integer, normal; or a choice); the others are
// the gp tuner's, as with line_every = 0.
func TestAutoLineMoves(t *testing.T) {
	flat := &space.Space{Params: mixedSpace().Params[:10]}
	gp := mustNew(t, "gp", nil, flat)
	auto := mustNew(t, "auto", nil, flat)
	hist := loop(t, auto, flat, Maximize, 5, 22, objective)
	for i := 10; i < 22; i++ {
		best := hist[0]
		for _, h := range hist[1:i] {
			if h.Value > best.Value {
				best = h
			}
		}
		got := hist[i].Params
		var changed []string
		for _, p := range flat.Params {
			a, b := got[p.Name], best.Params[p.Name]
			x, okx := space.ToFloat(a)
			y, oky := space.ToFloat(b)
			same := reflect.DeepEqual(a, b) || (okx && oky && math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)))
			if !same {
				changed = append(changed, p.Name)
			}
		}
		if i%2 == 1 {
			if len(changed) != 1 {
				t.Errorf("trial %d, a line move: changed %v of the best trial %v (want one param): %v", i+1, changed, best.Params, got)
			}
			continue
		}
		req := Request{Space: flat, Goal: Minimize, Seed: 5, History: warpHistory(hist[:i], -1), Seqs: []int{i + 1}}
		if want := suggest(t, gp, req, "gp"); !reflect.DeepEqual(got, want[0]) {
			t.Errorf("trial %d: auto %v, gp %v", i+1, got, want[0])
		}
	}
}

// TestWarpHistory: the GP phase's warp keeps the order of the losses (the
// best trial stays the best, the goal's sign applied), maps the best to 0
// and the median to log 2, and leaves pending, failed and non-finite
// trials, and a history of equal values, as they are.
func TestWarpHistory(t *testing.T) {
	hist := []Observation{
		{Seq: 1, State: Completed, Value: 1e6},
		{Seq: 2, State: Completed, Value: 3},
		{Seq: 3, State: Pending},
		{Seq: 4, State: Completed, Value: 1},
		{Seq: 5, State: Failed, Value: 7},
		{Seq: 6, State: Completed, Value: math.NaN()},
		{Seq: 7, State: Completed, Value: 5},
	}
	w := warpHistory(hist, 1)
	// losses 1e6, 3, 1, 5: min 1, median (upper) 5, scale 4.
	want := map[int]float64{1: math.Log1p((1e6 - 1) / 4), 2: math.Log1p(0.5), 4: 0, 7: math.Log(2)}
	for _, o := range w {
		if v, ok := want[o.Seq]; ok {
			if math.Abs(o.Value-v) > 1e-12 {
				t.Errorf("seq %d: %v, want %v", o.Seq, o.Value, v)
			}
		} else if o.State != hist[o.Seq-1].State || !(o.Value == hist[o.Seq-1].Value || math.IsNaN(o.Value)) {
			t.Errorf("seq %d changed: %+v", o.Seq, o)
		}
	}
	if hist[0].Value != 1e6 {
		t.Error("the input history was changed")
	}
	// Maximising: the largest value is the best, warped to 0.
	m := warpHistory([]Observation{{Seq: 1, State: Completed, Value: 2}, {Seq: 2, State: Completed, Value: 9}, {Seq: 3, State: Completed, Value: 4}}, -1)
	if m[1].Value != 0 || !(m[2].Value < m[0].Value) {
		t.Errorf("maximise: %v", m)
	}
	eq := warpHistory([]Observation{{Seq: 1, State: Completed, Value: 2}, {Seq: 2, State: Completed, Value: 2}}, 1)
	if eq[0].Value != 2 || eq[1].Value != 2 {
		t.Errorf("equal values: %v", eq)
	}
}

// TestWarpedLie: the GP phase's liar is the warp of the raw losses' mean.
func TestWarpedLie(t *testing.T) {
	raw := []float64{1, 3, 5, 1e6}
	hist := make([]Observation, len(raw))
	for i, v := range raw {
		hist[i] = Observation{Seq: i + 1, State: Completed, Value: v}
	}
	var w []float64
	for _, o := range warpHistory(hist, 1) {
		w = append(w, o.Value)
	}
	mean := (1 + 3 + 5 + 1e6) / 4.0
	want := math.Log1p((mean - 1) / 4) // min 1, median (upper) 5
	if got := warpedLie(w); math.Abs(got-want) > 1e-9*want {
		t.Errorf("lie %v, want %v", got, want)
	}
	if got := warpedLie([]float64{2e3, 2e3}); got != 2e3 {
		t.Errorf("unwarped equal losses: lie %v, want 2000", got)
	}
}

// TestAutoAllChoiceIsTPE: on a space without numbers, auto proposes what
// TPE with one model per parameter proposes.
func TestAutoAllChoiceIsTPE(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "a", Kind: space.Choice, Options: []space.Option{{Value: "x"}, {Value: "y"}, {Value: "z"}}},
		{Name: "b", Kind: space.Choice, Options: []space.Option{{Value: 1.0}, {Value: 2.0}, {Value: 3.0}, {Value: 4.0}}},
	}}
	f := func(p space.Params) float64 { return p["b"].(float64) }
	a := loop(t, mustNew(t, "auto", nil, sp), sp, Maximize, 3, 40, f)
	b := loop(t, mustNew(t, "tpe", map[string]any{"multivariate": false}, sp), sp, Maximize, 3, 40, f)
	if !reflect.DeepEqual(a, b) {
		t.Error("auto and tpe differ on an all-choice space")
	}
}

func TestCMAESRefusesAllChoice(t *testing.T) {
	sp := &space.Space{Params: []space.Param{{Name: "a", Kind: space.Choice, Options: []space.Option{{Value: "x"}, {Value: "y"}}}}}
	_, err := New("cmaes", nil, sp)
	if err == nil || !strings.Contains(err.Error(), "no numeric parameter") || !strings.Contains(err.Error(), `"tpe"`) {
		t.Fatalf("error = %v", err)
	}
}

// TestCMAESReplayRecoversPoints: the replay re-draws the continuous points
// of its own trials, so a generation's update sees unrounded points; on a
// history from another tuner it still works (injected points).
func TestCMAESReplayInjected(t *testing.T) {
	fn := sphereFunc(3)
	cm := mustNew(t, "cmaes", nil, fn.sp)
	hist := loop(t, mustNew(t, "random", nil, fn.sp), fn.sp, Minimize, 1, 40, fn.f)
	for seq := 41; seq <= 160; seq++ {
		out, err := cm.Suggest(Request{Space: fn.sp, Goal: Minimize, Seed: 1, History: hist, Seqs: []int{seq}})
		if err != nil {
			t.Fatal(err)
		}
		hist = append(hist, Observation{Seq: seq, Params: out[0], State: Completed, Value: fn.f(out[0])})
	}
	if b := bestOf(hist[40:], Minimize); b > 0.05 {
		t.Errorf("best after 120 CMA-ES trials on a random history: %v", b)
	}
}

func TestJacobiEigen(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, d := range []int{1, 2, 5, 12} {
		// a = m mᵀ is symmetric positive semi-definite.
		m := make([]float64, d*d)
		for i := range m {
			m[i] = r.NormFloat64()
		}
		a := make([]float64, d*d)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				for k := 0; k < d; k++ {
					a[i*d+j] += m[i*d+k] * m[j*d+k]
				}
			}
		}
		vecs := make([]float64, d*d)
		ev := jacobiEigen(a, vecs, d)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				v := 0.0
				for k := 0; k < d; k++ {
					v += vecs[i*d+k] * ev[k] * vecs[j*d+k]
				}
				if math.Abs(v-a[i*d+j]) > 1e-9*(1+math.Abs(a[i*d+j])) {
					t.Fatalf("d=%d: B D Bᵀ[%d][%d] = %v, want %v", d, i, j, v, a[i*d+j])
				}
			}
		}
	}
}

func TestBatch(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-4, 1}},
		{Name: "layers", Kind: space.Randint, Args: []float64{1, 5}},
	}}
	sets := []any{
		map[string]any{"lr": 0.1, "layers": 2.0},
		map[string]any{"lr": 0.01, "layers": 3.0},
		map[string]any{"lr": 0.1, "layers": 2.0},
	}
	tn := mustNew(t, "batch", map[string]any{"params": sets}, sp)
	out, err := tn.Suggest(Request{Space: sp, Seqs: []int{2, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if out[1]["lr"] != 0.1 || out[0]["lr"] != 0.01 {
		t.Fatalf("seqs 2, 1 got %v", out)
	}
	hist := []Observation{{Seq: 1, Params: out[1], State: Failed}, {Seq: 2, Params: out[0], State: Pending}}
	third, err := tn.Suggest(Request{Space: sp, History: hist, Seqs: []int{3}})
	if err != nil || !reflect.DeepEqual(third[0], space.Params{"lr": 0.1, "layers": 2.0}) {
		t.Fatalf("third = %v, %v", third, err)
	}
	hist = append(hist, Observation{Seq: 3, Params: third[0], State: Completed})
	_, err = tn.Suggest(Request{Space: sp, History: hist, Seqs: []int{4}})
	var ex *ExhaustedError
	if !errors.As(err, &ex) || ex.Size != 3 || !strings.Contains(err.Error(), "only 3 parameter sets") {
		t.Fatalf("fourth trial: %v", err)
	}
	// A re-plan of a pending trial gets its set again.
	again, err := tn.Suggest(Request{Space: sp, History: hist, Seqs: []int{2}})
	if err != nil || again[0]["lr"] != 0.01 {
		t.Fatalf("re-plan of 2: %v, %v", again, err)
	}
}

func TestNewTunersSettingsValidation(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}},
		{Name: "n", Kind: space.Randint, Args: []float64{0, 3}},
	}}
	withChoice := &space.Space{Params: append(sp.Params[:2:2], space.Param{Name: "c", Kind: space.Choice, Options: []space.Option{{Value: 1.0}, {Value: 2.5}, {Value: "b"}}})}
	checkSettings(t, withChoice, []settingsCase{
		{"batch", map[string]any{"params": []any{map[string]any{"x": 0.5, "n": 2.0, "c": "1"}}}, []string{`parameter "c" = "1" (a string) is not a value of its choice [1, 2.5, "b"]`}},
	})
	checkSettings(t, sp, []settingsCase{
		{"cmaes", map[string]any{"popsize": 6.0, "sigma0": 0.3, "seed": 1.0}, nil},
		{"cmaes", map[string]any{"popsize": 1.0}, []string{`"popsize"`, "at least 2"}},
		{"cmaes", map[string]any{"sigma0": 2.0}, []string{`"sigma0"`, "at most 1, got 2"}},
		{"cmaes", map[string]any{"sigma": 2.0}, []string{`unknown setting "sigma"`, "valid: popsize, seed, sigma0"}},
		{"auto", map[string]any{"tpe_trials": 0.0, "popsize": 10.0}, nil},
		{"auto", map[string]any{"tpe_trials": -1.0}, []string{`"tpe_trials"`, "at least 0"}},
		{"auto", map[string]any{"startup_trials": 5.0}, []string{`unknown setting "startup_trials"`, "valid: gp_trials, line_every, popsize, seed, tpe_trials"}},
		{"anneal", map[string]any{"avg_best_idx": 3.0, "shrink_coef": 0.5}, nil},
		{"anneal", map[string]any{"shrink_coef": 0.0}, []string{`"shrink_coef"`, "greater than 0"}},
		{"anneal", map[string]any{"avg_best_idx": "best"}, []string{`"avg_best_idx"`, "number"}},
		{"evolution", map[string]any{"population_size": 10.0, "sample_size": 10.0}, nil},
		{"evolution", map[string]any{"population_size": 1.0}, []string{`"population_size"`, "at least 2"}},
		{"evolution", map[string]any{"population_size": 10.0, "sample_size": 11.0}, []string{"sample_size (11) must not exceed population_size (10)"}},
		{"gp", map[string]any{"utility": "poi", "xi": 0.1, "kappa": 2.0, "startup_trials": 3.0, "restarts": 0.0, "liar": "max"}, nil},
		{"gp", map[string]any{"utility": "lcb"}, []string{`"utility"`, `must be "ei", "ucb" or "poi", got "lcb". Did you mean "ucb"?`}},
		{"gp", map[string]any{"kappa": -1.0}, []string{`"kappa"`, "at least 0"}},
		{"gp", map[string]any{"startup_trials": 0.0}, []string{`"startup_trials"`, "at least 1"}},
		{"gp", map[string]any{"restarts": 50.0}, []string{`"restarts"`, "at most 20"}},
		{"gp", map[string]any{"liar": 1.0}, []string{`"liar"`, `must be "mean", "min" or "max"`}},
		{"gp", map[string]any{"cold_start_num": 3.0}, []string{`unknown setting "cold_start_num"`, "startup_trials"}},
		{"smac", map[string]any{"trees": 5.0, "random_prob": 0.0, "startup_trials": 4.0}, nil},
		{"smac", map[string]any{"trees": 0.0}, []string{`"trees"`, "at least 1"}},
		{"smac", map[string]any{"random_prob": 1.5}, []string{`"random_prob"`, "at most 1, got 1.5"}},
		{"smac", map[string]any{"utility": "ei"}, []string{`unknown setting "utility"`, "valid: random_prob, seed, startup_trials, trees"}},
		{"metis", map[string]any{"resample": false, "outlier_z": 4.0, "restarts": 1.0, "startup_trials": 3.0}, nil},
		{"metis", map[string]any{"outlier_z": 0.5}, []string{`"outlier_z"`, "at least 1, got 0.5"}},
		{"metis", map[string]any{"resample": "no"}, []string{`"resample"`, "true or false"}},
		{"metis", map[string]any{"utility": "ucb"}, []string{`unknown setting "utility"`, "valid: outlier_z, resample, restarts, seed, startup_trials"}},
		{"batch", map[string]any{"params": []any{map[string]any{"x": 0.5, "n": 2.0}}}, nil},
		{"batch", nil, []string{`"params" is required`}},
		{"batch", map[string]any{"params": "x=1"}, []string{"params must be a list of objects"}},
		{"batch", map[string]any{"params": []any{}}, []string{"params is empty"}},
		{"batch", map[string]any{"params": []any{1.0}}, []string{"element 0 must be an object"}},
		{"batch", map[string]any{"params": []any{map[string]any{"x": 0.5, "n": 2.0}, map[string]any{"x": 0.5}}}, []string{"set 1", `parameter "n" is missing`}},
		{"batch", map[string]any{"params": []any{map[string]any{"x": 1.5, "n": 2.0}}}, []string{"set 0", `parameter "x" = 1.5 is not a value of its uniform [0, 1]`}},
		{"batch", map[string]any{"params": []any{map[string]any{"x": 0.5, "n": 2.5}}}, []string{`parameter "n" = 2.5 is not a value of its randint [0, 3]`}},
		{"batch", map[string]any{"params": []any{map[string]any{"x": "1", "n": 2.0}}}, []string{`parameter "x" = "1" (a string) is not a value of its uniform [0, 1]`}},
		{"batch", map[string]any{"params": []any{map[string]any{"x": 0.5, "n": 2.0, "y": 1.0}}}, []string{`"y" is not a parameter of the search space`}},
	})
}
