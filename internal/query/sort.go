package query

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/state"
)

// SortKey is one key of a sort spec.
type SortKey struct {
	Field Field
	// Desc is set by a leading "-".
	Desc bool
}

// Sort is a parsed sort spec, most significant key first.
type Sort struct {
	Source string
	Keys   []SortKey
}

// ParseSort parses a comma-separated list of field names, each with an
// optional leading "-" for descending (or "+" for ascending):
// "-metrics.loss,params.lr". Errors are *Error.
func ParseSort(spec string) (*Sort, error) {
	s := &Sort{Source: spec}
	if strings.TrimSpace(spec) == "" {
		return s, nil
	}
	parts, _ := split(spec, 0, len(spec), ',') // no quotes in a sort spec
	for _, p := range parts {
		a, b := trim(spec, p[0], p[1])
		if a == b {
			return nil, errAt(spec, a, "empty sort key: write field names between the commas")
		}
		k := SortKey{}
		switch spec[a] {
		case '-':
			k.Desc = true
			a++
		case '+':
			a++
		}
		a, b = trim(spec, a, b)
		if a == b {
			return nil, errAt(spec, a, "missing field name after the sign")
		}
		f, err := resolveField(spec, a, spec[a:b])
		if err != nil {
			return nil, err
		}
		k.Field = f
		s.Keys = append(s.Keys, k)
	}
	return s, nil
}

// String renders the spec canonically.
func (s *Sort) String() string {
	if s == nil {
		return ""
	}
	parts := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		if k.Desc {
			parts[i] = "-" + k.Field.Name
		} else {
			parts[i] = k.Field.Name
		}
	}
	return strings.Join(parts, ",")
}

// Check reports sort keys naming params or metrics no row has (see
// Query.Check).
func (s *Sort) Check(sc Schema) error {
	if s == nil {
		return nil
	}
	for _, k := range s.Keys {
		pos := strings.Index(s.Source, k.Field.Name)
		if err := checkField(s.Source, max(pos, 0), k.Field, sc); err != nil {
			return err
		}
	}
	return nil
}

// Apply sorts rows in place, stably: by each key in turn, then by
// experiment and sequence. Rows lacking a key's value come last whatever
// the direction; numbers sort before text within one param.
func (s *Sort) Apply(rows []*results.Row) {
	type cached struct {
		v  []any
		ok []bool
	}
	n := 0
	if s != nil {
		n = len(s.Keys)
	}
	// Fetch each key once per row rather than once per comparison.
	vals := make(map[*results.Row]*cached, len(rows))
	if n > 0 {
		for _, r := range rows {
			c := &cached{v: make([]any, n), ok: make([]bool, n)}
			for i, k := range s.Keys {
				c.v[i], c.ok[i] = k.Field.Get(r)
			}
			vals[r] = c
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if n > 0 {
			ca, cb := vals[a], vals[b]
			for k := 0; k < n; k++ {
				var c int
				if s.Keys[k].Field.Name == "id" {
					// t0002 before t0010: ids sort by sequence, not as text.
					c = cmpF(float64(a.Seq), float64(b.Seq))
					if a.Experiment != b.Experiment {
						c = strings.Compare(a.Experiment, b.Experiment)
					}
					if s.Keys[k].Desc {
						c = -c
					}
				} else {
					c = compareField(ca.v[k], ca.ok[k], cb.v[k], cb.ok[k], s.Keys[k].Desc)
				}
				if c != 0 {
					return c < 0
				}
			}
		}
		return DefaultLess(a, b)
	})
}

// DefaultLess is the order rows have without a sort: experiment name,
// then sequence number.
func DefaultLess(a, b *results.Row) bool {
	if a.Experiment != b.Experiment {
		return a.Experiment < b.Experiment
	}
	return a.Seq < b.Seq
}

// compareField orders two values of one field; a missing value is last in both
// directions.
func compareField(a any, aok bool, b any, bok bool, desc bool) int {
	switch {
	case !aok && !bok:
		return 0
	case !aok:
		return 1
	case !bok:
		return -1
	}
	c := compareAny(a, b)
	if desc {
		c = -c
	}
	return c
}

// rank orders the kinds within one param: numbers, bools, text.
func rank(v any) int {
	switch v.(type) {
	case float64, time.Duration, time.Time:
		return 0
	case bool:
		return 1
	}
	return 2
}

func compareAny(a, b any) int {
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	switch x := a.(type) {
	case float64:
		if y, ok := b.(float64); ok {
			return cmpF(x, y)
		}
	case time.Duration:
		if y, ok := b.(time.Duration); ok {
			return cmpD(x, y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	case bool:
		if y, ok := b.(bool); ok && x != y {
			if !x {
				return -1
			}
			return 1
		}
		return 0
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case commit:
		if y, ok := b.(commit); ok {
			return strings.Compare(string(x), string(y))
		}
	}
	return 0
}

// Top returns the n best rows of each experiment by objective, the
// experiment's goal deciding the direction, best first (experiments in
// name order). Only the trials that compete for the best trial
// (state.Experiment.BestOf) are ranked: succeeded ones with a value, of
// the experiment's current generation; an earlier generation measured
// another search space or objective (-top 1 named its trial while the
// footer named the current generation's best). n <= 0 keeps every one.
func Top(rows []*results.Row, n int) []*results.Row {
	// With several objectives only ranked trials compete (a failed
	// trial may hold the first objective's value).
	ranked := map[string]bool{}
	for _, r := range rows {
		if r.ParetoRank > 0 {
			ranked[r.Experiment] = true
		}
	}
	out := make([]*results.Row, 0, len(rows))
	for _, r := range rows {
		competes := r.Status == state.Succeeded && r.Metric != nil && !math.IsNaN(*r.Metric) &&
			(r.CurrentGeneration == 0 || r.Generation == r.CurrentGeneration)
		if competes && (!ranked[r.Experiment] || r.ParetoRank > 0) {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Experiment != out[j].Experiment {
			return out[i].Experiment < out[j].Experiment
		}
		// Several objectives: the front first, then the next rank.
		if ri, rj := out[i].ParetoRank, out[j].ParetoRank; ri != rj && ri > 0 && rj > 0 {
			return ri < rj
		}
		a, b := *out[i].Metric, *out[j].Metric
		if out[i].Goal == "minimize" {
			a, b = -a, -b
		}
		if a != b {
			return a > b
		}
		return DefaultLess(out[i], out[j])
	})
	if n <= 0 {
		return out
	}
	kept := out[:0]
	count := 0
	for i, r := range out {
		if i == 0 || r.Experiment != out[i-1].Experiment {
			count = 0
		}
		if count < n {
			kept = append(kept, r)
		}
		count++
	}
	return kept
}

func sortStrings(s []string) { sort.Strings(s) }
