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

// droppedTrials lists the unfinished trials of held (the state a push
// replaced; nil: none) that the pushed state st does not hold: they keep
// running on their platforms, and the next plan tears them down as
// orphans (held's lineage is st's) or leaves them to no one (another
// lineage: no state owns them any more).
func droppedTrials(held, st *state.State) []string {
	if held == nil {
		return nil
	}
	var out []string
	for _, en := range slices.Sorted(maps.Keys(held.Experiments)) {
		e := held.Experiments[en]
		for _, id := range slices.Sorted(maps.Keys(e.Trials)) {
			t := e.Trials[id]
			if t.Status != state.Running && t.Status != state.Waiting {
				continue // ended, or not on its platform (LOST, PAUSED)
			}
			if pe := st.Experiments[en]; pe != nil && pe.Trials[id] != nil {
				continue
			}
			out = append(out, fmt.Sprintf("%s/%s (%s)", en, id, t.Status))
		}
	}
	return out
}

// droppedAdvice says what becomes of the dropped trials and how to keep
// one.
func droppedAdvice(name string, held, st *state.State, dropped []string) string {
	what := "the next plan tears them down as orphans"
	if held.Lineage != st.Lineage {
		what = fmt.Sprintf("they belong to the replaced state (lineage %s), so trialform leaves them running and no state tracks them", held.Lineage)
	}
	return fmt.Sprintf("state push: %s lacks %d unfinished trial(s) the state it replaced held: %s. They are still on their platforms: %s. To keep one, adopt it: trialform import EXPERIMENT TRIAL",
		name, len(dropped), strings.Join(dropped, ", "), what)
}
