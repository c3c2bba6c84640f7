package views

import (
	"fmt"
	"io"
	"time"
)

// The messages of `trialform tensorboard`.

// TensorBoardNoSync says a platform's logs cannot be copied here.
func TensorBoardNoSync(w io.Writer, platform string) {
	fmt.Fprintf(w, "Platform %s: trialform cannot copy its TensorBoard logs here; trials log into their output directory (output/tensorboard; on Kubernetes the checkpoint claim keeps it, see docs/results.md, \"TensorBoard\").\n", platform)
}

// TensorBoardSyncFailed warns that one trial's logs were not copied.
func TensorBoardSyncFailed(w io.Writer, experiment, trial string, err error) {
	fmt.Fprintf(w, "Warning: sync TensorBoard logs of %s/%s: %s\n", experiment, trial, SafeLines(err.Error()))
}

// TensorBoardSynced reports what a sync copied.
func TensorBoardSynced(w io.Writer, platform string, files int, bytes int64) {
	fmt.Fprintf(w, "Synced TensorBoard logs from %s: %d file(s), %d bytes.\n", platform, files, bytes)
}

// TensorBoardMissing says there is no tensorboard to run, and how to run
// it by hand.
func TensorBoardMissing(w io.Writer, experiment, logFlag, logdir string) {
	fmt.Fprintf(w, "TensorBoard is not installed (no `tensorboard` on PATH). Install it with\n\n  pip install tensorboard\n\nand run `trialform tensorboard %s` again, or start it yourself:\n\n  tensorboard %s %s\n", experiment, logFlag, logdir)
}

// TensorBoardServing gives TensorBoard's URL.
func TensorBoardServing(w io.Writer, host string, port int, logdir string) {
	fmt.Fprintf(w, "TensorBoard: http://%s:%d/ (logdir %s). Ctrl-C stops it.\n", host, port, logdir)
}

// TensorBoardStopped is the last line after Ctrl-C.
func TensorBoardStopped(w io.Writer) { fmt.Fprintln(w, "TensorBoard stopped.") }

// The messages of the interrupt handling (Ctrl-C, SIGTERM).

// InterruptNote is the command's note on a first interrupt (what it does
// now).
func InterruptNote(w io.Writer, msg string) { fmt.Fprintln(w, "\n"+msg) }

// SecondInterrupt says the calls in flight are cancelled.
func SecondInterrupt(w io.Writer) {
	fmt.Fprintln(w, "\nSecond interrupt received: cancelling the platform calls in flight. Interrupt again to exit at once (the state may then miss the last changes).")
}

// HardExit says the command did not end in time after after.
func HardExit(w io.Writer, wait time.Duration, after string) {
	fmt.Fprintf(w, "\nStill running %s after %s: exiting.\n", wait, after)
}
