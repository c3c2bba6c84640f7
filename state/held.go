package state

import (
	"fmt"
	"time"
)

// Held changes and their approvals are part of the state (format version
// 1, optional fields of an experiment; a build older than them reads the
// state and drops them when it writes the experiment: the controller
// records the hold again at its next pass, an approval is given again).
// Every backend stores them with the experiment's own fields, so that
// whoever shares the state (a laptop with the same backend block) sees
// what `trialform controller` holds and approves it under the
// experiment's lock, without reaching the controller itself:
//
//   - the controller writes Experiment.Hold, under the experiment's lock,
//     for a change of the definitions that would tear trials down or
//     remove the experiment (it applies everything else), and removes it
//     once that change is applied or no longer wanted;
//   - `trialform approve EXPERIMENT` writes Experiment.Approval naming
//     the hold's change (spec hash, generation or removal), under the same
//     lock; the controller applies a held change only when the approval
//     names exactly it, so an approval of an earlier change does not
//     approve a later one.

// Hold is a change of the definitions that the controller holds until
// approved.
type Hold struct {
	// Change is what the hold waits for.
	Change
	// Teardowns counts the trials it would tear down.
	Teardowns int `json:"teardowns"`
	// Reasons say why (a new generation's reasons, or "removed from the
	// definitions").
	Reasons []string `json:"reasons,omitempty"`
	// Commit is the git commit of the definitions asking for the change.
	Commit string `json:"commit,omitempty"`
	// By is who holds it: the controller ("controller HOST_PID", or
	// its pod's name).
	By string `json:"by"`
	// Since is when this change was first held.
	Since time.Time `json:"since"`
}

// Change names one change of an experiment's definitions: what an
// approval approves.
type Change struct {
	// SpecHash is the hash of the definitions the change moves to (for a
	// removal: the hash in the state).
	SpecHash string `json:"spec_hash"`
	// Generation is the generation the change starts (0 for a removal).
	Generation int `json:"generation,omitempty"`
	// Removed is set when the change removes the experiment.
	Removed bool `json:"removed,omitempty"`
}

// Key identifies the change: approvals compare keys.
func (c Change) Key() string {
	if c.Removed {
		return "remove " + c.SpecHash
	}
	return fmt.Sprintf("generation %d %s", c.Generation, c.SpecHash)
}

// String is the change for people.
func (c Change) String() string {
	if c.Removed {
		return "its removal"
	}
	return fmt.Sprintf("generation %d (spec %s)", c.Generation, c.SpecHash)
}

// Approval approves one held change.
type Approval struct {
	Change
	// By is who approved ("alice@laptop").
	By string `json:"by"`
	// At is when.
	At time.Time `json:"at"`
}

// Approves reports whether a approves the change c: the same spec hash
// and the same kind of change.
func (a *Approval) Approves(c Change) bool {
	return a != nil && a.Key() == c.Key()
}

// Pending reports whether e has a held change and an approval of exactly
// it: the controller applies it at its next pass.
func (e *Experiment) Pending() bool {
	return e.Hold != nil && e.Approval.Approves(e.Hold.Change)
}

// Who is the person and host a lock or an approval names
// ("alice@laptop").
func Who() string { return who() }
