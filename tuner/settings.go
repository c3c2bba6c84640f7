package tuner

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/trialform/trialform/tuner/space"
)

// seeder resolves the random seed: the tuner block's seed setting when it
// has one, the request's Seed otherwise (schema fills both from the same
// attribute, so they agree in practice).
type seeder struct {
	seed    int64
	hasSeed bool
}

func (s seeder) rng(req Request, seq int) *rand.Rand {
	seed := req.Seed
	if s.hasSeed {
		seed = s.seed
	}
	return newRNG(seed, seq)
}

// newRNG is the random stream of one trial: PCG seeded from the experiment
// seed and the trial's sequence number, so a trial's draw never depends on
// how many trials were suggested together.
func newRNG(seed int64, seq int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(int64(seq))^0x9e3779b97f4a7c15))
}

// spaceAndSign is spaceOf and the request goal's goalSign, which the
// model-based tuners need together.
func spaceAndSign(req Request, def *space.Space) (*space.Space, float64, error) {
	sp, err := spaceOf(req, def)
	if err != nil {
		return nil, 0, err
	}
	sign, err := goalSign(req.Goal)
	if err != nil {
		return nil, 0, err
	}
	return sp, sign, nil
}

// spaceOf picks the request's space, falling back to the factory's.
func spaceOf(req Request, sp *space.Space) (*space.Space, error) {
	if req.Space != nil {
		return req.Space, nil
	}
	if sp != nil {
		return sp, nil
	}
	return nil, fmt.Errorf("no search space")
}

// history returns req.History without the trials being asked for again (a
// re-plan of a trial that has no result yet proposes it afresh), stably
// ordered by sequence number.
func history(req Request) []Observation {
	asked := make(map[int]bool, len(req.Seqs))
	for _, s := range req.Seqs {
		asked[s] = true
	}
	h := make([]Observation, 0, len(req.History)+len(req.Seqs))
	sorted := true
	for _, o := range req.History {
		if asked[o.Seq] && o.State != Completed && o.State != Failed {
			continue
		}
		if len(h) > 0 && h[len(h)-1].Seq > o.Seq {
			sorted = false
		}
		h = append(h, o)
	}
	if !sorted {
		sort.SliceStable(h, func(i, j int) bool { return h[i].Seq < h[j].Seq })
	}
	return h
}

// ascending returns the indexes of seqs in increasing sequence order, so
// that suggestions made together equal suggestions made one at a time.
func ascending(seqs []int) []int {
	idx := make([]int, len(seqs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return seqs[idx[a]] < seqs[idx[b]] })
	return idx
}
