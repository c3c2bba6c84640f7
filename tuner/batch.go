package tuner

import (
	"fmt"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/tuner/space"
)

// BatchSettings are the batch tuner's settings.
type BatchSettings struct {
	Params any  `hcl:"params,attr" type:"a list of objects" doc:"the parameter sets to run, in order: params = [{lr = 0.1, layers = 2}, ...]"`
	Seed   *int `hcl:"seed,optional" doc:"accepted for symmetry with the other tuners; batch uses no randomness"`
}

func batchKind() Kind {
	return Kind{
		Name: "batch", Spaces: "any",
		Summary:  "an explicit list `params = [{lr = 0.1, layers = 2}, ...]`, run in order, each once; each set is checked against the space, and `validate` refuses `max_trials` larger than the list",
		Settings: func() any { return &BatchSettings{} },
		New:      newBatch,
		Finite: &Finite{
			Size: func(cfg any, _ *space.Space) (int, bool, error) {
				list, ok := cfg.(*BatchSettings).Params.([]any)
				if !ok {
					return 0, false, fmt.Errorf("params is not a list")
				}
				return len(list), false, nil
			},
			Noun: "params list", Unit: "parameter sets", Listed: true,
			More: "or list more parameter sets in params (a set listed twice runs twice)",
		},
	}
}

// batchTuner runs an explicit list of parameter sets. Trials take the sets
// in list order, skipping the sets earlier trials (completed, failed or
// pending) already ran: a set listed twice runs twice. When every set is
// taken, Suggest fails, which the planner reports at plan time.
type batchTuner struct {
	sets []space.Params
	sp   *space.Space
}

func newBatch(cfg any, sp *space.Space) (Tuner, error) {
	raw := cfg.(*BatchSettings).Params
	if raw == nil {
		return nil, decl.Errorf("params", "params is required: a list of parameter sets, e.g. params = [{lr = 0.1}, {lr = 0.01}].")
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, decl.Errorf("params", "params must be a list of objects, not %T.", raw)
	}
	if len(list) == 0 {
		return nil, decl.Errorf("params", "params is empty; list at least one parameter set.")
	}
	t := &batchTuner{sp: sp}
	for i, e := range list {
		var m map[string]any
		switch x := e.(type) {
		case map[string]any:
			m = x
		case space.Params:
			m = x
		default:
			return nil, decl.Errorf("params", "params: element %d must be an object of parameter values, not %T.", i, e)
		}
		t.sets = append(t.sets, space.Params(m))
	}
	if sp != nil {
		if err := t.check(sp); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// check reports the first set that is not a point of sp, and why.
func (t *batchTuner) check(sp *space.Space) error {
	for i, ps := range t.sets {
		if sp.Contains(ps) {
			continue
		}
		why := "it is not a point of the search space"
		for _, p := range sp.Params {
			v, ok := ps[p.Name]
			if !ok {
				why = fmt.Sprintf("parameter %q is missing", p.Name)
				break
			}
			if !space.Contains(p, v) {
				why = fmt.Sprintf("parameter %q = %s is not a value of its %s", p.Name, space.QuoteValue(v), space.Describe(p))
				break
			}
		}
		if why == "it is not a point of the search space" {
			for k := range ps {
				if !hasParam(sp, k) {
					why = fmt.Sprintf("%q is not a parameter of the search space", k)
					break
				}
			}
		}
		return fmt.Errorf("tuner %q: setting %q: set %d (%s): %s", "batch", "params", i, pointKey(ps), why)
	}
	return nil
}

func hasParam(sp *space.Space, name string) bool {
	for _, p := range sp.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

func (t *batchTuner) Suggest(req Request) ([]space.Params, error) {
	sp, err := spaceOf(req, t.sp)
	if err != nil {
		return nil, err
	}
	if err := t.check(sp); err != nil {
		return nil, err
	}
	used := map[string]int{}
	for _, o := range history(req) {
		used[pointKey(o.Params)]++
	}
	out := make([]space.Params, len(req.Seqs))
	next := 0
	for _, i := range ascending(req.Seqs) {
		for ; next < len(t.sets); next++ {
			k := pointKey(t.sets[next])
			if used[k] == 0 {
				break
			}
			used[k]--
		}
		if next >= len(t.sets) {
			return nil, &ExhaustedError{Tuner: "batch", Size: len(t.sets)}
		}
		p := make(space.Params, len(t.sets[next]))
		for k, v := range t.sets[next] {
			p[k] = v
		}
		out[i] = p
		next++
	}
	return out, nil
}
