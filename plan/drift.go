package plan

import (
	"fmt"
	"sort"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// TrialDrift is a running trial whose object on the platform no longer
// matches what trialform would create for it now (its platform block
// changed, or someone edited the object). trialform does not restart it:
// the plan only shows the difference.
type TrialDrift struct {
	TrialID string `json:"trial_id"`
	// Diff is a unified diff from the running object's spec ("---
	// running/EXP/TRIAL") to the one trialform would create now ("+++
	// configured/EXP/TRIAL"), in the platform's canonical rendering.
	Diff string `json:"diff"`
}

// DetectDrift compares, for every unfinished trial refresh observed with a
// spec (providers.SpecDiffer platforms fill Observation.Spec), the live
// spec with the one the provider renders for the trial's start request
// under the configuration now, and records the differences in obs.Drift.
// Trials of an experiment whose platform changed are skipped (they belong
// to an earlier generation). It does no I/O: SpecDiffer.Spec contacts
// nothing.
func DetectDrift(cfg *schema.Config, st *state.State, obs *Observations, ps ProviderSet) {
	var names []string
	for n := range obs.Trials {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		ce, e := cfg.Experiments[name], st.Experiment(name)
		if ce == nil || e == nil || e.Platform != ce.Platform.Key() {
			continue
		}
		prov, err := ps.Provider(e.Platform)
		if err != nil {
			continue // Refresh warned already
		}
		sd, ok := prov.(providers.SpecDiffer)
		if !ok {
			continue
		}
		seen := obs.Trials[name]
		var ids []string
		for id := range seen {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			o, t := seen[id], e.Trials[id]
			if t == nil || !o.Exists || o.Spec == "" || (o.Phase != providers.PhaseRunning && o.Phase != providers.PhasePending) {
				continue
			}
			req, err := StartRequest(ce, e, t, false)
			var want string
			if err == nil {
				want, err = sd.Spec(req)
			}
			if err != nil {
				obs.Warnings = append(obs.Warnings, fmt.Sprintf("trial %s/%s: render its spec to compare: %v", name, id, err))
				continue
			}
			if want == o.Spec {
				continue
			}
			if obs.Drift == nil {
				obs.Drift = map[string][]TrialDrift{}
			}
			label := name + "/" + id
			obs.Drift[name] = append(obs.Drift[name], TrialDrift{
				TrialID: id,
				Diff:    schema.UnifiedDiffLabeled("running/"+label, "configured/"+label, []byte(o.Spec), []byte(want)),
			})
		}
	}
}
