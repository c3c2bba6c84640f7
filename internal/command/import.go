package command

import (
	"context"
	"flag"
	"strings"

	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/state"
)

// runImport adopts trials the platform holds but the state does not know
// (orphans of this state, trials of another state) into the state, as
// Terraform's import adopts existing objects:
//
//	trialform import EXPERIMENT TRIAL...   (or experiment.NAME.trial.ID, NAME/ID)
//	trialform import -all EXPERIMENT       every trial (running or ended) of EXPERIMENT the state does not know
func runImport(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	var vf varFlags
	vf.register(fs)
	var lf lockFlags
	lf.register(fs)
	all := fs.Bool("all", false, "import every trial, running or ended, that the platform holds for EXPERIMENT and the state does not know")
	noColor := fs.Bool("no-color", false, "no colours")
	pos, code, ok := g.parse(fs, args, argSpec{max: -1})
	if !ok {
		return code
	}
	usage := "usage: trialform import EXPERIMENT TRIAL... | trialform import experiment.NAME.trial.ID | trialform import -all EXPERIMENT"
	var exp string
	var ids []string
	switch {
	case len(pos) == 1:
		e, t, err := parseAddress(pos[0])
		if err != nil {
			return g.errorf("%v; %s", err, usage)
		}
		exp = e
		if t != "" {
			ids = []string{t}
		}
	case len(pos) > 1:
		exp, ids = strings.TrimPrefix(pos[0], "experiment."), pos[1:]
	}
	if exp == "" || (len(ids) == 0) != *all {
		return g.errorf("%s", usage)
	}

	cfg := g.loadConfig(vf, *noColor)
	if cfg == nil {
		return 1
	}
	if cfg.Experiments[exp] == nil {
		return g.errorf("experiment %q is not in the configuration (experiments: %s); import adopts trials into experiments the configuration defines", exp, strings.Join(sortedKeys(cfg.Experiments), ", "))
	}
	s, st, done, ok := g.lockedSession(ctx, cfg, "import", lf, func(*state.State) []string { return []string{exp} })
	if !ok {
		return 1
	}
	defer done()
	if *all {
		var err error
		if ids, err = s.Orphans(ctx, exp); err != nil {
			return g.errorf("%v", err)
		}
		if len(ids) == 0 {
			views.NothingToImport(g.IO.Out, exp)
			return 0
		}
	}
	code = 0
	for _, id := range ids {
		imp, err := s.Import(ctx, exp, id)
		if err != nil {
			code = g.errorf("%v", err)
			continue
		}
		previous := imp.PreviousLineage
		if previous == st.Lineage {
			previous = ""
		}
		views.Imported(g.IO.Out, exp, imp.Trial, previous)
	}
	if code == 0 {
		views.ImportDone(g.IO.Out)
	}
	return code
}
