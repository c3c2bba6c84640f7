// Package plan computes what apply will do: Refresh reads the platforms
// through providers, Observe folds what was seen into a copy of the state,
// and the pure Compute diffs the configuration against that state and asks
// the tuner for the parameters of new trials, fixing them in the Plan so
// apply does exactly what was shown. Nothing here prints or writes state;
// rendering lives in internal/views.
package plan

import (
	"encoding/json"
	"fmt"
	"time"
)

// FormatVersion is the version of the Plan JSON model (plan -json, show
// -json and saved plan files). Readers refuse versions they do not know.
const FormatVersion = "1"

// Action is what apply will do to an object. Its values are what the
// human rendering draws.
type Action string

const (
	NoOp     Action = "no-op"
	Create   Action = "create"   // "+": a new trial (or experiment)
	Resume   Action = "resume"   // "~": a trial lost while unfinished, restarted with its id, parameters and output dir
	Update   Action = "update"   // "~": an experiment's in-place settings
	Teardown Action = "teardown" // "-": stop a trial (orphan, removed experiment, new generation, max_duration)
	Delete   Action = "delete"   // "-": an experiment removed from state after its trials are torn down
)

// Symbol is the one-character marker of an action.
func (a Action) Symbol() string {
	switch a {
	case Create:
		return "+"
	case Resume, Update:
		return "~"
	case Teardown, Delete:
		return "-"
	}
	return " "
}

// Plan is the whole plan: plain data, the same model for the human view,
// plan -json and saved plan files.
type Plan struct {
	FormatVersion string `json:"format_version"`
	// Lineage and Serial identify the state the plan was computed from;
	// applying a saved plan is refused when the state moved on.
	Lineage string `json:"lineage"`
	Serial  uint64 `json:"serial"`
	// CreatedAt is when the plan was computed (display only).
	CreatedAt time.Time `json:"created_at"`
	Destroy   bool      `json:"destroy,omitempty"`
	Targets   []string  `json:"targets,omitempty"`
	// Moves lists the experiments renamed by moved blocks in this plan
	// (apply records them in the state before anything else).
	Moves []Move `json:"moves,omitempty"`
	// Observed lists what refresh found changed since the state was last
	// written (trials that finished, failed, vanished, orphans): display
	// only, apply re-reads the platforms itself.
	Observed []Observed `json:"observed,omitempty"`
	// Experiments, sorted by name.
	Experiments []*ExperimentPlan `json:"experiments"`
	// Warnings that do not stop the plan (foreign objects, unreachable platform).
	Warnings []string `json:"warnings,omitempty"`
	Summary  Summary  `json:"summary"`
	// Variables are the values of the variables that were given (not
	// sensitive, not their default), as JSON (converted to each
	// variable's type when read): `apply PLANFILE` loads the
	// configuration with them.
	Variables map[string]json.RawMessage `json:"variables,omitempty"`
}

// Move is one experiment renamed by a moved block.
type Move struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Pos is the moved block's "file:line".
	Pos string `json:"pos"`
}

// Summary counts the trial actions.
type Summary struct {
	Create   int `json:"create"`
	Resume   int `json:"resume"`
	Teardown int `json:"teardown"`
	Update   int `json:"update"` // experiments created, updated or deleted
}

// HasChanges reports whether applying the plan would change anything.
func (p *Plan) HasChanges() bool {
	s := p.Summary
	return s.Create+s.Resume+s.Teardown+s.Update > 0 || len(p.Moves) > 0
}

// ExperimentPlan is what will happen to one experiment.
type ExperimentPlan struct {
	Name     string `json:"name"`
	ID       string `json:"id"`       // experiment instance id (NNI_EXP_ID)
	Platform string `json:"platform"` // KIND.NAME
	// Action is create (new experiment), update (in-place settings or
	// new generation), delete (removed from config, or destroy) or no-op.
	Action Action `json:"action"`
	// Changes lists the attribute changes against the state.
	Changes []Change `json:"changes,omitempty"`
	// Generation is the generation new trials are created in;
	// NewGeneration is set when this plan starts it, with the reasons.
	Generation       int      `json:"generation"`
	SpecHash         string   `json:"spec_hash"`
	NewGeneration    bool     `json:"new_generation,omitempty"`
	GenerationReason []string `json:"generation_reason,omitempty"`
	// GenerationTeardowns counts the unfinished trials of earlier
	// generations this plan tears down (cause "generation"), the
	// "forces replacement" of a new generation.
	GenerationTeardowns int `json:"generation_teardowns,omitempty"`
	// Settings as they will be after apply.
	Settings Settings `json:"settings"`
	// Progress after refresh, before this plan's actions.
	Progress Progress `json:"progress"`
	// Paused is set when the configuration pauses the experiment: its
	// running trials are stopped (PAUSED, resumed when unpaused) and no
	// new trials are proposed.
	Paused bool `json:"paused,omitempty"`
	// Done is set when the experiment needs no more trials, with the reason.
	Done       bool   `json:"done,omitempty"`
	DoneReason string `json:"done_reason,omitempty"`
	// Failed is set with Done when the experiment ended without what it
	// was run for: max_failed_trials was reached, or no trial of its
	// current generation succeeded (DoneReason says which); apply then
	// exits non-zero.
	Failed bool `json:"failed,omitempty"`
	// Notes explain what the plan will not do (drain, waiting for a GPU).
	Notes  []string       `json:"notes,omitempty"`
	Trials []*TrialAction `json:"trials,omitempty"`
	// Drift lists running trials whose platform object differs from what
	// trialform would create for them now. Display only: trialform does
	// not restart running trials.
	Drift []TrialDrift `json:"drift,omitempty"`
	// Elsewhere lists the unfinished trials another working copy owns
	// (they run on a platform only it can see: its local platform). The
	// plan leaves them to it: it does not read, resume, start or tear
	// them down; they count toward concurrency and max_trials as the
	// state records them.
	Elsewhere []ElsewhereTrial `json:"elsewhere,omitempty"`
}

// ElsewhereTrial is an unfinished trial left to the working copy that
// owns it.
type ElsewhereTrial struct {
	TrialID    string `json:"trial_id"`
	Status     string `json:"status"` // as the state records it
	Generation int    `json:"generation"`
	// Where is the owning working copy, "user@host:/path/.trialform".
	Where string `json:"where"`
}

// Settings are an experiment's in-place settings and identity.
type Settings struct {
	Tuner  string `json:"tuner"`
	Metric string `json:"metric"`
	Goal   string `json:"goal"`
	// Strategy is how a trial's objective value is taken: "" = its final
	// result; "min", "max", "latest" over every value it reported.
	Strategy         string `json:"strategy,omitempty"`
	MaxTrials        int    `json:"max_trials"`
	Concurrency      int    `json:"concurrency"`
	MaxFailedTrials  int    `json:"max_failed_trials"`
	MaxDuration      string `json:"max_duration,omitempty"`
	TrialMaxDuration string `json:"trial_max_duration,omitempty"`
	// OnMaxDuration is what happens at MaxDuration: "stop" (running
	// trials torn down) or "finish" (they finish; no new ones).
	OnMaxDuration string `json:"on_max_duration,omitempty"`
	Paused        bool   `json:"paused,omitempty"`
	// Objectives is every objective when there are several (the first
	// is Metric and Goal); absent for one.
	Objectives []Objective `json:"objectives,omitempty"`
}

// Objective is one objective of a multi-objective experiment.
type Objective struct {
	Metric string `json:"metric"`
	Goal   string `json:"goal"`
}

// Change is one attribute change of an experiment.
type Change struct {
	Path    string `json:"path"`
	Before  string `json:"before"`
	After   string `json:"after"`
	InPlace bool   `json:"in_place"` // false: starts a new generation
}

// Progress summarises an experiment's trials. Total and ByStatus count
// every generation; the budget (max_trials) and max_failed_trials count
// the trials of one generation only, which the Generation fields count.
type Progress struct {
	Total     int            `json:"total"`
	ByStatus  map[string]int `json:"by_status"`
	Best      *float64       `json:"best,omitempty"`
	BestTrial string         `json:"best_trial,omitempty"`
	// ParetoFront counts the trials on the Pareto front of the current
	// generation when the experiment has several objectives (Best is
	// then unset: no one trial is best).
	ParetoFront int `json:"pareto_front,omitempty"`
	// Generation is the generation the budget counts: the experiment's
	// current one, or the one this plan starts (then its counts are 0).
	Generation int `json:"generation"`
	// GenerationTotal and GenerationByStatus count that generation's
	// trials; GenerationEnded those that ended (succeeded, failed, stopped
	// early or by the user).
	GenerationTotal    int            `json:"generation_total"`
	GenerationByStatus map[string]int `json:"generation_by_status"`
	GenerationEnded    int            `json:"generation_ended"`
	// BudgetUsed is what max_trials counts: the generation's trials but
	// the CANCELED ones (torn down by trialform, see state.Budget).
	BudgetUsed int `json:"budget_used"`
}

// Generations reports whether the experiment has trials of another
// generation than the one its budget counts (then displays say which
// generation a count is of, and how many trials there are in all).
// A plan saved before the generation counts (no GenerationByStatus) has
// none.
func (p Progress) Generations() bool {
	return p.GenerationByStatus != nil && p.Total != p.GenerationTotal
}

// TrialAction is one action on one trial.
type TrialAction struct {
	Action      Action         `json:"action"`
	Experiment  string         `json:"experiment"`
	TrialID     string         `json:"trial_id"`
	Seq         int            `json:"seq"`
	ParameterID int            `json:"parameter_id"`
	Generation  int            `json:"generation"`
	Params      map[string]any `json:"params,omitempty"`
	// Command is the rendered command line (display; apply renders it
	// again from the same template and parameters).
	Command string `json:"command,omitempty"`
	// Reason says why (display only, never drives apply).
	Reason string `json:"reason,omitempty"`
	// RepeatOf is, for a create, the sequence number of the trial whose
	// parameters it runs again (the metis tuner re-runs a result that looks
	// like an outlier); display only: the new trial is an ordinary trial.
	RepeatOf int `json:"repeat_of,omitempty"`
	// Cause classifies a teardown (one of the Cause constants), for
	// policies such as watch's -allow-destroy; apply ignores it.
	Cause string `json:"cause,omitempty"`
	// Recorded is set for a create whose intent is already in state
	// (a crash between recording and starting).
	Recorded bool `json:"recorded,omitempty"`
	// Status is the trial's status before the action (resume, teardown).
	Status string `json:"status,omitempty"`
	// Purge removes the trial's files on the platform (destroy).
	Purge bool `json:"purge,omitempty"`
}

// Observed is one change refresh found.
type Observed struct {
	Experiment string   `json:"experiment"`
	TrialID    string   `json:"trial_id"`
	Before     string   `json:"before"`
	After      string   `json:"after"`
	Reason     string   `json:"reason,omitempty"`
	Value      *float64 `json:"value,omitempty"`
	// Metric names the objective Value is of (the first) when the
	// experiment has several.
	Metric string `json:"metric,omitempty"`
	// Values is every objective's value, in order, when the experiment
	// has several and the trial succeeded.
	Values []NamedValue `json:"values,omitempty"`
	Orphan bool         `json:"orphan,omitempty"`
}

// NamedValue is one objective's value.
type NamedValue struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
}

// Causes of a teardown.
const (
	CauseOrphan           = "orphan"             // runs on the platform but is not in the state
	CauseRemoved          = "removed"            // its experiment was removed from the configuration
	CauseDestroy          = "destroy"            // plan -destroy / destroy
	CauseGeneration       = "generation"         // a definition change started a new generation
	CauseMaxDuration      = "max_duration"       // the experiment reached its max_duration
	CauseTrialMaxDuration = "trial_max_duration" // the trial ran past its own max_duration
	CauseEarlyStop        = "early_stop"         // the assessor judged it from its intermediate results
	CausePaused           = "paused"             // its experiment has paused = true: PAUSED, resumed when unpaused
	CauseReplace          = "replace"            // -replace: torn down and started again with the same parameters
	CauseStop             = "stop"               // -stop: stopped by the user (USER_CANCELED), results kept
)

// Destructive lists, one line each, what in p deletes an experiment or
// tears down trials because definitions changed (a removed experiment, a
// new generation, destroy, orphans). Teardowns the definitions themselves
// ask for (max_duration) are not listed. Watch holds such plans unless
// told -allow-destroy.
func (p *Plan) Destructive() []string {
	var out []string
	for _, ep := range p.Experiments {
		if ep.Action == Delete {
			out = append(out, fmt.Sprintf("experiment %s would be removed from the state", ep.Name))
		}
		n := 0
		for _, a := range ep.Trials {
			if a.Action != Teardown {
				continue
			}
			switch a.Cause {
			case CauseOrphan, CauseRemoved, CauseDestroy, CauseGeneration:
				n++
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d trial(s) of experiment %s would be torn down", n, ep.Name))
		}
	}
	return out
}
