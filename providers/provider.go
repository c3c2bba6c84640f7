// Package providers is the contract between trialform's planner and the
// platforms where trials run. It holds the small Provider interface, the
// optional capabilities (found by type assertion), the error classes and the
// request/response types. Platform packages (providers/local, ...) implement
// it; they must never import plan or apply.
//
// The contract, which providers/conformance checks for every implementation:
//   - Start is create-or-adopt by the deterministic TrialID: starting a trial
//     that already runs returns its handle and never launches a second copy.
//     Starting a trial that already ended (and Resume is false) returns its
//     handle too; with Resume true it starts a new attempt in the same output
//     dir.
//   - Read of an unknown trial returns Observation{Exists: false}, not an error.
//   - Stop of a trial that is gone or already ended succeeds.
//   - Every method takes a context; cancelling it aborts the call.
package providers

import (
	"context"
	"errors"
	"io"
	"time"
)

// Provider runs trials on one platform instance (one HCL platform block).
type Provider interface {
	// Kind is the platform kind ("local", "remote", "kubernetes", ...).
	Kind() string
	// Validate checks the platform can run trials (paths exist, the cluster
	// answers, ...) without changing anything.
	Validate(ctx context.Context) error
	// Start creates or adopts the trial and returns its handle.
	Start(ctx context.Context, req StartRequest) (Handle, error)
	// Read observes one trial by id (and handle, when state has one).
	Read(ctx context.Context, req ReadRequest) (Observation, error)
	// Stop tears a trial down: SIGTERM-like first, forcefully after Grace.
	// With Purge it also removes what the trial left on the platform.
	Stop(ctx context.Context, req StopRequest) error
	// Close releases connections.
	Close() error
}

// Lister is implemented by providers that can find the trials they own
// (labelled objects, marker files) so orphans the state lost are found.
type Lister interface {
	List(ctx context.Context, experiment string) ([]Observation, error)
}

// Follower is implemented by providers that can keep a live view of
// their trials (a watch) for a session that refreshes again and again
// (apply -wait, watch, the controller): Follow starts it and returns at
// once; Close stops it. Refreshes read the same as before, only cheaper
// and sooner; a one-shot command never calls it.
type Follower interface {
	Follow()
}

// Warner is implemented by providers that can have something to tell the
// user that is not an error of one call (a watch the account may not
// make, so that refreshes list instead): a refresh adds each warning to
// its observations. Warnings returns each one once.
type Warner interface {
	Warnings() []string
}

// UnknownLister is implemented by Listers that can leave out the trials
// the caller already knows without reading them: ListUnknown returns what
// List would, less the trials for which known(trialID) is true. A refresh
// looks for orphans this way, so its cost grows with the trials the state
// does not know (one directory listing, then a read of each unknown
// trial), not with the finished history it holds.
type UnknownLister interface {
	ListUnknown(ctx context.Context, experiment string, known func(trialID string) bool) ([]Observation, error)
}

// ExperimentPurger is implemented by providers whose trials leave objects
// behind after they end (Kubernetes Jobs): destroy calls it once an
// experiment's running trials are torn down, to remove everything the
// platform holds for the experiment and the state of that lineage, ended
// trials and orphans included (objects of other lineages stay).
type ExperimentPurger interface {
	PurgeExperiment(ctx context.Context, experiment, lineage string) error
}

// Importer is implemented by providers that can adopt a trial object the
// platform holds for an experiment (found by List: started by another
// state, or dropped from this one) into a state: `trialform import`.
type Importer interface {
	// Import reads what the state needs to record the trial (its
	// parameters as the trial got them, sequence number, handle and what
	// the platform says of it now), then re-owns the trial's objects to
	// lineage (the ownership marker Start records), so refresh treats it
	// as a trial of that state. A trial the platform does not hold is an
	// error wrapping ErrNotFound.
	Import(ctx context.Context, req ImportRequest) (Imported, error)
}

// ImportRequest names the trial to adopt and the state adopting it.
type ImportRequest struct {
	Experiment string
	TrialID    string
	Lineage    string // the adopting state's lineage
	// ExperimentID and Generation re-own the trial to the adopting
	// experiment instance and generation as well ("" and 0 leave them).
	ExperimentID string
	Generation   int
}

// Imported is what Import found of the trial.
type Imported struct {
	Seq         int
	ParameterID int
	Params      map[string]any
	// PreviousLineage is the ownership marker the objects had before
	// (Previous has all of it: give the trial back with an ImportRequest
	// naming those).
	PreviousLineage string
	Previous        Owner
	// Observation is the trial as Read would see it (metrics not read:
	// refresh collects them from the start).
	Observation Observation
}

// SpecDiffer is implemented by providers that can tell when a running
// trial's platform object no longer matches what Start would create for it
// now (someone edited the object, or the platform block changed). Read and
// List fill Observation.Spec with the live object's rendering; Spec renders
// what Start would create for req the same way. Both are canonical text
// (one setting a line, sorted, values the platform defaults left out) so a
// line diff shows what differs. Spec must not contact the platform.
type SpecDiffer interface {
	Spec(req StartRequest) (string, error)
}

// GPUChecker is implemented by providers that can tell before anything
// runs whether a trial asking for n GPUs can ever get them (the local
// platform finds the machine's GPUs when gpu_indices is unset): plan
// refuses the experiment with the error, at its trial block.
type GPUChecker interface {
	CheckGPUs(n int) error
}

// ReadParallelism is implemented by providers whose Reads mostly wait on
// the network: a refresh runs up to ReadParallelism() of their Reads at
// once (16 otherwise).
type ReadParallelism interface {
	ReadParallelism() int
}

// Locator is implemented by providers whose trials run somewhere a person
// wants named when a trial starts: the machine, the pod, the job id.
type Locator interface {
	// Location is where the trial with handle h runs, as a person reads
	// it ("10.0.0.5:22"); "" when there is nothing to say.
	Location(h Handle) string
}

// HandleChecker is implemented by providers that can tell from a handle
// that its trial is not on the platform instance they work on: a Job in
// another namespace, a machine the platform block does not list. Such a
// trial is read where it is not (LOST), run a second time here and never
// torn down where it runs; state push refuses a document that brings one.
type HandleChecker interface {
	// Foreign says where h's trial is when that is not on this platform
	// instance ("its Job is in namespace a, ..."); "" when it is, or when
	// h does not say.
	Foreign(h Handle) string
}

// Private is implemented by providers whose trials only the working copy
// that started them can see: the local platform, whose processes and trial
// directories live under one working copy's .trialform on one machine.
// Apply records the working copy as the trial's owner
// (state.Trial.Owner) before it starts it, so that another working copy
// sharing the state (a shared backend) leaves the trial to its owner
// instead of finding nothing on its own platform, calling the trial LOST
// and running it a second time. Platforms every working copy reaches the
// same way (remote machines, a cluster) do not implement it.
type Private interface {
	PrivateToWorkingCopy() bool
}

// LogStreamer is implemented by providers that can show a trial's output.
type LogStreamer interface {
	// Logs copies the trial's stdout+stderr to w; with Follow it keeps
	// copying until the trial ends or ctx is cancelled.
	Logs(ctx context.Context, req LogsRequest) error
}

// TensorBoardSyncer is implemented by providers whose trials write their
// TensorBoard logs where this machine cannot read them (remote machines).
type TensorBoardSyncer interface {
	// SyncTensorBoard copies the trial's TensorBoard directory into
	// req.Dest incrementally: new files whole, grown files from where the
	// local copy ends (event files are append-only), unchanged files not
	// at all. Only regular files are copied; a path that would leave Dest
	// is refused. A trial that logged nothing yet copies nothing. At most
	// req.MaxBytes of the trial's logs are kept in Dest: past it, what
	// fits is copied and the error says so (a trial, or a hostile host,
	// writing 100 GB of event files does not fill this machine's disk).
	SyncTensorBoard(ctx context.Context, req SyncRequest) (SyncStats, error)
}

// SyncRequest names a trial and where its TensorBoard logs go locally.
type SyncRequest struct {
	Experiment string
	TrialID    string
	Handle     Handle
	Dest       string // absolute local directory
	// MaxBytes bounds the trial's logs kept in Dest (0:
	// DefaultSyncLimit); `tensorboard -sync-limit` sets it.
	MaxBytes int64
}

// DefaultSyncLimit is how much of one trial's TensorBoard logs a sync
// keeps on this machine unless told otherwise: far more than event files
// of scalars and a few images (MBs), far less than a disk.
const DefaultSyncLimit = 10 << 30

// SyncStats says what a sync copied.
type SyncStats struct {
	Files int   // files created or appended to
	Bytes int64 // bytes transferred
}

// Handle is the provider-defined, string-only record that lets a provider
// find a trial again (a pid, a pod name, a host). It is stored in state.
type Handle map[string]string

// StartRequest is everything a platform needs to run one trial.
type StartRequest struct {
	Experiment   string // experiment name
	ExperimentID string // experiment instance id (NNI_EXP_ID)
	TrialID      string // deterministic trial id (NNI_TRIAL_JOB_ID)
	Seq          int    // NNI_TRIAL_SEQ_ID
	ParameterID  int
	Params       map[string]any
	// Exactly one of Shell and Args is set. Shell is a /bin/sh -c command
	// line in which parameter values were already shell-quoted; Args is an
	// argv run without a shell.
	Shell       string
	Args        []string
	Env         map[string]string // user env (trial.env), added to the protocol env
	CodeDir     string            // absolute path of the code directory (the working dir)
	MaxDuration time.Duration     // 0 = none; the platform stops the trial past it
	GPUs        int               // GPUs this trial needs (0 = none)
	// MetricRegex, if set, is a user regexp with named groups "name" and
	// "value" matched against every stdout line (Katib's "loss=0.3" style).
	MetricRegex string
	Resume      bool   // a resume of a lost trial: same id, same output dir
	Lineage     string // lineage of the owning state, recorded as ownership marker
	Generation  int    // the trial's generation, recorded with the lineage (0 = unknown)
	Handle      Handle // the handle from state, if any (adopt hint)
	// Handoff lets Start return once a supervisor that will record the
	// attempt has it, before the trial process runs: the handle may then
	// lack its pids, and a Read may see the trial pending. Apply sets it;
	// a platform may ignore it.
	Handoff bool
}

// ReadRequest identifies a trial to observe.
type ReadRequest struct {
	Experiment string
	TrialID    string
	Handle     Handle
	// MetricsOffset is the collector's position in the trial's metric
	// sources (opaque, as returned in Observation.MetricsOffset); Read
	// returns only metrics past it.
	MetricsOffset map[string]int64
	// SkipRunningMetrics: the caller keeps nothing of a trial that still
	// runs but its status (a plan, which never writes the state, of an
	// experiment without an assessor: nothing it computes reads a running
	// trial's metrics). A platform whose metrics cost a request per trial
	// (a pod's log) may then leave a running trial's new metrics unread,
	// returning MetricsOffset as it was; an ended trial's are read as
	// usual.
	SkipRunningMetrics bool
}

// StopRequest identifies a trial to tear down.
type StopRequest struct {
	Experiment string
	TrialID    string
	Handle     Handle
	Grace      time.Duration // time between the polite and the forceful stop
	Purge      bool          // also remove the trial's files/objects (destroy)
	Reason     string
}

// LogsRequest identifies a trial whose output to show.
type LogsRequest struct {
	Experiment string
	TrialID    string
	Handle     Handle
	Follow     bool
	Out        io.Writer
}

// Phase is what a platform says about a trial.
type Phase string

const (
	PhasePending   Phase = "pending" // accepted, not running yet
	PhaseRunning   Phase = "running"
	PhaseSucceeded Phase = "succeeded" // exited 0
	PhaseFailed    Phase = "failed"    // exited non-zero or could not start
	PhaseKilled    Phase = "killed"    // stopped by Stop or by the platform's max_duration
	PhaseLost      Phase = "lost"      // the platform lost it while unfinished (process vanished, node gone)
)

// Ended reports whether the phase is final.
func (p Phase) Ended() bool {
	return p == PhaseSucceeded || p == PhaseFailed || p == PhaseKilled
}

// Observation is what Read (or List) saw of one trial.
type Observation struct {
	TrialID    string
	Experiment string
	Exists     bool // false: the platform has no trace of the trial
	Phase      Phase
	Handle     Handle
	ExitCode   *int
	Reason     string // platform's words on why it ended ("max_duration exceeded", "signal: killed")
	// PastMaxDuration is set on a PhaseKilled trial that the platform
	// stopped because it ran past StartRequest.MaxDuration (not because
	// Stop was called); the refresh ends it EARLY_STOPPED, as NNI ends a
	// trial at maxTrialDuration.
	PastMaxDuration bool
	StartedAt       *time.Time
	EndedAt         *time.Time
	// Metrics reported since ReadRequest.MetricsOffset, in report order.
	Metrics []Metric
	// MetricsOffset is the new position to pass to the next Read.
	MetricsOffset map[string]int64
	// Lineage is the ownership marker the trial was started with.
	Lineage string
	// Owner is the whole ownership marker (Lineage included) as far as
	// the platform records it; zero fields are unknown.
	Owner Owner
	// Spec is the canonical rendering of the live object's spec, for
	// providers that are SpecDiffers ("" when not known).
	Spec string
	// Note is what the platform says of the trial's output beside its
	// phase: a limit it hit (MaxIntermediate, the stdout size cap).
	Note string
}

// Metric is one reported result, as the NNI trial library reports it.
type Metric struct {
	Type        string // "FINAL" or "PERIODICAL"
	Sequence    int
	ParameterID int
	// Value is the reported value as JSON text: a number, NaN/Infinity
	// already mapped to null, or an object such as {"default": 0.9, "loss": 0.1}.
	Value string
	// Garbage is set (and Value empty) when a metric record could not be
	// decoded; it holds a short description of what was wrong.
	Garbage string
	// Time is when the trial reported it, from the best source the
	// platform has: the time in the record itself (trialform's NNI
	// stand-in writes one), else the local supervisor's clock when it saw
	// the record appear. Zero when unknown: the reader (plan.Refresh)
	// stamps it with the time it read it. Either way it is never later
	// than the trial's end.
	Time time.Time
}

// MaxIntermediate is how many intermediate results (PERIODICAL metrics)
// trialform keeps per trial; a platform drops the ones past it (final
// results are always kept) and says so in Observation.Note. It bounds the
// memory and disk a trial that reports millions of values costs.
const MaxIntermediate = 100_000

// Error classes.
var (
	// ErrNotFound: the trial does not exist on the platform.
	ErrNotFound = errors.New("not found")
	// ErrNoCapacity: the platform has no free slot (GPU) now; try later.
	ErrNoCapacity = errors.New("no free capacity")
	// ErrUnreachable: the trial's machine (or cluster) cannot be reached
	// now; an action that needs it (a stop) is tried again later.
	ErrUnreachable = errors.New("cannot be reached now")
)

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks an error that retrying cannot fix (bad config, refused
// auth). Retry decorators give up at once on it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}
