package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

type applyOptions struct {
	vars        varFlags
	lock        lockFlags
	autoApprove bool
	wait        bool
	interval    time.Duration
	targets     multiFlag
	noColor     bool
	parallelism int
	destroy     bool
}

func (o *applyOptions) register(fs *flag.FlagSet) {
	o.vars.register(fs)
	o.lock.register(fs)
	fs.BoolVar(&o.autoApprove, "auto-approve", false, "do not ask for confirmation")
	fs.Var(&o.targets, "target", "limit to experiment.NAME (repeatable)")
	fs.BoolVar(&o.noColor, "no-color", false, "no colours")
	fs.IntVar(&o.parallelism, "parallelism", 16, "concurrent platform operations")
}

func runApply(ctx context.Context, g *Globals, args []string) int {
	var o applyOptions
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	o.register(fs)
	fs.BoolVar(&o.wait, "wait", false, "keep reconciling until every experiment is done")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "with -wait: time between passes when nothing signals a change")
	pos, ok := parseFlags(fs, args, g.IO.Err)
	if !ok {
		return 1
	}
	if len(pos) > 1 {
		return g.errorf("apply takes at most one argument, a saved plan file")
	}
	planFile := ""
	if len(pos) == 1 {
		planFile = pos[0]
	}
	return g.apply(ctx, o, planFile)
}

func runDestroy(ctx context.Context, g *Globals, args []string) int {
	var o applyOptions
	fs := flag.NewFlagSet("destroy", flag.ContinueOnError)
	o.register(fs)
	if _, ok := parseFlags(fs, args, g.IO.Err); !ok {
		return 1
	}
	o.destroy = true
	return g.apply(ctx, o, "")
}

func (g *Globals) apply(ctx context.Context, o applyOptions, planFile string) int {
	c := g.colors(o.noColor)
	cfg := g.loadConfig(o.vars, o.noColor)
	if cfg == nil {
		return 1
	}
	sd, err := g.stateDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	m := state.NewManager(sd)
	op := "apply"
	if o.destroy {
		op = "destroy"
	}
	lk, st, ok := g.lockedState(ctx, m, op, o.lock)
	if !ok {
		return 1
	}
	defer lk.Unlock()
	ps := newProviderSet(cfg, sd)
	defer ps.Close()
	if !o.destroy && !g.checkPlatforms(ctx, cfg, ps) {
		return 1
	}
	s := apply.NewSession(cfg, st, m, ps)
	s.Parallelism = o.parallelism
	out := &lineWriter{w: g.IO.Out}
	hooks := &printHooks{w: out, c: c, where: machineOf(cfg, s)}
	s.Hooks = hooks

	var p *plan.Plan
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
			return g.errorf("refresh: %v", err)
		}
	} else {
		p, err = s.Plan(ctx, plan.Options{Destroy: o.destroy, Targets: o.targets})
		if err != nil {
			return g.errorf("plan: %v", err)
		}
		views.Plan(out, p, c)
		if p.HasChanges() && !o.autoApprove {
			q := "Do you want to perform these actions?"
			if o.destroy {
				q = "Do you really want to destroy these experiments and tear down their trials?"
			}
			if !g.confirm(q) {
				fmt.Fprintln(g.IO.Out, "Apply cancelled.")
				return 1
			}
		}
	}
	applyErr := s.Apply(ctx, p)
	code := g.reportApply(applyErr, hooks)
	if apply.IsFatal(applyErr) {
		fmt.Fprintln(g.IO.Err, "Apply failed: the state could not be saved. Fix the cause above and run `trialform apply` again; trials already started are picked up.")
		return 1
	}
	if ctx.Err() != nil {
		fmt.Fprintln(g.IO.Err, "\nInterrupted: running trials keep running; run `trialform apply` again to pick them up.")
		return 1
	}
	if !o.wait || code != 0 || o.destroy {
		fmt.Fprintln(out, c.Bold(fmt.Sprintf("\nApply complete! Trials: %d created, %d resumed, %d torn down.", hooks.count(plan.Create), hooks.count(plan.Resume), hooks.count(plan.Teardown))))
		return code
	}
	return g.wait(ctx, s, o, ps, out, hooks, c)
}

func (g *Globals) wait(ctx context.Context, s *apply.Session, o applyOptions, ps *providerSet, out *lineWriter, hooks *printHooks, c views.Colors) int {
	fmt.Fprintln(out, "\nWaiting for every experiment to finish (Ctrl-C stops waiting; trials keep running)...")
	var bar *progressbar.ProgressBar
	if g.IO.IsTTY {
		total := 0
		for _, e := range s.Config.Experiments {
			total += e.MaxTrials
		}
		bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(g.IO.Out),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionClearOnFinish(),
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
			done := 0
			line := ""
			for _, ep := range p.Experiments {
				bs := ep.Progress.ByStatus
				done += bs[state.Succeeded] + bs[state.Failed] + bs[state.EarlyStopped]
				if line != "" {
					line += "; "
				}
				line += views.StatusLine(ep)
			}
			if bar != nil {
				bar.Describe(line)
				bar.Set(done)
			}
			if err != nil && !apply.IsSkipped(err) {
				fmt.Fprintln(out, c.Red("Error: ")+err.Error())
			}
		},
	})
	if bar != nil {
		bar.Finish()
		out.bar = nil
	}
	if ctx.Err() != nil {
		fmt.Fprintln(g.IO.Err, "\nInterrupted: running trials keep running; run `trialform apply -wait` again to pick them up.")
		return 1
	}
	if err != nil {
		return g.errorf("%v", err)
	}
	fmt.Fprintln(out)
	for _, ep := range last.Experiments {
		fmt.Fprintln(out, views.StatusLine(ep))
	}
	fmt.Fprintln(out, c.Bold(fmt.Sprintf("\nApply complete! Trials: %d created, %d resumed, %d torn down.", hooks.count(plan.Create), hooks.count(plan.Resume), hooks.count(plan.Teardown))))
	return 0
}

func (g *Globals) reportApply(err error, h *printHooks) int {
	if err == nil {
		return 0
	}
	if apply.IsFatal(err) {
		g.errorf("%v", err)
		return 1
	}
	errs := applyErrors(err)
	for _, e := range errs {
		fmt.Fprintf(g.IO.Err, "Error: %v\n", e)
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
		if e == nil || plan.SpecHash(e) != ep.SpecHash || plan.SettingsOf(e) != ep.Settings {
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
	// where names the machine a started trial went to ("" when the
	// platform has one machine); nil for configurations without one.
	where func(exp, id string) string
}

// machineOf returns printHooks.where for configurations with remote
// platforms (their trials' handles name the machine), else nil.
func machineOf(cfg *schema.Config, s *apply.Session) func(exp, id string) string {
	remote := false
	for _, p := range cfg.Platforms {
		remote = remote || p.Kind == "remote"
	}
	if !remote {
		return nil
	}
	return func(exp, id string) string {
		if e := cfg.Experiments[exp]; e == nil || e.Platform == nil || e.Platform.Kind != "remote" {
			return ""
		}
		st := s.State()
		if e := st.Experiments[exp]; e != nil {
			if t := e.Trials[id]; t != nil {
				return t.Handle["machine"]
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
		fmt.Fprintf(h.w, "  %s %s: %s\n", h.c.Dim("."), name, err)
	case err != nil:
		fmt.Fprintf(h.w, "  %s %s: %s failed: %v\n", h.c.Red("!"), name, a.Action, err)
	default:
		h.counts[a.Action]++
		switch a.Action {
		case plan.Create:
			fmt.Fprintf(h.w, "  %s %s started%s  %s\n", h.c.Green("+"), name, on, views.FormatParams(a.Params))
		case plan.Resume:
			fmt.Fprintf(h.w, "  %s %s resumed%s\n", h.c.Yellow("~"), name, on)
		case plan.Teardown:
			fmt.Fprintf(h.w, "  %s %s torn down (%s)\n", h.c.Red("-"), name, a.Reason)
		}
	}
}

func (h *printHooks) Observed(o plan.Observed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := fmt.Sprintf("  %s/%s %s", o.Experiment, o.TrialID, o.After)
	if o.Value != nil {
		line += " value=" + views.FormatMetric(o.Value)
	}
	if o.Reason != "" {
		line += " (" + o.Reason + ")"
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
