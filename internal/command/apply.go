package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

type applyOptions struct {
	vars        varFlags
	lock        lockFlags
	autoApprove bool
	input       bool
	json        bool
	wait        bool
	interval    time.Duration
	targets     multiFlag
	noColor     bool
	parallelism int
	destroy     bool
	trials      trialFlags
	takeOver    bool
}

// trialFlags are -replace and -stop (plan and apply).
type trialFlags struct {
	replace, stop multiFlag
}

func (t *trialFlags) register(fs *flag.FlagSet) {
	fs.Var(&t.replace, "replace", "tear down experiment.NAME.trial.ID and start it again with the same parameters, a new attempt (repeatable)")
	fs.Var(&t.stop, "stop", "stop experiment.NAME.trial.ID for good, keeping its results (USER_CANCELED; repeatable)")
}

func (o *applyOptions) register(fs *flag.FlagSet) {
	o.vars.register(fs)
	o.lock.register(fs)
	fs.BoolVar(&o.autoApprove, "auto-approve", false, "do not ask for confirmation")
	fs.BoolVar(&o.input, "input", true, "ask for approval on the terminal; with -input=false a plan that needs approval fails unless -auto-approve is given")
	fs.BoolVar(&o.json, "json", false, "print a machine-readable stream of events, one JSON object a line (needs -auto-approve or a plan file)")
	fs.Var(&o.targets, "target", "limit to experiment.NAME (repeatable)")
	fs.BoolVar(&o.noColor, "no-color", false, "no colours")
	fs.IntVar(&o.parallelism, "parallelism", 16, "concurrent platform operations")
	fs.BoolVar(&o.takeOver, "take-over", false, "take over the unfinished trials another working copy sharing the state owns (it is gone for good): they are resumed here, or torn down by destroy")
}

func runApply(ctx context.Context, g *Globals, args []string) int {
	var o applyOptions
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	o.register(fs)
	fs.BoolVar(&o.wait, "wait", false, "keep reconciling until every experiment is done")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "with -wait: time between passes when nothing signals a change")
	o.trials.register(fs)
	pos, code, ok := g.parse(fs, args, argSpec{max: 1, hint: "apply takes one argument at most: a plan file saved by `trialform plan -out=FILE`."})
	if !ok {
		return code
	}
	planFile := ""
	if len(pos) == 1 {
		planFile = pos[0]
		if len(o.trials.replace)+len(o.trials.stop) > 0 {
			return g.errorf("-replace and -stop cannot change a saved plan; pass them to `trialform plan -out FILE` instead")
		}
		if o.takeOver {
			return g.errorf("-take-over cannot change a saved plan: run `trialform apply -take-over` without the plan file")
		}
	}
	return g.apply(ctx, o, planFile)
}

func runDestroy(ctx context.Context, g *Globals, args []string) int {
	var o applyOptions
	fs := flag.NewFlagSet("destroy", flag.ContinueOnError)
	o.register(fs)
	if _, code, ok := g.parse(fs, args, argSpec{hint: "destroy takes no experiment names: to destroy only experiment {arg}, use -target=experiment.{arg} (repeatable)."}); !ok {
		return code
	}
	o.destroy = true
	return g.apply(ctx, o, "")
}

// countingHooks are the hooks of apply: they print (or emit events) and
// count the actions done.
type countingHooks interface {
	apply.Hooks
	count(plan.Action) int
}

func (g *Globals) apply(ctx context.Context, o applyOptions, planFile string) int {
	c := g.colors(o.noColor)
	if o.json {
		g.events = views.NewEvents(g.IO.Out)
		g.events.Version(Version)
		c = views.Colors{}
		if planFile == "" && !o.autoApprove {
			return g.errorf("-json needs -auto-approve (or a plan file): there is no terminal to ask for approval on")
		}
	}
	cfg := g.loadConfig(o.vars, o.noColor)
	if cfg == nil {
		return 1
	}
	op := "apply"
	if o.destroy {
		op = "destroy"
	}
	sd, m, lk, st, ok := g.openLockedState(ctx, cfg, op, o.lock, configScope(cfg, o.targets))
	if !ok {
		return 1
	}
	defer func() {
		// Unlock compacts the journal into state.json; when it cannot,
		// the journal still holds every change.
		if err := lk.Unlock(); err != nil {
			g.warnf("%v (the state journal keeps every change; the next command compacts it)", err)
		}
	}()
	if !o.destroy && !g.checkLost(m, sd) {
		return 1
	}
	ps := newProviderSet(cfg, sd)
	defer ps.Close()
	if _, err := ps.identify(); err != nil {
		return g.errorf("%v", err)
	}
	if !o.destroy && !g.checkPlatforms(ctx, cfg, ps) {
		return 1
	}
	s := apply.NewSession(cfg, st, m, ps)
	var pv *provenance
	if !o.destroy {
		pv = g.readProvenance(cfg, sd)
		s.Provenance = pv.byExp
	}
	s.Parallelism = o.parallelism
	s.TakeOver = o.takeOver
	s.Hard = g.hard(ctx)
	out := &lineWriter{w: g.IO.Out}
	var hooks countingHooks
	if g.events != nil {
		hooks = &eventHooks{ev: g.events, where: machineOf(cfg, s), started: map[*plan.TrialAction]time.Time{}}
	} else {
		hooks = &printHooks{w: out, c: c, where: machineOf(cfg, s)}
	}
	s.Hooks = hooks

	var p *plan.Plan
	var err error
	if planFile != "" {
		p, err = readPlanFile(planFile)
		if err != nil {
			return g.errorf("%v", err)
		}
		if err := apply.CheckFresh(p, st); err != nil {
			return g.errorf("%v", err)
		}
		if err := checkPlanConfig(p, cfg); err != nil {
			return g.errorf("%v", err)
		}
		if _, _, err := s.Refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return g.interrupted(op)
			}
			return g.errorf("refresh: %v", err)
		}
		if g.events != nil {
			g.events.Plan(p)
		}
	} else {
		p, err = s.Plan(ctx, plan.Options{Destroy: o.destroy, Targets: o.targets, Replace: o.trials.replace, Stop: o.trials.stop})
		if err != nil {
			if ctx.Err() != nil {
				return g.interrupted(op)
			}
			return g.errorf("plan: %v", err)
		}
		if pv != nil {
			pv.note(p)
		}
		if g.events != nil {
			g.events.Plan(p)
		} else {
			views.Plan(out, p, c)
		}
		if p.HasChanges() && !o.autoApprove {
			if !o.input {
				return g.errorf("the plan needs approval and -input=false forbids asking: review it with `trialform plan -out=FILE` and apply the file, or add -auto-approve")
			}
			q := "Do you want to perform these actions?"
			if o.destroy {
				q = "Do you really want to destroy these experiments and tear down their trials?"
			}
			yes, err := g.confirm(ctx, q)
			if ctx.Err() != nil {
				return g.interrupted(op)
			}
			if err != nil {
				return g.errorf("read the answer: %v (use -auto-approve where there is no terminal)", err)
			}
			if !yes {
				fmt.Fprintln(g.IO.Out, "Apply cancelled.")
				return 1
			}
		}
	}
	removing := map[string]int{} // experiments to delete → trials in the state
	if o.destroy {
		cur := s.State()
		for _, ep := range p.Experiments {
			if ep.Action == plan.Delete {
				if e := cur.Experiments[ep.Name]; e != nil {
					removing[ep.Name] = len(e.Trials)
				}
			}
		}
	}
	applyErr := s.Apply(ctx, p)
	code := g.reportApply(ctx, applyErr)
	if apply.IsFatal(applyErr) {
		fmt.Fprintln(g.IO.Err, "Apply failed: the state could not be saved. Fix the cause above and run `trialform apply` again; trials already started are picked up.")
		return 1
	}
	if ctx.Err() != nil {
		return g.interrupted(op)
	}
	if o.destroy {
		exps, trials := 0, 0
		after := s.State()
		for name, n := range removing {
			if after.Experiments[name] == nil {
				exps++
				trials += n
			}
		}
		if g.events != nil {
			g.events.Emit(views.Event{Type: "change_summary", Message: views.DestroySummary(exps, trials),
				Changes: &views.ChangeSummaryJSON{Operation: "destroy", Teardown: hooks.count(plan.Teardown), Experiments: exps, Trials: trials}})
		} else {
			fmt.Fprintln(out, c.Bold("\n"+views.DestroySummary(exps, trials)))
		}
		return code
	}
	if !o.wait {
		if code == 0 && g.reportFailed(out, p, c) {
			code = ExitExperimentFailed
		}
		g.applySummary(out, hooks, c, code == ExitExperimentFailed)
		return code
	}
	// A failed action (reported above) is retried by the next pass, as
	// in every later pass of the wait.
	return g.wait(ctx, s, o, ps, out, hooks, c)
}

// applySummary prints "Apply complete! Trials: ..." (or its event).
func (g *Globals) applySummary(out io.Writer, hooks countingHooks, c views.Colors, failed bool) {
	head := "Apply complete!"
	if failed {
		head = "Apply complete, but an experiment failed (exit status 4)."
	}
	line := fmt.Sprintf("%s Trials: %d created, %d resumed, %d torn down.", head, hooks.count(plan.Create), hooks.count(plan.Resume), hooks.count(plan.Teardown))
	if g.events != nil {
		g.events.Emit(views.Event{Type: "change_summary", Message: line,
			Changes: &views.ChangeSummaryJSON{Operation: "apply", Create: hooks.count(plan.Create), Resume: hooks.count(plan.Resume), Teardown: hooks.count(plan.Teardown)}})
		return
	}
	fmt.Fprintln(out, c.Bold("\n"+line))
}

// interrupted reports a graceful stop after Ctrl-C (Main exits 128+N).
func (g *Globals) interrupted(op string) int {
	again := "trialform apply"
	if op == "destroy" {
		again = "trialform destroy"
	}
	msg := fmt.Sprintf("Interrupted: running trials keep running; run `%s` again to pick them up.", again)
	if g.events != nil {
		g.events.Diagnostic("error", "Interrupted", msg)
		return 1
	}
	fmt.Fprintln(g.IO.Err, "\n"+msg)
	return 1
}

func (g *Globals) wait(ctx context.Context, s *apply.Session, o applyOptions, ps *providerSet, out *lineWriter, hooks countingHooks, c views.Colors) int {
	defer loopGC()()
	if g.events == nil {
		fmt.Fprintln(out, "\nWaiting for every experiment to finish (Ctrl-C stops waiting; trials keep running)...")
	}
	var bar *progressbar.ProgressBar
	if g.IO.IsTTY && g.events == nil {
		total := 0
		for _, e := range s.Config.Experiments {
			total += e.MaxTrials
		}
		bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(g.IO.Out),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
		)
		out.bar = bar
	}
	last, err := s.Run(ctx, apply.RunOptions{
		Plan:     plan.Options{Targets: o.targets},
		Interval: o.interval,
		Notify:   ps.notify(),
		OnPass: func(p *plan.Plan, err error) {
			if p == nil {
				return
			}
			if g.events != nil {
				g.events.Progress(p)
			}
			done := 0
			line := ""
			for _, ep := range p.Experiments {
				done += views.Ended(ep)
				if line != "" {
					line += "; "
				}
				line += views.StatusLine(ep)
			}
			if bar != nil {
				bar.Describe(line)
				bar.Set(done)
			}
			// An error of a pass Ctrl-C cut short is the interruption,
			// reported once below.
			if err != nil && !apply.IsSkipped(err) && ctx.Err() == nil {
				for _, e := range applyErrors(err) {
					if g.events != nil {
						g.events.Diagnostic("error", e.Error(), "")
					} else {
						fmt.Fprintln(out, c.Red("Error: ")+e.Error())
					}
				}
			}
		},
	})
	if bar != nil {
		// The bar stays as the last pass drew it (20/20 at the end; it
		// is not cleared on finish, which hid the last frame).
		bar.Exit()
		out.bar = nil
		fmt.Fprintln(g.IO.Out)
	}
	if ctx.Err() != nil {
		return g.interrupted("apply")
	}
	if err != nil {
		return g.errorf("%v", err)
	}
	if g.events == nil {
		fmt.Fprintln(out)
		for _, ep := range last.Experiments {
			fmt.Fprintln(out, views.StatusLine(ep))
		}
		for _, ep := range last.Experiments {
			if line := views.ElsewhereLine(ep); line != "" {
				fmt.Fprintln(out, line)
			}
		}
	}
	failed := g.reportFailed(out, last, c)
	g.applySummary(out, hooks, c, failed)
	if failed {
		return ExitExperimentFailed
	}
	return 0
}

// ExitExperimentFailed is apply's exit status when an experiment it
// applied has failed: it ended because max_failed_trials was reached, or
// with no successful trial in its current generation. The README's exit
// code table lists it.
const ExitExperimentFailed = 4

// reportFailed reports, as errors, the experiments of p that ended failed;
// it says whether there were any.
func (g *Globals) reportFailed(out io.Writer, p *plan.Plan, c views.Colors) bool {
	found := false
	for _, ep := range p.Experiments {
		if !ep.Failed {
			continue
		}
		found = true
		msg := fmt.Sprintf("experiment %s failed: %s", ep.Name, ep.DoneReason)
		detail := fmt.Sprintf("`trialform trials %s -q status:failed` lists its failed trials and `trialform logs %s TRIAL` shows why; fix the cause, then raise max_trials (or max_failed_trials) or change the trial to run more", ep.Name, ep.Name)
		if strings.HasPrefix(ep.DoneReason, "max_duration") {
			// Its trials were not failed but torn down (CANCELED) at the
			// deadline, or it ran out of time before one ended.
			detail = fmt.Sprintf("its max_duration ran out before a trial succeeded; `trialform trials %s -q status:canceled` lists the trials it stopped and `trialform logs %s TRIAL` shows how far they got; raise max_duration, or set on_max_duration = \"finish\" to let running trials finish", ep.Name, ep.Name)
		}
		if g.events != nil {
			g.events.Diagnostic("error", msg, detail)
			continue
		}
		fmt.Fprintln(out, c.Red("Error: ")+msg+"\n  "+detail)
	}
	return found
}

func (g *Globals) reportApply(ctx context.Context, err error) int {
	if err == nil {
		return 0
	}
	if apply.IsFatal(err) {
		g.errorf("%v", err)
		return 1
	}
	errs := applyErrors(err)
	if ctx.Err() != nil {
		// Interrupted: what failed because of it is not worth a line.
		return 0
	}
	for _, e := range errs {
		g.errorf("%v", e)
	}
	if len(errs) > 0 {
		return 1
	}
	return 0
}

// applyErrors splits what Apply returned into the errors worth reporting:
// not skipped actions (waiting for capacity) and not cancellation.
func applyErrors(err error) []error {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		errs = m.Unwrap()
	}
	var out []error
	for _, e := range errs {
		if apply.IsSkipped(e) || errors.Is(e, context.Canceled) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// checkPlanConfig refuses a saved plan made from another configuration.
func checkPlanConfig(p *plan.Plan, cfg *schema.Config) error {
	for _, ep := range p.Experiments {
		if ep.Action == plan.Delete {
			continue
		}
		e := cfg.Experiments[ep.Name]
		if e == nil || plan.SpecHash(e) != ep.SpecHash || !plan.SettingsOf(e).Equal(ep.Settings) {
			return fmt.Errorf("%w: experiment %q changed in the configuration since the plan was made; run plan again", apply.ErrStalePlan, ep.Name)
		}
		for _, ta := range ep.Trials {
			if ta.Action != plan.Create {
				continue
			}
			if err := plan.CheckTrialParams(e, ta.Params); err != nil {
				return fmt.Errorf("the saved plan would create %s/%s with parameters outside the search space: %v; make a new plan with `trialform plan -out FILE`", ep.Name, ta.TrialID, err)
			}
		}
	}
	return nil
}

// printHooks prints one line per finished trial action and per observed
// change.
type printHooks struct {
	w      io.Writer
	c      views.Colors
	mu     sync.Mutex
	counts map[plan.Action]int
	// where names where a started trial went (the machine), "" when its
	// provider does not say (machineOf).
	where func(exp, id string) string
}

// machineOf returns printHooks.where: where a started trial runs, from
// its platform's provider when that is a providers.Locator (remote names
// the machine), else "".
func machineOf(cfg *schema.Config, s *apply.Session) func(exp, id string) string {
	return func(exp, id string) string {
		e := cfg.Experiments[exp]
		if e == nil || e.Platform == nil {
			return ""
		}
		p, err := s.Providers.Provider(e.Platform.Key())
		if err != nil {
			return ""
		}
		loc, ok := p.(providers.Locator)
		if !ok {
			return ""
		}
		if se := s.State().Experiments[exp]; se != nil {
			if t := se.Trials[id]; t != nil {
				return loc.Location(t.Handle)
			}
		}
		return ""
	}
}

func (h *printHooks) count(a plan.Action) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[a]
}

func (h *printHooks) TrialAction(a *plan.TrialAction, done bool, err error) {
	if !done {
		return
	}
	on := ""
	if h.where != nil && err == nil && (a.Action == plan.Create || a.Action == plan.Resume) {
		if m := h.where(a.Experiment, a.TrialID); m != "" {
			on = " on " + m
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = map[plan.Action]int{}
	}
	name := a.Experiment + "/" + a.TrialID
	switch {
	case err != nil && apply.IsSkipped(err):
		fmt.Fprintf(h.w, "  %s %s: %s\n", h.c.Dim("."), name, views.Safe(err.Error()))
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(h.w, "  %s %s: %s cancelled by the interrupt\n", h.c.Red("!"), name, a.Action)
	case err != nil:
		fmt.Fprintf(h.w, "  %s %s: %s failed: %s\n", h.c.Red("!"), name, a.Action, views.Safe(err.Error()))
	default:
		h.counts[a.Action]++
		switch a.Action {
		case plan.Create:
			fmt.Fprintf(h.w, "  %s %s started%s  %s\n", h.c.Green("+"), name, on, views.FormatParams(a.Params))
		case plan.Resume:
			fmt.Fprintf(h.w, "  %s %s resumed%s\n", h.c.Yellow("~"), name, on)
		case plan.Teardown:
			fmt.Fprintf(h.w, "  %s %s torn down (%s)\n", h.c.Red("-"), name, views.Safe(a.Reason))
		}
	}
}

func (h *printHooks) Observed(o plan.Observed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := fmt.Sprintf("  %s/%s %s", o.Experiment, o.TrialID, o.After)
	if len(o.Values) > 0 {
		for _, v := range o.Values {
			line += " " + v.Metric + "=" + views.FormatMetric(&v.Value)
		}
	} else if o.Value != nil {
		line += " value=" + views.FormatMetric(o.Value)
	}
	if o.Reason != "" {
		line += " (" + views.Safe(o.Reason) + ")"
	}
	if o.After == state.Failed {
		line += fmt.Sprintf("; see `trialform logs %s %s`", o.Experiment, o.TrialID)
	}
	fmt.Fprintln(h.w, line)
}

// lineWriter writes whole lines, clearing the progress bar first on a
// terminal so lines and the bar do not mix.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bar != nil {
		l.bar.Clear()
	}
	n, err := l.w.Write(p)
	if l.bar != nil {
		l.bar.RenderBlank()
	}
	return n, err
}

// eventHooks emit apply_start, apply_complete, apply_errored and
// trial_status events (apply -json).
type eventHooks struct {
	ev      *views.Events
	where   func(exp, id string) string
	mu      sync.Mutex
	counts  map[plan.Action]int
	started map[*plan.TrialAction]time.Time
}

func (h *eventHooks) count(a plan.Action) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[a]
}

func (h *eventHooks) TrialAction(a *plan.TrialAction, done bool, err error) {
	name := a.Experiment + "/" + a.TrialID
	hook := &views.HookJSON{Experiment: a.Experiment, Trial: a.TrialID, Action: a.Action}
	h.mu.Lock()
	if !done {
		h.started[a] = time.Now()
		h.mu.Unlock()
		h.ev.Emit(views.Event{Type: "apply_start", Message: name + ": " + string(a.Action) + " started", Hook: hook})
		return
	}
	if t, ok := h.started[a]; ok {
		hook.ElapsedSeconds = time.Since(t).Seconds()
		delete(h.started, a)
	}
	if err == nil {
		if h.counts == nil {
			h.counts = map[plan.Action]int{}
		}
		h.counts[a.Action]++
	}
	h.mu.Unlock()
	switch {
	case err != nil && apply.IsSkipped(err):
		hook.Error = err.Error()
		h.ev.Emit(views.Event{Type: "apply_errored", Level: "warn", Message: name + ": " + err.Error(), Hook: hook})
	case err != nil:
		hook.Error = err.Error()
		h.ev.Emit(views.Event{Type: "apply_errored", Level: "error", Message: name + ": " + string(a.Action) + " failed: " + err.Error(), Hook: hook})
	default:
		if h.where != nil && (a.Action == plan.Create || a.Action == plan.Resume) {
			hook.Machine = h.where(a.Experiment, a.TrialID)
		}
		h.ev.Emit(views.Event{Type: "apply_complete", Message: name + ": " + string(a.Action) + " complete", Hook: hook})
	}
}

func (h *eventHooks) Observed(o plan.Observed) {
	msg := fmt.Sprintf("%s/%s: %s -> %s", o.Experiment, o.TrialID, o.Before, o.After)
	h.ev.Emit(views.Event{Type: "trial_status", Message: msg, Observed: &o})
}

// loopGC makes the garbage collector run less often (GOGC 200, unless GOGC
// is set) while apply -wait or watch runs its loop, and returns what puts
// it back: a pass allocates little that lives, and with short trials the
// collector took 5% of the CLI's CPU (perf, 300 trials @16). The heap may
// grow to 3x what lives instead of 2x.
func loopGC() func() {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(200)
	return func() { debug.SetGCPercent(old) }
}
