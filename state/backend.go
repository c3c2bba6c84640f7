package state

import (
	"context"
	"time"
)

// The backend contract: where a working directory's state lives and what
// every place it may live must guarantee. It is split by concern, the way
// Terraform's statemgr is (a reader, a writer, a locker, each an interface
// of its own, composed into the whole): a caller asks for the least it
// needs, and a test suite (state/backendtest) holds every implementation
// to the same behaviour.
//
// The embedded default is "local", the files of a .trialform directory
// (Manager); state/pg (PostgreSQL) and state/kubernetes (Secrets and
// Leases) are the shared backends, listed in state/backends.
//
// Optional capabilities are small interfaces a caller finds by type
// assertion (WholeSaver, Compacter, StateStamper, MetricsStamper,
// ContextReader): a
// backend without one loses only an optimisation or a convenience, never
// correctness, and the helpers below (SaveWhole, StateStampOf,
// MetricsStampOf, LoadContext, PeekContext) fall back for it.

// LocalBackend is the name of the local backend (Manager).
const LocalBackend = "local"

// Backend is the whole contract.
type Backend interface {
	// Name is the backend's kind ("local").
	Name() string
	// Location says where this backend keeps the state, for messages
	// (the local backend: its directory).
	Location() string

	SnapshotReader
	ChangeWriter
	Locker
	MetricSeries
	RefreshMarks
	LostChecker
}

// SnapshotReader reads the state.
//
// Load returns one whole version of the state: never a mix of two writes,
// never a change half-written. It takes no lock, so it may run while
// another process saves; it then returns the version before or after that
// save. Without a state it returns New() (unsaved). A state of an older
// format is upgraded in memory; a newer format is *NewerFormatError; a
// state that cannot be read is an error naming what is wrong and where,
// and nothing is written over it afterwards (see ChangeWriter).
//
// A change whose write was interrupted (a crash) was never acknowledged:
// Load leaves it out and says so in Warnings, and the next Save removes
// it. A damaged change that is not the last one is an error, not a
// warning: what follows it cannot be trusted.
type SnapshotReader interface {
	// Exists reports whether there is a state at all.
	Exists() (bool, error)
	Load() (*State, error)
	// Warnings returns what the last Load or Save noticed and worked
	// around (a torn last change dropped, leftovers of another state
	// ignored), for the caller to show.
	Warnings() []string
}

// Peeker is an optional capability of a backend that keeps, per client,
// the version last loaded for its next save to compare with (every
// backend here): Peek reads the state as Load does (one whole version,
// upgraded in memory, the same errors) but leaves that version alone, so
// a reader in a process that also saves (a controller's dashboard, watch's
// display, metrics) neither makes the writer's next save refuse its own
// change as someone else's nor hides someone else's change from it. Use
// the Peek function.
type Peeker interface {
	Peek() (*State, error)
}

// Peek reads b's state for a reader that does not save what it read:
// Peek where b has it, else Load.
func Peek(b SnapshotReader) (*State, error) {
	if p, ok := b.(Peeker); ok {
		return p.Peek()
	}
	return b.Load()
}

// ContextReader is an optional capability of a backend whose reads go to a
// server that may not answer (pg, kubernetes): LoadContext and PeekContext
// are Load and Peek that give up when ctx ends, with an error wrapping
// ctx's, instead of waiting an outage out (the kubernetes backend retries
// for 2 minutes), so that a controller told to stop while the server is
// down exits at once. A read writes nothing: one given up loses nothing.
// Use the LoadContext and PeekContext functions.
type ContextReader interface {
	LoadContext(ctx context.Context) (*State, error)
	PeekContext(ctx context.Context) (*State, error)
}

// LoadContext is b's Load, given up when ctx ends where b can (a
// ContextReader).
func LoadContext(ctx context.Context, b SnapshotReader) (*State, error) {
	if r, ok := b.(ContextReader); ok {
		return r.LoadContext(ctx)
	}
	return b.Load()
}

// PeekContext is Peek(b), given up when ctx ends where b can (a
// ContextReader).
func PeekContext(ctx context.Context, b SnapshotReader) (*State, error) {
	if r, ok := b.(ContextReader); ok {
		return r.PeekContext(ctx)
	}
	return Peek(b)
}

// ChangeWriter writes the state.
//
// Save makes s the state if it differs from the stored one (the serial
// aside), bumping s.Serial; an unchanged state is not written and keeps
// its serial. When Save returns nil the change is durable: a crash
// afterwards (of the process or of the machine) loses nothing. A crash
// during Save leaves either the state before or the state after it, never
// a mix, and never a state that cannot be read.
//
// Save refuses, with *ConflictError, to write over a state of another
// lineage or one written by someone else since s was loaded (the stored
// serial is not s.Serial), and, with the error Load gives, over a state it
// cannot read.
//
// Prepare and PrepareTrials split Save in two for callers that group
// changes: they compute the change and bump the serial while the caller
// holds s still; the returned commit makes it durable. See the local
// backend's methods for the details every backend keeps.
//
// The writer does not lock: callers hold the lock (Locker) and serialize
// their writes.
type ChangeWriter interface {
	Save(s *State) error
	Prepare(s *State) (commit func() error, err error)
	PrepareTrials(s *State, refs []TrialRef) (commit func() error, err error)
}

// Locker is the state lock: one holder at a time for the commands that
// write (plan, apply, destroy, state mv, ...).
//
// Lock records a LockInfo (who, where, the operation, since when) that
// others see. With timeout 0 it fails at once, with *LockedError carrying
// the holder's LockInfo, when the lock is held; with a timeout it waits
// that long (an error wrapping *LockedError) or until ctx is done. A
// holder that dies loses the lock, or leaves it to ForceUnlock: each
// backend says which. Lock.Unlock releases it; unlocking twice is
// harmless, and an Unlock after a ForceUnlock never releases the next
// holder's lock.
//
// CurrentLock returns the holder's LockInfo, nil when the state is not
// locked. ForceUnlock releases the lock whose ID is id, for a holder that
// is gone; it refuses any other ID, naming the current holder.
type Locker interface {
	Lock(ctx context.Context, operation, version string, timeout time.Duration) (*Lock, error)
	CurrentLock() (*LockInfo, error)
	ForceUnlock(id string) error
}

// MetricSeries keeps each trial's intermediate results, apart from the
// state: a point appended does not rewrite the state.
//
// AppendMetricsBatch appends points to one or more series (AppendMetrics
// to one); when it returns nil every point is durable. A crash during an append may leave
// the last point torn: readers ignore it and the next append removes it.
// A point appended twice (the same type, sequence and value: a refresh
// replayed after a crash) is read once. ReadMetrics returns a series in
// the order its points were appended (nil when there is none);
// ReadMetricsFile returns it undecoded, as JSON lines of MetricPoint, for
// readers that parse a million points themselves.
//
// RemoveMetrics removes an experiment's series; MoveMetrics renames them
// (state mv), refusing to overwrite series already at the new name, and
// does nothing when they have already moved.
type MetricSeries interface {
	AppendMetrics(experiment, trial string, pts []MetricPoint) error
	AppendMetricsBatch(batches []MetricsBatch) error
	ReadMetrics(experiment, trial string) ([]MetricPoint, error)
	ReadMetricsFile(experiment, trial string) ([]byte, error)
	RemoveMetrics(experiment string) error
	MoveMetrics(from, to string) error
}

// RefreshMarks records when each experiment was last refreshed from its
// platform, apart from the state (a refresh that finds nothing new must
// not write the state). It is advisory: marks of another lineage, or
// unreadable ones, read as "never refreshed".
type RefreshMarks interface {
	MarkRefreshed(lineage string, experiments []string, t time.Time) error
	RefreshedAt(lineage string) map[string]time.Time
}

// LostChecker finds what a lost state left behind. Lost returns nil when
// there is a state, or no trace of one; otherwise what is left (backups,
// metric series, changes written after the last snapshot), so that no
// command starts a new state over it (new trials would reuse the lost
// ones' ids).
type LostChecker interface {
	Lost() (*LostState, error)
}

// WholeSaver is an optional capability: SaveWhole is Save that also keeps
// the state as it was just before where a person can restore it by hand
// (state mv, state rm). Use the SaveWhole function.
type WholeSaver interface {
	SaveWhole(s *State) error
}

// SaveWhole saves s with b's SaveWhole when it has one, else with Save.
func SaveWhole(b ChangeWriter, s *State) error {
	if w, ok := b.(WholeSaver); ok {
		return w.SaveWhole(s)
	}
	return b.Save(s)
}

// BackupLocator is an optional capability: BackupPath says where the
// state before the last SaveWhole is kept, for a person to restore.
type BackupLocator interface {
	BackupPath() string
}

// Compacter is an optional capability of a backend that keeps changes
// apart from its snapshot: Compact folds them in (the serial stays). The
// local backend compacts when its lock is released.
type Compacter interface {
	Compact() error
}

// Stamp identifies one version of the state cheaply, without reading it,
// for readers that poll (the dashboard): equal stamps mean Load would
// return the same state.
type Stamp struct {
	// State is "" when there is no state.
	State string
	// Refreshed changes when the refresh marks do.
	Refreshed string
	// Written is when the state was last written (zero when unknown).
	Written time.Time
}

// StateStamper is an optional capability: StateStamp returns the state's
// current Stamp. Use StateStampOf.
type StateStamper interface {
	StateStamp() (Stamp, error)
}

// MetricsStamper is an optional capability: MetricsStamp returns a token
// that changes whenever a trial's series does ("" when there is none).
// Use MetricsStampOf.
type MetricsStamper interface {
	MetricsStamp(experiment, trial string) (string, error)
}

// StateStampOf returns b's stamp; ok is false when b cannot tell one
// cheaply (the caller then reads the state each time).
func StateStampOf(b any) (st Stamp, ok bool, err error) {
	s, ok := b.(StateStamper)
	if !ok {
		return Stamp{}, false, nil
	}
	st, err = s.StateStamp()
	return st, true, err
}

// MetricsStampOf returns the stamp of a trial's series; ok is false when
// b cannot tell one.
func MetricsStampOf(b any, experiment, trial string) (token string, ok bool, err error) {
	s, ok := b.(MetricsStamper)
	if !ok {
		return "", false, nil
	}
	token, err = s.MetricsStamp(experiment, trial)
	return token, true, err
}

// Open returns the local backend of the state directory dir (the
// commands open the configured backend through state/backends).
func Open(dir string) Backend { return NewManager(dir) }

// The local backend implements the whole contract and its options.
var (
	_ Backend        = (*Manager)(nil)
	_ WholeSaver     = (*Manager)(nil)
	_ Compacter      = (*Manager)(nil)
	_ BackupLocator  = (*Manager)(nil)
	_ StateStamper   = (*Manager)(nil)
	_ MetricsStamper = (*Manager)(nil)
	_ Peeker         = (*Manager)(nil)
)

// ExperimentLocker is the optional capability of a backend that several
// working copies share (pg, kubernetes): a lock on some experiments only,
// so that two people applying different experiments of one state do not
// wait for each other, while two applying the same experiment do.
//
// LockExperiments(ctx, names, ...) holds each named experiment until
// Unlock; with names empty it is Lock: the whole state (every experiment,
// and what belongs to no experiment). A whole-state lock and any
// experiment lock exclude each other; two experiment locks exclude each
// other when they share an experiment. Waiting, timeouts and the
// *LockedError (carrying the holder's LockInfo, with its Experiments) are
// as for Lock. An experiment lock is all or nothing: it never holds some
// of the names while waiting for the others.
//
// While a holder has only some experiments, Save and Prepare write only
// what changed in those experiments (compared with what it loaded) and
// refuse, with an error naming it, a change to any other experiment; the
// conflict check (ConflictError) is per experiment: an experiment the
// holder writes must not have been written by someone else since it was
// loaded. Changes of other holders to other experiments are not
// conflicts. A backend that cannot lock per experiment simply lacks this
// capability: callers then lock the whole state (LockScope).
//
// CurrentLocks lists every lock held now (the whole-state one, each
// experiment's), for `show` and the lock errors; nil when none is.
type ExperimentLocker interface {
	LockExperiments(ctx context.Context, experiments []string, operation, version string, timeout time.Duration) (*Lock, error)
	CurrentLocks() ([]LockInfo, error)
}

// LockScope takes b's lock on experiments (all of them, the whole state,
// when experiments is empty): an experiment lock where b can
// (ExperimentLocker), else b's whole-state Lock.
func LockScope(ctx context.Context, b Locker, experiments []string, operation, version string, timeout time.Duration) (*Lock, error) {
	if el, ok := b.(ExperimentLocker); ok && len(experiments) > 0 {
		return el.LockExperiments(ctx, experiments, operation, version, timeout)
	}
	return b.Lock(ctx, operation, version, timeout)
}

// CurrentLocksOf returns every lock held on b: CurrentLocks where b has
// it, else CurrentLock's one (or none).
func CurrentLocksOf(b Locker) ([]LockInfo, error) {
	if el, ok := b.(ExperimentLocker); ok {
		return el.CurrentLocks()
	}
	li, err := b.CurrentLock()
	if err != nil || li == nil {
		return nil, err
	}
	return []LockInfo{*li}, nil
}

// Claimer (claim.go) is the optional capability of a backend that a
// controller can claim: the controller claim, apart from the locks.

// ChangeNotifier is the optional capability of a backend that can tell
// other processes at once that the state or a metric series changed (pg:
// LISTEN/NOTIFY; kubernetes: a watch). Changes returns a channel that
// receives a value (coalesced: a full channel is not blocked on) after
// each change committed by anyone, until ctx is done; watch and the
// dashboard then reload instead of waiting for their poll interval.
type ChangeNotifier interface {
	Changes(ctx context.Context) (<-chan struct{}, error)
}

// Replacer is an optional capability: Replace makes s the state as it
// is, its lineage and serial included, whatever the backend holds (a
// state of another lineage, a newer serial): `state push -force` and
// `init -migrate-state`, which keep a state's lineage and serial when
// they copy it. The caller holds the whole-state lock and has checked
// what it replaces. A backend without it takes a copied state through
// Save (the serial then goes on from the one it holds, and a state of
// another lineage cannot be replaced).
type Replacer interface {
	Replace(s *State) error
}

var _ Replacer = (*Manager)(nil)
