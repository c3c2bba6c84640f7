package command

import (
	"context"
	"flag"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/state"
)

// runMetrics is `trialform metrics EXPERIMENT TRIAL [-o table|csv|json]`:
// one trial's intermediate series.
func runMetrics(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	output := new(string)
	choices(fs, output, "o", "table", []string{"table", "csv", "json"}, "output format: table, csv, json")
	pos, code, ok := g.parse(fs, args, argSpec{min: 2, max: 2, hint: "metrics takes an experiment and a trial id: trialform metrics EXPERIMENT TRIAL"})
	if !ok {
		return code
	}
	if *output != "table" && *output != "csv" && *output != "json" {
		return g.errorf("-o %q: the formats are table, csv, json", *output)
	}
	if len(pos) != 2 {
		return g.errorf("usage: trialform metrics EXPERIMENT TRIAL [-o table|csv|json]")
	}
	m, st := g.readStateManager()
	if st == nil {
		return 1
	}
	e := st.Experiment(strings.TrimPrefix(pos[0], "experiment."))
	if e == nil {
		return g.errorf("no experiment %q in the state (experiments: %s)", pos[0], g.orNoneList(sortedKeys(st.Experiments)))
	}
	t := e.Trials[pos[1]]
	if t == nil {
		return g.errorf("experiment %q has no trial %q (see `trialform trials %s`)", e.Name, pos[1], e.Name)
	}
	var row *results.Row
	for _, r := range results.FromExperiment(&state.Experiment{Name: e.Name, Metric: e.Metric, Goal: e.Goal, Trials: map[string]*state.Trial{t.ID: t}}, time.Now()) {
		row = r
	}
	pts, err := m.ReadMetrics(e.Name, t.ID)
	if err != nil {
		return g.errorf("%v", err)
	}
	row.AddSeries(pts, true)
	series := row.Series
	if series == nil {
		series = []results.Point{}
	}
	var names []string
	seen := map[string]bool{}
	for _, p := range series {
		for k := range p.Metrics {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	names = sortedKeys(seen)
	if err := views.Metrics(g.IO.Out, *output, e.Name, t.ID, row.Objective, names, series); err != nil {
		return g.errorf("%v", err)
	}
	return 0
}
