// Command earlystop measures what an assessor saves on a synthetic
// learning-curve problem whose curves cross (configurations that learn
// fast plateau lower than slow ones). For each seed it runs N full trials
// of random search (N x E trial-steps) and, with the assessor, keeps
// starting random trials until half that many steps are spent. It prints,
// per assessor, the median and IQR over seeds of the regret of the best
// final value, next to the full runs', and whether the assessor reached the
// full-run quality with at most half the steps.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/trialform/trialform/tuner"
	"github.com/trialform/trialform/tuner/space"
)

var problem = &space.Space{Params: []space.Param{
	{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}},
	{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-3, 1}},
}}

// curve is the value after step t (1-based) of configuration p: a
// plateau A reached at rate r. A peaks at x = 0.7; a high learning rate
// rises fast but plateaus lower, so early leaders are often not the final
// ones (the curves cross).
func curve(p space.Params, t int) float64 {
	x := p["x"].(float64)
	lr := p["lr"].(float64)
	plateau := 1 - 1.5*(x-0.7)*(x-0.7) - 0.35*math.Log10(lr/1e-3)/3
	rate := 0.02 + 0.5*lr
	return plateau * (1 - math.Exp(-rate*float64(t)))
}

// optimum is the best final value reachable at E steps (grid search).
func optimum(steps int) float64 {
	best := math.Inf(-1)
	for i := 0; i <= 400; i++ {
		for j := 0; j <= 400; j++ {
			p := space.Params{"x": float64(i) / 400, "lr": math.Pow(10, -3+3*float64(j)/400)}
			best = math.Max(best, curve(p, steps))
		}
	}
	return best
}

func suggest(seed int64, seq int) space.Params {
	tn, err := tuner.New("random", map[string]any{}, problem)
	check(err)
	out, err := tn.Suggest(tuner.Request{Space: problem, Goal: tuner.Maximize, Seed: seed, Seqs: []int{seq}})
	check(err)
	return out[0]
}

// run runs trials one at a time until the step budget is spent; with an
// assessor, each running trial is judged after every step. It returns the
// best final value of the trials that completed.
func run(seed int64, budget, steps int, as tuner.Assessor) float64 {
	var done []tuner.Curve
	best := math.Inf(-1)
	spent := 0
	for seq := 0; spent < budget; seq++ {
		p := suggest(seed, seq)
		cur := tuner.Curve{TrialID: fmt.Sprint(seq), Seq: seq, Running: true}
		stopped := false
		for t := 1; t <= steps && spent < budget; t++ {
			cur.Values = append(cur.Values, curve(p, t))
			spent++
			if as != nil && t < steps {
				stops := as.Assess(tuner.AssessRequest{Goal: tuner.Maximize, Curves: append(done, cur)})
				if _, ok := stops[cur.TrialID]; ok {
					stopped = true
					break
				}
			}
		}
		if !stopped && len(cur.Values) == steps {
			cur.Running, cur.Completed, cur.Final = false, true, cur.Values[steps-1]
			done = append(done, cur)
			best = math.Max(best, cur.Final)
		}
	}
	return best
}

// runHyperband runs hyperband's schedule one trial at a time (each rung
// is complete before the next starts) until the step budget is spent; a
// trial runs TRIAL_BUDGET steps. It returns the best value among trials
// that ran the full number of steps.
func runHyperband(seed int64, budget, steps int) float64 {
	tn, err := tuner.New("hyperband", map[string]any{"max_budget": float64(steps), "eta": 3.0}, problem)
	check(err)
	var hist []tuner.Observation
	best := math.Inf(-1)
	spent := 0
	for seq := 0; spent < budget; seq++ {
		out, err := tn.Suggest(tuner.Request{Space: problem, Goal: tuner.Maximize, Seed: seed, History: hist, Seqs: []int{seq}})
		check(err)
		p := out[0]
		b := int(p[tuner.BudgetParam].(int64))
		if spent+b > budget {
			break
		}
		spent += b
		v := curve(p, b)
		hist = append(hist, tuner.Observation{Seq: seq, Params: p, State: tuner.Completed, Value: v})
		if b == steps {
			best = math.Max(best, v)
		}
	}
	return best
}

func main() {
	trials := flag.Int("trials", 40, "full trials per seed (the full-run budget)")
	steps := flag.Int("steps", 50, "steps of a full trial")
	seeds := flag.Int("seeds", 20, "seeds")
	flag.Parse()
	opt := optimum(*steps)
	full := *trials * *steps
	fmt.Printf("early stopping: crossing learning curves, %d steps/trial, full runs: %d trials (%d trial-steps), assessors get %d, %d seeds\n",
		*steps, *trials, full, full/2, *seeds)
	regrets := func(as func() tuner.Assessor, budget int) []float64 {
		var rs []float64
		for s := 0; s < *seeds; s++ {
			var a tuner.Assessor
			if as != nil {
				a = as()
			}
			rs = append(rs, opt-run(int64(s+1), budget, *steps, a))
		}
		return rs
	}
	base := regrets(nil, full)
	fmt.Printf("  %-34s median regret %.4f  IQR [%.4f, %.4f]\n", "full runs (no assessor)", q(base, .5), q(base, .25), q(base, .75))
	half := regrets(nil, full/2)
	fmt.Printf("  %-34s median regret %.4f  IQR [%.4f, %.4f]\n", "half the steps, no assessor", q(half, .5), q(half, .25), q(half, .75))
	var hb []float64
	for s := 0; s < *seeds; s++ {
		hb = append(hb, opt-runHyperband(int64(s+1), full/2, *steps))
	}
	verdict := "MISS"
	if q(hb, .5) <= q(base, .5) {
		verdict = "PASS"
	}
	fmt.Printf("  %-34s median regret %.4f  IQR [%.4f, %.4f]  full-run quality with half the steps: %s\n",
		"hyperband (eta 3), half the steps", q(hb, .5), q(hb, .25), q(hb, .75), verdict)
	for _, c := range []struct {
		name     string
		settings map[string]any
	}{
		{"medianstop", map[string]any{"start_step": 5.0, "min_trials": 3.0}},
		{"curvefitting", map[string]any{"epoch_num": float64(*steps), "start_step": 8.0, "threshold": 0.95, "min_trials": 3.0}},
	} {
		rs := regrets(func() tuner.Assessor {
			a, err := tuner.NewAssessor(c.name, c.settings)
			check(err)
			return a
		}, full/2)
		verdict := "MISS"
		if q(rs, .5) <= q(base, .5) {
			verdict = "PASS"
		}
		fmt.Printf("  %-34s median regret %.4f  IQR [%.4f, %.4f]  full-run quality with half the steps: %s\n",
			c.name+", half the steps", q(rs, .5), q(rs, .25), q(rs, .75), verdict)
	}
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
