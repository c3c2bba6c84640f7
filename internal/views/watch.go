package views

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/plan"
)

// Watch is the output of `trialform watch`: what it watches, each change
// of the definitions and what it did about it, on a terminal a status
// line kept at the bottom. Its applies report through an Apply view over
// Out (NewWatch builds it).
type Watch struct {
	Out    *StatusWriter
	Colors Colors
	// Apply is the view of watch's applies (the human one, over Out).
	Apply Apply
}

// NewWatch returns the watch view writing to w; tty: w is a terminal.
func NewWatch(w io.Writer, tty bool, c Colors, skipped func(error) bool) *Watch {
	out := &StatusWriter{W: w, TTY: tty}
	return &Watch{Out: out, Colors: c, Apply: NewApply(ApplyOptions{Out: out, Colors: c, Skipped: skipped})}
}

// Started says what is watched and how.
func (v *Watch) Started(dir string, autoApprove, allowDestroy bool) {
	mode := "plan only; add -auto-approve to apply"
	if autoApprove {
		mode = "applying every plan"
		if !allowDestroy {
			mode += "; plans that remove experiments or tear down trials are held without -allow-destroy"
		}
	}
	fmt.Fprintf(v.Out, "Watching %s (%s). Ctrl-C stops watching; trials keep running.\n", dir, mode)
}

// NoChangeNotices says the state backend cannot tell of changes.
func (v *Watch) NoChangeNotices(backend string, err error, interval time.Duration) {
	fmt.Fprintf(v.Out, "%s the %s backend cannot tell of changes (%v); watch re-reads the state every %s.\n", v.Colors.Yellow("Warning:"), backend, err, interval)
}

// Stopped is the last line, after Ctrl-C.
func (v *Watch) Stopped() {
	v.Out.ClearStatus()
	fmt.Fprintln(v.Out.W, "\nStopped watching. Running trials keep running; `trialform watch` or `trialform apply -wait` picks them up.")
}

// FilesError reports a failure of the file watcher.
func (v *Watch) FilesError(err error) {
	fmt.Fprintf(v.Out, "%s watching files: %v\n", v.Colors.Yellow("Warning:"), err)
}

// Changed heads the report of a change of the files what.
func (v *Watch) Changed(what string, at time.Time) {
	fmt.Fprintf(v.Out, "\n%s %s changed at %s\n", v.Colors.Bold("──"), what, at.Format("15:04:05"))
}

// ConfigErrors says the configuration does not load (its diagnostics
// were printed); kept: a last good configuration stays in force.
func (v *Watch) ConfigErrors(kept bool) {
	if kept {
		fmt.Fprintln(v.Out, v.Colors.Yellow("The configuration has errors; keeping the last good plan. Fix the files and save again."))
		return
	}
	fmt.Fprintln(v.Out, v.Colors.Yellow("The configuration has errors; nothing is planned until it loads. Fix the files and save again."))
}

// DefinitionsDiff shows how the definitions changed since the last good
// plan ("" : they did not).
func (v *Watch) DefinitionsDiff(diff string) {
	if diff == "" {
		fmt.Fprintln(v.Out, "No change in the definitions since the last good plan.")
		return
	}
	fmt.Fprintln(v.Out, "Changes in the definitions since the last good plan:")
	Diff(v.Out, diff, v.Colors, "")
}

// Error reports an error of a pass.
func (v *Watch) Error(err error) {
	fmt.Fprintf(v.Out, "%s %s\n", v.Colors.Red("Error:"), SafeLines(err.Error()))
}

// Waiting says the state is locked by another command; watch retries.
func (v *Watch) Waiting(err error, interval time.Duration) {
	fmt.Fprintf(v.Out, "%s %s; watch tries again every %s.\n", v.Colors.Yellow("Waiting:"), SafeLines(err.Error()), interval)
}

// Plan shows a plan.
func (v *Watch) Plan(p *plan.Plan) { Plan(v.Out, p, v.Colors) }

// PlanText renders a plan, to print it only when it changed (PrintText).
func (v *Watch) PlanText(p *plan.Plan) string {
	var b strings.Builder
	Plan(&b, p, v.Colors)
	return b.String()
}

// PrintText prints what PlanText rendered.
func (v *Watch) PrintText(s string) { io.WriteString(v.Out, s) }

// Held shows a plan held back because it would destroy what destructive
// lists.
func (v *Watch) Held(p *plan.Plan, destructive []string) {
	Plan(v.Out, p, v.Colors)
	fmt.Fprintln(v.Out, v.Colors.Yellow("\nHeld: this plan is not applied because"))
	for _, line := range destructive {
		fmt.Fprintf(v.Out, "  - %s\n", line)
	}
	fmt.Fprintln(v.Out, "Restore the definitions, run `trialform apply` to apply it yourself, or restart watch with -allow-destroy.")
}

// AllDone prints each experiment's status line (its budget, its best
// trial, why it is done), as apply -wait does at its end, then says every
// experiment is done or what the rest wait for.
func (v *Watch) AllDone(p *plan.Plan) {
	var paused []string
	fmt.Fprintln(v.Out)
	for _, ep := range p.Experiments {
		fmt.Fprintln(v.Out, StatusLine(ep))
		if ep.Paused && !ep.Done {
			paused = append(paused, ep.Name)
		}
	}
	for _, ep := range p.Experiments {
		if line := ElsewhereLine(ep); line != "" {
			fmt.Fprintln(v.Out, line)
		}
	}
	if len(paused) > 0 {
		// Not done: waiting for paused = false.
		fmt.Fprintln(v.Out, v.Colors.Bold(fmt.Sprintf("\nNothing to run: every experiment is done or paused (paused: %s). Watching for changes...", strings.Join(paused, ", "))))
		return
	}
	fmt.Fprintln(v.Out, v.Colors.Bold("\nAll experiments are done. Watching for changes..."))
}

// Status redraws the status line (terminals only): each experiment's
// status, the last change, whether a plan is held.
func (v *Watch) Status(last *plan.Plan, changed time.Time, what string, held bool) {
	if !v.Out.TTY {
		return
	}
	var parts []string
	if last != nil {
		for _, ep := range last.Experiments {
			parts = append(parts, StatusLine(ep))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no experiments")
	}
	line := strings.Join(parts, " · ")
	if !changed.IsZero() {
		line += fmt.Sprintf(" · last change %s (%s)", changed.Format("15:04:05"), what)
	}
	if held {
		line += " · plan held"
	}
	v.Out.SetStatus("watch · " + line)
}

// StatusWriter writes whole lines and, on a terminal, keeps a status line
// at the bottom: cleared before each write and drawn again after.
type StatusWriter struct {
	W      io.Writer
	TTY    bool
	mu     sync.Mutex
	status string
	shown  bool
}

func (s *StatusWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
	n, err := s.W.Write(p)
	s.drawLocked()
	return n, err
}

// SetStatus replaces the status line.
func (s *StatusWriter) SetStatus(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
	s.status = line
	s.drawLocked()
}

// ClearStatus removes the status line until the next write.
func (s *StatusWriter) ClearStatus() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
}

func (s *StatusWriter) clearLocked() {
	if s.shown {
		io.WriteString(s.W, "\r\x1b[2K")
		s.shown = false
	}
}

func (s *StatusWriter) drawLocked() {
	if s.TTY && s.status != "" {
		io.WriteString(s.W, s.status)
		s.shown = true
	}
}
