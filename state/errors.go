package state

import (
	"errors"
	"fmt"
	"github.com/trialform/trialform/internal/duration"
	"os"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/procfs"
)

// CorruptError reports a state file that cannot be read: empty, truncated,
// not JSON, or JSON of the wrong shape. Neither Load nor Save ever modifies
// such a file.
type CorruptError struct {
	Path    string // the state file; with Repair, what cannot be read, where
	Problem string // what is wrong, e.g. "is truncated"
	Err     error  // the underlying decoding error, if any
	// Repair, set by a backend that keeps the state elsewhere than in a
	// file (pg, kubernetes), says how to repair it; the message then says
	// nothing of files and backups beside them.
	Repair string
}

func (e *CorruptError) Error() string {
	if e.Repair != "" {
		return fmt.Sprintf("%s %s; it was not modified. %s", e.Path, e.Problem, e.Repair)
	}
	return fmt.Sprintf("state file %s %s; it was not modified. The previous version, if any, is in %s: copy it over %s to go back to it, or fix the file by hand",
		e.Path, e.Problem, e.Path+backupSuffix, e.Path)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// NewerFormatError reports a state file written in a format newer than this
// build understands. The file is never modified.
type NewerFormatError struct {
	Path      string
	Version   int // the file's format version
	Supported int // FormatVersion of this build
}

func (e *NewerFormatError) Error() string {
	return fmt.Sprintf("state file %s has format version %d, written by a newer trialform; this trialform reads versions up to %d. Upgrade trialform; the file was not modified",
		e.Path, e.Version, e.Supported)
}

// ConflictError reports a Save refused because the state file on disk is
// not the one the state being saved was loaded from: it belongs to another
// lineage, or someone else wrote it since.
type ConflictError struct {
	Path string
	// Lineage conflict: the file's and the saved state's lineages.
	FileLineage, StateLineage string
	// Serial conflict: the file's serial and the serial the saved state was
	// loaded at.
	FileSerial, StateSerial uint64
}

func (e *ConflictError) Error() string { return e.Advise(conflictAdvice) }

// conflictAdvice is what a command that saw a serial conflict does next.
const conflictAdvice = "run the command again"

// Advise is the message with next as what to do about a serial conflict
// (Error says "run the command again": a caller that retries by itself,
// the controller at its next pass, says so instead).
func (e *ConflictError) Advise(next string) string {
	if e.FileLineage != e.StateLineage {
		return fmt.Sprintf("the state at %s belongs to a different state (lineage %s; the state being saved has lineage %s); not saving over it",
			e.Path, e.FileLineage, e.StateLineage)
	}
	return fmt.Sprintf("the state at %s was changed by someone else since it was loaded (serial %d there, %d when loaded); not saving over it: %s",
		e.Path, e.FileSerial, e.StateSerial, next)
}

// AdviseConflict returns err's message with the advice of the
// *ConflictError it wraps replaced by next (err's message as it is when
// it wraps none).
func AdviseConflict(err error, next string) string {
	msg := err.Error()
	var ce *ConflictError
	if !errors.As(err, &ce) {
		return msg
	}
	return strings.Replace(msg, ce.Error(), ce.Advise(next), 1)
}

// LockInfo describes the holder of the state lock. It is the content of the
// lock file.
type LockInfo struct {
	ID        string    `json:"id"`        // UUID
	Operation string    `json:"operation"` // "apply", "plan", "destroy", ...
	Who       string    `json:"who"`       // user@hostname
	PID       int       `json:"pid"`
	Version   string    `json:"version"` // trialform version of the holder
	Created   time.Time `json:"created"`
	Path      string    `json:"path"` // the state file the lock protects (for people: a path, a table, an object)
	// Backend is the kind of backend that holds the lock ("local", "pg",
	// "kubernetes"); "" in lock files of older versions (local).
	Backend string `json:"backend,omitempty"`
	// Experiments are the experiments the lock covers (LockExperiments);
	// empty for a lock on the whole state.
	Experiments []string `json:"experiments,omitempty"`
}

// RunsHere reports whether the lock's holder is a process of this
// machine that still runs (this one included): its lock is not stale.
func (li *LockInfo) RunsHere() bool {
	if li.PID <= 0 {
		return false
	}
	host, err := os.Hostname()
	if _, h, ok := strings.Cut(li.Who, "@"); err != nil || !ok || h != host {
		return false
	}
	if li.PID == os.Getpid() {
		return true
	}
	st, err := procfs.Read(li.PID)
	return err == nil && !st.Gone() // a zombie is gone: it holds nothing
}

// LockedError reports that another holder has the state lock; Waited is
// how long the caller waited for it (its -lock-timeout), 0 if it did not.
type LockedError struct {
	Info   LockInfo
	Waited time.Duration
}

// waitAdvice is what to do about a lock held by someone else: wait with
// -lock-timeout, or, after a wait that was not enough (the error says how
// long it waited), wait longer; it suggested the -lock-timeout=30s that
// had just run out.
func (e *LockedError) waitAdvice() string {
	if e.Waited <= 0 {
		return "wait for it, use -lock-timeout=30s"
	}
	return fmt.Sprintf("wait longer (-lock-timeout=%s)", duration.Format(max(4*e.Waited, 5*time.Minute)))
}

// GaveUp is the error of a lock wait that ran out after waited: locked
// (a *LockedError, or an error wrapping one), told how long it waited so
// that it advises a longer wait.
func GaveUp(waited time.Duration, locked error) error {
	var le *LockedError
	if errors.As(locked, &le) {
		le.Waited = waited
	}
	return fmt.Errorf("gave up after waiting %s: %w", duration.Format(waited), locked)
}

func (e *LockedError) Error() string {
	i := e.Info
	if i.ID == "" {
		return "state is locked by another process (its lock information could not be read); " + e.waitAdvice()
	}
	op := i.Operation
	if op == "" {
		op = "another command"
	}
	what, verb := "state", "is"
	if i.Backend != "" && i.Backend != LocalBackend {
		what = fmt.Sprintf("state in the %s backend (%s)", i.Backend, i.Path)
	}
	if len(i.Experiments) > 0 {
		s := ""
		if len(i.Experiments) > 1 {
			s, verb = "s", "are"
		}
		what = fmt.Sprintf("experiment%s %s of the %s", s, strings.Join(i.Experiments, ", "), what)
	}
	return fmt.Sprintf("%s %s locked by %s (pid %d, %s, since %s, lock ID %s); %s, or `trialform force-unlock %s` if the holder is gone",
		what, verb, op, i.PID, i.Who, i.Created.Format(time.RFC3339), i.ID, e.waitAdvice(), i.ID)
}

// UnavailableError is an error of a backend that could not reach its
// server (a connection refused, dropped or timed out): the same call may
// succeed later. Backends wrap such errors with Unavailable; a caller that
// can wait (apply, watch) retries them for a while (apply.RetryStore),
// others report them.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable marks err as an UnavailableError (nil stays nil).
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &UnavailableError{Err: err}
}

// IsUnavailable reports whether err says the backend's server could not
// be reached.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}
