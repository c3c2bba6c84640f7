package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// foreignTrials lists the unfinished trials of the pushed state st that
// this working copy's commands could neither read nor tear down where
// they run: a local trial owned by another working copy when the state is
// this working copy's alone (the local backend: the owner never records
// its end here), a trial on a platform the configuration does not declare,
// and one whose handle names another platform instance (a Kubernetes
// namespace, a remote machine) than the configuration's. The next apply
// would leave such a trial RUNNING for ever, or find it LOST and run it a
// second time, never stopping the first. A trial that cur (the state the
// backend holds; nil: none) already holds with the same handle and owner
// is not the push's doing and is left out. cfg nil: only owners are
// checked. warn is told of a platform that could not be checked.
func foreignTrials(st, cur *state.State, cfg *schema.Config, ps *providerSet, localBackend bool, warn func(string)) []string {
	var out []string
	me := ps.WorkingCopy()
	for _, en := range slices.Sorted(maps.Keys(st.Experiments)) {
		e := st.Experiments[en]
		var unfinished []*state.Trial
		for _, id := range slices.Sorted(maps.Keys(e.Trials)) {
			t := e.Trials[id]
			if state.Terminal(t.Status) || t.Status == state.Paused || sameTrial(cur, en, t) {
				continue
			}
			unfinished = append(unfinished, t)
		}
		if len(unfinished) == 0 {
			continue
		}
		var hc providers.HandleChecker
		if cfg != nil && e.Platform != "" {
			if cfg.Platforms[e.Platform] == nil && e.Platform != "local.default" {
				out = append(out, fmt.Sprintf("experiment %s: %d unfinished trial(s) (%s) run on platform %s, which the configuration does not declare: nothing here can read or tear them down",
					en, len(unfinished), trialIDs(unfinished), e.Platform))
				continue
			}
			if p, err := ps.Provider(e.Platform); err != nil {
				warn(fmt.Sprintf("the handles of experiment %s's unfinished trials were not checked against platform %s: %v", en, e.Platform, err))
			} else {
				hc, _ = p.(providers.HandleChecker)
			}
		}
		for _, t := range unfinished {
			switch {
			case localBackend && me != nil && t.Owner != nil && t.Owner.ID != me.ID:
				out = append(out, fmt.Sprintf("trial %s/%s (%s) runs in another working copy (%s): the local backend's state is this working copy's alone, so that one never records its end here, and this one cannot see or stop it",
					en, t.ID, t.Status, t.Owner.Where))
			case hc != nil:
				if why := hc.Foreign(providers.Handle(t.Handle)); why != "" {
					out = append(out, fmt.Sprintf("trial %s/%s (%s) on %s: %s: the next apply would find it LOST and run it again here, never stopping it there",
						en, t.ID, t.Status, e.Platform, why))
				}
			}
		}
	}
	return out
}

// sameTrial reports whether cur holds t in experiment en with the same
// handle and owner.
func sameTrial(cur *state.State, en string, t *state.Trial) bool {
	if cur == nil || cur.Experiments[en] == nil {
		return false
	}
	c := cur.Experiments[en].Trials[t.ID]
	if c == nil || !maps.Equal(c.Handle, t.Handle) {
		return false
	}
	if c.Owner == nil || t.Owner == nil {
		return c.Owner == nil && t.Owner == nil
	}
	return *c.Owner == *t.Owner
}

func trialIDs(ts []*state.Trial) string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return strings.Join(ids, ", ")
}
