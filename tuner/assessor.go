package tuner

import (
	"fmt"
	"math"
	"sort"

	"github.com/trialform/trialform/internal/decl"
)

// Assessors decide, from intermediate results, which running trials to
// stop early. Like tuners they are pure: the same curves give the same
// decisions, so a plan shows exactly what apply will stop.

// Curve is the intermediate objective values one trial reported, in
// report order (step i is Values[i-1]).
type Curve struct {
	TrialID string
	Seq     int
	Values  []float64
	// Running is set for trials still running (the ones an assessor may
	// stop); Completed for trials that ended with a final result.
	Running   bool
	Completed bool
	// Final is the trial's final objective value when Completed.
	Final float64
}

// AssessRequest asks an assessor about the running trials of Curves.
type AssessRequest struct {
	Goal   Goal
	Curves []Curve
}

// Assessor decides which running trials to stop: trial id -> the reason,
// in words a user reads in the plan.
type Assessor interface {
	Assess(req AssessRequest) map[string]string
}

// MedianStopSettings are the medianstop assessor's settings.
type MedianStopSettings struct {
	StartStep  int     `hcl:"start_step,optional" range:"[1,)" default:"1" doc:"the first step at which a trial can be stopped"`
	MinTrials  int     `hcl:"min_trials,optional" range:"[1,)" default:"1" doc:"completed trials needed before any trial is stopped"`
	Percentile float64 `hcl:"percentile,optional" range:"(0, 100]" default:"50" doc:"a trial must be in the top percentile % of the completed trials' running averages to go on; 50 is the median"`
}

func medianStopKind() AssessorKind {
	return AssessorKind{
		Name:     "medianstop",
		Summary:  "Vizier's median stopping rule: at step s, stop a trial whose best value so far is worse than the median of the completed trials' running averages up to s; `percentile = 25` raises the bar to the top 25% (Optuna's `PercentilePruner`)",
		Settings: func() any { return &MedianStopSettings{StartStep: 1, MinTrials: 1, Percentile: 50} },
		New:      newMedianStop,
	}
}

// CurveFittingSettings are the curvefitting assessor's settings.
type CurveFittingSettings struct {
	EpochNum  int     `hcl:"epoch_num,attr" range:"[2,)" doc:"the step count of a full trial"`
	StartStep int     `hcl:"start_step,optional" range:"[2,)" default:"6" doc:"steps a trial must report before it is judged; below epoch_num"`
	Threshold float64 `hcl:"threshold,optional" range:"(0, 1]" default:"0.95" doc:"stop when the predicted final result is worse than threshold x the best final so far"`
	Gap       int     `hcl:"gap,optional" range:"[1,)" default:"1" doc:"judge every gap steps"`
	MinTrials int     `hcl:"min_trials,optional" range:"[1,)" default:"1" doc:"completed trials needed before any trial is stopped"`
}

func curveFittingKind() AssessorKind {
	return AssessorKind{
		Name:     "curvefitting",
		Summary:  "fits pow3, pow4 (a shifted power law, for curves that rise linearly first and saturate slowly), log-linear and exp3 learning curves (least squares, weighted by 1/residual) and stops a trial whose predicted value at `epoch_num` is worse than `threshold` × the best final result. NNI's version runs MCMC over twelve curve families; this one does not",
		Settings: func() any { return &CurveFittingSettings{StartStep: 6, Threshold: 0.95, Gap: 1, MinTrials: 1} },
		New:      newCurveFitting,
	}
}

// better reports whether a is better than b for goal.
func better(goal Goal, a, b float64) bool {
	if goal == Minimize {
		return a < b
	}
	return a > b
}

// medianStop is Vizier's median stopping rule, as NNI's Medianstop
// assessor applies it: a running trial is stopped at step s (s >=
// start_step) when its best value up to s is worse than the median of the
// running averages, up to s, of the completed trials that reached s.
// percentile generalises the median as Optuna's PercentilePruner does: a
// trial goes on only if its best value is within the top percentile % of
// those averages (50: the median).
type medianStop struct {
	startStep, minTrials int
	percentile           float64
}

func newMedianStop(cfg any) (Assessor, error) {
	c := cfg.(*MedianStopSettings)
	return &medianStop{startStep: c.StartStep, minTrials: c.MinTrials, percentile: c.Percentile}, nil
}

func (m *medianStop) Assess(req AssessRequest) map[string]string {
	out := map[string]string{}
	for _, c := range req.Curves {
		if !c.Running || len(c.Values) < m.startStep {
			continue
		}
		step := len(c.Values)
		var avgs []float64
		for _, d := range req.Curves {
			if !d.Completed || len(d.Values) < step {
				continue
			}
			sum := 0.0
			for _, v := range d.Values[:step] {
				sum += v
			}
			avgs = append(avgs, sum/float64(step))
		}
		if len(avgs) < m.minTrials {
			continue
		}
		// The bar: the running average that the top percentile % of the
		// completed trials reach.
		qt := 1 - m.percentile/100
		if req.Goal == Minimize {
			qt = m.percentile / 100
		}
		med := quantileOf(avgs, qt)
		best := c.Values[0]
		for _, v := range c.Values[1:step] {
			if better(req.Goal, v, best) {
				best = v
			}
		}
		if better(req.Goal, med, best) {
			bar := "the median"
			if m.percentile != 50 {
				bar = fmt.Sprintf("the top-%g%% bar", m.percentile)
			}
			// Counted in values, not named as a step: the curve holds
			// only the reports that are numbers, and the views number
			// the reported steps from 0.
			out[c.TrialID] = fmt.Sprintf("medianstop: best %s of its first %d values is worse than %s %s of %d completed trial(s) over their first %d values",
				fmtNum(best), step, bar, fmtNum(med), len(avgs), step)
		}
	}
	return out
}

// quantileOf is the p-quantile of xs (linear interpolation between order
// statistics; p = 0.5 is the median).
func quantileOf(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := p * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

func fmtNum(v float64) string { return fmt.Sprintf("%.6g", v) }

// curveFitting predicts a running trial's value at epoch_num by fitting
// learning-curve models to what it reported so far and stops it when even
// the prediction is worse than threshold x the best final result (for
// minimize: better than best / threshold is required). The models are a
// least-squares ensemble of three shapes NNI's curve-fitting assessor also
// uses — pow3 (c - a·x^-α), log-linear (a·ln x + b) and exp3 (c - a·e^-bx)
// — weighted by their fit; it does not run NNI's MCMC over twelve models.
type curveFitting struct {
	epochs, startStep, gap, minTrials int
	threshold                         float64
}

func newCurveFitting(cfg any) (Assessor, error) {
	c := cfg.(*CurveFittingSettings)
	if c.StartStep >= c.EpochNum {
		return nil, decl.Errorf("start_step", "start_step (%d) must be below epoch_num (%d).", c.StartStep, c.EpochNum)
	}
	return &curveFitting{epochs: c.EpochNum, startStep: c.StartStep, gap: c.Gap, minTrials: c.MinTrials, threshold: c.Threshold}, nil
}

func (cf *curveFitting) Assess(req AssessRequest) map[string]string {
	out := map[string]string{}
	best, n := 0.0, 0
	for _, c := range req.Curves {
		if !c.Completed {
			continue
		}
		if n == 0 || better(req.Goal, c.Final, best) {
			best = c.Final
		}
		n++
	}
	if n < cf.minTrials {
		return out
	}
	for _, c := range req.Curves {
		step := len(c.Values)
		if !c.Running || step < cf.startStep || step >= cf.epochs || (step-cf.startStep)%cf.gap != 0 {
			continue
		}
		pred, ok := predictCurve(c.Values, float64(cf.epochs))
		if !ok {
			continue
		}
		var bar float64
		var worse bool
		if req.Goal == Minimize {
			bar = best / cf.threshold
			if best < 0 {
				bar = best * cf.threshold
			}
			worse = pred > bar
		} else {
			bar = best * cf.threshold
			if best < 0 {
				bar = best / cf.threshold
			}
			worse = pred < bar
		}
		if worse {
			out[c.TrialID] = fmt.Sprintf("curvefitting: predicted %s at step %d, worse than %s (threshold %g of the best final %s)",
				fmtNum(pred), cf.epochs, fmtNum(bar), cf.threshold, fmtNum(best))
		}
	}
	return out
}

// predictCurve extrapolates ys (ys[i] at x = i+1) to x = at: the fits
// of the model ensemble, weighted by 1/(sse + ε) so that the better fit
// dominates.
func predictCurve(ys []float64, at float64) (float64, bool) {
	fits := curveFits(ys, at)
	num, den := 0.0, 0.0
	for _, f := range fits {
		w := 1 / (f.sse + 1e-12)
		num += w * f.pred
		den += w
	}
	if den == 0 {
		return 0, false
	}
	return num / den, true
}

// curveFit is one model's least-squares fit: its value at the target step
// and its sum of squared residuals.
type curveFit struct {
	model     string
	pred, sse float64
}

// curveFits fits each model of the ensemble to ys (ys[i] at x = i+1) and
// returns their values at x = at (models that do not fit are left out).
func curveFits(ys []float64, at float64) []curveFit {
	for _, y := range ys {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			return nil
		}
	}
	var fits []curveFit
	// log-linear: y = a ln x + b (linear least squares in ln x).
	if a, b, ok := linfit(len(ys), func(i int) float64 { return math.Log(float64(i + 1)) }, ys); ok {
		fits = append(fits, curveFit{"loglinear", a*math.Log(at) + b, sse(ys, func(x float64) float64 { return a*math.Log(x) + b })})
	}
	// pow3: y = c - a x^-α and exp3: y = c - a e^-βx, each linear in (a, c)
	// for a fixed shape parameter: grid over the shape, keep the best fit.
	for _, shape := range []struct {
		name string
		g    func(x, s float64) float64
		grid []float64
	}{
		{"pow3", func(x, s float64) float64 { return math.Pow(x, -s) }, shapeGrid(0.05, 4)},
		{"exp3", func(x, s float64) float64 { return math.Exp(-s * x) }, shapeGrid(0.01, 2)},
	} {
		best := curveFit{model: shape.name, sse: math.Inf(1)}
		for _, s := range shape.grid {
			s := s
			a, c, ok := linfit(len(ys), func(i int) float64 { return shape.g(float64(i+1), s) }, ys)
			if !ok {
				continue
			}
			e := sse(ys, func(x float64) float64 { return a*shape.g(x, s) + c })
			if e < best.sse {
				best.pred, best.sse = a*shape.g(at, s)+c, e
			}
		}
		if !math.IsInf(best.sse, 1) {
			fits = append(fits, best)
		}
	}
	// pow4: y = c - a (x + b)^-α, a power law shifted by b steps, which
	// also fits curves that rise linearly at first; grid over (b, α).
	best := curveFit{model: "pow4", sse: math.Inf(1)}
	for _, b := range []float64{0.5, 1, 2, 4, 8, 16, 32} {
		for _, al := range shapeGrid(0.05, 4) {
			g := func(x float64) float64 { return math.Pow(x+b, -al) }
			a, c, ok := linfit(len(ys), func(i int) float64 { return g(float64(i + 1)) }, ys)
			if !ok {
				continue
			}
			if e := sse(ys, func(x float64) float64 { return a*g(x) + c }); e < best.sse {
				best.pred, best.sse = a*g(at)+c, e
			}
		}
	}
	if !math.IsInf(best.sse, 1) {
		fits = append(fits, best)
	}
	out := fits[:0]
	for _, f := range fits {
		if !math.IsNaN(f.pred) && !math.IsInf(f.pred, 0) {
			out = append(out, f)
		}
	}
	return out
}

// shapeGrid is 32 shape parameters spaced geometrically over [lo, hi].
func shapeGrid(lo, hi float64) []float64 {
	const n = 32
	g := make([]float64, n)
	for i := range g {
		g[i] = lo * math.Pow(hi/lo, float64(i)/(n-1))
	}
	return g
}

// linfit fits y = a·f(i) + b by least squares.
func linfit(n int, f func(i int) float64, ys []float64) (a, b float64, ok bool) {
	if n < 2 {
		return 0, 0, false
	}
	var sx, sy, sxx, sxy float64
	for i := 0; i < n; i++ {
		x := f(i)
		sx += x
		sy += ys[i]
		sxx += x * x
		sxy += x * ys[i]
	}
	fn := float64(n)
	d := fn*sxx - sx*sx
	if math.Abs(d) < 1e-12 {
		return 0, 0, false
	}
	a = (fn*sxy - sx*sy) / d
	b = (sy - a*sx) / fn
	return a, b, true
}

func sse(ys []float64, model func(x float64) float64) float64 {
	s := 0.0
	for i, y := range ys {
		d := model(float64(i+1)) - y
		s += d * d
	}
	return s
}
