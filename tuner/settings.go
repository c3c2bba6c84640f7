package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/trialform/trialform/tuner/space"
)

// settings reads one tuner block's attributes, checking names and types.
type settings struct {
	tuner string
	in    map[string]any
}

// newSettings rejects any attribute that is not in valid.
func newSettings(tuner string, in map[string]any, valid map[string]string) (settings, error) {
	var unknown []string
	for k := range in {
		if _, ok := valid[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, 0, len(valid))
		for k := range valid {
			names = append(names, k)
		}
		sort.Strings(names)
		what := "setting"
		if len(unknown) > 1 {
			what = "settings"
		}
		return settings{}, fmt.Errorf("tuner %q: unknown %s %s (valid: %s)",
			tuner, what, quoteList(unknown), strings.Join(names, ", "))
	}
	return settings{tuner: tuner, in: in}, nil
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// int returns the integer setting name (def when absent), which must be at
// least min.
func (s settings) int(name string, def, min int64) (int64, bool, error) {
	v, ok := s.in[name]
	if !ok || v == nil {
		return def, false, nil
	}
	f, isNum := space.ToFloat(v)
	if !isNum {
		return 0, false, fmt.Errorf("tuner %q: setting %q must be a whole number, not %T", s.tuner, name, v)
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false, fmt.Errorf("tuner %q: setting %q must be a whole number, not %v", s.tuner, name, f)
	}
	if int64(f) < min {
		return 0, false, fmt.Errorf("tuner %q: setting %q must be at least %d, not %v", s.tuner, name, min, f)
	}
	return int64(f), true, nil
}

// intIn is int with an upper bound max as well.
func (s settings) intIn(name string, def, min, max int64) (int64, bool, error) {
	v, has, err := s.int(name, def, min)
	if err != nil {
		return 0, false, err
	}
	if v > max {
		return 0, false, fmt.Errorf("tuner %q: setting %q must be at most %d, not %d", s.tuner, name, max, v)
	}
	return v, has, nil
}

// bool returns the boolean setting name (def when absent).
func (s settings) bool(name string, def bool) (bool, error) {
	v, ok := s.in[name]
	if !ok || v == nil {
		return def, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, fmt.Errorf("tuner %q: setting %q must be true or false, not %T", s.tuner, name, v)
	}
	return b, nil
}

// float returns the number setting name (def when absent), which must lie
// in [min, max].
func (s settings) float(name string, def, min, max float64) (float64, error) {
	v, ok := s.in[name]
	if !ok || v == nil {
		return def, nil
	}
	f, isNum := space.ToFloat(v)
	if !isNum || math.IsNaN(f) {
		return 0, fmt.Errorf("tuner %q: setting %q must be a number, not %T", s.tuner, name, v)
	}
	if f < min || f > max {
		return 0, fmt.Errorf("tuner %q: setting %q must be between %v and %v, not %v", s.tuner, name, min, max, f)
	}
	return f, nil
}

// seededSettings checks a tuner block's attributes against valid and reads
// its seed setting, which every tuner accepts.
func seededSettings(tuner string, in map[string]any, valid map[string]string) (settings, seeder, error) {
	s, err := newSettings(tuner, in, valid)
	if err != nil {
		return settings{}, seeder{}, err
	}
	seed, has, err := s.int("seed", 0, -1<<53)
	if err != nil {
		return settings{}, seeder{}, err
	}
	return s, seeder{seed, has}, nil
}

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
