package views

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// ControllerLog is the controller's structured log: one JSON object a
// line (log/slog), for a cluster's log collector.
func ControllerLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// Approved prints what trialform approve recorded.
func Approved(w io.Writer, experiment, specHash string, generation int, removed bool, teardowns int, reasons []string) {
	what := fmt.Sprintf("generation %d (spec %s)", generation, specHash)
	if removed {
		what = "its removal"
	}
	fmt.Fprintf(w, "Approved: experiment %s, %s: %d trial(s) to tear down.\n", experiment, what, teardowns)
	if len(reasons) > 0 {
		fmt.Fprintf(w, "  because: %s\n", strings.Join(reasons, "; "))
	}
	fmt.Fprintln(w, "The controller applies it at its next pass; a later, different change is held again.")
}
