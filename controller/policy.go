package controller

import (
	"fmt"
	"sort"
	"time"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// Policy is what the controller applies of a plan.
type Policy string

const (
	// Auto applies creates, resumes and in-place updates, and holds the
	// experiments whose plan tears down trials or removes the experiment
	// because the definitions changed, until approved.
	Auto Policy = "auto"
	// PlanOnly plans and reports; it applies nothing.
	PlanOnly Policy = "plan-only"
)

// ParsePolicy parses -policy.
func ParsePolicy(s string) (Policy, error) {
	switch Policy(s) {
	case Auto, PlanOnly:
		return Policy(s), nil
	}
	return "", fmt.Errorf("-policy=%s: want auto or plan-only", s)
}

// Held is a destructive change of one experiment the policy holds.
type Held struct {
	Experiment string `json:"experiment"`
	state.Change
	// Teardowns counts the trials it would tear down.
	Teardowns int `json:"teardowns"`
	// Reasons say why (the new generation's reasons, or "removed from the
	// definitions").
	Reasons []string `json:"reasons,omitempty"`
}

// Destructive returns, by experiment, the changes of p that tear down
// trials or remove an experiment because the definitions changed (the
// causes plan.Plan.Destructive lists).
func Destructive(p *plan.Plan) []Held {
	var out []Held
	for _, ep := range p.Experiments {
		n := 0
		for _, a := range ep.Trials {
			if a.Action != plan.Teardown {
				continue
			}
			switch a.Cause {
			case plan.CauseOrphan, plan.CauseRemoved, plan.CauseDestroy, plan.CauseGeneration:
				n++
			}
		}
		if ep.Action != plan.Delete && n == 0 {
			continue
		}
		h := Held{Experiment: ep.Name, Change: state.Change{SpecHash: ep.SpecHash}, Teardowns: n}
		if ep.Action == plan.Delete {
			h.Removed = true
			h.Reasons = []string{"removed from the definitions"}
		} else {
			h.Generation = ep.Generation
			h.Reasons = append([]string(nil), ep.GenerationReason...)
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Experiment < out[j].Experiment })
	return out
}

// Split divides the destructive changes of p into those approved in st
// (an Approval naming exactly the change) and those still held.
func Split(p *plan.Plan, st *state.State) (approved, held []Held) {
	for _, h := range Destructive(p) {
		if e := st.Experiment(h.Experiment); e != nil && e.Approval.Approves(h.Change) {
			approved = append(approved, h)
		} else {
			held = append(held, h)
		}
	}
	return approved, held
}

// Targets returns the -target list for every experiment of p but the
// held ones; nil when none is held (plan everything), and an empty
// non-nil slice when every experiment with something to do is held.
func Targets(p *plan.Plan, held []Held) []string {
	if len(held) == 0 {
		return nil
	}
	skip := map[string]bool{}
	for _, h := range held {
		skip[h.Experiment] = true
	}
	out := []string{}
	for _, ep := range p.Experiments {
		if !skip[ep.Name] {
			out = append(out, "experiment."+ep.Name)
		}
	}
	return out
}

// Backoff is the wait before the n-th consecutive retry (n >= 1):
// doubling from base, capped at max.
func Backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// RecordHolds brings the holds and approvals of st's experiments up to
// date with a pass's destructive changes (approved ones included), and
// reports whether it changed anything. by and commit say who holds and
// from which commit; now is when a new hold starts. An experiment with
// no destructive change loses its hold and approval; an approval that
// names another change than the one held now (an earlier commit's) is
// dropped, and reported in stale.
func RecordHolds(st *state.State, destructive []Held, by, commit string, now time.Time) (changed bool, stale []string) {
	want := map[string]Held{}
	for _, h := range destructive {
		want[h.Experiment] = h
	}
	for name, e := range st.Experiments {
		h, ok := want[name]
		if !ok {
			if e.Hold != nil || e.Approval != nil {
				e.Hold, e.Approval = nil, nil
				changed = true
			}
			continue
		}
		if e.Hold == nil || e.Hold.Key() != h.Key() || e.Hold.Teardowns != h.Teardowns || e.Hold.By != by {
			since := now
			if e.Hold != nil && e.Hold.Key() == h.Key() {
				since = e.Hold.Since
			}
			cm := commit
			if e.Hold != nil && e.Hold.Key() == h.Key() && e.Hold.Commit != "" {
				cm = e.Hold.Commit
			}
			e.Hold = &state.Hold{Change: h.Change, Teardowns: h.Teardowns, Reasons: append([]string(nil), h.Reasons...), Commit: cm, By: by, Since: since}
			changed = true
		}
		if e.Approval != nil && !e.Approval.Approves(h.Change) {
			stale = append(stale, name)
			e.Approval = nil
			changed = true
		}
	}
	sort.Strings(stale)
	return changed, stale
}
