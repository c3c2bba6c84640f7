// Package tuner holds the search algorithms: pure, seeded functions from a
// search space and the recorded trial history to the parameters of the next
// trials. A tuner does no I/O and reads no clock; the same request always
// gives the same answer, which is what lets a plan be shown and then applied
// exactly.
package tuner

import (
	"github.com/trialform/trialform/tuner/space"
)

// Goal says which direction of the objective is better.
type Goal string

const (
	Maximize Goal = "maximize"
	Minimize Goal = "minimize"
)

// TrialState is what a tuner needs to know of a past or running trial.
type TrialState string

const (
	Completed TrialState = "completed" // has an objective value
	Failed    TrialState = "failed"    // ended without a usable value
	Pending   TrialState = "pending"   // running or waiting: parameters known, no value yet
)

// Observation is one trial of the history, in sequence order.
type Observation struct {
	Seq    int          // the trial's sequence number in its experiment
	Params space.Params // the parameters it ran with
	State  TrialState
	Value  float64 // the objective value, meaningful when State == Completed
	// Values holds every objective's value, in the order of Request.Goals,
	// when the experiment has several objectives (Value == Values[0]).
	Values []float64
}

// Request asks a tuner for Count new parameter sets. Seqs holds the sequence
// numbers the new trials will get (len(Seqs) == Count); a tuner derives its
// random stream from Seed and these numbers, never from a clock.
type Request struct {
	Space *space.Space
	Goal  Goal
	// Goals is every objective's direction when the experiment has
	// several (Goals[0] == Goal); nil or one entry for one objective.
	// Only tuners registered with Info.MultiObjective are asked then.
	Goals    []Goal
	Seed     int64
	History  []Observation
	Seqs     []int
	Settings map[string]any // the tuner block's attributes, already validated
}

// Tuner proposes parameters.
type Tuner interface {
	// Suggest returns len(req.Seqs) parameter sets, each inside req.Space.
	Suggest(req Request) ([]space.Params, error)
}

// Note explains one suggestion of an Explainer.
type Note struct {
	// RepeatOf is the sequence number of the trial whose parameters this
	// suggestion runs again (0: not a repeat).
	RepeatOf int
	// Why says why, for people (display only).
	Why string
}

// Explainer is a Tuner that can say why it made some of its suggestions
// (metis re-runs a trial whose result looks like an outlier).
type Explainer interface {
	Tuner
	// SuggestNotes is Suggest with one Note per suggestion.
	SuggestNotes(req Request) ([]space.Params, []Note, error)
}
