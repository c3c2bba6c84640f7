package views

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trialform/trialform/internal/results"
)

// Metrics writes one trial's intermediate series (`trialform metrics`) in
// format: "json" (the points), "csv" (step, value, time and each metric)
// or "table" (a column per metric, the objective first, and a sparkline
// of its values). names are the series' metrics, sorted.
func Metrics(w io.Writer, format, experiment, trial, objective string, names []string, series []results.Point) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(series); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	case "csv":
		cw := csv.NewWriter(w)
		head := []string{"step", "value", "time"}
		for _, n := range names {
			head = append(head, "metrics."+n)
		}
		head = append(head, "attempt") // last: columns are only ever added
		cw.Write(head)
		for _, p := range series {
			attempt := ""
			if p.Attempt > 0 {
				attempt = fmt.Sprint(p.Attempt)
			}
			rec := []string{fmt.Sprint(p.Step), results.FormatFloatPtr(p.Value), p.Time.UTC().Format(time.RFC3339Nano)}
			for _, n := range names {
				if v, ok := p.Metrics[n]; ok {
					rec = append(rec, results.FormatFloat(v))
				} else {
					rec = append(rec, "")
				}
			}
			rec = append(rec, attempt)
			cw.Write(rec)
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return fmt.Errorf("write CSV: %w", err)
		}
	default:
		if len(series) == 0 {
			fmt.Fprintf(w, "Trial %s/%s reported no intermediate results.\n", experiment, trial)
			return nil
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		// Attempts are shown when there were several: each numbers its
		// steps from 0.
		attempts := slices.ContainsFunc(series, func(p results.Point) bool { return p.Attempt > 1 })
		head := []string{"STEP", Safe(strings.ToUpper(objective))}
		if attempts {
			head = []string{"ATTEMPT", "STEP", Safe(strings.ToUpper(objective))}
		}
		for _, n := range names {
			if n != objective {
				head = append(head, strings.ToUpper(n))
			}
		}
		fmt.Fprintln(tw, strings.Join(append(head, "TIME"), "\t"))
		for _, p := range series {
			rec := []string{fmt.Sprint(p.Step), FormatMetric(p.Value)}
			if attempts {
				rec = append([]string{fmt.Sprint(p.Attempt)}, rec...)
			}
			for _, n := range names {
				if n == objective {
					continue
				}
				if v, ok := p.Metrics[n]; ok {
					rec = append(rec, FormatMetric(&v))
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
		fmt.Fprintf(w, "\n%s\n", Sparkline(vals, 60))
	}
	return nil
}
