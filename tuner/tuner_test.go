package tuner

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

func TestRegistry(t *testing.T) {
	if got, want := builtin.Names(), []string{"anneal", "auto", "batch", "bohb", "cmaes", "evolution", "gp", "grid", "hyperband", "metis", "mogp", "motpe", "nsga2", "pbt", "random", "smac", "tpe"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range builtin.Names() {
		k := builtin.Lookup(n)
		if k == nil || k.Name != n || k.New == nil || k.Schema().AttrNamed("seed") == nil {
			t.Errorf("Lookup(%q) = %+v", n, k)
		}
	}
	if _, err := New("annealing", nil, mixedSpace()); err == nil || !strings.Contains(err.Error(), `"annealing"`) {
		t.Fatalf("New(annealing) error = %v", err)
	}
	if got, want := builtin.AssessorNames(), []string{"curvefitting", "medianstop"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("AssessorNames() = %v, want %v", got, want)
	}
}

// settingsCase is a tuner's settings and the error they give.
type settingsCase struct {
	tuner    string
	settings map[string]any
	wantErr  []string // substrings; none = no error
}

// checkSettings builds each case's tuner and checks its error.
func checkSettings(t *testing.T, sp *space.Space, cases []settingsCase) {
	t.Helper()
	for _, tc := range cases {
		_, err := New(tc.tuner, tc.settings, sp)
		if len(tc.wantErr) == 0 {
			if err != nil {
				t.Errorf("%s %v: %v", tc.tuner, tc.settings, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s %v: no error, want %q", tc.tuner, tc.settings, tc.wantErr)
			continue
		}
		for _, w := range tc.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: error %q lacks %q", tc.tuner, tc.settings, err, w)
			}
		}
	}
}

func TestSettingsValidation(t *testing.T) {
	sp := &space.Space{Params: []space.Param{{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}}}}
	checkSettings(t, sp, []settingsCase{
		{"random", map[string]any{"seed": 3.0}, nil},
		{"random", map[string]any{"seed": int64(-3)}, nil},
		{"random", map[string]any{"sed": 3.0}, []string{`unknown setting "sed"`, "valid: seed"}},
		{"random", map[string]any{"seed": "abc"}, []string{`"seed"`, "whole number"}},
		{"random", map[string]any{"seed": 1.5}, []string{`"seed"`, "whole number"}},
		{"tpe", map[string]any{"startup_trials": 5.0, "candidates": 48, "prior_weight": 0.5, "seed": 1}, nil},
		{"tpe", map[string]any{"candidate": 5.0, "gamma": 1.0}, []string{`unknown settings "candidate", "gamma"`, "valid: candidates, multivariate, prior_weight, seed, startup_trials"}},
		{"tpe", map[string]any{"candidates": 0.0}, []string{`"candidates"`, "at least 1"}},
		{"tpe", map[string]any{"startup_trials": -1.0}, []string{`"startup_trials"`, "at least 0"}},
		{"tpe", map[string]any{"prior_weight": "big"}, []string{`"prior_weight"`, "number"}},
		{"tpe", map[string]any{"prior_weight": 0.0}, []string{`"prior_weight"`, "greater than 0"}},
		{"grid", map[string]any{"grid_points": 5.0}, nil},
		{"grid", map[string]any{"grid_points": 0.0}, []string{`"grid_points"`, "at least 1"}},
		{"grid", map[string]any{"grid_points": true}, []string{`"grid_points"`, "whole number"}},
		{"grid", map[string]any{"points": 5.0}, []string{`unknown setting "points"`, "valid: grid_points, repeat, seed"}},
		{"grid", nil, []string{`parameter "x" is continuous (uniform)`, "grid_points"}},
	})
}

// mixedSpace has every kind, and a nested choice.
func mixedSpace() *space.Space {
	return &space.Space{Params: []space.Param{
		{Name: "u", Kind: space.Uniform, Args: []float64{-1, 1}},
		{Name: "qu", Kind: space.Quniform, Args: []float64{1, 10, 3}},
		{Name: "lu", Kind: space.Loguniform, Args: []float64{1e-4, 1}},
		{Name: "qlu", Kind: space.Qloguniform, Args: []float64{1, 1000, 10}},
		{Name: "ri", Kind: space.Randint, Args: []float64{0, 5}},
		{Name: "n", Kind: space.Normal, Args: []float64{0, 1}},
		{Name: "qn", Kind: space.Qnormal, Args: []float64{0, 3, 1}},
		{Name: "ln", Kind: space.Lognormal, Args: []float64{0, 1}},
		{Name: "qln", Kind: space.Qlognormal, Args: []float64{0, 1, 0.5}},
		{Name: "act", Kind: space.Choice, Options: []space.Option{{Value: "relu"}, {Value: "tanh"}, {Value: 1.0}}},
		{Name: "model", Kind: space.Choice, Options: []space.Option{
			{Name: "cnn", Nested: &space.Space{Params: []space.Param{
				{Name: "layers", Kind: space.Randint, Args: []float64{1, 4}},
				{Name: "dropout", Kind: space.Uniform, Args: []float64{0, 0.5}},
			}}},
			{Name: "linear"},
		}},
	}}
}

// objective is a smooth function of mixedSpace's numbers plus a bonus for
// the cnn model, to give the tuners something to chase.
func objective(p space.Params) float64 {
	f := func(k string) float64 { x, _ := space.ToFloat(p[k]); return x }
	v := -(f("u")-0.3)*(f("u")-0.3) - (f("ri")-2)*(f("ri")-2)*0.1
	if m, ok := p["model"].(map[string]any); ok && m["_name"] == "cnn" {
		d, _ := space.ToFloat(m["dropout"])
		v += 0.5 - d
	}
	return v
}

// loop runs n trials one at a time, as apply would, and returns the history.
func loop(t testing.TB, tn Tuner, sp *space.Space, goal Goal, seed int64, n int, f func(space.Params) float64) []Observation {
	var hist []Observation
	for seq := 1; seq <= n; seq++ {
		out := suggest(t, tn, Request{Space: sp, Goal: goal, Seed: seed, History: hist, Seqs: []int{seq}}, fmt.Sprintf("trial %d", seq))
		hist = append(hist, Observation{Seq: seq, Params: out[0], State: Completed, Value: f(out[0])})
	}
	return hist
}

// suggest is tn.Suggest that fails t on an error or on an answer that
// does not have one point per seq; what names the request.
func suggest(t testing.TB, tn Tuner, req Request, what string) []space.Params {
	t.Helper()
	out, err := tn.Suggest(req)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(out) != len(req.Seqs) {
		t.Fatalf("%s: %d suggestions for %d seqs: %v", what, len(out), len(req.Seqs), out)
	}
	return out
}

func mustNew(t testing.TB, name string, settings map[string]any, sp *space.Space) Tuner {
	t.Helper()
	tn, err := New(name, settings, sp)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func key(p space.Params) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// TestDeterminism covers every tuner: the same request gives the same
// answer, another seed another one (random, tpe), and asking for several
// trials at once equals asking one at a time.
func TestDeterminism(t *testing.T) {
	sp := mixedSpace()
	gridSp := &space.Space{Params: sp.Params[1:5]}
	flatSp := &space.Space{Params: sp.Params[:10]} // without the nested choice
	for _, name := range []string{"random", "tpe", "tpe-uv", "grid", "cmaes", "auto", "auto-gp", "auto-cma", "anneal", "evolution", "gp", "smac", "metis"} {
		t.Run(name, func(t *testing.T) {
			s, settings := sp, map[string]any{"startup_trials": 5.0}
			switch name {
			case "auto-gp": // the GP phase (trials 11 to 100)
				name, s, settings = "auto", flatSp, nil
			case "auto-cma": // CMA-ES after a GP phase
				name, s, settings = "auto", flatSp, map[string]any{"gp_trials": 11.0, "popsize": 3.0}
			case "tpe-uv":
				name, settings = "tpe", map[string]any{"startup_trials": 5.0, "multivariate": false}
			case "grid":
				s, settings = gridSp, map[string]any{"grid_points": 3.0}
			case "random", "cmaes", "anneal":
				settings = nil
			case "auto":
				settings = map[string]any{"tpe_trials": 6.0, "popsize": 3.0}
			case "evolution":
				settings = map[string]any{"population_size": 4.0}
			case "gp":
				settings = map[string]any{"startup_trials": 5.0, "utility": "ucb", "kappa": 1.0}
			case "metis":
				settings = map[string]any{"startup_trials": 5.0}
			case "smac":
				settings = map[string]any{"startup_trials": 5.0, "random_prob": 0.3}
			}
			tn := mustNew(t, name, settings, s)
			hist := loop(t, tn, s, Maximize, 9, 12, objective)
			hist[3].State = Failed
			hist[7].State = Pending
			req := Request{Space: s, Goal: Maximize, Seed: 9, History: hist, Seqs: []int{13, 14, 15, 16}}
			a := suggest(t, tn, req, "seqs 13-16")
			b := suggest(t, tn, req, "seqs 13-16 again")
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("same request, different answers:\n%v\n%v", a, b)
			}
			for _, p := range a {
				if !s.Contains(p) {
					t.Fatalf("suggestion %v is not in the space", p)
				}
			}
			// One at a time, each earlier one pending.
			h := append([]Observation(nil), hist...)
			for i, seq := range req.Seqs {
				one, err := tn.Suggest(Request{Space: s, Goal: Maximize, Seed: 9, History: h, Seqs: []int{seq}})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(one[0], a[i]) {
					t.Fatalf("seq %d alone = %v, in a batch = %v", seq, one[0], a[i])
				}
				h = append(h, Observation{Seq: seq, Params: one[0], State: Pending})
			}
			// Seqs in another order: the same trial gets the same point.
			rev := suggest(t, tn, Request{Space: s, Goal: Maximize, Seed: 9, History: hist, Seqs: []int{16, 15, 14, 13}}, "reversed seqs")
			for i := range rev {
				if !reflect.DeepEqual(rev[i], a[3-i]) {
					t.Fatalf("reversed seqs: %v != %v", rev[i], a[3-i])
				}
			}
			if name == "grid" {
				return
			}
			req.Seed = 10
			c := suggest(t, tn, req, "seed 10")
			if reflect.DeepEqual(a, c) {
				t.Fatalf("seeds 9 and 10 gave the same %v", a)
			}
		})
	}
}

func TestSeedSetting(t *testing.T) {
	sp := mixedSpace()
	for _, name := range []string{"random", "tpe", "cmaes", "auto", "anneal", "evolution", "gp", "smac", "metis"} {
		a := mustNew(t, name, map[string]any{"seed": 10.0}, sp)
		b := mustNew(t, name, nil, sp)
		pa := suggest(t, a, Request{Space: sp, Seed: 1, Seqs: []int{1}}, name+" with seed setting 10")
		pb := suggest(t, b, Request{Space: sp, Seed: 10, Seqs: []int{1}}, name+" with request seed 10")
		if !reflect.DeepEqual(pa, pb) {
			t.Errorf("%s: seed setting 10 gave %v, request seed 10 gave %v", name, pa, pb)
		}
		// The seed is not ignored altogether: request seed 1 without the
		// setting gives another point.
		p1 := suggest(t, b, Request{Space: sp, Seed: 1, Seqs: []int{1}}, name+" with request seed 1")
		if reflect.DeepEqual(p1, pa) {
			t.Errorf("%s: request seed 1 gave the same %v as seed 10", name, pa)
		}
	}
}

func TestRandomDedupsDiscreteSpace(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "a", Kind: space.Choice, Options: []space.Option{{Value: "x"}, {Value: "y"}, {Value: "z"}}},
		{Name: "b", Kind: space.Randint, Args: []float64{0, 4}},
	}}
	tn := mustNew(t, "random", nil, sp)
	out, err := tn.Suggest(Request{Space: sp, Seed: 1, Seqs: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range out {
		if seen[key(p)] {
			t.Fatalf("duplicate %v in %v", p, out)
		}
		seen[key(p)] = true
	}
	// The space is exhausted: more trials repeat points instead of failing.
	var hist []Observation
	for i, p := range out {
		hist = append(hist, Observation{Seq: i + 1, Params: p, State: Completed})
	}
	more, err := tn.Suggest(Request{Space: sp, Seed: 1, History: hist, Seqs: []int{13}})
	if err != nil || len(more) != 1 || !sp.Contains(more[0]) {
		t.Fatalf("13th trial: %v, %v", more, err)
	}
}
