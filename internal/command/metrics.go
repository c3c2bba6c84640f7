package command

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
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
		return g.errorf("no experiment %q in the state (experiments: %s)", pos[0], orNoneList(sortedKeys(st.Experiments)))
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
	switch *output {
	case "json":
		enc := json.NewEncoder(g.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(series); err != nil {
			return g.errorf("write JSON: %v", err)
		}
	case "csv":
		cw := csv.NewWriter(g.IO.Out)
		head := append([]string{"step", "value", "time"}, prefixAll("metrics.", names)...)
		cw.Write(head)
		for _, p := range series {
			rec := []string{fmt.Sprint(p.Step), results.FormatFloatPtr(p.Value), p.Time.UTC().Format(time.RFC3339Nano)}
			for _, n := range names {
				if v, ok := p.Metrics[n]; ok {
					rec = append(rec, results.FormatFloat(v))
				} else {
					rec = append(rec, "")
				}
			}
			cw.Write(rec)
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return g.errorf("write CSV: %v", err)
		}
	default:
		if len(series) == 0 {
			fmt.Fprintf(g.IO.Out, "Trial %s/%s reported no intermediate results.\n", e.Name, t.ID)
			return 0
		}
		tw := tabwriter.NewWriter(g.IO.Out, 0, 0, 2, ' ', 0)
		head := []string{"STEP", strings.ToUpper(row.Objective)}
		for _, n := range names {
			if n != row.Objective {
				head = append(head, strings.ToUpper(n))
			}
		}
		fmt.Fprintln(tw, strings.Join(append(head, "TIME"), "\t"))
		for _, p := range series {
			rec := []string{fmt.Sprint(p.Step), views.FormatMetric(p.Value)}
			for _, n := range names {
				if n == row.Objective {
					continue
				}
				if v, ok := p.Metrics[n]; ok {
					rec = append(rec, views.FormatMetric(&v))
				} else {
					rec = append(rec, "-")
				}
			}
			fmt.Fprintln(tw, strings.Join(append(rec, p.Time.Local().Format("15:04:05")), "\t"))
		}
		tw.Flush()
		var vals []float64
		for _, p := range series {
			if p.Value != nil {
				vals = append(vals, *p.Value)
			}
		}
		fmt.Fprintf(g.IO.Out, "\n%s\n", views.Sparkline(vals, 60))
	}
	return 0
}

func prefixAll(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}
