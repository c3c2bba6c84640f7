package tuner

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/tuner/space"
)

// EvolutionSettings are the evolution tuner's settings.
type EvolutionSettings struct {
	Seeded
	PopulationSize int  `hcl:"population_size,optional" range:"[2, 1048576]" default:"20" doc:"trials in the population: the latest completed ones"`
	SampleSize     *int `hcl:"sample_size,optional" range:"[1,)" default:"population_size / 4, at least 2" doc:"members drawn for each tournament; at most population_size"`
}

func evolutionKind() Kind {
	return Kind{
		Name: "evolution", Spaces: "all kinds, nested choice",
		Summary:  "NNI's regularized evolution: tournament among the latest completed trials, mutate one param of the winner",
		Settings: func() any { return &EvolutionSettings{PopulationSize: 20} },
		New:      newEvolution,
	}
}

// evolutionTuner is regularized (aging) evolution as NNI has it: until
// population_size trials have completed, trials are random; then the
// population is the latest population_size completed trials (failed and
// pending ones are not members, so old members age out as new ones
// complete). Each new trial runs a tournament, sample_size members drawn
// at random without replacement, and mutates one parameter of the winner:
// a number, a choice, or a parameter of the nested option the winner took,
// redrawn at random (a different value where the parameter has more than
// one). On an all-discrete space a child an earlier trial already has is
// redrawn, as random search does.
type evolutionTuner struct {
	seeder
	sp         *space.Space
	population int
	sample     int
}

func newEvolution(cfg any, sp *space.Space) (Tuner, error) {
	c := cfg.(*EvolutionSettings)
	pop, sample := c.PopulationSize, max(2, c.PopulationSize/4)
	if c.SampleSize != nil {
		sample = *c.SampleSize
	}
	if sample > pop {
		return nil, decl.Errorf("sample_size", "sample_size (%d) must not exceed population_size (%d).", sample, pop)
	}
	return &evolutionTuner{seeder: c.seeder(), sp: sp, population: pop, sample: sample}, nil
}

func (t *evolutionTuner) Suggest(req Request) ([]space.Params, error) {
	sp, sign, err := spaceAndSign(req, t.sp)
	if err != nil {
		return nil, err
	}
	hist := scoredHistory(req, sign)
	var done []scored
	for _, h := range hist {
		if !h.pending && !math.IsInf(h.loss, 1) && sp.Contains(h.params) {
			done = append(done, h)
		}
	}
	seen := seenSet(sp, hist)
	out := make([]space.Params, len(req.Seqs))
	for _, i := range ascending(req.Seqs) {
		rng := t.rng(req, req.Seqs[i])
		draw := func() space.Params { return space.SampleSpace(sp, rng) }
		if len(done) >= t.population {
			pop := done[len(done)-t.population:]
			draw = func() space.Params {
				idx := rng.Perm(len(pop))[:t.sample]
				sort.Ints(idx) // ties go to the older member
				w := pop[idx[0]]
				for _, j := range idx[1:] {
					if pop[j].loss < w.loss {
						w = pop[j]
					}
				}
				return mutateOne(sp, w.params, rng)
			}
		}
		out[i] = seen.draw(draw)
	}
	return out, nil
}

// mutateOne copies ps and redraws one of its parameters, chosen uniformly
// among the top-level parameters and the parameters of the nested options
// ps took.
func mutateOne(sp *space.Space, ps space.Params, rng *rand.Rand) space.Params {
	child := copyParams(ps)
	type slot struct {
		p space.Param
		m map[string]any
	}
	var slots []slot
	var collect func(s *space.Space, m map[string]any)
	collect = func(s *space.Space, m map[string]any) {
		if s == nil {
			return
		}
		for _, p := range s.Params {
			slots = append(slots, slot{p, m})
			if p.Kind != space.Choice {
				continue
			}
			if i := optionIndex(p, m[p.Name]); i >= 0 && space.IsNested(p.Options[i]) {
				sub, _ := m[p.Name].(map[string]any)
				collect(p.Options[i].Nested, sub)
			}
		}
	}
	collect(sp, child)
	if len(slots) == 0 {
		return child
	}
	s := slots[rng.IntN(len(slots))]
	old := s.m[s.p.Name]
	v := space.Sample(s.p, rng)
	for try := 0; try < 10 && pointKey(space.Params{"v": v}) == pointKey(space.Params{"v": old}); try++ {
		v = space.Sample(s.p, rng)
	}
	s.m[s.p.Name] = v
	return child
}

// copyParams copies ps deeply enough to change nested options' values.
func copyParams(ps map[string]any) space.Params {
	c := make(space.Params, len(ps))
	for k, v := range ps {
		switch m := v.(type) {
		case map[string]any:
			v = map[string]any(copyParams(m))
		case space.Params:
			v = map[string]any(copyParams(m))
		}
		c[k] = v
	}
	return c
}

// seenPoints is the set of points earlier trials have, kept only for
// all-discrete spaces, where draws can repeat them.
type seenPoints map[string]bool

func seenSet(sp *space.Space, hist []scored) seenPoints {
	if !discrete(sp) {
		return nil
	}
	s := seenPoints{}
	for _, h := range hist {
		s[pointKey(h.params)] = true
	}
	return s
}

// draw calls f until it gives a point not seen (at most maxRedraws
// redraws) and records it.
func (s seenPoints) draw(f func() space.Params) space.Params {
	p := f()
	if s == nil {
		return p
	}
	k := pointKey(p)
	for n := 0; s[k] && n < maxRedraws; n++ {
		p = f()
		k = pointKey(p)
	}
	s[k] = true
	return p
}
