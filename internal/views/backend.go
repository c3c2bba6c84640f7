package views

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/trialform/trialform/state"
)

// The output of init's backend set-up and of the state subcommands (rm,
// pull, push, force-unlock), and the note on the backend that show,
// trials and the like print where the working copy declares one.

// BackendNote names the backend, the controller that claims the state
// (claim; nil: none, or the backend cannot tell) and who holds its locks,
// on standard error; err: the locks could not be read.
func BackendNote(w io.Writer, name, location string, claim *state.LockInfo, locks []state.LockInfo, err error) {
	fmt.Fprintf(w, "State: %s backend, %s\n", name, location)
	if claim != nil {
		fmt.Fprintf(w, "  reconciled by a controller: %s, claim ID %s\n", state.ClaimHolder(*claim), claim.ID)
	}
	if err != nil {
		fmt.Fprintf(w, "  (its locks cannot be read: %v)\n", err)
		return
	}
	for _, l := range locks {
		fmt.Fprintf(w, "  %s\n", LockHolder(l))
	}
}

// LockHolder is one lock as people read it.
func LockHolder(l state.LockInfo) string {
	what := state.LockedWhat(l.Experiments)
	op := l.Operation
	if op == "" {
		op = "a command"
	}
	return fmt.Sprintf("locked: %s by %s (%s, pid %d, since %s, lock ID %s)", what, op, l.Who, l.PID, l.Created.Format(time.RFC3339), l.ID)
}

// StateRemoved reports one address state rm removed.
func StateRemoved(w io.Writer, addr string) { fmt.Fprintf(w, "Removed %s\n", addr) }

// StateRemoveDone ends state rm.
func StateRemoveDone(w io.Writer) {
	fmt.Fprintln(w, "Objects on the platforms are not touched; a running trial no longer in the state is planned as an orphan teardown (or adopt it again with `trialform import EXPERIMENT TRIAL`).")
}

// LockRemoved is force-unlock's line.
func LockRemoved(w io.Writer) {
	fmt.Fprintln(w, "The state lock was removed. Make sure its holder is really gone.")
}

// ClaimRemoved is force-unlock's line for a controller's claim of the
// state.
func ClaimRemoved(w io.Writer) {
	fmt.Fprintln(w, "The controller's claim of the state was removed: a controller still holding it stops acting at its next pass, and the next controller to try claims the state.")
}

// StateDocument writes the state document state pull read, as it is.
func StateDocument(w io.Writer, doc []byte) { w.Write(doc) }

// MetricSeriesRemoved says state push removed the metric series of the
// replaced state's experiments.
func MetricSeriesRemoved(w io.Writer, lineage string, experiments []string) {
	fmt.Fprintf(w, "Removed the metric series of the replaced state's experiments (lineage %s): %s.\n", lineage, strings.Join(experiments, ", "))
}

// StatePushed is state push's last line.
func StatePushed(w io.Writer, name, backend, location, lineage string, serial uint64) {
	fmt.Fprintf(w, "Pushed %s to the %s backend (%s): lineage %s, serial %d.\n", name, backend, location, lineage, serial)
}

// Backend is where init reports a backend: its name and location.
type Backend struct{ Name, Location string }

// NothingToMigrate: init -migrate-state with the recorded backend.
func NothingToMigrate(w io.Writer, b Backend) {
	fmt.Fprintf(w, "The configured backend is the recorded one (%s, %s): there is nothing to migrate.\n", b.Name, b.Location)
}

// BackendInitialized is init's line for a backend taken as it is; how
// says what became of the previous one ("" : there was none, or it was
// this one).
func BackendInitialized(w io.Writer, b Backend, how string) {
	fmt.Fprintf(w, "Backend %s (%s) is initialized%s.\n", b.Name, b.Location, how)
}

// PreviousBackendLeft is BackendInitialized's how for init -reconfigure.
func PreviousBackendLeft(previous string) string {
	return fmt.Sprintf("; the state in the previous backend (%s) was left where it is", previous)
}

// PreviousBackendEmpty is BackendInitialized's how when the previous
// backend held no state.
func PreviousBackendEmpty(kind string) string {
	return fmt.Sprintf(" (the previous backend, %s, held no state)", kind)
}

// NothingCopied: init -migrate-state found no state in the old backend.
func NothingCopied(w io.Writer, src, dst Backend) {
	fmt.Fprintf(w, "The %s backend (%s) holds no state: nothing was copied.\nBackend %s (%s) is initialized, with the state it holds.\n",
		src.Name, src.Location, dst.Name, dst.Location)
}

// Migrated counts what init -migrate-state copied.
type Migrated struct {
	Lineage             string
	Serial              uint64
	Experiments, Trials int
	Series, Points      int
}

func (m Migrated) String() string {
	return fmt.Sprintf("the state (lineage %s, serial %d: %s, %s), %s (%s) and the refresh marks",
		m.Lineage, m.Serial, plural(m.Experiments, "experiment"), plural(m.Trials, "trial"), fmt.Sprintf("%d metric series", m.Series), plural(m.Points, "point"))
}

// StateCopied: init -migrate-state copied what from src to dst.
func StateCopied(w io.Writer, what Migrated, src, dst Backend) {
	fmt.Fprintf(w, "Copied %s from %s (%s) to %s (%s).\nBackend %s is initialized. The state in %s was left where it is: remove it when you no longer need it.\n",
		what, src.Name, src.Location, dst.Name, dst.Location, dst.Name, src.Name)
}
