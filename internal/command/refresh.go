package command

import (
	"context"
	"flag"
	"maps"
	"strings"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/internal/views"
)

// runRefresh is `trialform refresh [EXPERIMENT...]`, Terraform's
// `apply -refresh-only`: under the state lock it reads every trial of the
// experiments from their platforms and writes what they report (status,
// metrics, intermediate results) into the state. It starts, resumes and
// stops nothing, and asks the tuner for nothing.
func runRefresh(ctx context.Context, g *Globals, args []string) int {
	var vars varFlags
	var lf lockFlags
	fs := flag.NewFlagSet("refresh", flag.ContinueOnError)
	vars.register(fs)
	lf.register(fs)
	noColor := fs.Bool("no-color", false, "no colours")
	pos, code, ok := g.parse(fs, args, argSpec{max: -1})
	if !ok {
		return code
	}
	cfg := g.loadConfig(vars, *noColor)
	if cfg == nil {
		return 1
	}
	if len(pos) > 0 {
		only := *cfg
		only.Experiments = maps.Clone(cfg.Experiments)
		keep := map[string]bool{}
		for _, p := range pos {
			n := strings.TrimPrefix(p, "experiment.")
			if cfg.Experiments[n] == nil {
				return g.errorf("experiment %q is not in the configuration (experiments: %s)", n, strings.Join(sortedKeys(cfg.Experiments), ", "))
			}
			keep[n] = true
		}
		for n := range only.Experiments {
			if !keep[n] {
				delete(only.Experiments, n)
			}
		}
		cfg = &only
	}
	s, st, done, ok := g.lockedSession(ctx, cfg, "refresh", lf, configScope(cfg, pos))
	if !ok {
		return 1
	}
	defer done()
	s.Hooks = views.NewApply(views.ApplyOptions{Out: g.IO.Out, Colors: g.colors(*noColor), Where: machineOf(cfg, s), Skipped: apply.IsSkipped})
	_, changes, err := s.Refresh(ctx)
	if err != nil {
		return g.errorf("refresh: %v", err)
	}
	n := 0
	for name := range cfg.Experiments {
		if st.Experiments[name] != nil {
			n++
		}
	}
	views.RefreshComplete(g.IO.Out, n, len(changes))
	return 0
}
