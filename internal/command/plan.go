package command

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/trialform/trialform/internal/fsread"
)

type planOptions struct {
	vars     varFlags
	out      string
	json     bool
	destroy  bool
	targets  targetFlag
	trials   trialFlags
	detailed bool
	noColor  bool
}

func runPlan(ctx context.Context, g *Globals, args []string) int {
	var o planOptions
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	o.vars.register(fs)
	fs.StringVar(&o.out, "out", "", "save the plan to this file; apply it exactly with trialform apply FILE")
	fs.BoolVar(&o.json, "json", false, "print the plan as JSON")
	fs.BoolVar(&o.destroy, "destroy", false, "plan to tear everything down")
	fs.Var(&o.targets, "target", "limit to experiment.NAME (repeatable)")
	o.trials.register(fs)
	fs.BoolVar(&o.detailed, "detailed-exitcode", false, "exit 0: no changes, 1: error, 2: changes")
	fs.BoolVar(&o.noColor, "no-color", false, "no colours")
	if _, code, ok := g.parse(fs, args, argSpec{hint: "plan takes no arguments: to plan some experiments only, use -target=experiment.NAME; to plan from another directory, trialform -chdir=DIR plan."}); !ok {
		return code
	}
	if o.out != "" {
		if err := checkPlanOut(o.out); err != nil {
			return g.errorf("-out=%s: %v", o.out, err)
		}
	}
	p, st, code := g.makePlan(ctx, o.vars, o.noColor, plan.Options{Destroy: o.destroy, Targets: o.targets, Replace: o.trials.replace, Stop: o.trials.stop})
	if p == nil {
		return code
	}
	if o.json {
		if err := views.PlanJSON(g.IO.Out, p); err != nil {
			return g.errorf("write the plan as JSON: %v", err)
		}
	} else {
		views.Plan(g.IO.Out, p, g.colors(o.noColor))
		// What the controller holds (state.Hold): the plan above shows
		// the change; this says who waits for whom.
		views.HeldChanges(g.IO.Out, st, g.colors(o.noColor), time.Now(), false)
	}
	if o.out != "" {
		if err := writePlanFile(o.out, p); err != nil {
			return g.errorf("save plan: %v", err)
		}
		if !o.json {
			views.PlanSaved(g.IO.Out, o.out)
		}
	}
	if o.detailed && p.HasChanges() {
		return 2
	}
	return 0
}

// makePlan loads config and state, refreshes (without writing the state)
// and computes a plan; st is the state it was planned from (before the
// refresh).
func (g *Globals) makePlan(ctx context.Context, v varFlags, noColor bool, opts plan.Options) (p *plan.Plan, st *state.State, code int) {
	cfg := g.loadConfig(v, noColor)
	if cfg == nil {
		return nil, nil, 1
	}
	sd, m, ok := g.openBackend(cfg)
	if !ok {
		return nil, nil, 1
	}
	// Plan never writes the state and takes no lock. Without a state file
	// it plans against a new, unsaved state; a saved plan made so carries
	// that state's lineage and serial 0, which apply adopts if there is
	// still no state then (apply.CheckFresh).
	ps := newProviderSet(cfg, sd)
	defer ps.Close()
	if !opts.Destroy && !g.checkLost(ctx, m, sd, cfg, ps) {
		return nil, nil, 1
	}
	st = g.loadState(m)
	if st == nil {
		return nil, nil, 1
	}
	if !opts.Destroy && !g.checkPlatforms(ctx, cfg, ps) {
		return nil, nil, 1
	}
	// The holds only (cloning 10,000 trials would cost the plan time).
	holds := state.New()
	for n, e := range st.Experiments {
		if e.Hold != nil {
			holds.Experiments[n] = &state.Experiment{Name: n, Hold: e.Hold, Approval: e.Approval}
		}
	}
	s := apply.NewSession(cfg, st, newMemStore(m), ps)
	s.PlanOnly = true // a memory store: what it refreshes is not kept
	p, err := s.Plan(ctx, opts)
	if err != nil {
		return nil, nil, g.errorf("plan: %v", err)
	}
	if !opts.Destroy {
		g.readProvenance(cfg, sd).note(p)
	}
	if p.Variables, err = encodeVars(cfg.GivenVars); err != nil {
		return nil, nil, g.errorf("plan: %v", err)
	}
	return p, holds, 0
}

// encodeVars writes variables' values as a plan keeps them.
func encodeVars(vals map[string]cty.Value) (map[string]json.RawMessage, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(vals))
	for name, v := range vals {
		b, err := ctyjson.SimpleJSONValue{Value: v}.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("variable %q: %v", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// decodeVars reads the variables a saved plan kept.
func decodeVars(path string, raw map[string]json.RawMessage) (map[string]cty.Value, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := make(map[string]cty.Value, len(raw))
	for name, b := range raw {
		var v ctyjson.SimpleJSONValue
		if err := v.UnmarshalJSON(b); err != nil {
			return nil, fmt.Errorf("%s: variable %q: %v; make a new plan with `trialform plan -out FILE`", path, name, err)
		}
		out[name] = v.Value
	}
	return out, nil
}

// checkPlanOut refuses a -out file that would overwrite what is not a
// saved plan (a configuration file, say) or be read as configuration.
func checkPlanOut(path string) error {
	if strings.HasSuffix(path, ".hcl") {
		return errors.New("a plan file named *.hcl would be read as configuration; name it like next.plan")
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := readPlanFile(path); err != nil {
		return fmt.Errorf("the file exists and is not a saved plan, so plan does not overwrite it: choose another -out file, or remove it")
	}
	return nil
}

// noPlanFileError is a plan file that does not exist.
type noPlanFileError struct{ path string }

func (e *noPlanFileError) Error() string {
	return fmt.Sprintf("%s: no such plan file (a plan saved by `trialform plan -out=FILE`)", e.path)
}

// planFileError reports why the saved plan path of cmd (apply, show)
// could not be read. A path that does not exist but names an experiment of
// the configuration is a newcomer's `apply svm`: instead says what to type.
func (g *Globals) planFileError(cmd, path string, err error, instead func(exp string) string) int {
	var missing *noPlanFileError
	if !errors.As(err, &missing) {
		return g.errorf("%v", err)
	}
	name := strings.TrimPrefix(path, "experiment.")
	if cfg := g.loadConfigQuiet(); cfg != nil && cfg.Experiments[name] != nil {
		return g.errorf("%s: no such plan file; %s takes a plan saved by `trialform plan -out=FILE`, not an experiment name: %s", path, cmd, instead(name))
	}
	return g.errorf("%v", err)
}

func writePlanFile(path string, p *plan.Plan) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(path, append(b, '\n'), 0o644)
}

func readPlanFile(path string) (*plan.Plan, error) {
	b, err := fsread.ReadFile(path, fsread.MaxState)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &noPlanFileError{path: path}
	}
	if err != nil {
		return nil, err
	}
	var p plan.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s is not a saved trialform plan: %v", path, err)
	}
	if p.FormatVersion != plan.FormatVersion {
		return nil, fmt.Errorf("%s has plan format %q; this trialform reads format %q", path, p.FormatVersion, plan.FormatVersion)
	}
	return &p, nil
}
