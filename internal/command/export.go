package command

import (
	"context"
	"flag"
	"runtime/debug"
	"time"

	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/internal/views"
)

// runExport is `trialform export EXPERIMENT... [-all] -o csv|json`: every
// trial with its params, final metrics and intermediate series, streamed
// (one trial's series in memory at a time), in the versioned schema
// docs/results.md documents.
func runExport(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	output := new(string)
	choices(fs, output, "o", "json", []string{"json", "csv"}, "format: json or csv")
	all := fs.Bool("all", false, "every experiment in the state")
	pos, code, ok := g.parse(fs, args, argSpec{max: -1})
	if !ok {
		return code
	}
	if *output != "json" && *output != "csv" {
		return g.errorf("-o %q: export writes json or csv", *output)
	}
	m, st := g.readStateManager()
	if st == nil {
		return 1
	}
	exps, code := g.pickExperiments(st, pos, *all, "export")
	if exps == nil {
		return code
	}
	// An export allocates a little per point and keeps nothing: collect
	// garbage less often (the peak stays far under the memory target).
	debug.SetGCPercent(200)
	now := time.Now()
	var out []views.ExportExperiment
	for _, e := range exps {
		rows := results.FromExperiment(e, now)
		obj := "default"
		if e.Metric != "" {
			obj = e.Metric
		}
		out = append(out, views.ExportExperiment{
			Name: e.Name, ID: e.ID, Platform: e.Platform, Objective: obj, Goal: e.Goal, Strategy: e.Strategy, Generation: e.Generation,
			Objectives: e.Objectives,
			Params:     results.ParamNames(rows), Metrics: results.MetricNames(rows),
			Rows: func(yield func(*results.Row) error) error {
				for i, r := range rows {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if r.Intermediate > 0 {
						if err := loadSeries(m, r, true); err != nil {
							return err
						}
					}
					if err := yield(r); err != nil {
						return err
					}
					r.Series = nil
					rows[i] = nil // let the row go once written
				}
				return nil
			},
		})
	}
	var err error
	if *output == "csv" {
		err = views.ExportCSV(g.IO.Out, out)
	} else {
		err = views.ExportJSON(g.IO.Out, out, now)
	}
	if err != nil {
		return g.errorf("export: %v", err)
	}
	return 0
}
