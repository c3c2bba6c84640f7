package views

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// Apply is the output of apply, apply -wait, destroy, refresh and watch's
// applies: the hooks apply.Session calls for each trial action and each
// observed change (apply.Hooks's methods), and the rest of what those
// commands report. NewApply returns its human implementation (ApplyHuman)
// or its JSON one (ApplyJSON, the -json event stream): the two are kept
// side by side here, so that neither reports what the other leaves out.
type Apply interface {
	// TrialAction reports a trial action starting (done false) or done,
	// with its error.
	TrialAction(a *plan.TrialAction, done bool, err error)
	// Observed reports a trial's change seen on its platform.
	Observed(o plan.Observed)
	// Plan shows the plan about to be applied; saved: it was read from a
	// plan file (which the human view does not show again).
	Plan(p *plan.Plan, saved bool)
	// Cancelled says the user declined the plan (of a destroy when
	// destroy is set).
	Cancelled(destroy bool)
	// WaitStart opens apply -wait's progress; total is how many trials the
	// experiments may run.
	WaitStart(total int)
	// Pass reports one pass of the wait: its plan and the errors worth
	// reporting.
	Pass(p *plan.Plan, errs []error)
	// WaitEnd closes the progress the wait drew.
	WaitEnd()
	// Status reports each experiment's state after the wait.
	Status(last *plan.Plan)
	// ExperimentFailed reports, as an error, an experiment that ended
	// failed.
	ExperimentFailed(ep *plan.ExperimentPlan)
	// Summary is "Apply complete! Trials: ..." (failed: an experiment
	// failed, exit status 4).
	Summary(failed bool)
	// DestroySummary is destroy's last line.
	// left experiments were to be destroyed and are not.
	DestroySummary(experiments, trials, left int)
	// Count is how many actions of kind a were done.
	Count(a plan.Action) int
	// NotSaved says the state could not be saved (the error was
	// reported) and what to do.
	NotSaved()
}

const notSaved = "Apply failed: the state could not be saved. Fix the cause above and run `trialform apply` again; trials already started are picked up."

// NotSaved prints what to do on Err.
func (h *ApplyHuman) NotSaved() { fmt.Fprintln(h.o.Err, notSaved) }

// NotSaved prints what to do on Err, beside the event stream.
func (h *ApplyJSON) NotSaved() { fmt.Fprintln(h.o.Err, notSaved) }

// Interrupted reports a graceful stop of op ("apply", "destroy", ...)
// after Ctrl-C: an error diagnostic on ev when there is an event stream,
// else a line on errw.
func Interrupted(ev *Events, errw io.Writer, op string) {
	again := "trialform apply"
	if op == "destroy" {
		again = "trialform destroy"
	}
	msg := fmt.Sprintf("Interrupted: running trials keep running; run `%s` again to pick them up.", again)
	if ev != nil {
		ev.Diagnostic("error", "Interrupted", msg)
		return
	}
	fmt.Fprintln(errw, "\n"+msg)
}

// InterruptedDestroy reports a destroy stopped by Ctrl-C before it removed
// left of its experiments.
func InterruptedDestroy(ev *Events, errw io.Writer, left int) {
	msg := fmt.Sprintf("Interrupted: %d experiment(s) not destroyed yet (the trials it had not stopped keep running); run `trialform destroy` again to finish.", left)
	if ev != nil {
		ev.Diagnostic("error", "Interrupted", msg)
		return
	}
	fmt.Fprintln(errw, "\n"+msg)
}

// RefreshComplete is refresh's last line.
func RefreshComplete(w io.Writer, experiments, changes int) {
	fmt.Fprintf(w, "Refresh complete: %d experiment(s) read, %d trial change(s) recorded. Nothing was started or stopped.\n", experiments, changes)
}

// ApplyOptions configure NewApply.
type ApplyOptions struct {
	Out    io.Writer // where the human view writes
	Err    io.Writer // where both write what must reach a person even under -json
	TTY    bool      // Out is a terminal: apply -wait draws a progress bar
	Colors Colors
	// Events, when set, selects the JSON view, which emits there.
	Events *Events
	// Where names where a started trial runs ("" when its platform does
	// not say).
	Where func(experiment, trial string) string
	// Skipped says an action's error only means it waits (for capacity,
	// a lock): apply.IsSkipped (views import no apply).
	Skipped func(error) bool
}

// NewApply returns the JSON view when o.Events is set, else the human one.
func NewApply(o ApplyOptions) Apply {
	if o.Err == nil {
		o.Err = io.Discard
	}
	if o.Skipped == nil {
		o.Skipped = func(error) bool { return false }
	}
	if o.Events != nil {
		return &ApplyJSON{o: o, started: map[*plan.TrialAction]time.Time{}}
	}
	return &ApplyHuman{o: o, out: &LineWriter{W: o.Out}}
}

// counts counts the actions done, for the summaries.
type counts struct {
	mu sync.Mutex
	n  map[plan.Action]int
}

func (c *counts) add(a plan.Action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[plan.Action]int{}
	}
	c.n[a]++
}

// Count is how many actions of kind a were done.
func (c *counts) Count(a plan.Action) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[a]
}

func summaryLine(c *counts, failed bool) string {
	head := "Apply complete!"
	if failed {
		head = "Apply complete, but an experiment failed (exit status 4)."
	}
	return fmt.Sprintf("%s Trials: %d created, %d resumed, %d torn down.", head, c.Count(plan.Create), c.Count(plan.Resume), c.Count(plan.Teardown))
}

// failedExperiment is the error an experiment that ended failed is
// reported with, and what to do about it.
func failedExperiment(ep *plan.ExperimentPlan) (msg, detail string) {
	msg = fmt.Sprintf("experiment %s failed: %s", ep.Name, ep.DoneReason)
	detail = fmt.Sprintf("`trialform trials %s -q status:failed` lists its failed trials and `trialform logs %s TRIAL` shows why; fix the cause, then raise max_trials (or max_failed_trials) or change the trial to run more", ep.Name, ep.Name)
	if strings.HasPrefix(ep.DoneReason, "max_duration") {
		// Its trials were not failed but torn down (CANCELED) at the
		// deadline, or it ran out of time before one ended.
		detail = fmt.Sprintf("its max_duration ran out before a trial succeeded; `trialform trials %s -q status:canceled` lists the trials it stopped and `trialform logs %s TRIAL` shows how far they got; raise max_duration, or set on_max_duration = \"finish\" to let running trials finish", ep.Name, ep.Name)
	}
	return msg, detail
}

// ApplyHuman is the human view: a line per finished trial action and per
// observed change, a progress bar on a terminal during apply -wait.
type ApplyHuman struct {
	o   ApplyOptions
	out *LineWriter
	counts
	mu  sync.Mutex // one line at a time
	bar *progressbar.ProgressBar
	// waits is what each waiting trial was last said to wait for: apply
	// -wait and watch say it again only when it changes.
	waits map[string]string
	// saidBy is the trial whose line last said each wait in full.
	saidBy map[string]string
	warned
}

// warned is the warnings a view printed: a pass prints only new ones (a
// platform's once-only warning, "cannot watch the trials' Jobs", came
// with a pass's plan, which apply -wait and watch do not print).
type warned map[string]bool

// fresh marks ws as printed and returns those that were not.
func (w *warned) fresh(ws []string) []string {
	if *w == nil {
		*w = map[string]bool{}
	}
	var out []string
	for _, s := range ws {
		if !(*w)[s] {
			(*w)[s] = true
			out = append(out, s)
		}
	}
	return out
}

// TrialAction prints one line per finished action.
func (h *ApplyHuman) TrialAction(a *plan.TrialAction, done bool, err error) {
	if !done {
		return
	}
	c := h.o.Colors
	on := ""
	if h.o.Where != nil && err == nil && (a.Action == plan.Create || a.Action == plan.Resume) {
		if m := h.o.Where(a.Experiment, a.TrialID); m != "" {
			on = " on " + m
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	name := a.Experiment + "/" + a.TrialID
	switch {
	case err != nil && h.o.Skipped(err):
		if h.waits == nil {
			h.waits = map[string]string{}
		}
		if msg := err.Error(); h.waits[name] != msg {
			h.waits[name] = msg
			// Many trials waiting for the same thing (a machine that
			// does not answer) are told it once: the others name the
			// trial whose line said why.
			if by := h.saidBy[msg]; by != "" && by != name && h.waits[by] == msg {
				fmt.Fprintf(h.out, "  %s %s: waits too, as %s\n", c.Dim("."), name, by)
				break
			}
			if h.saidBy == nil {
				h.saidBy = map[string]string{}
			}
			h.saidBy[msg] = name
			fmt.Fprintf(h.out, "  %s %s: %s\n", c.Dim("."), name, Safe(msg))
		}
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(h.out, "  %s %s: %s cancelled by the interrupt\n", c.Red("!"), name, a.Action)
	case err != nil:
		fmt.Fprintf(h.out, "  %s %s: %s failed: %s\n", c.Red("!"), name, a.Action, Safe(err.Error()))
	default:
		delete(h.waits, name)
		h.add(a.Action)
		switch a.Action {
		case plan.Create:
			fmt.Fprintf(h.out, "  %s %s started%s  %s\n", c.Green("+"), name, on, FormatParams(a.Params))
		case plan.Resume:
			fmt.Fprintf(h.out, "  %s %s resumed%s\n", c.Yellow("~"), name, on)
		case plan.Teardown:
			fmt.Fprintf(h.out, "  %s %s torn down (%s)\n", c.Red("-"), name, Safe(a.Reason))
		}
	}
}

// Observed prints the change, with the metrics it brought.
func (h *ApplyHuman) Observed(o plan.Observed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := fmt.Sprintf("  %s/%s %s", o.Experiment, o.TrialID, o.After)
	if len(o.Values) > 0 {
		for _, v := range o.Values {
			line += " " + v.Metric + "=" + FormatMetric(&v.Value)
		}
	} else if o.Value != nil && o.Metric != "" {
		// Several objectives, not all of them reported: the value is the
		// first's, which the line names.
		line += " " + o.Metric + "=" + FormatMetric(o.Value)
	} else if o.Value != nil {
		line += " value=" + FormatMetric(o.Value)
	}
	if o.Reason != "" {
		line += " (" + Safe(o.Reason) + ")"
	}
	if o.After == state.Failed {
		line += fmt.Sprintf("; see `trialform logs %s %s`", o.Experiment, o.TrialID)
	}
	fmt.Fprintln(h.out, line)
}

// Plan prints a plan that was not read from a file.
func (h *ApplyHuman) Plan(p *plan.Plan, saved bool) {
	h.mu.Lock()
	h.warned.fresh(p.Warnings)
	h.mu.Unlock()
	if !saved {
		Plan(h.out, p, h.o.Colors)
	}
}

// Cancelled prints "Apply cancelled." ("Destroy cancelled." for destroy).
func (h *ApplyHuman) Cancelled(destroy bool) {
	if destroy {
		fmt.Fprintln(h.out, "Destroy cancelled.")
		return
	}
	fmt.Fprintln(h.out, "Apply cancelled.")
}

// WaitStart says what apply -wait does and, on a terminal, draws the bar.
func (h *ApplyHuman) WaitStart(total int) {
	fmt.Fprintln(h.out, "\nWaiting for every experiment to finish (Ctrl-C stops waiting; trials keep running)...")
	if !h.o.TTY {
		return
	}
	h.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(h.o.Out),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(false),
	)
	h.out.SetBar(h.bar)
}

// Pass moves the bar and prints the pass's errors.
func (h *ApplyHuman) Pass(p *plan.Plan, errs []error) {
	if h.bar != nil {
		// The bar counts the experiments this plan covers (-target
		// leaves others out), and an experiment that is done (its
		// max_duration, max_failed_trials) at what it ended with: the
		// configuration's max_trials of every experiment left the bar
		// short of 100% for good.
		done, total := 0, 0
		line := ""
		for _, ep := range p.Experiments {
			n := Ended(ep)
			done += n
			if ep.Done {
				total += n
			} else {
				total += max(ep.Settings.MaxTrials, n)
			}
			if line != "" {
				line += "; "
			}
			line += StatusLine(ep)
		}
		if total > 0 && total != h.bar.GetMax() {
			h.bar.ChangeMax(total)
		}
		h.bar.Describe(line)
		h.bar.Set(done)
	}
	h.mu.Lock()
	ws := h.warned.fresh(p.Warnings)
	h.mu.Unlock()
	for _, wn := range ws {
		fmt.Fprintln(h.out, h.o.Colors.Yellow("Warning: ")+Safe(wn))
	}
	for _, e := range errs {
		fmt.Fprintln(h.out, h.o.Colors.Red("Error: ")+SafeLines(e.Error()))
	}
}

// WaitEnd leaves the bar as the last pass drew it (20/20 at the end; it
// is not cleared on finish, which hid the last frame).
func (h *ApplyHuman) WaitEnd() {
	if h.bar == nil {
		return
	}
	h.bar.Exit()
	h.out.SetBar(nil)
	h.bar = nil
	fmt.Fprintln(h.o.Out)
}

// Status prints each experiment's status line, then where the
// experiments' other trials are.
func (h *ApplyHuman) Status(last *plan.Plan) {
	fmt.Fprintln(h.out)
	for _, ep := range last.Experiments {
		fmt.Fprintln(h.out, StatusLine(ep))
	}
	for _, ep := range last.Experiments {
		if line := ElsewhereLine(ep); line != "" {
			fmt.Fprintln(h.out, line)
		}
	}
}

// ExperimentFailed prints the error and what to do.
func (h *ApplyHuman) ExperimentFailed(ep *plan.ExperimentPlan) {
	msg, detail := failedExperiment(ep)
	fmt.Fprintln(h.out, h.o.Colors.Red("Error: ")+msg+"\n  "+detail)
}

// Summary prints "Apply complete! ...".
func (h *ApplyHuman) Summary(failed bool) {
	fmt.Fprintln(h.out, h.o.Colors.Bold("\n"+summaryLine(&h.counts, failed)))
}

// DestroySummary prints "Destroy complete! ...".
func (h *ApplyHuman) DestroySummary(experiments, trials, left int) {
	fmt.Fprintln(h.out, h.o.Colors.Bold("\n"+DestroySummary(experiments, trials, left)))
}

// ApplyJSON is the JSON view: apply_start, apply_complete, apply_errored,
// trial_status, progress, diagnostic and change_summary events.
type ApplyJSON struct {
	o ApplyOptions
	counts
	mu      sync.Mutex
	started map[*plan.TrialAction]time.Time
	warned
}

// TrialAction emits apply_start, then apply_complete or apply_errored.
func (h *ApplyJSON) TrialAction(a *plan.TrialAction, done bool, err error) {
	ev := h.o.Events
	name := a.Experiment + "/" + a.TrialID
	hook := &HookJSON{Experiment: a.Experiment, Trial: a.TrialID, Action: a.Action}
	h.mu.Lock()
	if !done {
		h.started[a] = time.Now()
		h.mu.Unlock()
		ev.Emit(Event{Type: "apply_start", Message: name + ": " + string(a.Action) + " started", Hook: hook})
		return
	}
	if t, ok := h.started[a]; ok {
		hook.ElapsedSeconds = time.Since(t).Seconds()
		delete(h.started, a)
	}
	h.mu.Unlock()
	if err == nil {
		h.add(a.Action)
	}
	switch {
	case err != nil && h.o.Skipped(err):
		hook.Error = err.Error()
		ev.Emit(Event{Type: "apply_errored", Level: "warn", Message: name + ": " + err.Error(), Hook: hook})
	case err != nil:
		hook.Error = err.Error()
		ev.Emit(Event{Type: "apply_errored", Level: "error", Message: name + ": " + string(a.Action) + " failed: " + err.Error(), Hook: hook})
	default:
		if h.o.Where != nil && (a.Action == plan.Create || a.Action == plan.Resume) {
			hook.Machine = h.o.Where(a.Experiment, a.TrialID)
		}
		ev.Emit(Event{Type: "apply_complete", Message: name + ": " + string(a.Action) + " complete", Hook: hook})
	}
}

// Observed emits trial_status.
func (h *ApplyJSON) Observed(o plan.Observed) {
	msg := fmt.Sprintf("%s/%s: %s -> %s", o.Experiment, o.TrialID, o.Before, o.After)
	h.o.Events.Emit(Event{Type: "trial_status", Message: msg, Observed: &o})
}

// Plan emits the planned changes, saved or not.
func (h *ApplyJSON) Plan(p *plan.Plan, saved bool) {
	h.mu.Lock()
	h.warned.fresh(p.Warnings)
	h.mu.Unlock()
	h.o.Events.Plan(p)
}

// Cancelled emits nothing: -json never asks.
func (h *ApplyJSON) Cancelled(bool) {}

// WaitStart emits nothing: each pass emits its progress.
func (h *ApplyJSON) WaitStart(total int) {}

// Pass emits progress and the pass's errors as diagnostics.
func (h *ApplyJSON) Pass(p *plan.Plan, errs []error) {
	h.o.Events.Progress(p)
	h.mu.Lock()
	ws := h.warned.fresh(p.Warnings)
	h.mu.Unlock()
	for _, wn := range ws {
		h.o.Events.Diagnostic("warning", wn, "")
	}
	for _, e := range errs {
		h.o.Events.Diagnostic("error", e.Error(), "")
	}
}

// WaitEnd emits nothing.
func (h *ApplyJSON) WaitEnd() {}

// Status emits nothing: the last progress event holds it.
func (h *ApplyJSON) Status(last *plan.Plan) {}

// ExperimentFailed emits an error diagnostic.
func (h *ApplyJSON) ExperimentFailed(ep *plan.ExperimentPlan) {
	msg, detail := failedExperiment(ep)
	h.o.Events.Diagnostic("error", msg, detail)
}

// Summary emits change_summary.
func (h *ApplyJSON) Summary(failed bool) {
	h.o.Events.Emit(Event{Type: "change_summary", Message: summaryLine(&h.counts, failed),
		Changes: &ChangeSummaryJSON{Operation: "apply", Create: h.Count(plan.Create), Resume: h.Count(plan.Resume), Teardown: h.Count(plan.Teardown)}})
}

// DestroySummary emits destroy's change_summary.
func (h *ApplyJSON) DestroySummary(experiments, trials, left int) {
	h.o.Events.Emit(Event{Type: "change_summary", Message: DestroySummary(experiments, trials, left),
		Changes: &ChangeSummaryJSON{Operation: "destroy", Teardown: h.Count(plan.Teardown), Experiments: experiments, Trials: trials}})
}

// LineWriter writes whole lines, clearing a progress bar first on a
// terminal so that lines and the bar do not mix.
type LineWriter struct {
	W   io.Writer
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

// SetBar sets the bar to clear and draw again around each write (nil:
// none).
func (l *LineWriter) SetBar(b *progressbar.ProgressBar) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bar = b
}

func (l *LineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bar != nil {
		l.bar.Clear()
	}
	n, err := l.W.Write(p)
	if l.bar != nil {
		l.bar.RenderBlank()
	}
	return n, err
}
