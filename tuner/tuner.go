// Package tuner holds the search algorithms: pure, seeded functions from a
// search space and the recorded trial history to the parameters of the next
// trials. A tuner does no I/O and reads no clock; the same request always
// gives the same answer, which is what lets a plan be shown and then applied
// exactly.
package tuner

import (
	"fmt"
	"sort"

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

// Factory builds a tuner from the settings of an HCL tuner block. It
// returns an error naming the setting when a setting is invalid, or when the
// tuner cannot handle the space.
type Factory func(settings map[string]any, sp *space.Space) (Tuner, error)

// Info describes a registered tuner for validation and documentation.
type Info struct {
	Name     string
	Settings map[string]string // setting name -> short description ("seed": "int, random seed")
	New      Factory
	// MultiObjective says the tuner handles several objectives
	// (Request.Goals): it reads Observation.Values, or no values at all.
	MultiObjective bool
}

var registry = map[string]Info{}

// Register adds a tuner to the registry. It is called from this package's
// own files only (explicit, no plugin magic).
func Register(info Info) {
	if _, dup := registry[info.Name]; dup {
		panic("tuner: duplicate " + info.Name)
	}
	registry[info.Name] = info
}

// Lookup finds a tuner by name.
func Lookup(name string) (Info, bool) {
	i, ok := registry[name]
	return i, ok
}

// Names lists the registered tuner names, sorted.
func Names() []string {
	var ns []string
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// MultiObjective reports whether the named tuner handles several
// objectives.
func MultiObjective(name string) bool { return registry[name].MultiObjective }

// MultiObjectiveNames lists the tuners that handle several objectives,
// sorted.
func MultiObjectiveNames() []string {
	var ns []string
	for _, n := range Names() {
		if registry[n].MultiObjective {
			ns = append(ns, n)
		}
	}
	return ns
}

// New builds the named tuner.
func New(name string, settings map[string]any, sp *space.Space) (Tuner, error) {
	info, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown tuner %q (known: %v)", name, Names())
	}
	return info.New(settings, sp)
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
