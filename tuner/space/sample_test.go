package space

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

func TestSampleBoundsAndGrid(t *testing.T) {
	const draws = 5000
	tests := []struct {
		p     Param
		check func(x float64) bool // besides Contains
	}{
		{Param{Name: "r", Kind: Randint, Args: []float64{-3, 7}},
			func(x float64) bool { return x == math.Trunc(x) && x >= -3 && x < 7 }},
		{Param{Name: "u", Kind: Uniform, Args: []float64{-1.5, 2.5}},
			func(x float64) bool { return x >= -1.5 && x <= 2.5 }},
		{Param{Name: "qu", Kind: Quniform, Args: []float64{0, 1, 0.1}},
			func(x float64) bool { return x >= 0 && x <= 1 && onGrid(x, 0.1) }},
		{Param{Name: "lu", Kind: Loguniform, Args: []float64{1e-5, 1e-1}},
			func(x float64) bool { return x >= 1e-5 && x <= 1e-1 }},
		{Param{Name: "qlu", Kind: Qloguniform, Args: []float64{1, 1000, 10}},
			func(x float64) bool { return x >= 1 && x <= 1000 && (x == 1 || onGrid(x, 10)) }},
		{Param{Name: "n", Kind: Normal, Args: []float64{10, 2}},
			func(x float64) bool { return x > 10-2*10 && x < 10+2*10 }},
		{Param{Name: "qn", Kind: Qnormal, Args: []float64{0, 5, 2}},
			func(x float64) bool { return onGrid(x, 2) }},
		{Param{Name: "ln", Kind: Lognormal, Args: []float64{0, 1}},
			func(x float64) bool { return x > 0 }},
		{Param{Name: "qln", Kind: Qlognormal, Args: []float64{2, 1, 4}},
			func(x float64) bool { return x >= 0 && onGrid(x, 4) }},
	}
	for _, tc := range tests {
		t.Run(string(tc.p.Kind), func(t *testing.T) {
			r := rng(7)
			for i := 0; i < draws; i++ {
				v := Sample(tc.p, r)
				x, ok := v.(float64)
				if !ok {
					t.Fatalf("draw %d: %T %v, want float64", i, v, v)
				}
				if !tc.check(x) {
					t.Fatalf("draw %d: %v out of the kind's range", i, x)
				}
				if !Contains(tc.p, v) {
					t.Fatalf("draw %d: Contains(%v) = false", i, x)
				}
			}
		})
	}
}

func onGrid(x, q float64) bool {
	k := math.Round(x / q)
	return math.Abs(x-k*q) <= 1e-9*math.Max(1, math.Abs(x))
}

// TestSampleValueSets checks small discrete kinds produce exactly NNI's value set.
func TestSampleValueSets(t *testing.T) {
	tests := []struct {
		name string
		p    Param
		want []float64
	}{
		// NNI: randint takes ceil of both bounds: [0.5, 3.2) -> 1, 2, 3.
		{"randint fractional bounds", Param{Kind: Randint, Args: []float64{0.5, 3.2}}, []float64{1, 2, 3}},
		{"randint never high", Param{Kind: Randint, Args: []float64{0, 3}}, []float64{0, 1, 2}},
		// clip(round(x/3)*3, 1, 10): 0 clips up to 1; 10 is unreachable.
		{"quniform clipped ends", Param{Kind: Quniform, Args: []float64{1, 10, 3}}, []float64{1, 3, 6, 9}},
		{"quniform integral", Param{Kind: Quniform, Args: []float64{2, 6, 2}}, []float64{2, 4, 6}},
		{"qloguniform", Param{Kind: Qloguniform, Args: []float64{1, 4, 1}}, []float64{1, 2, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[float64]bool{}
			r := rng(3)
			for i := 0; i < 4000; i++ {
				seen[Sample(tc.p, r).(float64)] = true
			}
			var got []float64
			for x := range seen {
				got = append(got, x)
			}
			sort.Float64s(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("values %v, want %v", got, tc.want)
			}
		})
	}
}

func TestQuantizeRoundsHalfToEven(t *testing.T) {
	tests := []struct {
		p    Param
		x    float64
		want float64
	}{
		{Param{Kind: Quniform, Args: []float64{0, 10, 1}}, 2.5, 2},
		{Param{Kind: Quniform, Args: []float64{0, 10, 1}}, 3.5, 4},
		{Param{Kind: Quniform, Args: []float64{0, 10, 1}}, 10.4, 10},
		{Param{Kind: Quniform, Args: []float64{0, 10, 1}}, -0.4, 0},
		{Param{Kind: Qnormal, Args: []float64{0, 1, 1}}, -2.5, -2},
		{Param{Kind: Qnormal, Args: []float64{0, 1, 2}}, 3, 4}, // 1.5 -> 2
		{Param{Kind: Qnormal, Args: []float64{0, 1, 2}}, -33, -32},
		{Param{Kind: Qlognormal, Args: []float64{0, 1, 1}}, 0.5, 0},
		{Param{Kind: Quniform, Args: []float64{0, 1, 0.1}}, 0.3, 0.30000000000000004}, // round(0.3/0.1)*0.1 in Python
		{Param{Kind: Uniform, Args: []float64{0, 1}}, 1.5, 1},
		{Param{Kind: Normal, Args: []float64{0, 1}}, 1.5, 1.5},
	}
	if z := Quantize(Param{Kind: Qnormal, Args: []float64{0, 1, 2}}, -0.5); z != 0 || math.Signbit(z) {
		t.Errorf("Quantize(-0.5) = %v (signbit %v), want +0 as Python's int round gives", z, math.Signbit(z))
	}
	for _, tc := range tests {
		if got := Quantize(tc.p, tc.x); got != tc.want {
			t.Errorf("Quantize(%s %v, %v) = %v, want %v", tc.p.Kind, tc.p.Args, tc.x, got, tc.want)
		}
	}
}

func TestLoguniformIsLogScale(t *testing.T) {
	p := Param{Kind: Loguniform, Args: []float64{1e-4, 1}}
	r := rng(11)
	xs := make([]float64, 4001)
	for i := range xs {
		xs[i] = Sample(p, r).(float64)
	}
	sort.Float64s(xs)
	med, geo := xs[len(xs)/2], math.Sqrt(1e-4*1)
	// The median of a log-uniform draw is the geometric mean (0.01); a
	// linear draw would give about 0.5.
	if math.Abs(math.Log10(med)-math.Log10(geo)) > 0.15 {
		t.Fatalf("median %g, want near %g", med, geo)
	}
	// A quarter of the draws in each decade.
	below := sort.SearchFloat64s(xs, 1e-3)
	if f := float64(below) / float64(len(xs)); f < 0.22 || f > 0.28 {
		t.Fatalf("%.3f of draws below 1e-3, want about 0.25", f)
	}
}

func nestedSpace() *Space {
	return &Space{Params: []Param{
		{Name: "lr", Kind: Loguniform, Args: []float64{1e-4, 1e-1}},
		{Name: "model", Kind: Choice, Options: []Option{
			{Name: "cnn", Nested: &Space{Params: []Param{
				{Name: "layers", Kind: Randint, Args: []float64{1, 5}},
				{Name: "act", Kind: Choice, Options: []Option{{Value: "relu"}, {Value: "tanh"}}},
			}}},
			{Name: "linear"},
			{Name: "tree", Nested: &Space{Params: []Param{
				{Name: "depth", Kind: Quniform, Args: []float64{2, 10, 2}},
			}}},
		}},
		{Name: "batch", Kind: Choice, Options: []Option{{Value: 16.0}, {Value: 32.0}, {Value: true}}},
	}}
}

func TestNestedChoiceShape(t *testing.T) {
	sp := nestedSpace()
	r := rng(5)
	names := map[string]int{}
	for i := 0; i < 600; i++ {
		ps := SampleSpace(sp, r)
		if len(ps) != 3 {
			t.Fatalf("%v: want 3 keys", ps)
		}
		m, ok := ps["model"].(map[string]any)
		if !ok {
			t.Fatalf("model = %T, want map", ps["model"])
		}
		name := m["_name"].(string)
		names[name]++
		wantKeys := map[string][]string{"cnn": {"_name", "act", "layers"}, "linear": {"_name"}, "tree": {"_name", "depth"}}[name]
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !reflect.DeepEqual(keys, wantKeys) {
			t.Fatalf("model %v: keys %v, want %v", m, keys, wantKeys)
		}
		if !sp.Contains(ps) {
			t.Fatalf("space does not contain its own sample %v", ps)
		}
		// A JSON round trip (as through the state file) keeps it contained.
		b, _ := json.Marshal(ps)
		var back Params
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !sp.Contains(back) {
			t.Fatalf("space does not contain %s after JSON", b)
		}
	}
	for _, n := range []string{"cnn", "linear", "tree"} {
		if names[n] < 150 {
			t.Errorf("option %s drawn %d of 600 times", n, names[n])
		}
	}
}

func TestSampleDeterministic(t *testing.T) {
	sp := nestedSpace()
	a := SampleSpace(sp, rng(42))
	b := SampleSpace(sp, rng(42))
	c := SampleSpace(sp, rng(43))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed: %v != %v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("different seeds gave the same %v", a)
	}
}

func TestSampleMalformed(t *testing.T) {
	for _, p := range []Param{
		{Kind: Choice},
		{Kind: Randint, Args: []float64{3, 3}},
		{Kind: Uniform, Args: []float64{1}},
		{Kind: Quniform, Args: []float64{0, 1, 0}},
		{Kind: Loguniform, Args: []float64{0, 1}},
		{Kind: "beta", Args: []float64{0, 1}},
	} {
		if v := Sample(p, rng(1)); v != nil {
			t.Errorf("Sample(%s %v) = %v, want nil", p.Kind, p.Args, v)
		}
	}
}

func TestContains(t *testing.T) {
	sp := nestedSpace()
	tests := []struct {
		name string
		p    Param
		v    any
		want bool
	}{
		{"randint int type", Param{Kind: Randint, Args: []float64{0, 3}}, 2, true},
		{"randint high", Param{Kind: Randint, Args: []float64{0, 3}}, 3.0, false},
		{"randint fraction", Param{Kind: Randint, Args: []float64{0, 3}}, 1.5, false},
		{"randint ceil low", Param{Kind: Randint, Args: []float64{0.5, 3}}, 0.0, false},
		{"randint string", Param{Kind: Randint, Args: []float64{0, 3}}, "1", false},
		{"uniform inside", Param{Kind: Uniform, Args: []float64{0, 1}}, 0.25, true},
		{"uniform high", Param{Kind: Uniform, Args: []float64{0, 1}}, 1.0, true},
		{"uniform outside", Param{Kind: Uniform, Args: []float64{0, 1}}, 1.01, false},
		{"uniform NaN", Param{Kind: Uniform, Args: []float64{0, 1}}, math.NaN(), false},
		{"quniform decimal text", Param{Kind: Quniform, Args: []float64{0, 1, 0.1}}, 0.3, true},
		{"quniform off grid", Param{Kind: Quniform, Args: []float64{0, 1, 0.1}}, 0.35, false},
		{"quniform clipped low", Param{Kind: Quniform, Args: []float64{1, 10, 3}}, 1.0, true},
		{"quniform unreachable high", Param{Kind: Quniform, Args: []float64{1, 10, 3}}, 10.0, false},
		{"quniform unreachable low", Param{Kind: Quniform, Args: []float64{2, 10, 3}}, 2.0, false},
		{"loguniform below", Param{Kind: Loguniform, Args: []float64{1e-3, 1}}, 1e-4, false},
		{"qloguniform", Param{Kind: Qloguniform, Args: []float64{1, 100, 5}}, 45.0, true},
		{"qloguniform off grid", Param{Kind: Qloguniform, Args: []float64{1, 100, 5}}, 44.0, false},
		{"normal anything", Param{Kind: Normal, Args: []float64{0, 1}}, -1e6, true},
		{"normal Inf", Param{Kind: Normal, Args: []float64{0, 1}}, math.Inf(1), false},
		{"qnormal negative", Param{Kind: Qnormal, Args: []float64{0, 1, 0.5}}, -1.5, true},
		{"qnormal off grid", Param{Kind: Qnormal, Args: []float64{0, 1, 0.5}}, -1.25, false},
		{"lognormal zero", Param{Kind: Lognormal, Args: []float64{0, 1}}, 0.0, false},
		{"qlognormal zero", Param{Kind: Qlognormal, Args: []float64{0, 1, 1}}, 0.0, true},
		{"qlognormal negative", Param{Kind: Qlognormal, Args: []float64{0, 1, 1}}, -1.0, false},
		{"choice number as int", sp.Params[2], 16, true},
		{"choice bool", sp.Params[2], true, true},
		{"choice bool vs number", sp.Params[2], false, false},
		{"choice missing", sp.Params[2], 64.0, false},
		{"nested ok", sp.Params[1], map[string]any{"_name": "cnn", "layers": 2.0, "act": "tanh"}, true},
		{"nested params type", sp.Params[1], Params{"_name": "tree", "depth": 4.0}, true},
		{"nested bare", sp.Params[1], map[string]any{"_name": "linear"}, true},
		{"nested extra key", sp.Params[1], map[string]any{"_name": "linear", "x": 1.0}, false},
		{"nested missing sub", sp.Params[1], map[string]any{"_name": "cnn", "layers": 2.0}, false},
		{"nested bad sub", sp.Params[1], map[string]any{"_name": "cnn", "layers": 5.0, "act": "relu"}, false},
		{"nested unknown name", sp.Params[1], map[string]any{"_name": "rnn"}, false},
		{"nested as string", sp.Params[1], "cnn", false},
	}
	for _, tc := range tests {
		if got := Contains(tc.p, tc.v); got != tc.want {
			t.Errorf("%s: Contains(%v) = %v, want %v", tc.name, tc.v, got, tc.want)
		}
	}

	good := Params{"lr": 0.01, "model": map[string]any{"_name": "linear"}, "batch": 32.0}
	if !sp.Contains(good) {
		t.Errorf("space should contain %v", good)
	}
	for name, ps := range map[string]Params{
		"missing":   {"lr": 0.01, "model": map[string]any{"_name": "linear"}},
		"extra":     {"lr": 0.01, "model": map[string]any{"_name": "linear"}, "batch": 32.0, "x": 1.0},
		"bad value": {"lr": 2.0, "model": map[string]any{"_name": "linear"}, "batch": 32.0},
	} {
		if sp.Contains(ps) {
			t.Errorf("%s: space should not contain %v", name, ps)
		}
	}
}
