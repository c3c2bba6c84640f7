package tuner

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/trialform/trialform/tuner/space"
)

// AnnealSettings are the anneal tuner's settings.
type AnnealSettings struct {
	Seeded
	AvgBestIdx float64 `hcl:"avg_best_idx,optional" range:"(0, 1e9]" default:"2" doc:"mean rank of the trial a new one is sampled around (2: mostly among the best three)"`
	ShrinkCoef float64 `hcl:"shrink_coef,optional" range:"(0, 1e9]" default:"0.1" doc:"how fast the sampling width shrinks with the number of completed trials n: width = 1/(1 + n*shrink_coef)"`
}

func annealKind() Kind {
	return Kind{
		Name: "anneal", Spaces: "all kinds, nested choice",
		Summary:  "NNI/hyperopt annealing: sample around one of the best trials with a width that shrinks as trials complete",
		Settings: func() any { return &AnnealSettings{AvgBestIdx: 2, ShrinkCoef: 0.1} },
		New:      newAnneal,
	}
}

// annealTuner is simulated-annealing-style search as in hyperopt's and
// NNI's anneal tuner. With no completed trial it samples at random. Then
// each new trial picks a base among the completed trials sorted by value,
// at a rank drawn from an exponential distribution with mean avg_best_idx,
// and samples every parameter around the base's value with the relative
// width f = 1/(1 + n*shrink_coef), n the number of completed trials:
//
//   - numbers: a normal of standard deviation f/2 of the range around the
//     base value, in unit coordinates (unit.go: log space for log kinds,
//     mu ± 3 sigma for normal kinds), truncated to the range, then rounded
//     as the kind requires;
//   - choices: with probability f an option drawn at random, else the
//     base's option; a kept nested option anneals its own parameters.
//
// Failed and pending trials are never bases. On an all-discrete space a
// point an earlier trial already has is redrawn, as random search does.
type annealTuner struct {
	seeder
	sp      *space.Space
	avgBest float64
	shrink  float64
}

func newAnneal(cfg any, sp *space.Space) (Tuner, error) {
	c := cfg.(*AnnealSettings)
	return &annealTuner{seeder: c.seeder(), sp: sp, avgBest: c.AvgBestIdx, shrink: c.ShrinkCoef}, nil
}

func (t *annealTuner) Suggest(req Request) ([]space.Params, error) {
	sp, sign, err := spaceAndSign(req, t.sp)
	if err != nil {
		return nil, err
	}
	hist := scoredHistory(req, sign)
	var done []scored
	for _, h := range hist {
		if !h.pending && !math.IsInf(h.loss, 1) {
			done = append(done, h)
		}
	}
	sort.SliceStable(done, func(a, b int) bool { return done[a].loss < done[b].loss })
	f := 1 / (1 + float64(len(done))*t.shrink)
	seen := seenSet(sp, hist)
	out := make([]space.Params, len(req.Seqs))
	for _, i := range ascending(req.Seqs) {
		rng := t.rng(req, req.Seqs[i])
		out[i] = seen.draw(func() space.Params {
			if len(done) == 0 {
				return space.SampleSpace(sp, rng)
			}
			r := min(len(done)-1, int(rng.ExpFloat64()*t.avgBest))
			return annealLevel(sp, done[r].params, f, rng)
		})
	}
	return out, nil
}

// annealLevel samples every parameter of sp around base with width f.
func annealLevel(sp *space.Space, base map[string]any, f float64, rng *rand.Rand) space.Params {
	ps := space.Params{}
	if sp == nil {
		return ps
	}
	for _, p := range sp.Params {
		v, has := base[p.Name]
		if has && !space.Contains(p, v) {
			has = false
		}
		switch {
		case !has:
			ps[p.Name] = space.Sample(p, rng)
		case p.Kind == space.Choice:
			if rng.Float64() < f {
				ps[p.Name] = space.Sample(p, rng)
				continue
			}
			i := optionIndex(p, v)
			o := p.Options[i]
			if !space.IsNested(o) {
				ps[p.Name] = o.Value
				continue
			}
			sub, _ := v.(map[string]any)
			if pm, ok := v.(space.Params); ok {
				sub = pm
			}
			m := map[string]any{"_name": o.Name}
			for k, x := range annealLevel(o.Nested, sub, f, rng) {
				m[k] = x
			}
			ps[p.Name] = m
		default:
			u, ok := newUnitDim(p)
			if !ok {
				ps[p.Name] = space.Sample(p, rng)
				continue
			}
			x, _ := u.toUnit(v)
			lo, hi := math.Inf(-1), math.Inf(1)
			if u.bounded {
				lo, hi = 0, 1
			}
			ps[p.Name] = u.value(truncNormal(rng, x, f/2, lo, hi))
		}
	}
	return ps
}
