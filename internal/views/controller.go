package views

import (
	"errors"
	"io"
	"log/slog"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// ControllerLog is the controller's structured log: one JSON object a
// line (log/slog), for a cluster's log collector.
func ControllerLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// ConflictRetry is what the controller does about a save refused because
// someone else wrote the state (a *state.ConflictError), said in its log
// and dashboard instead of the commands' "run the command again".
const ConflictRetry = "this controller loads it again and retries at its next pass"

// ApplyLog is the controller's view of apply's progress (apply.Hooks's
// methods, as Apply's human and JSON views have them): each trial action
// done and each change observed, as a record of its log.
type ApplyLog struct{ Log *slog.Logger }

// TrialAction logs a trial action done, or failed.
func (h ApplyLog) TrialAction(a *plan.TrialAction, done bool, err error) {
	if !done {
		return
	}
	var ce *state.ConflictError
	if errors.As(err, &ce) {
		// Someone else wrote the state since the pass loaded it: the
		// controller says what it does next (retried at the next pass).
		h.Log.Warn("trial action not saved: the state was changed by someone else", "action", string(a.Action), "experiment", a.Experiment, "trial", a.TrialID, "error", state.AdviseConflict(err, ConflictRetry))
		return
	}
	if err != nil {
		h.Log.Error("trial action failed", "action", string(a.Action), "experiment", a.Experiment, "trial", a.TrialID, "error", err.Error())
		return
	}
	h.Log.Info("trial "+string(a.Action), "experiment", a.Experiment, "trial", a.TrialID, "cause", a.Cause)
}

// Observed logs a trial's change seen on its platform.
func (h ApplyLog) Observed(o plan.Observed) {
	h.Log.Info("observed", "experiment", o.Experiment, "trial", o.TrialID, "before", o.Before, "after", o.After)
}
