package views

import (
	"io"
	"log/slog"
)

// ControllerLog is the controller's structured log: one JSON object a
// line (log/slog), for a cluster's log collector.
func ControllerLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
