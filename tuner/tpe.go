package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/trialform/trialform/tuner/space"
)

// TPESettings are the tpe tuner's settings.
type TPESettings struct {
	Seeded
	StartupTrials int     `hcl:"startup_trials,optional" range:"[0, 1e9]" default:"10" doc:"completed trials sampled at random before the model is used"`
	Candidates    int     `hcl:"candidates,optional" range:"[1, 10000]" default:"24" doc:"candidates drawn from the good-trial model for each parameter"`
	PriorWeight   float64 `hcl:"prior_weight,optional" range:"(0, 1e12]" default:"1" doc:"weight of the prior kernel in every estimator"`
	Multivariate  bool    `hcl:"multivariate,optional" default:"true" doc:"model the top-level numbers and flat choices jointly (neighbour-gap bandwidths); false: one model per parameter, Optuna 3.1's TPE"`
}

func defaultTPESettings() *TPESettings {
	return &TPESettings{StartupTrials: 10, Candidates: 24, PriorWeight: 1, Multivariate: true}
}

func tpeKind() Kind {
	return Kind{
		Name: "tpe", Spaces: "all kinds, nested choice",
		Summary:  "Optuna-3.1-style TPE: gamma(n)=min(⌈0.1n⌉,25), prior at the range middle, magic-clip bandwidths, recency weights, log params in log space, ints and q-steps as discretized kernels, log ints continuous in log space, candidates scored as Optuna 3.1 scores them (each kernel's density times its bandwidth); by default (`multivariate = true`) the top-level numbers and flat choices are modelled jointly, each trial one kernel whose bandwidth in each parameter is 1.5 times its larger neighbour gap, and while trials run every odd one is proposed per parameter; `multivariate = false` is Optuna 3.1's default univariate TPE",
		Settings: func() any { return defaultTPESettings() },
		New:      newTPE,
	}
}

// tpeTuner is a Tree-structured Parzen Estimator in the style of Optuna's
// TPESampler (version 3.1 on). By default (multivariate) the top-level
// numbers and flat choices are modelled jointly (tpe_joint.go, with its own
// bandwidth rule), except that while trials are in flight those with an odd
// sequence number are proposed per parameter; the rest, and everything with
// multivariate = false, as Optuna 3.1's univariate TPE:
//
//   - Until startup_trials trials have completed, trials are sampled at
//     random with NNI's semantics (the random tuner's stream).
//   - Then, for each parameter on its own, the trials that have it (and a
//     value the current space can produce) are split: the best
//     gamma(n) = min(ceil(0.1 n), 25) completed ones are "good", the rest
//     "bad". Pending trials count as bad with the worst value (constant
//     liar), so suggestions made while others run spread out; failed trials
//     count as bad too (Optuna leaves them out, and then keeps proposing
//     where every trial failed: TestOptimisersFailedTrials). n counts
//     completed, pending and failed trials.
//   - Each group gets a Parzen estimator (parzen.go): truncated normal
//     kernels on the observations, in log space for log kinds, plus a prior
//     kernel at the middle of the range; weights ramp down for old trials
//     once a group has more than 25. quniform, qnormal and randint use
//     discretized kernels (the mass of the cell that rounds to a value);
//     qloguniform is modelled continuously in log space and rounded, as
//     Optuna models log ints. Choices use a smoothed categorical with a
//     uniform prior.
//   - candidates points are drawn from the good estimator; the one with the
//     largest log l(x) - log g(x) wins, where for continuous kinds each
//     kernel's density counts times its bandwidth, as in Optuna 3.1
//     (mixture.logScore).
//   - A nested choice's sub-parameters are modelled from the trials that
//     took the same option; with fewer than min(startup_trials, 4) completed
//     such trials they are sampled at random.
//
// Several trials asked for at once are suggested one after another in
// sequence order, each added as pending before the next, so the answer
// equals asking for them one at a time.
type tpeTuner struct {
	seeder
	sp          *space.Space
	startup     int
	candidates  int
	priorWeight float64
	joint       bool // multivariate (tpe_joint.go)
	gaps        bool // the joint model's bandwidths: neighbour gaps (tpe), else Scott's rule (motpe)
}

func newTPE(cfg any, sp *space.Space) (Tuner, error) {
	t := tpeFrom(cfg.(*TPESettings), sp)
	t.gaps = true
	return t, nil
}

// tpeFrom is the TPE of settings c (motpe and auto's several-objective
// phase wrap one).
func tpeFrom(c *TPESettings, sp *space.Space) *tpeTuner {
	return &tpeTuner{seeder: c.seeder(), sp: sp, startup: c.StartupTrials, candidates: c.Candidates, priorWeight: c.PriorWeight, joint: c.Multivariate}
}

// tpeObs is a trial as one level of the (possibly nested) space sees it.
type tpeObs struct {
	vals map[string]any
	loss float64 // smaller is better; +Inf for pending
	// w is the trial's weight in the good-trial model when it is good,
	// set by motpe (its hypervolume contribution); 0: the default ramp.
	w float64
}

// goodWeights are the weights of the good trials' kernels: theirs where
// every one has one (motpe), else Optuna's default ramp.
func goodWeights(ws []float64) []float64 {
	for _, w := range ws {
		if !(w > 0) {
			return rampWeights(len(ws))
		}
	}
	return ws
}

func (t *tpeTuner) Suggest(req Request) ([]space.Params, error) {
	return t.suggest(req, nil)
}

// suggest is Suggest where weight, if not nil, gives a completed trial's
// weight (by its Seq) when it is among the good ones.
func (t *tpeTuner) suggest(req Request, weight map[int]float64) ([]space.Params, error) {
	sp, err := spaceOf(req, t.sp)
	if err != nil {
		return nil, err
	}
	sign := 0.0
	switch req.Goal {
	case Maximize, "":
		sign = -1
	case Minimize:
		sign = 1
	default:
		return nil, fmt.Errorf("unknown goal %q (want %q or %q)", req.Goal, Maximize, Minimize)
	}
	hist := history(req)
	obs := make([]tpeObs, 0, len(hist)+len(req.Seqs))
	completed, inFlight := 0, false
	for _, o := range hist {
		inFlight = inFlight || o.State == Pending
		switch {
		case o.State == Completed && !math.IsNaN(o.Value) && !math.IsInf(o.Value, 0):
			obs = append(obs, tpeObs{vals: o.Params, loss: sign * o.Value, w: weight[o.Seq]})
			completed++
		case o.State == Pending, o.State == Failed:
			// A failed trial is a bad one: without it, a region where
			// every trial fails has no bad kernel, and the good model's
			// prior draws the search there again and again.
			obs = append(obs, tpeObs{vals: o.Params, loss: math.Inf(1)})
		}
	}
	out := make([]space.Params, len(req.Seqs))
	for _, i := range ascending(req.Seqs) {
		rng := t.rng(req, req.Seqs[i])
		var p space.Params
		switch {
		case completed < max(t.startup, 1):
			p = space.SampleSpace(sp, rng)
		case t.joint && !(t.gaps && inFlight && req.Seqs[i]%2 == 1):
			p = t.sampleJoint(sp, obs, rng)
		default:
			// Also tpe's odd trials while others run: the joint model
			// draws a batch from the same few good trials, and the
			// per-parameter one spreads it (bench/tuners/RESULTS.md).
			p = t.sampleLevel(sp, obs, rng)
		}
		out[i] = p
		obs = append(obs, tpeObs{vals: p, loss: math.Inf(1)})
		inFlight = true
	}
	return out, nil
}

// minModelled is how many completed trials a parameter needs before it is
// modelled rather than sampled at random.
func (t *tpeTuner) minModelled() int { return max(1, min(t.startup, 4)) }

func (t *tpeTuner) sampleLevel(sp *space.Space, obs []tpeObs, rng *rand.Rand) space.Params {
	ps := space.Params{}
	if sp == nil {
		return ps
	}
	for _, p := range sp.Params {
		if p.Kind == space.Choice {
			ps[p.Name] = t.sampleChoice(p, obs, rng)
		} else {
			ps[p.Name] = t.sampleNumber(p, obs, rng)
		}
	}
	return ps
}

func (t *tpeTuner) sampleNumber(p space.Param, obs []tpeObs, rng *rand.Rand) any {
	d, ok := newNumDim(p)
	if !ok {
		return space.Sample(p, rng)
	}
	xs := make([]float64, 0, len(obs))
	losses := make([]float64, 0, len(obs))
	ws := make([]float64, 0, len(obs))
	for _, o := range obs {
		v, has := o.vals[p.Name]
		if !has {
			continue
		}
		if x, ok := d.modelledVal(v); ok {
			xs = append(xs, x)
			losses = append(losses, o.loss)
			ws = append(ws, o.w)
		}
	}
	below, nComp := splitGood(losses)
	if nComp < t.minModelled() {
		return space.Sample(p, rng)
	}
	bx, ax := partition(xs, below)
	bw, _ := partition(ws, below)
	l := newMixture(d, bx, goodWeights(bw), t.priorWeight)
	ax, aw := resample(ax, rampWeights(len(ax)), maxAboveKernels)
	g := newMixture(d, ax, aw, t.priorWeight)
	// Candidates are drawn in order from the seeded stream; their scores
	// are pure, so with a long history (g holds a kernel per trial) they
	// are computed in parallel without changing the result.
	type cand struct{ u, v, a, b, score float64 }
	cs := make([]cand, t.candidates)
	for c := range cs {
		u := l.sample(rng)
		v, a, b := d.finish(u)
		cs[c] = cand{u: u, v: v, a: a, b: b}
	}
	score := func(c *cand) {
		if d.discrete {
			c.score = l.logMass(c.a, c.b) - g.logMass(c.a, c.b)
		} else {
			x := c.u
			if d.scoreAtValue {
				x = d.toModel(c.v)
			}
			c.score = l.logScore(x) - g.logScore(x)
		}
	}
	parallelFor(len(cs), len(cs)*(len(bx)+len(ax)), func(i int) { score(&cs[i]) })
	best, bestScore := 0.0, math.Inf(-1)
	for c := range cs {
		if c == 0 || cs[c].score > bestScore {
			best, bestScore = cs[c].v, cs[c].score
		}
	}
	return best
}

// maxAboveKernels caps the kernels of the "above" mixture g: past it, g
// is built from a weighted resample of the history (see resample), so a
// suggestion costs the same at 100,000 trials as at 10,000 instead of
// scoring every candidate against every trial. Below it nothing changes.
const maxAboveKernels = 8192

// resample returns xs and ws unchanged when there are at most k of them;
// otherwise k of the xs drawn by systematic resampling on the weights (a
// deterministic draw: the tuner's random stream is untouched), each of
// weight 1. The resampled mixture is the same in expectation, a kernel
// density estimate from k points: smoother (wider bandwidths) than from
// all of them, which is what TPE's "above" density already is, a broad
// picture of where the bad trials lie.
func resample(xs, ws []float64, k int) ([]float64, []float64) {
	if len(xs) <= k {
		return xs, ws
	}
	idx := resampleIndex(ws, k)
	out := make([]float64, len(idx))
	for i, x := range idx {
		out[i] = xs[x]
	}
	return out, ones(len(idx))
}

// resampleIndex is resample's draw: the indexes of the k picks (len(ws)
// > k).
func resampleIndex(ws []float64, k int) []int {
	total := 0.0
	for _, w := range ws {
		total += w
	}
	out := make([]int, 0, k)
	step := total / float64(k)
	next, cum := step/2, 0.0
	for i, w := range ws {
		cum += w
		for cum > next && len(out) < k {
			out = append(out, i)
			next += step
		}
	}
	for len(out) < k { // rounding left the last ones out
		out = append(out, len(ws)-1)
	}
	return out
}

func ones(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

// parallelMinWork is the number of kernel evaluations below which
// parallelFor stays on one goroutine (starting goroutines costs more).
const parallelMinWork = 32 << 10

// parallelFor calls f(0..n-1), spread over GOMAXPROCS goroutines when work
// (a rough count of the operations in all calls) is large enough.
func parallelFor(n, work int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if work < parallelMinWork || workers < 2 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

func (t *tpeTuner) sampleChoice(p space.Param, obs []tpeObs, rng *rand.Rand) any {
	if len(p.Options) == 0 {
		return nil
	}
	idx := make([]int, 0, len(obs))
	sub := make([]tpeObs, 0, len(obs))
	losses := make([]float64, 0, len(obs))
	ws := make([]float64, 0, len(obs))
	for _, o := range obs {
		v, has := o.vals[p.Name]
		if !has {
			continue
		}
		if i := optionIndex(p, v); i >= 0 {
			idx = append(idx, i)
			losses = append(losses, o.loss)
			ws = append(ws, o.w)
			sub = append(sub, o)
		}
	}
	below, nComp := splitGood(losses)
	var chosen int
	if nComp < t.minModelled() {
		chosen = rng.IntN(len(p.Options))
	} else {
		bi, ai := partition(idx, below)
		bw, _ := partition(ws, below)
		l := newCatModel(len(p.Options), bi, goodWeights(bw), t.priorWeight)
		g := newCatModel(len(p.Options), ai, rampWeights(len(ai)), t.priorWeight)
		bestScore := math.Inf(-1)
		for c := 0; c < t.candidates; c++ {
			i := l.sample(rng)
			if s := l.logP[i] - g.logP[i]; c == 0 || s > bestScore {
				chosen, bestScore = i, s
			}
		}
	}
	o := p.Options[chosen]
	if !space.IsNested(o) {
		return o.Value
	}
	// The sub-space is modelled from the trials that took this option.
	var subObs []tpeObs
	for j, s := range sub {
		if idx[j] == chosen {
			m, _ := s.vals[p.Name].(map[string]any)
			if pm, ok := s.vals[p.Name].(space.Params); ok {
				m = pm
			}
			subObs = append(subObs, tpeObs{vals: m, loss: s.loss, w: s.w})
		}
	}
	m := map[string]any{"_name": o.Name}
	for k, v := range t.sampleLevel(o.Nested, subObs, rng) {
		m[k] = v
	}
	return m
}

// optionIndex finds the option of choice p that value v is, or -1.
func optionIndex(p space.Param, v any) int {
	var name string
	var isMap bool
	switch m := v.(type) {
	case map[string]any:
		name, _ = m["_name"].(string)
		isMap = true
	case space.Params:
		name, _ = m["_name"].(string)
		isMap = true
	}
	for i, o := range p.Options {
		if space.IsNested(o) {
			if isMap && o.Name == name {
				return i
			}
		} else if !isMap && space.EqualValues(o.Value, v) {
			return i
		}
	}
	return -1
}

// splitGood marks the gamma(n) = min(ceil(0.1 n), 25) smallest finite
// losses (ties: the earlier trial) as good, in time linear in n, and
// returns the mask and the number of finite losses. Infinite losses
// (pending and failed trials) are never good.
func splitGood(losses []float64) ([]bool, int) {
	nComp := 0
	for _, l := range losses {
		if !math.IsInf(l, 1) {
			nComp++
		}
	}
	n := len(losses)
	k := min((n+9)/10, 25, nComp)
	good := make([]bool, n)
	if k == 0 {
		return good, nComp
	}
	// buf holds the indexes of the best k so far, sorted by (loss, index).
	buf := make([]int, 0, k)
	for i, l := range losses {
		if math.IsInf(l, 1) {
			continue
		}
		if len(buf) == k && l >= losses[buf[k-1]] {
			continue
		}
		j := len(buf)
		if j < k {
			buf = append(buf, i)
		} else {
			j = k - 1
		}
		for ; j > 0 && losses[buf[j-1]] > l; j-- {
			buf[j] = buf[j-1]
		}
		buf[j] = i
	}
	for _, i := range buf {
		good[i] = true
	}
	return good, nComp
}

// partition splits xs by the mask, keeping chronological order.
func partition[T any](xs []T, good []bool) (g, b []T) {
	for i, x := range xs {
		if good[i] {
			g = append(g, x)
		} else {
			b = append(b, x)
		}
	}
	return g, b
}
