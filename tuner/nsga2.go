package tuner

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/trialform/trialform/tuner/space"
)

// NSGA2Settings are the nsga2 tuner's settings.
type NSGA2Settings struct {
	Seeded
	PopulationSize int      `hcl:"population_size,optional" range:"[2, 1048576]" default:"20" doc:"the parents: the best completed trials by Pareto rank and spread; also the random trials before the first child"`
	CrossoverProb  float64  `hcl:"crossover_prob,optional" range:"[0, 1]" default:"0.9" doc:"chance that a child mixes two parents rather than copying one"`
	MutationProb   *float64 `hcl:"mutation_prob,optional" range:"[0, 1]" default:"the larger of 0.3 and 1 / the number of parameters" doc:"chance that each parameter of a child is mutated"`
	EtaCrossover   float64  `hcl:"eta_crossover,optional" range:"[1e-9, 1e6]" default:"15" doc:"SBX distribution index: larger keeps children nearer their parents"`
	EtaMutation    float64  `hcl:"eta_mutation,optional" range:"[1e-9, 1e6]" default:"20" doc:"polynomial mutation's distribution index: larger makes smaller steps"`
}

func nsga2Kind() Kind {
	return Kind{
		Name: "nsga2", Spaces: "all kinds, nested choice",
		Summary: "for [several objectives](objectives.md): steady-state NSGA-II; the parents are the `population_size` best completed trials by Pareto rank and spread (hypervolume contribution for 2 objectives, crowding distance for more), picked by binary tournaments; numbers mix by SBX and mutate polynomially (log params in log space), choices by uniform crossover and redraws; the first `population_size` trials are random",
		Settings: func() any {
			return &NSGA2Settings{PopulationSize: 20, CrossoverProb: 0.9, EtaCrossover: 15, EtaMutation: 20}
		},
		New:            newNSGA2,
		MultiObjective: true,
	}
}

// nsga2Tuner is NSGA-II (Deb et al. 2002), in the steady-state form a
// tuner that proposes trials as slots free up needs:
//
//   - The first population_size trials are random.
//   - The parents are the population_size best completed trials in
//     NSGA-II's crowded order (non-domination rank, then spread within a
//     rank: exclusive hypervolume for two objectives, crowding distance
//     for more), chosen afresh from the whole history for each child:
//     elitist, as NSGA-II's (mu + lambda) selection.
//   - Each child has two parents, each the winner of a binary tournament
//     on the crowded order. Numbers (in unit coordinates, log kinds in log
//     space) mix by simulated binary crossover (SBX) with probability
//     crossover_prob, per parameter with probability 1/2; choices and
//     nested choices come from either parent. Then each parameter mutates
//     with probability mutation_prob: numbers by polynomial mutation,
//     choices (and nested options' parameters) redrawn at random.
//   - On an all-discrete space a child an earlier trial has is redrawn.
//
// With one objective it is a steady-state genetic algorithm on the value.
type nsga2Tuner struct {
	seeder
	sp                  *space.Space
	population          int
	crossover, mutation float64 // mutation < 0: max(0.3, 1/number of parameters)
	etaCross, etaMutate float64
}

func newNSGA2(cfg any, sp *space.Space) (Tuner, error) {
	c := cfg.(*NSGA2Settings)
	mut := -1.0
	if c.MutationProb != nil {
		mut = *c.MutationProb
	}
	return &nsga2Tuner{seeder: c.seeder(), sp: sp, population: c.PopulationSize, crossover: c.CrossoverProb, mutation: mut, etaCross: c.EtaCrossover, etaMutate: c.EtaMutation}, nil
}

func (t *nsga2Tuner) Suggest(req Request) ([]space.Params, error) {
	sp, err := spaceOf(req, t.sp)
	if err != nil {
		return nil, err
	}
	if err := checkMulti(req); err != nil {
		return nil, err
	}
	obs, err := moHistory(req)
	if err != nil {
		return nil, err
	}
	var done []moObs
	var losses [][]float64
	var all []scored
	for _, o := range obs {
		all = append(all, scored{seq: o.seq, params: o.params, pending: o.pending})
		if !o.pending && sp.Contains(o.params) {
			done = append(done, o)
			losses = append(losses, o.loss)
		}
	}
	seen := seenSet(sp, all)
	out := make([]space.Params, len(req.Seqs))
	if len(done) < t.population {
		for _, i := range ascending(req.Seqs) {
			rng := t.rng(req, req.Seqs[i])
			out[i] = seen.draw(func() space.Params { return space.SampleSpace(sp, rng) })
		}
		return out, nil
	}
	rank, spread := paretoOrder(losses)
	order := make([]int, len(done))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return crowdedBetter(rank, spread, order[a], order[b]) })
	parents := order[:t.population]
	codec := newUnitCodec(sp)
	nParams := len(sp.Params)
	pm := t.mutation
	if pm < 0 {
		// Textbook NSGA-II mutates 1/d of the parameters; with the few
		// generations of a tuning budget more mutation covered more
		// hypervolume on held-out problems (ZDT3, ZDT1 in 4 variables,
		// seeds apart from the benchmark's).
		pm = math.Max(0.3, 1/float64(max(1, nParams)))
	}
	for _, i := range ascending(req.Seqs) {
		rng := t.rng(req, req.Seqs[i])
		tournament := func() moObs {
			a, b := parents[rng.IntN(len(parents))], parents[rng.IntN(len(parents))]
			if crowdedBetter(rank, spread, b, a) {
				a = b
			}
			return done[a]
		}
		out[i] = seen.draw(func() space.Params {
			p1, p2 := tournament(), tournament()
			return t.child(sp, codec, p1.params, p2.params, pm, rng)
		})
	}
	return out, nil
}

// child mixes two parents and mutates the result.
func (t *nsga2Tuner) child(sp *space.Space, codec *unitCodec, p1, p2 space.Params, pm float64, rng *rand.Rand) space.Params {
	c := copyParams(p1)
	cross := rng.Float64() < t.crossover
	x1, ok1 := codec.encode(p1)
	x2, ok2 := codec.encode(p2)
	if ok1 && ok2 {
		x := make([]float64, len(x1))
		for d := range x {
			x[d] = x1[d]
			if cross && rng.Float64() < 0.5 {
				x[d] = sbx(x1[d], x2[d], t.etaCross, rng)
			}
			if rng.Float64() < pm {
				x[d] = polyMutate(x[d], t.etaMutate, rng)
			}
			if codec.dims[d].bounded {
				x[d] = clampF(x[d], 0, 1)
			}
		}
		codec.decode(x, c)
	}
	for _, p := range codec.other {
		if cross && rng.Float64() < 0.5 {
			if v, has := p2[p.Name]; has {
				c[p.Name] = copyValue(v)
			}
		}
		if rng.Float64() < pm {
			c[p.Name] = space.Sample(p, rng)
		}
	}
	// A nested option's own parameters mutate as one more redraw.
	for _, p := range codec.other {
		if i := optionIndex(p, c[p.Name]); i >= 0 && space.IsNested(p.Options[i]) && rng.Float64() < pm {
			c = mutateOne(sp, c, rng)
			break
		}
	}
	return c
}

func copyValue(v any) any {
	switch m := v.(type) {
	case map[string]any:
		return map[string]any(copyParams(m))
	case space.Params:
		return map[string]any(copyParams(m))
	}
	return v
}

// sbx is one child of simulated binary crossover of a and b, with
// distribution index eta (the spread factor's density is polynomial).
func sbx(a, b, eta float64, rng *rand.Rand) float64 {
	u := rng.Float64()
	var beta float64
	if u <= 0.5 {
		beta = math.Pow(2*u, 1/(eta+1))
	} else {
		beta = math.Pow(1/(2*(1-u)), 1/(eta+1))
	}
	if rng.Float64() < 0.5 {
		return 0.5 * ((1+beta)*a + (1-beta)*b)
	}
	return 0.5 * ((1-beta)*a + (1+beta)*b)
}

// polyMutate moves x (a unit coordinate) by polynomial mutation with
// distribution index eta: small steps likely, a step of the whole range
// possible.
func polyMutate(x, eta float64, rng *rand.Rand) float64 {
	u := rng.Float64()
	var delta float64
	if u < 0.5 {
		delta = math.Pow(2*u, 1/(eta+1)) - 1
	} else {
		delta = 1 - math.Pow(2*(1-u), 1/(eta+1))
	}
	return x + delta
}
