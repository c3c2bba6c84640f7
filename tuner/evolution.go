package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/trialform/trialform/tuner/space"
)

var evolutionSettings = map[string]string{
	"seed":            "int, random seed (default: the experiment's seed)",
	"population_size": "int >= 2, trials in the population: the latest completed ones (default 20)",
	"sample_size":     "int >= 1 and <= population_size, members drawn for each tournament (default population_size / 4, at least 2)",
}

func evolutionInfo() Info {
	return Info{Name: "evolution", Settings: evolutionSettings, New: newEvolution}
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

func newEvolution(in map[string]any, sp *space.Space) (Tuner, error) {
	s, sd, err := seededSettings("evolution", in, evolutionSettings)
	if err != nil {
		return nil, err
	}
	pop, _, err := s.intIn("population_size", 20, 2, 1<<20)
	if err != nil {
		return nil, err
	}
	sample, hasSample, err := s.int("sample_size", max(2, pop/4), 1)
	if err != nil {
		return nil, err
	}
	if sample > pop {
		what := "population_size / 4"
		if hasSample {
			what = fmt.Sprint(sample)
		}
		return nil, fmt.Errorf("tuner %q: setting %q (%s) must not exceed population_size (%d)", "evolution", "sample_size", what, pop)
	}
	return &evolutionTuner{seeder: sd, sp: sp, population: int(pop), sample: int(sample)}, nil
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
