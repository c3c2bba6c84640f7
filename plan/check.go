package plan

import (
	"fmt"
	"slices"
	"sort"

	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner/space"
)

// CheckTrialParams reports whether params is a point the experiment's
// search space can produce (every param present and within its
// distribution, no unknown key but those the tuner adds). A saved plan is
// a file a person can edit: apply checks every trial it would create.
func CheckTrialParams(e *schema.Experiment, params map[string]any) error {
	if e == nil || e.SearchSpace == nil || e.SearchSpace.Space == nil {
		return nil
	}
	sp := e.SearchSpace.Space
	for _, p := range sp.Params {
		v, ok := params[p.Name]
		if !ok {
			return fmt.Errorf("param %q is missing", p.Name)
		}
		if !space.Contains(p, v) {
			return fmt.Errorf("param %q = %s is not a value of its %s in search space %q", p.Name, space.QuoteValue(v), space.Describe(p), e.SearchSpace.Name)
		}
	}
	extra := e.Tuner.Params()
	var keys []string
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		known := slices.ContainsFunc(sp.Params, func(p space.Param) bool { return p.Name == k })
		if !known && !slices.Contains(extra, k) {
			return fmt.Errorf("%q is not a param of search space %q", k, e.SearchSpace.Name)
		}
	}
	return nil
}
