package command

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// StateJSON is the `show -json` model of the state (format version 1).
type StateJSON struct {
	FormatVersion string                       `json:"format_version"`
	Serial        uint64                       `json:"serial"`
	Lineage       string                       `json:"lineage"`
	Experiments   map[string]*state.Experiment `json:"experiments"`
}

func runShow(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	noColor := fs.Bool("no-color", false, "no colours")
	pos, ok := parseFlags(fs, args, g.IO.Err)
	if !ok {
		return 1
	}
	if len(pos) == 1 {
		p, err := readPlanFile(pos[0])
		if err != nil {
			return g.errorf("%v", err)
		}
		if *asJSON {
			views.PlanJSON(g.IO.Out, p)
		} else {
			views.Plan(g.IO.Out, p, g.colors(*noColor))
		}
		return 0
	}
	if len(pos) > 1 {
		return g.errorf("show takes at most one argument, a saved plan file")
	}
	st := g.readState()
	if st == nil {
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(g.IO.Out)
		enc.SetIndent("", "  ")
		enc.Encode(StateJSON{FormatVersion: "1", Serial: st.Serial, Lineage: st.Lineage, Experiments: st.Experiments})
		return 0
	}
	sd, _ := g.stateDir()
	views.ShowState(g.IO.Out, st, g.colors(*noColor), state.NewManager(sd).RefreshedAt(st.Lineage), time.Now())
	return 0
}

// readState loads the state without locking (reads are atomic).
func (g *Globals) readState() *state.State {
	sd, err := g.stateDir()
	if err != nil {
		g.errorf("%v", err)
		return nil
	}
	return g.loadState(state.NewManager(sd))
}

func runLogs(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	follow := fs.Bool("f", false, "follow the output until the trial ends")
	pos, ok := parseFlags(fs, args, g.IO.Err)
	if !ok {
		return 1
	}
	if len(pos) != 2 {
		return g.errorf("usage: trialform logs EXPERIMENT TRIAL [-f]")
	}
	st := g.readState()
	if st == nil {
		return 1
	}
	e := st.Experiment(pos[0])
	if e == nil {
		return g.errorf("no experiment %q in the state", pos[0])
	}
	t := e.Trials[pos[1]]
	if t == nil {
		return g.errorf("experiment %q has no trial %q (trials: %s)", pos[0], pos[1], strings.Join(sortedKeys(e.Trials), ", "))
	}
	sd, _ := g.stateDir()
	cfgPS := newProviderSet(nil, sd)
	if cfg := g.loadConfigQuiet(); cfg != nil {
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
	if err := ls.Logs(ctx, providers.LogsRequest{Experiment: e.Name, TrialID: t.ID, Handle: providers.Handle(t.Handle), Follow: *follow, Out: g.IO.Out}); err != nil && ctx.Err() == nil {
		return g.errorf("logs of %s/%s: %v", e.Name, t.ID, err)
	}
	return 0
}

// loadConfigQuiet loads the configuration without printing diagnostics
// (commands that can work without it).
func (g *Globals) loadConfigQuiet() *schema.Config {
	wd, err := g.workDir()
	if err != nil {
		return nil
	}
	cfg, diags := schema.Load(wd, schema.LoadOptions{Environ: g.IO.Environ})
	if diags.HasErrors() {
		return nil
	}
	return cfg
}

func runState(ctx context.Context, g *Globals, args []string) int {
	if len(args) == 0 {
		return g.errorf("usage: trialform state list | show ADDRESS | rm ADDRESS...")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("state "+sub, flag.ContinueOnError)
	var lf lockFlags
	lf.register(fs)
	pos, ok := parseFlags(fs, args, g.IO.Err)
	if !ok {
		return 1
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
		if len(pos) != 1 {
			return g.errorf("usage: trialform state show ADDRESS (see `trialform state list`)")
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
		enc := json.NewEncoder(g.IO.Out)
		enc.SetIndent("", "  ")
		enc.Encode(v)
		return 0
	case "rm":
		if len(pos) == 0 {
			return g.errorf("usage: trialform state rm ADDRESS... (see `trialform state list`)")
		}
		sd, err := g.stateDir()
		if err != nil {
			return g.errorf("%v", err)
		}
		m := state.NewManager(sd)
		lk, ok := g.lock(ctx, m, "state rm", lf)
		if !ok {
			return 1
		}
		defer lk.Unlock()
		st := g.loadState(m)
		if st == nil {
			return 1
		}
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
			fmt.Fprintf(g.IO.Out, "Removed %s\n", a)
		}
		if err := m.Save(st); err != nil {
			return g.errorf("save state: %v", err)
		}
		fmt.Fprintln(g.IO.Out, "Objects on the platforms are not touched; a running trial no longer in the state is planned as an orphan teardown (or adopt it again with `trialform import EXPERIMENT TRIAL`).")
		return 0
	}
	return g.errorf("unknown state subcommand %q: use list, show or rm", sub)
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
	pos, ok := parseFlags(fs, args, g.IO.Err)
	if !ok {
		return 1
	}
	if len(pos) != 1 {
		return g.errorf("usage: trialform force-unlock LOCK_ID (the ID is in the lock error message)")
	}
	sd, err := g.stateDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	if err := state.NewManager(sd).ForceUnlock(pos[0]); err != nil {
		return g.errorf("%v", err)
	}
	fmt.Fprintln(g.IO.Out, "The state lock was removed. Make sure its holder is really gone.")
	return 0
}
