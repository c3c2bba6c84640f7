package tuner

import (
	"math"
	"sort"

	"github.com/trialform/trialform/tuner/space"
)

// AutoSettings are the auto tuner's settings.
type AutoSettings struct {
	Seeded
	GPTrials  int  `hcl:"gp_trials,optional" range:"[0, 1e9]" default:"100" doc:"trials proposed by a Gaussian process (after 10 random ones) before CMA-ES takes over, in a space without nested choices; 0: no GP phase"`
	LineEvery int  `hcl:"line_every,optional" range:"[0, 1e9]" default:"2" doc:"in the GP phase, every line_every-th trial changes one param of the best trial (the GP's pick along each param); 0: never"`
	TPETrials *int `hcl:"tpe_trials,optional" range:"[0, 1e9]" default:"25, or 40 when the space has a choice" doc:"trials proposed by TPE before CMA-ES takes over the numeric parameters where there is no GP phase"`
	Popsize   *int `hcl:"popsize,optional" range:"[2, 4096]" default:"4 + ⌊3 ln d⌋" doc:"CMA-ES population of the first run (d: the numeric params); doubles at every restart"`
}

// autoSigmaMin and autoSigmaMax bound the first CMA-ES run's step size
// (variables so that the local comparison can try others).
var autoSigmaMin, autoSigmaMax = 0.1, 0.3

func autoKind() Kind {
	return Kind{
		Name: "auto", Spaces: "all kinds, nested choice",
		Summary:        "10 random trials, then in a space without nested choices the `gp` tuner up to trial `gp_trials` (fitted to log-warped losses, `log(1 + (loss − min)/(median − min))`, so a heavy tail does not swamp the model; 10–30 ms per suggestion), every `line_every`-th of them a coordinate move (the GP's pick on the lines through the best trial along each numeric param, so a better basin in one param is tried whatever the others are), otherwise TPE up to trial `tpe_trials`; then CMA-ES (IPOP restarts) on the numeric params starting at the best trial, while TPE keeps choosing the categorical ones; an all-categorical space stays TPE. With [several objectives](objectives.md) it is `mogp` where the GP phase would run, otherwise `motpe`. Median regret at 100 trials is 0.005x Optuna TPE's, see [Tuner benchmark](benchmarks.md#tuner-benchmark)",
		Settings:       func() any { return &AutoSettings{GPTrials: 100, LineEvery: autoLineEvery} },
		MultiObjective: true,
		New:            newAuto,
	}
}

// autoTuner is the default strategy: a model to explore, CMA-ES to
// converge.
//
//   - In a space with a numeric parameter and no nested choice, the first
//     gp_trials trials (100; by position in sequence order, counting every
//     trial) are the gp tuner's (gp.go) with its defaults, fitted to the
//     losses warped by warpHistory, the first 10 of them at random (TPE's
//     random stream). A Gaussian process needs far
//     fewer trials than TPE on smooth problems: at 50 to 100 trials its
//     median regret is a tenth of Optuna's TPE's on the benchmark
//     (bench/tuners/RESULTS.md). Its suggestions cost milliseconds (about
//     30 ms with 200 trials of 5 params), nothing next to a trial; past
//     gp_trials every suggestion is CMA-ES's again, so a long experiment
//     never pays the GP's cubic cost.
//   - Every line_every-th of those GP trials (by default every second;
//     position pos with pos % line_every = line_every - 1) is a coordinate
//     move: the GP's expected improvement is maximised only over the lines
//     through the best completed trial along each numeric parameter (40
//     uniform points on each) and its other options of each choice, so
//     the proposal changes one param of the best trial. The GP models the
//     parameters jointly and, with tens of trials in 5 dimensions, does
//     not learn that a basin it saw in one parameter is better whatever
//     the others are; on Styblinski-Tang (a better and a worse basin in
//     each of five parameters) auto stayed in the worse basin of two of
//     them at 100 trials (median), and with the moves it finds the better
//     basin of all or all but one (bench/tuners/RESULTS.md, 2026-11-27).
//     Without the choices' lines, the moves held the best trial's choice
//     and auto settled on a wrong option of TestAutoLearnsChoice's.
//   - Otherwise (nested choices, or gp_trials = 0) the first tpe_trials trials (by default 25, or 40 in a space with a
//     choice; by position in sequence order, counting every trial:
//     completed, failed or pending) are TPE's, exactly as the tpe tuner
//     with multivariate = false (one model per parameter) would propose
//     them (its first 10 at random).
//   - Later trials are CMA-ES's (with IPOP restarts, see cmaes.go) over the
//     numeric parameters in unit coordinates. The first run starts at the
//     best trial so far, with a step size from the spread of the best
//     quarter of the trials (between 0.1 and 0.3 of the range).
//   - Choices and nested choices of CMA-ES trials are proposed by TPE's
//     model of each choice, conditioned on the whole history (pending
//     trials as constant liars), so a choice that moves the optimum is
//     learnt while CMA-ES tunes the numbers.
//   - A space without numeric parameters is TPE's throughout.
type autoTuner struct {
	seeder
	sp        *space.Space
	tpe       *tpeTuner
	tpeTrials int  // the tpe_trials setting
	hasN0     bool // tpe_trials was set
	popsize   int
	gp        *boTuner
	gpLine    *boTuner // the GP on the lines through the best trial
	gpTrials  int
	lineEvery int
}

// autoLineEvery is line_every's default: every second trial of the GP
// phase is a coordinate move.
const autoLineEvery = 2

// autoLineDraws is how many points the coordinate moves draw on each line.
const autoLineDraws = 40

// autoChoiceTPETrials is tpe_trials' default for a space with a choice:
// CMA-ES cannot move a choice, and once its run has converged for one
// option the others look worse there (the option that moves the optimum
// is never switched to), so TPE gets longer to learn the choices first.
const autoChoiceTPETrials = 40

func newAuto(cfg any, sp *space.Space) (Tuner, error) {
	c := cfg.(*AutoSettings)
	sd := c.seeder()
	n0, hasN0 := 25, c.TPETrials != nil
	if hasN0 {
		n0 = *c.TPETrials
	}
	pop := 0
	if c.Popsize != nil {
		pop = *c.Popsize
	}
	gpn := c.GPTrials
	gp := newBO("gp", defaultGPSettings(), sp)
	gp.seeder = sd
	gp.lieFor = warpedLie
	line := *gp
	line.lineDraws = autoLineDraws
	tpe := &tpeTuner{seeder: sd, sp: sp, startup: 10, candidates: 24, priorWeight: 1}
	return &autoTuner{seeder: sd, sp: sp, tpe: tpe, tpeTrials: n0, hasN0: hasN0, popsize: pop, gp: gp, gpLine: &line, gpTrials: gpn, lineEvery: c.LineEvery}, nil
}

// gpPhase reports whether the GP proposes the first gpTrials trials in sp:
// it needs a numeric parameter, and it draws nested choices at random, so
// a space with one keeps TPE, which models them.
func (t *autoTuner) gpPhase(c *unitCodec) bool {
	if t.gpTrials == 0 || len(c.dims) == 0 {
		return false
	}
	for _, o := range c.other {
		for _, opt := range o.Options {
			if space.IsNested(opt) {
				return false
			}
		}
	}
	return true
}

func (t *autoTuner) Suggest(req Request) ([]space.Params, error) {
	if len(req.Goals) > 1 {
		return t.suggestMulti(req)
	}
	sp, sign, err := spaceAndSign(req, t.sp)
	if err != nil {
		return nil, err
	}
	seed := t.seedOf(req)
	hist := scoredHistory(req, sign)
	obs := make([]tpeObs, 0, len(hist)+len(req.Seqs))
	completed := 0
	for _, h := range hist {
		switch {
		case h.pending:
			obs = append(obs, tpeObs{vals: h.params, loss: math.Inf(1)})
		case !math.IsInf(h.loss, 1):
			obs = append(obs, tpeObs{vals: h.params, loss: h.loss})
			completed++
		}
	}
	c := newUnitCodec(sp)
	n0 := t.tpeTrials
	if !t.hasN0 {
		for _, o := range c.other {
			if o.Kind == space.Choice {
				n0 = autoChoiceTPETrials
			}
		}
	}
	useGP := t.gpPhase(c)
	if useGP {
		n0 = t.gpTrials
	}
	var gpHist []Observation
	var run *cmaRun
	out := make([]space.Params, len(req.Seqs))
	for k, i := range ascending(req.Seqs) {
		rng := newRNG(seed, req.Seqs[i])
		pos := len(hist) + k
		var p space.Params
		switch {
		case useGP && pos < n0 && completed >= t.tpe.startup:
			// One at a time, the earlier ones of this request pending, so
			// that asking for several equals asking for them in turn.
			if gpHist == nil {
				gpHist = warpHistory(history(req), sign)
			}
			g := t.gp
			if t.lineEvery > 0 && pos%t.lineEvery == t.lineEvery-1 {
				g = t.gpLine
			}
			ps, err := g.Suggest(Request{Space: req.Space, Goal: Minimize, Seed: req.Seed, History: gpHist, Seqs: []int{req.Seqs[i]}})
			if err != nil {
				return nil, err
			}
			p = ps[0]
		case pos < n0 || len(c.dims) == 0:
			if completed < t.tpe.startup {
				p = space.SampleSpace(sp, rng)
			} else {
				p = t.tpe.sampleLevel(sp, obs, rng)
			}
		default:
			if run == nil {
				run = t.replay(c, seed, hist, n0)
			}
			x := run.es.draw(c, rng)
			p = space.Params{}
			c.decode(x, p)
			for _, o := range c.other {
				if o.Kind == space.Choice && completed > 0 {
					p[o.Name] = t.tpe.sampleChoice(o, obs, rng)
				} else {
					p[o.Name] = space.Sample(o, rng)
				}
			}
		}
		out[i] = p
		obs = append(obs, tpeObs{vals: p, loss: math.Inf(1)})
		if gpHist != nil {
			gpHist = append(gpHist, Observation{Seq: req.Seqs[i], Params: p, State: Pending})
		}
	}
	return out, nil
}

// replay rebuilds CMA-ES from the trials after the first tpe_trials.
func (t *autoTuner) replay(c *unitCodec, seed int64, hist []scored, n0 int) *cmaRun {
	n0 = min(n0, len(hist))
	mean, sigma := startFrom(c, hist[:n0])
	cfg := cmaConfig{lambda: t.popsize, sigma0: 0.25, startMean: mean, startSigma: sigma}
	return replayCMA(c, cfg, seed, hist[n0:])
}

// startFrom picks CMA-ES's first mean, the best completed trial, and step
// size, the root mean square distance of the best quarter (at least 3) of
// the completed trials to it, per coordinate, clipped into [0.1, 0.3].
func startFrom(c *unitCodec, before []scored) ([]float64, float64) {
	type pt struct {
		x    []float64
		loss float64
	}
	var pts []pt
	for _, h := range before {
		if h.pending || math.IsInf(h.loss, 1) {
			continue
		}
		if x, ok := c.encode(h.params); ok {
			pts = append(pts, pt{x, h.loss})
		}
	}
	if len(pts) == 0 {
		return nil, 0.25
	}
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].loss < pts[b].loss })
	best := pts[0].x
	k := max(3, len(pts)/4)
	if k > len(pts) {
		return best, 0.25
	}
	ss := 0.0
	for _, p := range pts[1:k] {
		for i := range best {
			d := p.x[i] - best[i]
			ss += d * d
		}
	}
	sigma := math.Sqrt(ss / float64((k-1)*len(best)))
	return best, clampF(sigma, autoSigmaMin, autoSigmaMax)
}

// warpedLie is the GP phase's constant liar: the warp of the mean of the
// unwarped losses, log(1 + mean(exp(w) - 1)), which is what the gp
// tuner's default liar (the mean loss) gives without the warp. The mean of
// the warped losses would lie far more optimistically (the log pulls the
// mean towards the best trials), and with 8 trials in flight batches then
// crowd: auto / Optuna TPE read 0.53 on four problems, against 0.20 for
// the gp tuner alone (bench/tuners/RESULTS.md). Values too large to be
// warped ones (the warp leaves equal losses as they are) lie at their mean.
func warpedLie(w []float64) float64 {
	mean, big := 0.0, false
	for _, v := range w {
		big = big || v > 700
		mean += v / float64(len(w))
	}
	if big || len(w) == 0 {
		return mean
	}
	e := 0.0
	for _, v := range w {
		e += math.Expm1(v) / float64(len(w))
	}
	return math.Log1p(e)
}

// warpHistory returns hist with every finite completed value v replaced by
// log(1 + (l - min) / (median - min)), l = sign v the loss (smaller is
// better), for the GP phase. The warp is monotone, so the best trial stays
// the best, and it compresses a heavy upper tail: Rosenbrock's losses span
// six orders of magnitude, and a GP fitted to them as they are (standardised)
// models the tail and is flat where the optimum is. With the warp, auto's
// median regret at 100 trials (10 seeds, against Optuna's TPE) goes from
// 1.54 to 0.03 on rosenbrock5, 1.30 to 0.44 on levy5 and 1.73 to 1.16 on
// styblinski5; ranks instead of the log lost Branin's precision (0.17
// against 0.003). When the median equals the minimum the scale is the
// range; when every loss is equal, the values are left as they are.
func warpHistory(hist []Observation, sign float64) []Observation {
	out := make([]Observation, len(hist))
	copy(out, hist)
	finite := func(o Observation) bool {
		return o.State == Completed && !math.IsNaN(o.Value) && !math.IsInf(o.Value, 0)
	}
	var ls []float64
	for _, o := range out {
		if finite(o) {
			ls = append(ls, sign*o.Value)
		}
	}
	if len(ls) == 0 {
		return out
	}
	sort.Float64s(ls)
	lmin := ls[0]
	scale := ls[len(ls)/2] - lmin
	if !(scale > 0) {
		scale = ls[len(ls)-1] - lmin
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return out
	}
	for i, o := range out {
		if finite(o) {
			out[i].Value = math.Log1p((sign*o.Value - lmin) / scale)
		}
	}
	return out
}
