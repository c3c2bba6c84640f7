package tuner

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/trialform/trialform/tuner/space"
)

// RandomSettings are the random tuner's settings.
type RandomSettings struct {
	Seeded
}

func randomKind() Kind {
	return Kind{
		Name: "random", Spaces: "all kinds, nested choice",
		Summary:        "NNI's sampling semantics; de-duplicates on discrete spaces",
		Settings:       func() any { return &RandomSettings{} },
		MultiObjective: true,
		New:            newRandom,
	}
}

// randomTuner draws every trial independently with NNI's semantics. When
// the space is entirely discrete it redraws (up to maxRedraws times, from
// the same stream) a point that an earlier trial already has, as NNI's
// deduplicator does; an exhausted space then repeats points.
type randomTuner struct {
	seeder
	sp *space.Space
}

const maxRedraws = 100

func newRandom(cfg any, sp *space.Space) (Tuner, error) {
	return &randomTuner{seeder: cfg.(*RandomSettings).seeder(), sp: sp}, nil
}

func (t *randomTuner) Suggest(req Request) ([]space.Params, error) {
	sp, err := spaceOf(req, t.sp)
	if err != nil {
		return nil, err
	}
	hist := history(req)
	var seen map[string]bool
	if discrete(sp) {
		seen = make(map[string]bool, len(hist)+len(req.Seqs))
		for _, o := range hist {
			seen[pointKey(o.Params)] = true
		}
	}
	out := make([]space.Params, len(req.Seqs))
	for _, i := range ascending(req.Seqs) {
		rng := t.rng(req, req.Seqs[i])
		p := space.SampleSpace(sp, rng)
		if seen != nil {
			k := pointKey(p)
			for n := 0; seen[k] && n < maxRedraws; n++ {
				p = space.SampleSpace(sp, rng)
				k = pointKey(p)
			}
			seen[k] = true
		}
		out[i] = p
	}
	return out, nil
}

// discrete reports whether every value of sp comes from a finite set, so
// that two trials can get the same point.
func discrete(sp *space.Space) bool {
	if sp == nil {
		return true
	}
	for _, p := range sp.Params {
		switch p.Kind {
		case space.Choice:
			for _, o := range p.Options {
				if o.Nested != nil && !discrete(o.Nested) {
					return false
				}
			}
		case space.Randint, space.Quniform, space.Qloguniform:
		default:
			return false
		}
	}
	return true
}

// pointKey is a canonical text of a parameter assignment: keys sorted,
// numbers in their shortest float64 form, so the same values compare equal
// whatever their map order or numeric Go type. It is written by hand, not
// with encoding/json: grid and dedup call it once per trial of the history
// on every suggest.
func pointKey(p space.Params) string {
	return string(appendKey(make([]byte, 0, 64), map[string]any(p)))
}

func appendKey(b []byte, v any) []byte {
	switch x := v.(type) {
	case space.Params:
		return appendKey(b, map[string]any(x))
	case map[string]any:
		var arr [16]string
		keys := arr[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, k)
			b = append(b, ':')
			b = appendKey(b, x[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendKey(b, e)
		}
		return append(b, ']')
	case string:
		return strconv.AppendQuote(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case nil:
		return append(b, "null"...)
	}
	if f, ok := space.ToFloat(v); ok {
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return fmt.Appendf(b, "%#v", v)
	}
	return append(b, j...)
}
