// Command earlystop measures what assessors and hyperband save on a
// synthetic learning-curve problem whose curves cross: configurations
// that learn fast lead early and plateau lower than slower ones.
//
// The comparison, per seed:
//   - the baseline runs N random configurations in full (N x E
//     trial-steps);
//   - each method (an assessor judging every running trial after every
//     step, or a hyperband/bohb schedule) runs random configurations, one
//     at a time, until at most N x E / 2 trial-steps are spent. Every step
//     a trial reports counts, including the steps of trials that are later
//     stopped, of trials the budget cuts short, and, for hyperband, the
//     steps of a promoted configuration run again from scratch.
//
// Quality is the true (noise-free) value at step E of the configuration a
// method reports as best, i.e. the completed full-length trial with the
// best reported (noisy) final value; regret is the grid optimum minus it.
// A setting reaches full-run quality when, over the seeds, both its median
// and its mean regret are no worse than the baseline's (the table also
// gives a paired signed-rank p-value for "better than the baseline").
//
// Settings are chosen on the tuning seeds (-seed0 1) and checked on
// held-out seeds (-seed0 1001).
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/tuner"
	"github.com/trialform/trialform/tuner/space"
)

var problem = &space.Space{Params: []space.Param{
	{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}},
	{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-3, 1}},
}}

// curves is the learning-curve model of a run: the noise-free value after
// step t (1-based) of configuration p.
type curves struct {
	name  string
	value func(p space.Params, t int) float64
	noise float64 // standard deviation of the noise on every reported value
	note  string
}

var problems = map[string]curves{
	// crossing: a plateau P(x, lr) reached in two phases, half along
	// e^(-t/τ) and half along 1/(1 + t/4τ), a mixture that none of
	// curvefitting's model families (pow3, pow4, log-linear, exp3)
	// contains, with τ = 0.8·lr^-0.6 (about 0.8 steps at lr = 1, 50 at lr
	// = 0.001). A high lr plateaus lower, a low one is far from its
	// plateau after E steps: the best final values are at lr ≈ 0.03–0.1,
	// which trail the fast learners for the first steps. Every reported
	// value has N(0, 0.01) noise.
	"crossing": {name: "crossing", noise: 0.01, value: func(p space.Params, t int) float64 {
		x, lr := p["x"].(float64), p["lr"].(float64)
		plateau := 1 - 1.5*(x-0.7)*(x-0.7) - 0.12*math.Log10(lr/1e-3)
		tau := 0.8 * math.Pow(lr, -0.6)
		ft := float64(t)
		return plateau * (1 - 0.5*math.Exp(-ft/tau) - 0.5/(1+ft/(4*tau)))
	}, note: "two-phase curves P·(1 - e^(-t/τ)/2 - 1/(2(1+t/4τ))), outside curvefitting's families; N(0, 0.01) noise on every value"},
	// rational: P·(1 - (1 + t/2τ)^-2), the same plateau and τ, with noise:
	// exactly curvefitting's pow4 family.
	"rational": {name: "rational", noise: 0.01, value: func(p space.Params, t int) float64 {
		x, lr := p["x"].(float64), p["lr"].(float64)
		plateau := 1 - 1.5*(x-0.7)*(x-0.7) - 0.12*math.Log10(lr/1e-3)
		tau := 0.8 * math.Pow(lr, -0.6)
		u := float64(t) / (2 * tau)
		return plateau * (1 - 1/((1+u)*(1+u)))
	}, note: "rational curves P·(1-(1+t/2τ)^-2) (exactly curvefitting's pow4 family), N(0, 0.01) noise on every value"},
	// exp: the problem of the first version of this benchmark,
	// plateau·(1 - e^(-rate·t)), noise-free. Its curves are exactly
	// curvefitting's exp3 family, which favours that assessor.
	"exp": {name: "exp", value: func(p space.Params, t int) float64 {
		x, lr := p["x"].(float64), p["lr"].(float64)
		plateau := 1 - 1.5*(x-0.7)*(x-0.7) - 0.35*math.Log10(lr/1e-3)/3
		rate := 0.02 + 0.5*lr
		return plateau * (1 - math.Exp(-rate*float64(t)))
	}, note: "plateau·(1-e^(-rate·t)), noise-free (exactly curvefitting's exp3 family)"},
}

// optimum is the best noise-free final value at E steps (grid search).
func optimum(c curves, steps int) float64 {
	best := math.Inf(-1)
	for i := 0; i <= 400; i++ {
		for j := 0; j <= 400; j++ {
			p := space.Params{"x": float64(i) / 400, "lr": math.Pow(10, -3+3*float64(j)/400)}
			best = math.Max(best, c.value(p, steps))
		}
	}
	return best
}

func suggest(seed int64, seq int) space.Params {
	tn, err := builtinTuners.New("random", map[string]any{}, problem)
	check(err)
	out, err := tn.Suggest(tuner.Request{Space: problem, Goal: tuner.Maximize, Seed: seed, Seqs: []int{seq}})
	check(err)
	return out[0]
}

// result is one method's outcome on one seed.
type result struct {
	regret  float64
	steps   int // trial-steps spent
	configs int // configurations started
	full    int // trials that ran all E steps
}

// sim holds one seed's problem: the noise on a configuration's reports is
// a function of (seed, seq, step), so every method sees the same noisy
// curve for the same trial.
type sim struct {
	c     curves
	seed  int64
	steps int
	opt   float64
}

func (s sim) reported(p space.Params, seq, t int) float64 {
	v := s.c.value(p, t)
	if s.c.noise > 0 {
		r := rand.New(rand.NewSource(s.seed*1_000_003 + int64(seq)*1009 + int64(t)))
		v += s.c.noise * r.NormFloat64()
	}
	return v
}

// run runs random trials one at a time until the step budget is spent;
// with an assessor, each running trial is judged after every step.
func (s sim) run(budget int, as tuner.Assessor) result {
	var done []tuner.Curve
	bestRep, bestTrue := math.Inf(-1), math.Inf(-1)
	var r result
	for seq := 0; r.steps < budget; seq++ {
		p := suggest(s.seed, seq)
		r.configs++
		cur := tuner.Curve{TrialID: fmt.Sprint(seq), Seq: seq, Running: true}
		stopped := false
		for t := 1; t <= s.steps && r.steps < budget; t++ {
			cur.Values = append(cur.Values, s.reported(p, seq, t))
			r.steps++
			if as != nil && t < s.steps {
				stops := as.Assess(tuner.AssessRequest{Goal: tuner.Maximize, Curves: append(done, cur)})
				if _, ok := stops[cur.TrialID]; ok {
					stopped = true
					break
				}
			}
		}
		if !stopped && len(cur.Values) == s.steps {
			cur.Running, cur.Completed, cur.Final = false, true, cur.Values[s.steps-1]
			done = append(done, cur)
			r.full++
			if cur.Final > bestRep {
				bestRep, bestTrue = cur.Final, s.c.value(p, s.steps)
			}
		}
	}
	r.regret = s.opt - bestTrue
	return r
}

// runHyperband runs a hyperband (or bohb) schedule one trial at a time
// (each rung is complete before the next starts) until the step budget
// is spent; a trial runs TRIAL_BUDGET steps from scratch or, with resume,
// continues from the checkpoint of the same configuration's last run (it
// costs only the steps beyond that run's budget).
func (s sim) runHyperband(name string, settings map[string]any, budget int, resume bool) result {
	set := map[string]any{"max_budget": float64(s.steps)}
	for k, v := range settings {
		set[k] = v
	}
	tn, err := builtinTuners.New(name, set, problem)
	check(err)
	var hist []tuner.Observation
	bestRep, bestTrue := math.Inf(-1), math.Inf(-1)
	var r result
	ran := map[string]int{} // configuration -> steps of its checkpoint
	origin := map[string]int{}
	for seq := 0; r.steps < budget; seq++ {
		out, err := tn.Suggest(tuner.Request{Space: problem, Goal: tuner.Maximize, Seed: s.seed, History: hist, Seqs: []int{seq}})
		check(err)
		p := out[0]
		b := int(p[tuner.BudgetParam].(int64))
		key := fmt.Sprint(p["x"], p["lr"])
		cost := b
		if resume {
			cost = b - ran[key]
		}
		if r.steps+cost > budget {
			break
		}
		r.steps += cost
		if _, seen := origin[key]; !seen {
			origin[key] = seq
			r.configs++
		}
		if b > ran[key] {
			ran[key] = b
		}
		// A resumed run reports the curve of its first trial (same noise).
		src := seq
		if resume {
			src = origin[key]
		}
		v := s.reported(p, src, b)
		hist = append(hist, tuner.Observation{Seq: seq, Params: p, State: tuner.Completed, Value: v})
		if b == s.steps {
			r.full++
			if v > bestRep {
				bestRep, bestTrue = v, s.c.value(p, s.steps)
			}
		}
	}
	r.regret = s.opt - bestTrue
	if math.IsInf(bestTrue, -1) {
		r.regret = s.opt // nothing ran in full
	}
	return r
}

// method is one setting under test.
type method struct {
	label string
	run   func(s sim, budget int) result
}

func assessorMethod(name string, settings map[string]any) method {
	return method{label: name + " " + fmtSettings(settings), run: func(s sim, budget int) result {
		a, err := builtinTuners.NewAssessor(name, settings)
		check(err)
		return s.run(budget, a)
	}}
}

func hyperbandMethod(name string, settings map[string]any) method {
	return method{label: name + " " + fmtSettings(settings), run: func(s sim, budget int) result {
		return s.runHyperband(name, settings, budget, false)
	}}
}

// resumeMethod counts a promoted trial's steps as if it continued from
// its checkpoint: what hyperband costs when the trial script loads one.
func resumeMethod(name string, settings map[string]any) method {
	return method{label: name + " " + fmtSettings(settings) + ", promoted trials resume from a checkpoint", run: func(s sim, budget int) result {
		return s.runHyperband(name, settings, budget, true)
	}}
}

func fmtSettings(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s = %v", k, m[k]))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// defaults are NNI's defaults, the best of each kind on the tuning seeds
// (see -sweep) and the setting docs/tuners.md recommends (curvefitting with
// start_step = epoch_num/6, threshold 0.95, min_trials 3).
func defaults(steps int) []method {
	E := float64(steps)
	return []method{
		hyperbandMethod("hyperband", map[string]any{"eta": 3.0}),
		hyperbandMethod("hyperband", map[string]any{"eta": 4.0, "min_budget": math.Round(E / 5)}),
		resumeMethod("hyperband", map[string]any{"eta": 3.0}),
		resumeMethod("hyperband", map[string]any{"eta": 3.0, "min_budget": math.Round(E / 5)}),
		assessorMethod("medianstop", map[string]any{"start_step": 5.0, "min_trials": 3.0}),
		assessorMethod("medianstop", map[string]any{"start_step": math.Round(E / 5), "min_trials": 5.0, "percentile": 35.0}),
		assessorMethod("curvefitting", map[string]any{"epoch_num": E, "start_step": math.Round(E / 10), "threshold": 0.95, "min_trials": 3.0}),
		assessorMethod("curvefitting", map[string]any{"epoch_num": E, "start_step": math.Round(E / 6), "threshold": 0.95, "min_trials": 3.0}),
	}
}

// sweep is the grid searched on the tuning seeds.
func sweep(steps int) []method {
	E := float64(steps)
	var ms []method
	for _, eta := range []float64{2, 3, 4} {
		for _, frac := range []float64{50, 9, 5, 3, 2} {
			mb := math.Max(1, math.Round(E/frac))
			ms = append(ms, hyperbandMethod("hyperband", map[string]any{"eta": eta, "min_budget": mb}))
		}
	}
	for _, eta := range []float64{2, 3} {
		for _, frac := range []float64{50, 9, 5, 3} {
			ms = append(ms, resumeMethod("hyperband", map[string]any{"eta": eta, "min_budget": math.Max(1, math.Round(E/frac))}))
		}
	}
	for _, start := range []float64{0.1, 0.2, 0.3, 0.4} {
		for _, pct := range []float64{50, 35, 25, 15} {
			ms = append(ms, assessorMethod("medianstop", map[string]any{"start_step": math.Round(E * start), "min_trials": 5.0, "percentile": pct}))
		}
	}
	for _, start := range []float64{0.1, 0.16, 0.2, 0.3} {
		for _, th := range []float64{0.9, 0.95, 0.98, 1.0} {
			ms = append(ms, assessorMethod("curvefitting", map[string]any{"epoch_num": E, "start_step": math.Round(E * start), "threshold": th, "min_trials": 3.0}))
		}
	}
	return ms
}

// crossing reports how much early values mislead: over 4,000 random
// configurations, the Spearman correlation between the (noisy) value at
// step t and the true final value, and the share of the final top 10%
// that are in the top 10% at step t.
func crossing(c curves, steps int) string {
	s := sim{c: c, seed: 424242, steps: steps}
	const n = 4000
	ps := make([]space.Params, n)
	final := make([]float64, n)
	for i := range ps {
		ps[i] = suggest(s.seed, i)
		final[i] = c.value(ps[i], steps)
	}
	var parts []string
	for _, frac := range []float64{0.1, 0.2, 0.5} {
		t := int(math.Max(1, math.Round(frac*float64(steps))))
		at := make([]float64, n)
		for i := range ps {
			at[i] = s.reported(ps[i], i, t)
		}
		parts = append(parts, fmt.Sprintf("step %d: rho %.2f, top-10%% kept %.0f%%", t, spearman(at, final), 100*topOverlap(at, final, 0.1)))
	}
	return strings.Join(parts, "; ")
}

func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	r := make([]float64, len(xs))
	for k, i := range idx {
		r[i] = float64(k)
	}
	return r
}

func spearman(a, b []float64) float64 {
	ra, rb := ranks(a), ranks(b)
	n := float64(len(a))
	m := (n - 1) / 2
	var sab, saa, sbb float64
	for i := range ra {
		da, db := ra[i]-m, rb[i]-m
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	return sab / math.Sqrt(saa*sbb)
}

func topOverlap(a, b []float64, frac float64) float64 {
	k := int(frac * float64(len(a)))
	top := func(xs []float64) map[int]bool {
		r := ranks(xs)
		m := map[int]bool{}
		for i, v := range r {
			if int(v) >= len(xs)-k {
				m[i] = true
			}
		}
		return m
	}
	ta, tb := top(a), top(b)
	both := 0
	for i := range tb {
		if ta[i] {
			both++
		}
	}
	return float64(both) / float64(k)
}

func main() {
	prob := flag.String("problem", "crossing", "curves: crossing (noisy, outside curvefitting's families), rational (noisy, pow4) or exp (the first version's)")
	trials := flag.Int("trials", 40, "full trials per seed in the baseline (the full-run budget)")
	steps := flag.Int("steps", 50, "steps of a full trial")
	seeds := flag.Int("seeds", 100, "seeds")
	seed0 := flag.Int64("seed0", 1001, "first seed (1: the tuning seeds the settings were chosen on; 1001: held out)")
	doSweep := flag.Bool("sweep", false, "run the grid of settings searched on the tuning seeds instead of the defaults")
	only := flag.String("only", "", "run only the methods whose label starts with this (e.g. curvefitting)")
	flag.Parse()
	c, ok := problems[*prob]
	if !ok {
		fmt.Fprintf(os.Stderr, "earlystop: unknown -problem %q (crossing, rational or exp)\n", *prob)
		os.Exit(2)
	}
	start := time.Now()
	opt := optimum(c, *steps)
	full := *trials * *steps
	fmt.Printf("early stopping on crossing learning curves (%s: %s)\n", c.name, c.note)
	fmt.Printf("  %d steps/trial; baseline: %d random configurations in full (%d trial-steps); methods: at most %d trial-steps; seeds %d-%d\n",
		*steps, *trials, full, full/2, *seed0, *seed0+int64(*seeds)-1)
	fmt.Printf("  curves cross: %s\n", crossing(c, *steps))
	sims := make([]sim, *seeds)
	for i := range sims {
		sims[i] = sim{c: c, seed: *seed0 + int64(i), steps: *steps, opt: opt}
	}
	eval := func(f func(s sim) result) []result {
		rs := make([]result, len(sims))
		for i, s := range sims {
			rs[i] = f(s)
		}
		return rs
	}
	base := eval(func(s sim) result { return s.run(full, nil) })
	half := eval(func(s sim) result { return s.run(full/2, nil) })
	fmt.Printf("\n| method | median regret | mean regret | IQR | seeds no worse than baseline | p: better than baseline | trial-steps (max) | configs (mean) | full-length (mean) | full-run quality with ≤ half the steps |\n")
	fmt.Printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	row := func(label string, rs []result, verdict bool) {
		reg := make([]float64, len(rs))
		maxSteps, wins := 0, 0
		var cfg, fl float64
		for i, r := range rs {
			reg[i] = r.regret
			if r.steps > maxSteps {
				maxSteps = r.steps
			}
			if r.regret <= base[i].regret+1e-12 {
				wins++
			}
			cfg += float64(r.configs)
			fl += float64(r.full)
		}
		v := ""
		if verdict {
			v = "MISS"
			if q(reg, .5) <= q(regrets(base), .5) && mean(reg) <= mean(regrets(base)) && maxSteps <= full/2 {
				v = "**PASS**"
			}
		}
		p := "-"
		if verdict {
			p = fmt.Sprintf("%.3g", signedRankP(regrets(base), reg))
		}
		fmt.Printf("| %s | %.4f | %.4f | [%.4f, %.4f] | %d/%d | %s | %d | %.1f | %.1f | %s |\n", label, q(reg, .5), mean(reg), q(reg, .25), q(reg, .75),
			wins, len(rs), p, maxSteps, cfg/float64(len(rs)), fl/float64(len(rs)), v)
	}
	row("baseline: full runs, no early stopping", base, false)
	row("half the steps, no early stopping", half, true)
	ms := defaults(*steps)
	if *doSweep {
		ms = sweep(*steps)
	}
	for _, m := range ms {
		if !strings.HasPrefix(m.label, *only) {
			continue
		}
		row(m.label, eval(func(s sim) result { return m.run(s, full/2) }), true)
	}
	fmt.Printf("\nwall time %.0f s\n", time.Since(start).Seconds())
}

// signedRankP is the one-sided p-value of Wilcoxon's signed-rank test
// on the paired regrets (same seed, so the same random configurations in
// the same order), H1: b has smaller regret than a. Normal approximation
// with tie and continuity corrections; zero differences are left out.
func signedRankP(a, b []float64) float64 {
	var d []float64
	for i := range a {
		if x := a[i] - b[i]; math.Abs(x) > 1e-12 {
			d = append(d, x)
		}
	}
	n := float64(len(d))
	if n == 0 {
		return 1
	}
	abs := make([]float64, len(d))
	for i, x := range d {
		abs[i] = math.Abs(x)
	}
	idx := make([]int, len(d))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(x, y int) bool { return abs[idx[x]] < abs[idx[y]] })
	rank := make([]float64, len(d))
	ties := 0.0
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && abs[idx[j+1]] == abs[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			rank[idx[k]] = float64(i+j)/2 + 1
		}
		t := float64(j - i + 1)
		ties += t*t*t - t
		i = j + 1
	}
	w := 0.0
	for i, x := range d {
		if x > 0 {
			w += rank[i]
		}
	}
	mu := n * (n + 1) / 4
	sd := math.Sqrt(n*(n+1)*(2*n+1)/24 - ties/48)
	if sd == 0 {
		return 1
	}
	z := (w - mu - 0.5) / sd
	return 0.5 * math.Erfc(z/math.Sqrt2)
}

func regrets(rs []result) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.regret
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// q is the p-quantile (linear interpolation).
func q(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := p * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// builtinTuners is trialform's list of tuners and assessors.
var builtinTuners = tuner.Builtin()
