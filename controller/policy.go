package controller

import (
	"fmt"
	"sort"
	"time"

	"github.com/trialform/trialform/plan"
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

// Change identifies one held change of an experiment: what an approval
// names, so that a later, different change is held again.
type Change struct {
	Experiment string `json:"experiment"`
	// SpecHash is the hash of the experiment's definitions the plan moves
	// to (for a removal: the hash in the state).
	SpecHash string `json:"spec_hash"`
	// Generation the plan starts (0 for a removal).
	Generation int `json:"generation,omitempty"`
	// Removed is set when the change removes the experiment.
	Removed bool `json:"removed,omitempty"`
}

// Key is the change's identity in approvals.
func (c Change) Key() string {
	if c.Removed {
		return "remove " + c.SpecHash
	}
	return fmt.Sprintf("generation %d %s", c.Generation, c.SpecHash)
}

// Held is a destructive change of one experiment the policy holds.
type Held struct {
	Change
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
		h := Held{Change: Change{Experiment: ep.Name, SpecHash: ep.SpecHash}, Teardowns: n}
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

// Split divides the destructive changes of p into those approvals
// approve and those still held.
func Split(p *plan.Plan, approvals *Approvals) (approved, held []Held) {
	for _, h := range Destructive(p) {
		if approvals.Approves(h.Change) {
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
