// Package state is trialform's memory: the model of what experiments and
// trials exist, a versioned JSON format, and the backend contract
// (Backend, backend.go) every place the state may be kept implements:
// read a snapshot, write a change, lock with lock info, force-unlock,
// metric series, refresh marks and the lost-state checks, each interface
// saying what it guarantees (atomicity, crash behaviour). Manager is the
// local backend, the embedded default: the files of a .trialform
// directory (state.json, its journal and backup, the lock file, the
// metric series), and the only code that knows their names.
// state/backendtest is the suite every backend passes. The package knows
// nothing of HCL, platforms or tuners.
package state

import (
	"encoding/json"
	"time"
)

// FormatVersion is the state file format this build writes. Older versions
// are upgraded on read; newer ones are refused.
const FormatVersion = 1

// Trial statuses, NNI's names.
const (
	Waiting      = "WAITING"       // recorded (id + parameters), not started or not yet confirmed running
	Running      = "RUNNING"       // started on its platform
	Succeeded    = "SUCCEEDED"     // exited 0 and reported the objective
	Failed       = "FAILED"        // exited non-zero, or without the objective ("metrics unavailable")
	Canceled     = "CANCELED"      // torn down by trialform (destroy, drain, new generation, max_duration)
	EarlyStopped = "EARLY_STOPPED" // stopped by an assessor
	UserCanceled = "USER_CANCELED" // stopped by the user (apply -stop); counts toward max_trials
	Lost         = "LOST"          // gone from the platform while unfinished; will be resumed
	Paused       = "PAUSED"        // stopped by trialform to start again (paused experiment, -replace); not read from the platform; resumed with the same id and parameters
)

// Statuses is every trial status above, in the order people read them. Each
// list of statuses elsewhere (the query language) is derived
// from it; TestStatusesListsEveryConstant fails when a status constant is
// added above and not here.
var Statuses = []string{Waiting, Running, Succeeded, Failed, Canceled, EarlyStopped, UserCanceled, Lost, Paused}

// Terminal reports whether a status is final.
func Terminal(status string) bool {
	switch status {
	case Succeeded, Failed, Canceled, EarlyStopped, UserCanceled:
		return true
	}
	return false
}

// State is the whole state file.
type State struct {
	Version int    `json:"version"`
	Serial  uint64 `json:"serial"`  // goes up by one on every write that changes content
	Lineage string `json:"lineage"` // a UUID fixed when the state is first created
	// Experiments by name. encoding/json sorts map keys, so equal states
	// marshal to identical bytes.
	Experiments map[string]*Experiment `json:"experiments"`
}

// Experiment is one experiment as last applied.
type Experiment struct {
	Name string `json:"name"`
	// ID is the experiment instance id (NNI_EXP_ID): 8 lowercase
	// alphanumerics fixed when the experiment is first created; a destroyed
	// and re-created experiment gets a new one.
	ID       string `json:"id"`
	Platform string `json:"platform"` // "KIND.NAME", e.g. "local.default"
	// PlatformName is the name the experiment's objects carry on its
	// platform (directories, labels) when it differs from Name: the name
	// it had when it was created, kept across renames (state mv, moved
	// blocks) so its trials keep their platform identity. "" = Name.
	PlatformName string `json:"platform_name,omitempty"`
	// Paused is set while the configuration pauses the experiment.
	Paused bool `json:"paused,omitempty"`

	// Generation counts changes of the search space, tuner, objective or
	// trial spec; SpecHash is the hash of those as last applied.
	Generation int    `json:"generation"`
	SpecHash   string `json:"spec_hash"`
	// PartHashes holds one short hash per part of the spec ("search_space",
	// "tuner", "objective", "trial", "platform") so a plan can say which
	// part changed.
	PartHashes map[string]string `json:"part_hashes,omitempty"`

	// In-place settings as last applied.
	MaxTrials        int    `json:"max_trials"`
	Concurrency      int    `json:"concurrency"`
	MaxFailedTrials  int    `json:"max_failed_trials"`
	MaxDuration      string `json:"max_duration,omitempty"`       // Go duration string, "" = none
	TrialMaxDuration string `json:"trial_max_duration,omitempty"` // Go duration string, "" = none
	OnMaxDuration    string `json:"on_max_duration,omitempty"`    // "stop" | "finish"; "" = none or "stop" (older states)

	Goal   string `json:"goal"`   // "maximize" | "minimize"
	Metric string `json:"metric"` // objective key
	// Strategy is how a trial's Value is taken from what it reported:
	// "" = its final result; "min", "max", "latest" = the least, greatest
	// or last value of Metric it reported, intermediate results included.
	Strategy string `json:"strategy,omitempty"`
	// Objectives is every objective, in the configuration's order, when
	// the experiment has several (Objectives[0] is Metric and Goal);
	// empty for one objective, as in every state written before several
	// were possible. ObjectiveList reads both shapes.
	Objectives []Objective `json:"objectives,omitempty"`

	CreatedAt  time.Time  `json:"created_at"`
	DoneAt     *time.Time `json:"done_at,omitempty"`
	DoneReason string     `json:"done_reason,omitempty"` // "budget used", "max_failed_trials reached", "max_duration reached"
	// Failed is set with DoneAt when the experiment ended failed:
	// max_failed_trials reached, or no trial of its generation succeeded.
	Failed bool `json:"failed,omitempty"`

	NextSeq int `json:"next_seq"` // sequence number of the next trial; never goes down

	// Masks is what `logs` and the dashboard hide in the trials' output:
	// salted, truncated hashes of the configuration's sensitive values
	// (internal/mask), never the values, recorded by apply before any
	// trial starts. Hashes are only added, so output of a trial that ran
	// with a secret since rotated stays masked.
	Masks *Masks `json:"masks,omitempty"`

	// Hold is the change of the definitions the controller holds until
	// someone approves it, and Approval the approval given (see
	// held.go); nil when none.
	Hold     *Hold     `json:"hold,omitempty"`
	Approval *Approval `json:"approval,omitempty"`

	// Trials by id.
	Trials map[string]*Trial `json:"trials"`
}

// Objective is one objective of a multi-objective experiment.
type Objective struct {
	Metric string `json:"metric"` // key of the final result
	Goal   string `json:"goal"`   // "maximize" | "minimize"
}

// Masks is internal/mask's Record: a base64 salt and "LENGTH:HASH"
// entries, sorted.
type Masks struct {
	Salt   string   `json:"salt"`
	Hashes []string `json:"hashes"`
}

// Trial is one trial.
type Trial struct {
	ID          string            `json:"id"`
	Seq         int               `json:"seq"`
	ParameterID int               `json:"parameter_id"`
	Generation  int               `json:"generation"`
	SpecHash    string            `json:"spec_hash"`
	Params      map[string]any    `json:"params"`
	Status      string            `json:"status"`
	Reason      string            `json:"reason,omitempty"` // why it ended as it did, or why it waits
	Handle      map[string]string `json:"handle,omitempty"` // the platform's handle (provider-defined)
	Attempts    int               `json:"attempts"`         // 1 on first start, +1 per resume
	// StartFailures counts the failed starts since the last successful
	// one; apply gives up after apply.MaxStartFailures (the trial becomes
	// FAILED, "failed to start: ...").
	StartFailures int       `json:"start_failures,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	// StartedAt and EndedAt time the latest attempt. EndedAt is set when
	// the attempt stopped: the trial ended, or its process is gone while
	// the trial is not over (PAUSED, LOST), so a trial does not age while
	// nothing runs. A resume starts a new attempt: a new StartedAt, no
	// EndedAt.
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	// Value is the objective value, nil until a final result carrying the
	// objective metric arrived.
	Value *float64 `json:"value,omitempty"`
	// ValueFor is the objective Value was taken for: its metric and
	// strategy as the refresh that recorded Value had them. A trial of an
	// earlier generation may have had another objective (renamed, or
	// another strategy): its Value is then not the current objective's
	// (see ValueIsFor). nil in states written before it was recorded.
	ValueFor *ValueFor `json:"value_for,omitempty"`
	// Retaken is its value of another objective than ValueFor's, the
	// current one when apply took it (see Retaken); nil until then.
	Retaken *Retaken `json:"retaken,omitempty"`
	// Final holds every numeric key of the final result ("default" for a
	// plain number).
	Final map[string]float64 `json:"final,omitempty"`
	// Intermediate counts the intermediate (PERIODICAL) results received;
	// the series itself lives in the metrics file beside the state.
	Intermediate int `json:"intermediate,omitempty"`
	// Summary is the series' latest and best report, kept as the refresh
	// records them so that the views need not read the series; nil in
	// states written before it was kept (the views read the series).
	Summary *SeriesSummary `json:"series_summary,omitempty"`
	// MetricsOffset is how far the metric sources were consumed (opaque to
	// the state, owned by the collector) so collection is incremental.
	MetricsOffset map[string]int64 `json:"metrics_offset,omitempty"`
	// Provenance is where the trial came from, recorded when apply
	// created it; nil for trials of older states and imported ones.
	Provenance *Provenance `json:"provenance,omitempty"`
	// Owner is the working copy whose platform alone can see the trial
	// (the local platform: processes and trial directories under one
	// working copy's .trialform), recorded with the trial's intent before
	// it starts. Another working copy sharing the state leaves such a
	// trial to its owner: it does not read it (it would find nothing and
	// call it LOST), resume it or tear it down (see Elsewhere). nil: a
	// trial of a platform every working copy sees (remote, kubernetes),
	// or of a state written before owners were recorded: it belongs to
	// whichever working copy reads it.
	Owner *WorkingCopy `json:"owner,omitempty"`
	// Stopping is the teardown apply began: written before it asks the
	// platform to stop the trial, cleared when the trial's end is
	// recorded. When apply was killed in between, the next refresh that
	// finds the trial stopped or gone ends it as the teardown would have
	// (not FAILED or LOST, and never resumed).
	Stopping *Stopping `json:"stopping,omitempty"`
}

// Stopping is a teardown in progress: the status it ends the trial in
// (PAUSED, EARLY_STOPPED, USER_CANCELED or CANCELED) and why.
type Stopping struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Provenance is what a trial was created from: the git commit of the
// directory of the definitions and of the experiment's code_dir, each
// with whether that directory had uncommitted changes then, and the
// trialform version that created it. A commit is "" outside a git
// repository.
type Provenance struct {
	Commit     string `json:"commit,omitempty"`
	Dirty      bool   `json:"dirty,omitempty"`
	CodeCommit string `json:"code_commit,omitempty"`
	CodeDirty  bool   `json:"code_dirty,omitempty"`
	Version    string `json:"version,omitempty"`
}

// WorkingCopy names one working copy (a directory with its .trialform).
type WorkingCopy struct {
	// ID is the working copy's random identity, kept in its .trialform
	// directory: it survives moving the directory, and `state mv` (which
	// keeps trials as they are); a working copy made by copying only the
	// configuration and the state (not .trialform) gets a new one.
	ID string `json:"id"`
	// Where is where it was when it last recorded the trial, for people
	// ("alice@host:/home/alice/exp/.trialform").
	Where string `json:"where"`
}

// Elsewhere reports whether t is an unfinished trial that only another
// working copy than me can see: its owner is not me (an empty me, a
// command without a working copy, owns nothing and sees everything).
func (t *Trial) Elsewhere(me string) bool {
	return t.Owner != nil && me != "" && t.Owner.ID != me && !Terminal(t.Status)
}

// MetricPoint is one line of a trial's metric series file
// (.trialform/metrics/EXPERIMENT/TRIAL.jsonl).
type MetricPoint struct {
	Type     string `json:"type"` // "FINAL" | "PERIODICAL"
	Sequence int    `json:"sequence"`
	// Attempt is the attempt of the trial that reported it (1, 2 after a
	// resume, ...; 0 in series written before it was recorded): each
	// attempt numbers its reports from 0 again.
	Attempt int             `json:"attempt,omitempty"`
	Value   json.RawMessage `json:"value"` // the reported JSON value (number or object)
	Time    time.Time       `json:"time"`
}
