package command

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/internal/mask"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backends"
)

func runShow(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	noColor := fs.Bool("no-color", false, "no colours")
	pos, code, ok := g.parse(fs, args, argSpec{max: 1, hint: "show takes one argument at most: a plan file saved by `trialform plan -out=FILE`."})
	if !ok {
		return code
	}
	if len(pos) == 1 {
		p, err := readPlanFile(pos[0])
		if err != nil {
			return g.planFileError("show", pos[0], err, func(exp string) string {
				return fmt.Sprintf("`trialform show` shows every experiment, `trialform trials %s` the trials of %s", exp, exp)
			})
		}
		if *asJSON {
			views.PlanJSON(g.IO.Out, p)
		} else {
			views.Plan(g.IO.Out, p, g.colors(*noColor))
		}
		return 0
	}
	m, st := g.readStateManager()
	if st == nil {
		return 1
	}
	g.backendNote()
	if *asJSON {
		if err := views.StateJSONWrite(g.IO.Out, st); err != nil {
			return g.errorf("%v", err)
		}
		return 0
	}
	views.ShowState(g.IO.Out, st, g.colors(*noColor), m.RefreshedAt(st.Lineage), time.Now())
	return 0
}

// readState loads the state without locking (reads are atomic).
func (g *Globals) readState() *state.State {
	_, st := g.readStateManager()
	return st
}

// readStateManager is readState that also returns the state's backend
// (the contract every reader goes through); st is nil when the state
// cannot be read (said).
func (g *Globals) readStateManager() (state.Backend, *state.State) {
	_, m, ok := g.openBackend(nil)
	if !ok {
		return nil, nil
	}
	return m, g.loadState(m)
}

func runLogs(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	follow := fs.Bool("f", false, "follow the output until the trial ends")
	pos, code, ok := g.parse(fs, args, argSpec{min: 2, max: 2, hint: "logs takes an experiment and a trial id (see `trialform trials EXPERIMENT`)."})
	if !ok {
		return code
	}
	st := g.readState()
	if st == nil {
		return 1
	}
	e := st.Experiment(pos[0])
	if e == nil {
		return g.errorf("no experiment %q in the state (experiments: %s)", pos[0], g.orNoneList(sortedKeys(st.Experiments)))
	}
	t := e.Trials[pos[1]]
	if t == nil {
		return g.errorf("experiment %q has no trial %q (trials: %s)", pos[0], pos[1], strings.Join(sortedKeys(e.Trials), ", "))
	}
	sd, _ := g.stateDir()
	cfgPS := newProviderSet(nil, sd)
	cfg := g.loadConfigQuiet()
	if cfg != nil {
		cfgPS = newProviderSet(cfg, sd)
	}
	defer cfgPS.Close()
	p, err := cfgPS.Provider(e.Platform)
	if err != nil {
		return g.errorf("%v", err)
	}
	ls, ok := p.(providers.LogStreamer)
	if !ok {
		return g.errorf("platform %s cannot show logs", e.Platform)
	}
	out := logMask(e, cfg).Writer(g.IO.Out)
	err = ls.Logs(ctx, providers.LogsRequest{Experiment: e.OnPlatform(), TrialID: t.ID, Handle: providers.Handle(t.Handle), Follow: *follow, Out: out})
	out.Close()
	if err != nil && ctx.Err() == nil {
		return g.errorf("logs of %s/%s: %v", e.Name, t.ID, err)
	}
	return 0
}

// logMask is what a trial's output is masked with wherever it is shown
// (logs, the dashboard): the experiment's masks recorded at apply (the
// values given then, by any means) and, when the configuration loads, its
// sensitive values now.
func logMask(e *state.Experiment, cfg *schema.Config) *mask.Set {
	s := mask.New()
	if e.Masks != nil {
		// a record edited by hand still masks what it can
		_ = s.Hashed(mask.Record{Salt: e.Masks.Salt, Hashes: e.Masks.Hashes})
	}
	if cfg != nil {
		s.Add(cfg.Secrets()...)
	}
	return s
}

// loadConfigQuiet loads the configuration without printing diagnostics
// (commands that can work without it).
func (g *Globals) loadConfigQuiet() *schema.Config {
	wd, err := g.workDir()
	if err != nil {
		return nil
	}
	cfg, diags := schema.Load(wd, schema.LoadOptions{Platforms: platformRegistry, Tuners: tunerRegistry, Backends: schemaBackends(), Environ: g.IO.Environ})
	if diags.HasErrors() {
		return nil
	}
	return cfg
}

func runState(ctx context.Context, g *Globals, args []string) int {
	top := flag.NewFlagSet("state", flag.ContinueOnError)
	switch {
	case g.probe != nil && len(args) == 0:
		g.probe(top)
		return 0
	case len(args) == 0:
		printHelp(g.IO.Err, top)
		return 1
	case args[0] == "help" || strings.TrimLeft(args[0], "-") == "h" || strings.TrimLeft(args[0], "-") == "help":
		printHelp(g.IO.Out, top)
		return 0
	case strings.HasPrefix(args[0], "-"):
		return g.errorf("%s before the state subcommand: use trialform state %s (see `trialform state -help`)", args[0], strings.ReplaceAll(stateSubcommandList(), ", ", " | "))
	}
	sub, args := args[0], args[1:]
	spec, known := stateSubcommandSpec(sub)
	if !known {
		if hint := didyoumean.Sentence(sub, stateSubcommandNames(), "%q"); hint != "" {
			return g.errorf("unknown state subcommand %q.%s (state takes %s; see `trialform state -help`)", sub, hint, stateSubcommandList())
		}
		return g.errorf("unknown state subcommand %q: use %s (see `trialform state -help`)", sub, stateSubcommandList())
	}
	fs := flag.NewFlagSet("state "+sub, flag.ContinueOnError)
	var lf lockFlags
	if sub == "rm" || sub == "mv" || sub == "push" {
		lf.register(fs)
	}
	force := false
	if sub == "push" {
		fs.BoolVar(&force, "force", false, "push a state of another lineage, an older one, another version with the same serial, or one with trials this working copy cannot reach (a warning)")
	}
	pos, code, ok := g.parse(fs, args, spec)
	if !ok {
		return code
	}
	switch sub {
	case "list":
		st := g.readState()
		if st == nil {
			return 1
		}
		views.StateList(g.IO.Out, st)
		return 0
	case "show":
		st := g.readState()
		if st == nil {
			return 1
		}
		exp, trial, err := parseAddress(pos[0])
		if err != nil {
			return g.errorf("%v", err)
		}
		e := st.Experiment(exp)
		if e == nil {
			return g.errorf("%s: no such experiment in the state", pos[0])
		}
		var v any = e
		if trial != "" {
			t := e.Trials[trial]
			if t == nil {
				return g.errorf("%s: no such trial in the state", pos[0])
			}
			v = t
		}
		views.JSONDocument(g.IO.Out, v)
		return 0
	case "rm":
		var names []string
		for _, a := range pos {
			if exp, _, err := parseAddress(a); err == nil {
				names = append(names, exp)
			}
		}
		_, m, lk, st, ok := g.openLockedState(ctx, nil, "state rm", lf, func(*state.State) []string { return names })
		if !ok {
			return 1
		}
		defer lk.Unlock()
		for _, a := range pos {
			exp, trial, err := parseAddress(a)
			if err != nil {
				return g.errorf("%v", err)
			}
			e := st.Experiment(exp)
			if e == nil || (trial != "" && e.Trials[trial] == nil) {
				return g.errorf("%s: not in the state; nothing was removed", a)
			}
			if trial == "" {
				delete(st.Experiments, exp)
			} else {
				delete(e.Trials, trial)
			}
			views.StateRemoved(g.IO.Out, a)
		}
		if err := state.SaveWhole(m, st); err != nil {
			return g.errorf("save state: %v", err)
		}
		views.StateRemoveDone(g.IO.Out)
		return 0
	}
	switch sub {
	case "mv":
		return g.stateMv(ctx, pos, lf)
	case "pull":
		return g.statePull()
	case "push":
		return g.statePush(ctx, pos[0], force, lf)
	}
	return g.errorf("unknown state subcommand %q", sub)
}

// stateSubcommands are state's subcommands, in the order the help, the
// errors and completion list them (all derived from this list).
var stateSubcommands = []struct {
	name, usage string
	spec        argSpec
}{
	{"list", "list", argSpec{hint: "state list takes no arguments."}},
	{"show", "show ADDRESS", argSpec{min: 1, max: 1, hint: "state show takes one address (see `trialform state list`)."}},
	{"rm", "rm ADDRESS...", argSpec{min: 1, max: -1}},
	{"mv", "mv SOURCE DESTINATION", argSpec{min: 2, max: 2, hint: "state mv takes two addresses: experiment.OLD experiment.NEW."}},
	{"pull", "pull", argSpec{hint: "state pull takes no arguments; it prints the state to standard output."}},
	{"push", "push FILE", argSpec{min: 1, max: 1, hint: "state push takes one file: a state document (from state pull), or - for standard input."}},
}

func stateSubcommandSpec(name string) (argSpec, bool) {
	for _, c := range stateSubcommands {
		if c.name == name {
			return c.spec, true
		}
	}
	return argSpec{}, false
}

func stateSubcommandNames() []string {
	var out []string
	for _, c := range stateSubcommands {
		out = append(out, c.name)
	}
	return out
}

// stateSubcommandList is "list, show ADDRESS, rm ADDRESS..., mv SOURCE DESTINATION".
func stateSubcommandList() string {
	var out []string
	for _, c := range stateSubcommands {
		out = append(out, c.usage)
	}
	return strings.Join(out, ", ")
}

// parseAddress reads experiment.NAME[.trial.ID] or NAME[/ID].
func parseAddress(a string) (exp, trial string, err error) {
	if strings.HasPrefix(a, "experiment.") {
		rest := strings.TrimPrefix(a, "experiment.")
		exp, trial, _ = strings.Cut(rest, ".trial.")
		return exp, trial, nil
	}
	if e, t, ok := strings.Cut(a, "/"); ok {
		return e, t, nil
	}
	if a == "" {
		return "", "", fmt.Errorf("empty address")
	}
	return a, "", nil
}

func runForceUnlock(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("force-unlock", flag.ContinueOnError)
	force := fs.Bool("force", false, "remove the lock even when its holder is a process that still runs on this machine")
	pos, code, ok := g.parse(fs, args, argSpec{min: 1, max: 1, hint: "force-unlock takes the lock id printed in the lock error."})
	if !ok {
		return code
	}
	if code, pending := g.forceUnlockPending(pos[0]); pending {
		return code
	}
	_, m, ok := g.openBackend(nil)
	if !ok {
		return 1
	}
	if !*force {
		if li := liveLocalHolder(m, pos[0]); li != nil {
			return g.errorf("lock %s is held by %s (pid %d on this machine, which still runs; since %s): it is not stale. Stop that command (Ctrl-C), or wait for it; if pid %d is not that command any more, run force-unlock -force %s",
				li.ID, li.Operation, li.PID, li.Created.Local().Format(time.DateTime), li.PID, li.ID)
		}
	}
	claim := false
	if cl, ok := m.(state.Claimer); ok {
		li, err := cl.CurrentClaim()
		claim = err == nil && li != nil && li.ID == pos[0]
	}
	if err := m.ForceUnlock(pos[0]); err != nil {
		return g.errorf("%v", err)
	}
	if claim {
		views.ClaimRemoved(g.IO.Out)
		return 0
	}
	views.LockRemoved(g.IO.Out)
	return 0
}

// liveLocalHolder returns the lock id's holder when it is a process of
// this machine that still runs (force-unlock is for a holder that is
// gone: removing a live one's lock lets a second command write beside it).
func liveLocalHolder(m state.Backend, id string) *state.LockInfo {
	locks, err := state.CurrentLocksOf(m)
	if err != nil {
		return nil
	}
	if cl, ok := m.(state.Claimer); ok {
		// The controller claim, released by its ID too.
		if li, err := cl.CurrentClaim(); err == nil && li != nil {
			locks = append(locks, *li)
		}
	}
	for i := range locks {
		if li := &locks[i]; li.ID == id && li.PID != os.Getpid() && li.RunsHere() {
			return li
		}
	}
	return nil
}

// forceUnlockPending releases lock id while the backend block differs
// from the one init recorded (init -migrate-state not run yet, or killed
// while it held a lock): the lock may be in either backend, and every
// other command refuses to open them until init, which a lock left by a
// killed process blocks. pending is false when no change is pending (the
// caller goes on as usual).
func (g *Globals) forceUnlockPending(id string) (code int, pending bool) {
	sd, err := g.stateDir()
	if err != nil {
		return 0, false
	}
	be, hasConfig, ok := g.configuredBackend(nil, nil)
	if !ok || !hasConfig {
		return 0, false
	}
	rec, err := state.RecordedBackend(sd)
	if err != nil {
		return 0, false
	}
	have := state.BackendRecord{Kind: state.LocalBackend}
	if rec != nil {
		have = *rec
	}
	want := backendRecordOf(be)
	if have.Same(want) {
		return 0, false
	}
	var settings any
	var secrets []string
	if be != nil {
		settings, secrets = be.Config, be.Secrets
	}
	var errs []string
	try := func(kind string, cfg any) bool {
		b, err := backends.Open(kind, cfg, g.backendEnv(sd))
		if err != nil {
			errs = append(errs, fmt.Sprintf("the %s backend: %s", kind, maskText(secrets, err.Error())))
			return false
		}
		defer closeIfCloser(b)
		if err := b.ForceUnlock(id); err != nil {
			errs = append(errs, fmt.Sprintf("the %s backend (%s): %s", kind, b.Location(), maskText(secrets, err.Error())))
			return false
		}
		return true
	}
	if try(want.Kind, settings) {
		views.LockRemoved(g.IO.Out)
		return 0, true
	}
	if srcCfg, err := decodeRecordedSettings(have); err == nil && try(have.Kind, srcCfg) {
		views.LockRemoved(g.IO.Out)
		return 0, true
	} else if err != nil {
		errs = append(errs, err.Error())
	}
	return g.errorf("the backend block changed from the recorded %s backend to %s (run `trialform init -migrate-state` once the lock is gone); lock %s is in neither: %s",
		have.Kind, want.Kind, id, strings.Join(errs, "; ")), true
}
