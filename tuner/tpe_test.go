package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

func quadSpace() *space.Space {
	return &space.Space{Params: []space.Param{
		{Name: "x", Kind: space.Uniform, Args: []float64{-5, 5}},
		{Name: "y", Kind: space.Uniform, Args: []float64{-5, 5}},
	}}
}

func quad(p space.Params) float64 {
	x, y := p["x"].(float64), p["y"].(float64)
	return (x-1.5)*(x-1.5) + (y+2)*(y+2)
}

func bestOf(hist []Observation, goal Goal) float64 {
	best := math.Inf(1)
	if goal == Maximize {
		best = math.Inf(-1)
	}
	for _, o := range hist {
		if o.State != Completed {
			continue
		}
		if (goal == Minimize && o.Value < best) || (goal == Maximize && o.Value > best) {
			best = o.Value
		}
	}
	return best
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// TestTPEBeatsRandom: on a 2-d quadratic, over 20 seeds of 60 trials, the
// median best value TPE finds is well below random search's.
func TestTPEBeatsRandom(t *testing.T) {
	sp := quadSpace()
	tpe := mustNew(t, "tpe", nil, sp)
	rnd := mustNew(t, "random", nil, sp)
	var bt, br []float64
	for seed := int64(1); seed <= 20; seed++ {
		bt = append(bt, bestOf(loop(t, tpe, sp, Minimize, seed, 60, quad), Minimize))
		br = append(br, bestOf(loop(t, rnd, sp, Minimize, seed, 60, quad), Minimize))
	}
	mt, mr := median(bt), median(br)
	t.Logf("median best: tpe %.4f, random %.4f", mt, mr)
	if !(mt < 0.5*mr) {
		t.Fatalf("TPE median best %.4f is not below half of random's %.4f", mt, mr)
	}
}

// TestTPEGoal: the same linear objective pulls suggestions up when
// maximizing and down when minimizing.
func TestTPEGoal(t *testing.T) {
	sp := &space.Space{Params: []space.Param{{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}}}}
	f := func(p space.Params) float64 { return p["x"].(float64) }
	tn := mustNew(t, "tpe", nil, sp)
	for _, goal := range []Goal{Maximize, Minimize} {
		hist := loop(t, tn, sp, goal, 3, 50, f)
		mean := 0.0
		for _, o := range hist[30:] {
			mean += o.Params["x"].(float64) / 20
		}
		if (goal == Maximize && mean < 0.7) || (goal == Minimize && mean > 0.3) {
			t.Errorf("%s: mean x of trials 31-50 = %.3f", goal, mean)
		}
	}
	if _, err := tn.Suggest(Request{Space: sp, Goal: "largest", Seqs: []int{1}}); err == nil {
		t.Error("unknown goal accepted")
	}
}

// TestTPEParallelSpread: several trials asked for at once are distinct, and
// the constant liar spreads them more than independent draws from the same
// model would be.
func TestTPEParallelSpread(t *testing.T) {
	sp := quadSpace()
	tn := mustNew(t, "tpe", nil, sp)
	hist := loop(t, tn, sp, Minimize, 5, 20, quad)
	seqs := []int{21, 22, 23, 24, 25, 26, 27, 28}
	out, err := tn.Suggest(Request{Space: sp, Goal: Minimize, Seed: 5, History: hist, Seqs: seqs})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, o := range hist {
		seen[key(o.Params)] = true
	}
	for _, p := range out {
		if seen[key(p)] {
			t.Fatalf("repeated point %v", p)
		}
		seen[key(p)] = true
	}
	// Without pending trials each of the 8 would be the model's single best
	// guess from its own stream; with them, later ones avoid earlier ones.
	var liar, alone []float64
	for i, seq := range seqs {
		one, _ := tn.Suggest(Request{Space: sp, Goal: Minimize, Seed: 5, History: hist, Seqs: []int{seq}})
		alone = append(alone, one[0]["x"].(float64), one[0]["y"].(float64))
		liar = append(liar, out[i]["x"].(float64), out[i]["y"].(float64))
	}
	if sl, sa := spread(liar), spread(alone); !(sl > sa) {
		t.Errorf("mean pairwise distance with pending trials %.3f, without %.3f", sl, sa)
	}
}

func spread(xy []float64) float64 {
	s, n := 0.0, 0
	for i := 0; i < len(xy); i += 2 {
		for j := i + 2; j < len(xy); j += 2 {
			s += math.Hypot(xy[i]-xy[j], xy[i+1]-xy[j+1])
			n++
		}
	}
	return s / float64(n)
}

// TestTPEFailedTrialsIgnored: failed trials carry no value, so a cluster of
// failures at x near 1 with a meaningless huge Value must not attract TPE.
func TestTPEFailedTrialsIgnored(t *testing.T) {
	sp := &space.Space{Params: []space.Param{{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}}}}
	tn := mustNew(t, "tpe", nil, sp)
	f := func(p space.Params) float64 { return -math.Abs(p["x"].(float64) - 0.2) }
	hist := loop(t, tn, sp, Maximize, 8, 15, f)
	for i := 0; i < 30; i++ {
		hist = append(hist, Observation{Seq: 100 + i, Params: space.Params{"x": 0.95 + 0.001*float64(i)}, State: Failed, Value: 1e9})
	}
	seqs := []int{200, 201, 202, 203, 204, 205, 206, 207, 208, 209}
	out, err := tn.Suggest(Request{Space: sp, Goal: Maximize, Seed: 8, History: hist, Seqs: seqs})
	if err != nil {
		t.Fatal(err)
	}
	mean := 0.0
	for _, p := range out {
		mean += p["x"].(float64) / float64(len(out))
	}
	if mean > 0.5 {
		t.Fatalf("mean suggestion %.3f: drawn to the failed trials", mean)
	}
}

// TestTPEEveryKindAndNested runs TPE past its startup over a space with
// every kind and a nested choice: all suggestions stay in the space, and
// the choice and nested choice that pay learn to be picked.
func TestTPEEveryKindAndNested(t *testing.T) {
	sp := mixedSpace()
	tn := mustNew(t, "tpe", map[string]any{"startup_trials": 8.0}, sp)
	hist := loop(t, tn, sp, Maximize, 21, 70, func(p space.Params) float64 {
		if !sp.Contains(p) {
			t.Fatalf("suggestion %v not in the space", p)
		}
		v := objective(p)
		if p["act"] == "tanh" {
			v += 1
		}
		return v
	})
	tanh, cnn := 0, 0
	for _, o := range hist[40:] {
		if o.Params["act"] == "tanh" {
			tanh++
		}
		if o.Params["model"].(map[string]any)["_name"] == "cnn" {
			cnn++
		}
	}
	if tanh < 20 || cnn < 18 {
		t.Errorf("of the last 30 trials %d chose act=tanh and %d model=cnn; TPE should favour both", tanh, cnn)
	}
}

// TestTPEDiscreteKinds: on discrete and log kinds the model finds the
// optimum region and proposes only producible values.
func TestTPEDiscreteKinds(t *testing.T) {
	tests := []struct {
		p      space.Param
		target float64
	}{
		{space.Param{Name: "v", Kind: space.Randint, Args: []float64{0, 50}}, 37},
		{space.Param{Name: "v", Kind: space.Quniform, Args: []float64{0, 100, 5}}, 15},
		{space.Param{Name: "v", Kind: space.Qloguniform, Args: []float64{1, 10000, 1}}, 300},
		{space.Param{Name: "v", Kind: space.Loguniform, Args: []float64{1e-6, 1}}, 1e-4},
		{space.Param{Name: "v", Kind: space.Qnormal, Args: []float64{0, 10, 2}}, 6},
		{space.Param{Name: "v", Kind: space.Lognormal, Args: []float64{0, 2}}, 20},
		{space.Param{Name: "v", Kind: space.Qlognormal, Args: []float64{1, 1, 1}}, 5},
	}
	for _, tc := range tests {
		t.Run(string(tc.p.Kind), func(t *testing.T) {
			sp := &space.Space{Params: []space.Param{tc.p}}
			logDist := func(p space.Params) float64 {
				v := p["v"].(float64)
				if !space.Contains(tc.p, v) {
					t.Fatalf("%v is not a value of %s %v", v, tc.p.Kind, tc.p.Args)
				}
				return math.Abs(math.Log1p(v) - math.Log1p(tc.target))
			}
			tpe := mustNew(t, "tpe", nil, sp)
			rnd := mustNew(t, "random", nil, sp)
			var bt, br []float64
			for seed := int64(1); seed <= 7; seed++ {
				bt = append(bt, bestOf(loop(t, tpe, sp, Minimize, seed, 40, logDist), Minimize))
				br = append(br, bestOf(loop(t, rnd, sp, Minimize, seed, 40, logDist), Minimize))
			}
			if mt, mr := median(bt), median(br); mt > mr {
				t.Errorf("median distance to target: tpe %.4f, random %.4f", mt, mr)
			}
		})
	}
}

func TestSplitGood(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 11, 30, 249, 251, 400} {
		losses := make([]float64, n)
		for i := range losses {
			switch r.IntN(5) {
			case 0:
				losses[i] = math.Inf(1)
			default:
				losses[i] = float64(r.IntN(40)) // ties
			}
		}
		good, nComp := splitGood(losses)
		idx := []int{}
		for i, l := range losses {
			if !math.IsInf(l, 1) {
				idx = append(idx, i)
			}
		}
		sort.SliceStable(idx, func(a, b int) bool { return losses[idx[a]] < losses[idx[b]] })
		k := min(int(math.Ceil(0.1*float64(n))), 25, len(idx))
		want := make([]bool, n)
		for _, i := range idx[:k] {
			want[i] = true
		}
		if nComp != len(idx) || fmt.Sprint(good) != fmt.Sprint(want) {
			t.Fatalf("n=%d: good %v, want %v (nComp %d)", n, good, want, nComp)
		}
	}
}

func TestSortKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{1, 7, 255, 256, 1000, 5000} {
		ks := make([]kernel, n)
		for i := range ks {
			mu := r.NormFloat64() * 1e3
			switch r.IntN(4) {
			case 0:
				mu = float64(r.IntN(10) - 5) // duplicates, zero
			case 1:
				mu = math.Exp(r.NormFloat64() * 20)
			}
			ks[i] = kernel{mu: mu, w: float64(i)}
		}
		want := append([]kernel(nil), ks...)
		sort.SliceStable(want, func(a, b int) bool { return want[a].mu < want[b].mu })
		sortKernels(ks)
		for i := range ks {
			if ks[i] != want[i] {
				t.Fatalf("n=%d: at %d got %v, want %v", n, i, ks[i], want[i])
			}
		}
	}
}

func TestRampWeights(t *testing.T) {
	if w := rampWeights(25); w[0] != 1 || w[24] != 1 {
		t.Errorf("25 trials: %v", w)
	}
	w := rampWeights(100)
	if math.Abs(w[0]-0.01) > 1e-12 || math.Abs(w[74]-1) > 1e-12 || w[99] != 1 || !(w[10] < w[50]) {
		t.Errorf("100 trials: first %v, 75th %v, last %v", w[0], w[74], w[99])
	}
	if w := rampWeights(26); math.Abs(w[0]-1.0/26) > 1e-12 || w[1] != 1 {
		t.Errorf("26 trials: %v", w[:2])
	}
}

// TestParzenNormalised: each estimator is a probability distribution over
// its domain: densities integrate to 1, cell masses sum to 1.
func TestParzenNormalised(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, p := range []space.Param{
		{Kind: space.Uniform, Args: []float64{-2, 3}},
		{Kind: space.Loguniform, Args: []float64{1e-3, 10}},
		{Kind: space.Randint, Args: []float64{-3, 9}},
		{Kind: space.Quniform, Args: []float64{1, 10, 3}},
		{Kind: space.Qloguniform, Args: []float64{1, 64, 4}},
	} {
		d, ok := newNumDim(p)
		if !ok {
			t.Fatalf("%s: no model", p.Kind)
		}
		var mus, ws []float64
		for i := 0; i < 30; i++ {
			m, _ := d.modelledVal(space.Sample(p, r))
			mus = append(mus, m)
			ws = append(ws, 0.2+r.Float64())
		}
		m := newMixture(d, mus, ws, 1)
		total := 0.0
		if d.discrete {
			vals := map[float64]bool{}
			for i := 0; i < 20000; i++ {
				u := d.lo + (d.hi-d.lo)*float64(i)/19999
				v, a, b := d.finish(u)
				if !vals[v] {
					vals[v] = true
					total += math.Exp(m.logMass(a, b))
				}
			}
		} else {
			const steps = 20000
			h := (d.hi - d.lo) / steps
			for i := 0; i < steps; i++ {
				total += math.Exp(m.logDensity(d.lo+(float64(i)+0.5)*h)) * h
			}
		}
		if math.Abs(total-1) > 1e-3 {
			t.Errorf("%s %v: total probability %.5f", p.Kind, p.Args, total)
		}
		for i := 0; i < 2000; i++ {
			if u := m.sample(r); u < d.lo || u > d.hi {
				t.Fatalf("%s: sample %v outside [%v, %v]", p.Kind, u, d.lo, d.hi)
			}
		}
	}
	c := newCatModel(4, []int{0, 0, 2}, []float64{1, 1, 1}, 1)
	sum := 0.0
	for _, lp := range c.logP {
		sum += math.Exp(lp)
	}
	if math.Abs(sum-1) > 1e-12 || !(c.logP[0] > c.logP[2] && c.logP[2] > c.logP[1]) || c.logP[1] != c.logP[3] {
		t.Errorf("categorical: %v (sum %v)", c.logP, sum)
	}
}

// benchSpace is 5 parameters of different kinds.
func benchSpace() *space.Space {
	return &space.Space{Params: []space.Param{
		{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-5, 1}},
		{Name: "momentum", Kind: space.Uniform, Args: []float64{0, 1}},
		{Name: "batch", Kind: space.Quniform, Args: []float64{16, 512, 16}},
		{Name: "layers", Kind: space.Randint, Args: []float64{1, 9}},
		{Name: "opt", Kind: space.Choice, Options: []space.Option{{Value: "sgd"}, {Value: "adam"}, {Value: "rmsprop"}}},
	}}
}

func benchTPE(b *testing.B, n int) {
	sp := benchSpace()
	tn := mustNew(b, "tpe", nil, sp)
	r := rand.New(rand.NewPCG(1, 1))
	hist := make([]Observation, n)
	for i := range hist {
		p := space.SampleSpace(sp, r)
		hist[i] = Observation{Seq: i + 1, Params: p, State: Completed, Value: r.Float64()}
		if i%17 == 0 {
			hist[i].State = Pending
		}
	}
	req := Request{Space: sp, Goal: Maximize, Seed: 1, History: hist, Seqs: []int{n + 1}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tn.Suggest(req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTPESuggest100(b *testing.B)   { benchTPE(b, 100) }
func BenchmarkTPESuggest1000(b *testing.B)  { benchTPE(b, 1000) }
func BenchmarkTPESuggest10000(b *testing.B) { benchTPE(b, 10000) }

func BenchmarkTPESuggest100000(b *testing.B) { benchTPE(b, 100000) }

// resample leaves a history up to the cap alone; past it, it draws k
// points whose weighted picture is the original one: the weighted mean is
// kept, later (heavier) trials are drawn more often, and the draw is the
// same every time.
func TestResample(t *testing.T) {
	xs := []float64{3, 1, 2}
	ws := []float64{1, 2, 3}
	if gx, gw := resample(xs, ws, 3); &gx[0] != &xs[0] || &gw[0] != &ws[0] {
		t.Fatal("a history within the cap was copied or changed")
	}
	n, k := 100000, 8192
	xs = make([]float64, n)
	for i := range xs {
		xs[i] = float64(i)
	}
	ws = rampWeights(n)
	gx, gw := resample(xs, ws, k)
	if len(gx) != k || len(gw) != k {
		t.Fatalf("resampled %d points, %d weights; want %d", len(gx), len(gw), k)
	}
	want, total := 0.0, 0.0
	for i, w := range ws {
		want += w * xs[i]
		total += w
	}
	want /= total
	got := 0.0
	for i, x := range gx {
		if gw[i] != 1 || x != math.Trunc(x) || x < 0 || x >= float64(n) {
			t.Fatalf("point %d: %v weight %v", i, x, gw[i])
		}
		got += x
	}
	got /= float64(k)
	if math.Abs(got-want) > float64(n)/float64(k) {
		t.Fatalf("weighted mean %v, resampled mean %v", want, got)
	}
	first, last := 0, 0
	for _, x := range gx {
		switch {
		case x < float64(n)/10:
			first++
		case x >= float64(n)*9/10:
			last++
		}
	}
	if last <= 5*first {
		t.Fatalf("oldest tenth drawn %d times, newest %d: the ramp of weights is lost", first, last)
	}
	again, _ := resample(xs, ws, k)
	if !slices.Equal(again, gx) {
		t.Fatal("two draws differ")
	}
}

// TestTPEAlternatesWhileTrialsRun: with trials in flight, tpe's odd
// trials come from the per-parameter model and its even ones from the
// joint model; with none in flight every trial is the joint model's.
func TestTPEAlternatesWhileTrialsRun(t *testing.T) {
	fn := sphereFunc(3)
	joint := mustNew(t, "tpe", nil, fn.sp)
	uv := mustNew(t, "tpe", map[string]any{"multivariate": false}, fn.sp)
	hist := loop(t, joint, fn.sp, Minimize, 4, 20, fn.f)
	ask := func(tn Tuner, h []Observation, seq int) space.Params {
		t.Helper()
		out, err := tn.Suggest(Request{Space: fn.sp, Goal: Minimize, Seed: 4, History: h, Seqs: []int{seq}})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	if reflect.DeepEqual(ask(joint, hist, 21), ask(uv, hist, 21)) {
		t.Fatal("with nothing in flight, trial 21 is the per-parameter model's")
	}
	running := append(slices.Clone(hist), Observation{Seq: 21, Params: ask(joint, hist, 21), State: Pending})
	if got, want := ask(joint, running, 23), ask(uv, running, 23); !reflect.DeepEqual(got, want) {
		t.Errorf("with trial 21 in flight, trial 23 is %v, want the per-parameter model's %v", got, want)
	}
	if reflect.DeepEqual(ask(joint, running, 22), ask(uv, running, 22)) {
		t.Error("with trial 21 in flight, trial 22 is the per-parameter model's, want the joint model's")
	}
}
