package tuner

import (
	"math"
	"math/rand/v2"

	"github.com/trialform/trialform/tuner/space"
)

// MOGPSettings are the mogp tuner's settings.
type MOGPSettings struct {
	Seeded
	StartupTrials int     `hcl:"startup_trials,optional" range:"[2, 1e9]" default:"10" doc:"completed trials sampled at random before the model is used"`
	Rho           float64 `hcl:"rho,optional" range:"[0, 1]" default:"0.05" doc:"weight of the sum in the augmented Chebyshev scalarisation (ParEGO's ρ): 0 is the pure weighted maximum; larger favours trials good in every objective at once"`
	MaxPoints     int     `hcl:"max_points,optional" range:"[20, 2000]" default:"100" doc:"most trials in the Gaussian process of a suggestion: the best half for its weights and a spread of the rest (cost grows as its cube)"`
	Restarts      int     `hcl:"restarts,optional" range:"[0, 20]" default:"0" doc:"random restarts of the hyperparameter fit besides the default start (as gp's; each costs about as much as the rest of a suggestion)"`
}

func defaultMOGPSettings() *MOGPSettings {
	return &MOGPSettings{StartupTrials: 10, Rho: 0.05, MaxPoints: 100}
}

func mogpKind() Kind {
	return Kind{
		Name: "mogp", Spaces: "all kinds; nested choices drawn at random",
		Summary:        "for [several objectives](objectives.md): ParEGO with the `gp` tuner's model. For each suggestion it draws weights uniformly on the simplex, scores every completed trial by the augmented Chebyshev function of its objectives normalised to the trials' range, and proposes the point of largest expected improvement of a Gaussian process fitted to those scores (log-warped as in `auto`'s GP phase), so successive suggestions aim at different parts of the Pareto front; running trials are in the model at the liar's value, failed ones at the worst score. With one objective it is `auto`'s GP phase throughout",
		Settings:       func() any { return defaultMOGPSettings() },
		New:            newMOGP,
		MultiObjective: true,
	}
}

// mogpTuner is ParEGO (Knowles 2006, "ParEGO: a hybrid algorithm with
// on-line landscape approximation for expensive multiobjective
// optimization problems") on the GP of gp.go:
//
//   - Each suggestion, in sequence order, draws weights λ uniformly on the
//     simplex (its own random stream, from the seed and its sequence
//     number), so trials asked for together equal trials asked for in turn.
//   - The completed trials' objectives (as losses: maximised ones negated)
//     are normalised to [0, 1] over those trials, and each trial is scored
//     by the augmented Chebyshev function max_j λ_j z_j + ρ Σ_j λ_j z_j.
//     Every Pareto-optimal trial is the minimum of this score for some λ
//     (fronts that are not convex included, unlike a weighted sum).
//   - The scores are log-warped as auto's GP phase warps its losses
//     (warpHistory): most trials are far from the front and score high,
//     and the warp keeps them from swamping the model where the front is.
//   - The gp tuner (boTuner, with its defaults: Matern 5/2 with ARD,
//     expected improvement, plain choices one-hot, nested choices drawn at
//     random, repeated points never proposed) proposes the trial. Failed
//     trials, and completed ones missing an objective, score the worst
//     score; running ones are in the model at the warped mean score.
//   - A suggestion fits a GP, so the posterior is capped at max_points
//     trials (boData.capPoints: the best half for this λ, which is the
//     part of the front the suggestion aims at, and an even spread of the
//     rest).
type mogpTuner struct {
	seeder
	sp  *space.Space
	bo  *boTuner
	rho float64
}

func newMOGP(cfg any, sp *space.Space) (Tuner, error) {
	c := cfg.(*MOGPSettings)
	gs := defaultGPSettings()
	gs.StartupTrials = c.StartupTrials
	gs.Restarts = c.Restarts
	bo := newBO("mogp", gs, sp)
	bo.seeder = c.seeder()
	bo.lieFor = warpedLie
	bo.maxPoints = c.MaxPoints
	return &mogpTuner{seeder: c.seeder(), sp: sp, bo: bo, rho: c.Rho}, nil
}

// mogpSalt separates the weights' random stream from the proposals'
// (newRNG(seed, seq)).
const mogpSalt = 0x6d6f6770

func (t *mogpTuner) Suggest(req Request) ([]space.Params, error) {
	sp, err := spaceOf(req, t.sp)
	if err != nil {
		return nil, err
	}
	if err := checkMulti(req); err != nil {
		return nil, err
	}
	goals := goalsOf(req)
	signs := make([]float64, len(goals))
	for i, g := range goals {
		if signs[i], err = goalSign(g); err != nil {
			return nil, err
		}
	}
	hist := history(req)
	// The completed trials' loss vectors, and their range per objective.
	loss := make([][]float64, len(hist))
	lo, hi := make([]float64, len(goals)), make([]float64, len(goals))
	for m := range lo {
		lo[m], hi[m] = math.Inf(1), math.Inf(-1)
	}
	for i, o := range hist {
		if o.State != Completed {
			continue
		}
		if l := lossVector(o, signs); l != nil {
			loss[i] = l
			for m, v := range l {
				lo[m], hi[m] = math.Min(lo[m], v), math.Max(hi[m], v)
			}
		}
	}
	seed := t.seedOf(req)
	out := make([]space.Params, len(req.Seqs))
	inner := make([]Observation, len(hist), len(hist)+len(req.Seqs))
	for _, i := range ascending(req.Seqs) {
		seq := req.Seqs[i]
		w := simplexWeights(len(goals), newRNG(seed^mogpSalt, seq))
		for k, o := range hist {
			inner[k] = Observation{Seq: o.Seq, Params: o.Params, State: o.State}
			switch {
			case loss[k] != nil:
				inner[k].Value = chebyshev(loss[k], lo, hi, w, t.rho)
			case o.State == Completed:
				inner[k].State = Failed // an objective missing or not finite
			}
		}
		ps, err := t.bo.Suggest(Request{Space: sp, Goal: Minimize, Seed: req.Seed, History: warpHistory(inner, 1), Seqs: []int{seq}})
		if err != nil {
			return nil, err
		}
		out[i] = ps[0]
		inner = append(inner, Observation{Seq: seq, Params: ps[0], State: Pending})
		hist = append(hist, Observation{Seq: seq, Params: ps[0], State: Pending})
		loss = append(loss, nil)
	}
	return out, nil
}

// lossVector is a completed trial's objectives as losses (sign times
// value), or nil when one is missing or not finite. With one objective a
// trial's Value serves when it has no Values.
func lossVector(o Observation, signs []float64) []float64 {
	vals := o.Values
	if len(vals) == 0 && len(signs) == 1 {
		vals = []float64{o.Value}
	}
	if len(vals) != len(signs) {
		return nil
	}
	l := make([]float64, len(vals))
	for m, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		l[m] = signs[m] * v
	}
	return l
}

// simplexWeights draws m weights uniformly on the simplex (positive,
// summing to 1): normalised exponential draws, a flat Dirichlet.
func simplexWeights(m int, rng *rand.Rand) []float64 {
	w := make([]float64, m)
	s := 0.0
	for j := range w {
		w[j] = rng.ExpFloat64()
		s += w[j]
	}
	for j := range w {
		w[j] /= s
	}
	return w
}

// chebyshev is the augmented Chebyshev scalarisation of loss, each
// objective normalised to [lo, hi] (0 where they are equal):
// max_j w_j z_j + rho Σ_j w_j z_j.
func chebyshev(loss, lo, hi, w []float64, rho float64) float64 {
	mx, sum := math.Inf(-1), 0.0
	for j, v := range loss {
		z := 0.0
		if hi[j] > lo[j] {
			z = (v - lo[j]) / (hi[j] - lo[j])
		}
		mx = math.Max(mx, w[j]*z)
		sum += w[j] * z
	}
	return mx + rho*sum
}
