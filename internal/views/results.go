package views

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/trialform/trialform/internal/didyoumean"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/trialform/trialform/internal/query"
	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/state"
)

// Column is one column of the results table: a header and how a row's
// cell reads for people. Field is the query field it shows ("" for the
// best mark), or the CSV column name it maps to.
type Column struct {
	Header string
	Field  string
	Cell   func(r *results.Row) string
}

// ResultsTable is what the results table needs besides the rows.
type ResultsTable struct {
	Rows []*results.Row
	// Columns, when set, replaces the default columns (-columns).
	Columns []Column
	// Multi adds the EXPERIMENT column (several experiments, -all).
	Multi bool
	// Curves adds a sparkline of each trial's intermediate series (the
	// rows' Series must be loaded).
	Curves bool
	// Footer lines (best trial, staleness) are written after the table.
	Footer []string
}

// DefaultColumns returns the standard columns for rows: [EXPERIMENT],
// best mark, TRIAL, GEN, STATUS, the objective, every other final metric,
// every param, DURATION (elapsed while running), INTERMEDIATE (latest of
// a running trial, best of an early-stopped one) when any row has one,
// NOTE.
func DefaultColumns(rows []*results.Row, multi bool) []Column {
	var cols []Column
	if multi {
		cols = append(cols, Column{Header: "EXPERIMENT", Field: "experiment", Cell: func(r *results.Row) string { return Safe(r.Experiment) }})
	}
	cols = append(cols,
		Column{Header: "", Cell: func(r *results.Row) string {
			if r.Best {
				return "*"
			}
			return ""
		}},
		Column{Header: "TRIAL", Field: "id", Cell: func(r *results.Row) string { return r.ID }},
		Column{Header: "GEN", Field: "generation", Cell: func(r *results.Row) string { return fmt.Sprint(r.Generation) }},
		Column{Header: "STATUS", Field: "status", Cell: func(r *results.Row) string { return r.Status }},
	)
	if results.Ranked(rows) {
		// Several objectives: the Pareto rank (1 = the front, marked *).
		cols = append(cols, Column{Header: "PARETO", Field: "pareto", Cell: func(r *results.Row) string {
			if r.ParetoRank == 0 {
				return ""
			}
			return fmt.Sprint(r.ParetoRank)
		}})
	}
	objectives := map[string]bool{}
	for _, r := range rows {
		objectives[r.Objective] = true
	}
	objHeader := "METRIC"
	single := ""
	if len(objectives) == 1 {
		for o := range objectives {
			single = o
		}
		objHeader = Safe(strings.ToUpper(single))
	}
	cols = append(cols, Column{Header: objHeader, Field: "metric", Cell: func(r *results.Row) string { return FormatMetric(r.Metric) }})
	for _, m := range results.MetricNames(rows) {
		if m == single {
			continue
		}
		cols = append(cols, fieldColumn("metrics."+m))
	}
	for _, p := range results.ParamNames(rows) {
		cols = append(cols, fieldColumn("params."+p))
	}
	cols = append(cols, Column{Header: "DURATION", Field: "duration", Cell: func(r *results.Row) string {
		switch {
		case r.Duration != nil:
			return FormatDuration(*r.Duration)
		case r.Elapsed != nil:
			return FormatDuration(*r.Elapsed) + " so far"
		}
		return ""
	}})
	progress := false
	for _, r := range rows {
		if progressCell(r) != "" {
			progress = true
			break
		}
	}
	if progress {
		cols = append(cols, Column{Header: "INTERMEDIATE", Field: "latest", Cell: progressCell})
	}
	return append(cols, Column{Header: "NOTE", Field: "reason", Cell: func(r *results.Row) string { return Safe(r.Reason) }})
}

// progressCell is the latest intermediate value and step of a running
// trial, the best one of an early-stopped trial.
func progressCell(r *results.Row) string {
	switch {
	case (r.Status == state.Running || r.Status == state.Lost) && r.Latest != nil && r.Latest.Value != nil:
		return fmt.Sprintf("%s @ step %d", FormatMetric(r.Latest.Value), r.Latest.Step)
	case r.Status == state.EarlyStopped && r.BestIntermediate != nil && r.BestIntermediate.Value != nil:
		return fmt.Sprintf("best %s @ step %d", FormatMetric(r.BestIntermediate.Value), r.BestIntermediate.Step)
	}
	return ""
}

// ColumnsFor resolves a -columns list: query field names, plus "params"
// and "metrics" for all of them, "trial" for id and "gen" for generation.
func ColumnsFor(list []string, rows []*results.Row) ([]Column, error) {
	var cols []Column
	var sc *query.Schema // the rows' params and metrics, once needed
	for _, name := range list {
		name = strings.TrimSpace(name)
		switch name {
		case "params":
			for _, p := range results.ParamNames(rows) {
				cols = append(cols, fieldColumn("params."+p))
			}
			continue
		case "metrics":
			for _, m := range results.MetricNames(rows) {
				cols = append(cols, fieldColumn("metrics."+m))
			}
			continue
		case "trial":
			name = "id"
		case "gen":
			name = "generation"
		}
		if _, ok := query.LookupField(name); !ok {
			for _, p := range results.ParamNames(rows) {
				if p == name {
					return nil, fmt.Errorf("unknown column %q; did you mean \"params.%s\"?", name, p)
				}
			}
			for _, m := range results.MetricNames(rows) {
				if m == name {
					return nil, fmt.Errorf("unknown column %q; did you mean \"metrics.%s\"?", name, m)
				}
			}
			cands := append(query.FieldNames(), "params", "metrics")
			for _, p := range results.ParamNames(rows) {
				cands = append(cands, "params."+p)
			}
			for _, m := range results.MetricNames(rows) {
				cands = append(cands, "metrics."+m)
			}
			if sg := didyoumean.Suggest(name, cands); sg != "" {
				return nil, fmt.Errorf("unknown column %q; did you mean %q?", name, sg)
			}
			return nil, fmt.Errorf("unknown column %q: use field names of the query language (%s), params or metrics", name, strings.Join(query.FieldNames(), ", "))
		}
		if f, _ := query.LookupField(name); f.IsParam() || f.IsMetric() {
			// A params./metrics. column no trial has is a typo as in -q:
			// it came out as an empty column.
			if sc == nil {
				s := query.SchemaOf(rows)
				sc = &s
			}
			if sort, err := query.ParseSort(name); err == nil {
				var qe *query.Error
				if err := sort.Check(*sc); errors.As(err, &qe) {
					return nil, fmt.Errorf("unknown column %q: %s", name, qe.Msg)
				}
			}
		}
		cols = append(cols, fieldColumn(name))
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("-columns names no column")
	}
	return cols, nil
}

// fieldColumn shows one query field.
func fieldColumn(name string) Column {
	f, _ := query.LookupField(name)
	header := strings.ToUpper(name)
	switch {
	case f.IsParam():
		header = Safe(f.Key)
	case f.IsMetric():
		header = Safe(strings.ToUpper(f.Key))
	case name == "id":
		header = "TRIAL"
	}
	return Column{Header: header, Field: name, Cell: func(r *results.Row) string {
		v, ok := f.Get(r)
		if raw, whole := r.Params[f.Key]; f.IsParam() && whole {
			v, ok = raw, raw != nil // a nested choice shown whole, not only its option's name
		}
		if !ok {
			if f.IsMetric() || name == "metric" {
				return "-"
			}
			return ""
		}
		if f.Type == query.TypeCommit {
			// git's short form: the first 12 digits.
			c := fmt.Sprint(v)
			return Safe(c[:min(12, len(c))])
		}
		switch x := v.(type) {
		case float64:
			if f.IsParam() {
				return Safe(FormatValue(x))
			}
			return FormatMetric(&x)
		case time.Duration:
			return FormatDuration(x)
		case time.Time:
			return x.UTC().Format("2006-01-02 15:04:05")
		}
		return Safe(FormatValue(v))
	}}
}

// FormatDuration renders a duration for people: ms below a second,
// tenths below a minute, seconds above.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// ResultsTableText writes the human table.
func ResultsTableText(w io.Writer, t ResultsTable) {
	cols := t.Columns
	if cols == nil {
		cols = DefaultColumns(t.Rows, t.Multi)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		head = append(head, c.Header)
	}
	if t.Curves {
		head = append(head, "CURVE")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	cells := make([]string, 0, len(head))
	for _, r := range t.Rows {
		cells = cells[:0]
		for _, c := range cols {
			max := maxCell
			if c.Field == "reason" {
				max = maxNote // the last column: trialform's words on the trial
			}
			cells = append(cells, clip(c.Cell(r), max))
		}
		if t.Curves {
			cells = append(cells, Sparkline(seriesValues(r.Series), 24))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	for _, l := range t.Footer {
		fmt.Fprintln(w, l)
	}
}

// maxCell is the widest cell of a results table on a terminal (-o json,
// csv and markdown keep every value whole), maxNote that of its NOTE.
const (
	maxCell = 60
	maxNote = 400
)

// clip cuts s to max runes, the last one an ellipsis.
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// ResultsMarkdown writes the table as a GitHub-flavoured markdown table.
func ResultsMarkdown(w io.Writer, t ResultsTable) {
	cols := t.Columns
	if cols == nil {
		cols = DefaultColumns(t.Rows, t.Multi)
	}
	esc := func(s string) string {
		return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
	}
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cols {
		h := c.Header
		if h == "" {
			h = "best"
		}
		b.WriteString(" " + esc(h) + " |")
	}
	b.WriteString("\n|")
	for range cols {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
	for _, r := range t.Rows {
		b.Reset()
		b.WriteString("|")
		for _, c := range cols {
			b.WriteString(" " + esc(c.Cell(r)) + " |")
		}
		b.WriteString("\n")
		io.WriteString(w, b.String())
	}
}

// ResultsCSV writes rows as CSV: results.CSVHeader's columns, or, with
// cols, one column per field (named by the field) in machine form.
func ResultsCSV(w io.Writer, rows []*results.Row, cols []Column) error {
	cw := csv.NewWriter(w)
	if cols == nil {
		params, metrics := results.ParamNames(rows), results.MetricNames(rows)
		ranked := results.Ranked(rows)
		if err := cw.Write(results.CSVHeaderRanked(params, metrics, ranked)); err != nil {
			return err
		}
		for _, r := range rows {
			if err := cw.Write(r.CSVRecordRanked(params, metrics, ranked)); err != nil {
				return err
			}
		}
	} else {
		head := make([]string, 0, len(cols))
		fields := make([]query.Field, 0, len(cols))
		for _, c := range cols {
			f, _ := query.LookupField(c.Field)
			head = append(head, c.Field)
			fields = append(fields, f)
		}
		if err := cw.Write(head); err != nil {
			return err
		}
		rec := make([]string, len(cols))
		for _, r := range rows {
			for i, f := range fields {
				rec[i] = machineValue(f, r)
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func machineValue(f query.Field, r *results.Row) string {
	v, ok := f.Get(r)
	if !ok {
		return ""
	}
	switch x := v.(type) {
	case float64:
		return results.FormatFloat(x)
	case time.Duration:
		return results.FormatFloat(x.Seconds())
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return results.FormatParam(v)
}

// ResultsJSON writes rows as one JSON array (jsonl: one object a line).
func ResultsJSON(w io.Writer, rows []*results.Row, jsonl bool) error {
	enc := json.NewEncoder(w)
	if jsonl {
		for _, r := range rows {
			if err := enc.Encode(safeJSON(r.JSON())); err != nil {
				return err
			}
		}
		return nil
	}
	enc.SetIndent("", "  ")
	out := make([]results.RowJSON, len(rows))
	for i, r := range rows {
		out[i] = safeJSON(r.JSON())
	}
	return enc.Encode(out)
}

// safeJSON replaces non-finite numbers, which JSON cannot carry, by
// null (Metric) or drops them (maps).
func safeJSON(j results.RowJSON) results.RowJSON {
	if j.Metric != nil && !finite(*j.Metric) {
		j.Metric = nil
	}
	for k, v := range j.Metrics {
		if !finite(v) {
			m := make(map[string]float64, len(j.Metrics))
			for k2, v2 := range j.Metrics {
				if finite(v2) {
					m[k2] = v2
				}
			}
			j.Metrics = m
			_ = k
			break
		}
	}
	return j
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func seriesValues(pts []results.Point) []float64 {
	out := make([]float64, 0, len(pts))
	for _, p := range pts {
		if p.Value != nil && finite(*p.Value) {
			out = append(out, *p.Value)
		}
	}
	return out
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws vals as at most width block characters (averaging
// buckets when there are more values), scaled between their min and max.
func Sparkline(vals []float64, width int) string {
	if len(vals) == 0 {
		return ""
	}
	if len(vals) > width {
		b := make([]float64, width)
		for i := range b {
			lo, hi := i*len(vals)/width, (i+1)*len(vals)/width
			s := 0.0
			for _, v := range vals[lo:hi] {
				s += v
			}
			b[i] = s / float64(hi-lo)
		}
		vals = b
	}
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	out := make([]rune, len(vals))
	for i, v := range vals {
		k := len(sparks) / 2
		if hi > lo {
			k = int((v - lo) / (hi - lo) * float64(len(sparks)-1))
		}
		out[i] = sparks[k]
	}
	return string(out)
}

// Staleness says when the state was last refreshed from the platforms.
func Staleness(refreshed time.Time, now time.Time) string {
	if refreshed.IsZero() {
		return "The state was never refreshed from the platforms; `trialform refresh` reads them."
	}
	d := now.Sub(refreshed)
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("State refreshed %s ago (`trialform refresh` reads the platforms again).", Ago(d))
}

// Ago renders an age: 3m12s, 2h5m, 4d3h.
func Ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	days := int(d / (24 * time.Hour))
	return fmt.Sprintf("%dd%dh", days, int((d-time.Duration(days)*24*time.Hour)/time.Hour))
}

func sortStrings(s []string) { sort.Strings(s) }
