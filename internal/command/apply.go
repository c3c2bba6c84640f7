package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/zclconf/go-cty/cty"
)

type applyOptions struct {
	vars        varFlags
	lock        lockFlags
	autoApprove bool
	input       bool
	json        bool
	wait        bool
	interval    time.Duration
	targets     targetFlag
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
	var saved *plan.Plan
	var savedVars map[string]cty.Value
	if planFile != "" {
		var err error
		if saved, err = readPlanFile(planFile); err != nil {
			return g.planFileError("apply", planFile, err, func(exp string) string {
				return fmt.Sprintf("to apply only experiment %s, use -target=experiment.%s", exp, exp)
			})
		}
		if savedVars, err = decodeVars(planFile, saved.Variables); err != nil {
			return g.errorf("%v", err)
		}
	}
	cfg := g.loadConfigSaved(o.vars, savedVars, o.noColor)
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
	ps := newProviderSet(cfg, sd)
	defer ps.Close()
	if !o.destroy && !g.checkLost(ctx, m, sd, cfg, ps) {
		return 1
	}
	if _, err := ps.identify(); err != nil {
		return g.errorf("%v", err)
	}
	if !o.destroy && !g.checkPlatforms(ctx, cfg, ps) {
		return 1
	}
	s := apply.NewSession(cfg, st, g.retrying(m), ps)
	var pv *provenance
	if !o.destroy {
		pv = g.readProvenance(cfg, sd)
		s.Provenance = pv.byExp
	}
	s.Parallelism = o.parallelism
	s.TakeOver = o.takeOver
	s.Hard = g.hard(ctx)
	view := views.NewApply(views.ApplyOptions{Out: g.IO.Out, Err: g.IO.Err, TTY: g.IO.IsTTY, Colors: c, Events: g.events,
		Where: machineOf(cfg, s), Skipped: apply.IsSkipped})
	s.Hooks = view

	var p *plan.Plan
	var err error
	if planFile != "" {
		p = saved
		if err := apply.CheckFresh(p, st); err != nil {
			return g.errorf("%v", err)
		}
		if err := checkPlanConfig(p, cfg); err != nil {
			return g.errorf("%v", err)
		}
		if _, _, err := s.RefreshTargets(ctx, p.Targets); err != nil {
			if ctx.Err() != nil {
				return g.interrupted(op)
			}
			code := g.errorf("refresh: %v", err)
			if apply.IsFatal(err) {
				view.NotSaved()
			}
			return code
		}
		view.Plan(p, true)
	} else {
		p, err = s.Plan(ctx, plan.Options{Destroy: o.destroy, Targets: o.targets, Replace: o.trials.replace, Stop: o.trials.stop})
		if err != nil {
			if ctx.Err() != nil {
				return g.interrupted(op)
			}
			code := g.errorf("plan: %v", err)
			if apply.IsFatal(err) {
				view.NotSaved()
			}
			return code
		}
		if pv != nil {
			pv.note(p)
		}
		view.Plan(p, false)
		if p.HasChanges() && !o.autoApprove {
			if !o.input {
				save := "trialform plan -out=FILE"
				if o.destroy {
					save = "trialform plan -destroy -out=FILE"
				}
				return g.errorf("the plan needs approval and -input=false forbids asking: review it with `%s` and apply the file, or add -auto-approve", save)
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
				view.Cancelled(o.destroy)
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
		view.NotSaved()
		return 1
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
		if ctx.Err() != nil && exps < len(removing) {
			views.InterruptedDestroy(g.events, g.IO.Err, len(removing)-exps)
			return 1
		}
		// Interrupted after the last teardown: destroy is done.
		view.DestroySummary(exps, trials, len(removing)-exps)
		return code
	}
	if ctx.Err() != nil {
		return g.interrupted(op)
	}
	if !o.wait {
		if code == 0 && reportFailed(view, p) {
			code = ExitExperimentFailed
		}
		view.Summary(code == ExitExperimentFailed)
		return code
	}
	// A failed action (reported above) is retried by the next pass, as
	// in every later pass of the wait.
	return g.wait(ctx, s, o, ps, view)
}

// interrupted reports a graceful stop after Ctrl-C (Main exits 128+N).
func (g *Globals) interrupted(op string) int {
	views.Interrupted(g.events, g.IO.Err, op)
	return 1
}

func (g *Globals) wait(ctx context.Context, s *apply.Session, o applyOptions, ps *providerSet, view views.Apply) int {
	defer loopGC()()
	total := 0
	for _, e := range s.Config.Experiments {
		total += e.MaxTrials
	}
	view.WaitStart(total)
	ps.followTrials()
	last, err := s.Run(ctx, apply.RunOptions{
		Plan:     plan.Options{Targets: o.targets},
		Interval: o.interval,
		Notify:   ps.notify(),
		OnPass: func(p *plan.Plan, err error) {
			if p == nil {
				return
			}
			// An error of a pass Ctrl-C cut short is the interruption,
			// reported once below.
			var errs []error
			if err != nil && !apply.IsSkipped(err) && ctx.Err() == nil {
				errs = applyErrors(err)
			}
			view.Pass(p, errs)
		},
	})
	view.WaitEnd()
	if ctx.Err() != nil {
		return g.interrupted("apply")
	}
	if err != nil {
		code := g.errorf("%v", err)
		if apply.IsFatal(err) {
			view.NotSaved()
		}
		return code
	}
	view.Status(last)
	failed := reportFailed(view, last)
	view.Summary(failed)
	if failed {
		return ExitExperimentFailed
	}
	return 0
}

// ExitExperimentFailed is apply's exit status when an experiment it
// applied has failed: it ended because max_failed_trials was reached, or
// with no successful trial in its current generation. The exit codes of
// docs/cli/README.md list it.
const ExitExperimentFailed = 4

// reportFailed reports, as errors, the experiments of p that ended failed;
// it says whether there were any.
func reportFailed(view views.Apply, p *plan.Plan) bool {
	found := false
	for _, ep := range p.Experiments {
		if ep.Failed {
			view.ExperimentFailed(ep)
			found = true
		}
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
		var what []string
		switch {
		case e == nil:
			what = []string{"it is no longer in the configuration"}
		default:
			if plan.SpecHash(e) != ep.SpecHash {
				what = append(what, "its trial definition or search space")
			}
			what = append(what, ep.Settings.Diff(plan.SettingsOf(e))...)
		}
		if len(what) > 0 {
			return fmt.Errorf("%w: experiment %q changed in the configuration since the plan was made (%s); run plan again", apply.ErrStalePlan, ep.Name, strings.Join(what, "; "))
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

// machineOf returns where a started trial runs (views.ApplyOptions.Where), from
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
