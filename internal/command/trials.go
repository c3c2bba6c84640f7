package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/query"
	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/state"
)

// trialsOptions are the flags of `trials`.
type trialsOptions struct {
	all              bool
	query            string
	sort             string
	limit            int
	top              int
	output           string
	asJSON           bool
	columns          string
	withIntermediate bool
	curves           bool
	noColor          bool
}

var trialsFormats = []string{"table", "json", "jsonl", "csv", "markdown"}

func runTrials(ctx context.Context, g *Globals, args []string) int {
	var o trialsOptions
	fs := flag.NewFlagSet("trials", flag.ContinueOnError)
	fs.BoolVar(&o.all, "all", false, "every experiment in the state (adds an EXPERIMENT column)")
	fs.StringVar(&o.query, "q", "", `query, e.g. "status:succeeded, params.activation:relu|sigmoid, metrics.loss:<=0.3"`)
	fs.StringVar(&o.sort, "sort", "", `sort keys, "-" for descending, e.g. "-metrics.loss,params.lr"`)
	fs.IntVar(&o.limit, "limit", 0, "show at most N trials (after sorting); N > 0")
	fs.IntVar(&o.top, "top", 0, "only the N best trials by the objective (each experiment's goal); N > 0")
	choices(fs, &o.output, "o", "table", trialsFormats, "output format: "+strings.Join(trialsFormats, ", "))
	fs.BoolVar(&o.asJSON, "json", false, "same as -o json")
	fs.StringVar(&o.columns, "columns", "", "comma-separated columns (query field names; params, metrics for all of them)")
	fs.BoolVar(&o.withIntermediate, "with-intermediate", false, "JSON: include each trial's intermediate series")
	fs.BoolVar(&o.curves, "curves", false, "table: a sparkline of each trial's intermediate values")
	fs.BoolVar(&o.noColor, "no-color", false, "no colours")
	pos, code, ok := g.parse(fs, args, argSpec{max: -1})
	if !ok {
		return code
	}
	if o.asJSON {
		if o.output != "table" && o.output != "json" {
			return g.errorf("-json and -o %s disagree: use one of them", o.output)
		}
		o.output = "json"
	}
	if !contains(trialsFormats, o.output) {
		return g.errorf("-o %q: the formats are %s", o.output, strings.Join(trialsFormats, ", "))
	}
	// Left out they are 0, no cut; given, 0 would show every trial too,
	// silently: refused as a negative number is.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, c := range []struct {
		name string
		n    int
	}{{"limit", o.limit}, {"top", o.top}} {
		if set[c.name] && c.n <= 0 {
			return g.errorf("-%s takes a positive number, got %d (leave -%s out to show every trial)", c.name, c.n, c.name)
		}
	}
	// Parse everything the user typed before reading or printing anything.
	q, err := query.Parse(o.query)
	if err != nil {
		return g.queryError("-q", err)
	}
	so, err := query.ParseSort(o.sort)
	if err != nil {
		return g.queryError("-sort", err)
	}

	m, st := g.readStateManager()
	if st == nil {
		return 1
	}
	g.backendNote()
	exps, code := g.pickExperiments(st, pos, o.all, "trials")
	if exps == nil {
		return code
	}
	now := time.Now()
	var rows []*results.Row
	for _, e := range exps {
		rows = append(rows, results.FromExperiment(e, now)...)
	}
	keepSeries := o.withIntermediate || o.curves
	// JSON and CSV rows carry every trial's latest and best intermediate
	// result: a trial whose series the state summarised under another
	// objective or goal (an earlier generation's) is read, as a query on
	// latest reads it, or its fields came out empty.
	allSeries := keepSeries || o.output != "table" || mentions(o.query+","+o.sort+","+o.columns, "latest", "best_intermediate")
	for _, r := range rows {
		if r.Intermediate == 0 || r.Summarized && !keepSeries || !(allSeries || r.NeedsSeries()) {
			continue
		}
		if err := loadSeries(m, r, keepSeries); err != nil {
			return g.errorf("%v", err)
		}
	}
	schema := query.SchemaOf(rows)
	if err := q.Check(schema); err != nil {
		return g.queryError("-q", err)
	}
	if err := so.Check(schema); err != nil {
		return g.queryError("-sort", err)
	}
	var cols []views.Column
	if o.columns != "" {
		if cols, err = views.ColumnsFor(strings.Split(o.columns, ","), rows); err != nil {
			return g.errorf("-columns: %v", err)
		}
	}
	total := len(rows)
	shown := q.Filter(rows)
	if o.top > 0 {
		shown = query.Top(shown, o.top)
	}
	if len(so.Keys) > 0 || o.top == 0 {
		so.Apply(shown)
	}
	if o.limit > 0 && len(shown) > o.limit {
		shown = shown[:o.limit]
	}

	switch o.output {
	case "json", "jsonl":
		if err := views.ResultsJSON(g.IO.Out, shown, o.output == "jsonl"); err != nil {
			return g.errorf("write JSON: %v", err)
		}
	case "csv":
		if err := views.ResultsCSV(g.IO.Out, shown, cols); err != nil {
			return g.errorf("write CSV: %v", err)
		}
	case "markdown":
		views.ResultsMarkdown(g.IO.Out, views.ResultsTable{Rows: shown, Columns: cols, Multi: len(exps) > 1})
	default:
		var footer []string
		if len(shown) < total {
			footer = append(footer, fmt.Sprintf("\n%d of %d trials shown.", len(shown), total))
		}
		if len(footer) == 0 {
			footer = append(footer, "")
		}
		footer = append(footer, views.BestLines(exps)...)
		footer = append(footer, views.BudgetLines(exps)...)
		footer = append(footer, views.Staleness(oldestRefresh(m, st, exps), now))
		views.ResultsTableText(g.IO.Out, views.ResultsTable{Rows: shown, Columns: cols, Multi: len(exps) > 1, Curves: o.curves, Footer: footer})
	}
	return 0
}

// oldestRefresh is when the least recently refreshed of exps was last
// read from its platform (zero: one never was, or unknown).
func oldestRefresh(m state.RefreshMarks, st *state.State, exps []*state.Experiment) time.Time {
	at := m.RefreshedAt(st.Lineage)
	var oldest time.Time
	for i, e := range exps {
		t, ok := at[e.Name]
		if !ok {
			return time.Time{}
		}
		if i == 0 || t.Before(oldest) {
			oldest = t
		}
	}
	return oldest
}

// pickExperiments returns the experiments named by pos (or all of them
// with all, or the only one); nil and an exit code after an error.
func (g *Globals) pickExperiments(st *state.State, pos []string, all bool, cmd string) ([]*state.Experiment, int) {
	names := sortedKeys(st.Experiments)
	if all {
		if len(pos) > 0 {
			return nil, g.errorf("-all and experiment names (%s) exclude each other", strings.Join(pos, ", "))
		}
		pos = names
		if len(pos) == 0 {
			return nil, g.errorf("the state holds no experiments; run `trialform apply` first")
		}
	}
	if len(pos) == 0 {
		if len(names) == 1 {
			pos = names
		} else {
			return nil, g.errorf("usage: trialform %s EXPERIMENT... [-all]; experiments in the state: %s", cmd, g.orNoneList(names))
		}
	}
	var out []*state.Experiment
	seen := map[string]bool{}
	for _, p := range pos {
		n := strings.TrimPrefix(p, "experiment.")
		e := st.Experiment(n)
		if e == nil {
			return nil, g.errorf("no experiment %q in the state (experiments: %s)", n, g.orNoneList(names))
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, e)
		}
	}
	return out, 0
}

// orNoneList lists the experiments of the state, or says what to do when
// there are none: apply first, or, from a directory with neither a state
// nor a configuration (the wrong one), go to the experiments' directory.
func (g *Globals) orNoneList(names []string) string {
	if len(names) > 0 {
		return strings.Join(names, ", ")
	}
	if wd, err := g.workDir(); err == nil && g.backend != nil {
		hcl, _ := filepath.Glob(filepath.Join(wd, "*.hcl"))
		if exists, err := g.backend.b.Exists(); len(hcl) == 0 && err == nil && !exists {
			return fmt.Sprintf("none: there is no state here, and %s has no *.hcl files; run trialform in the directory of your experiments, or trialform -chdir=DIR", wd)
		}
	}
	return "none; run `trialform apply` first"
}

// queryError prints a query or sort error with a caret under its column.
func (g *Globals) queryError(flagName string, err error) int {
	var qe *query.Error
	if errors.As(err, &qe) {
		views.ErrorWithCaret(g.IO.Err, flagName, err, qe.Caret("  "))
		return 1
	}
	return g.errorf("%s: %v", flagName, err)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mentions reports whether any of the field names occurs in s.
func mentions(s string, names ...string) bool {
	for _, n := range names {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

// loadSeries reads r's intermediate series (Latest, BestIntermediate; and
// Series with keep).
func loadSeries(m state.MetricSeries, r *results.Row, keep bool) error {
	data, err := m.ReadMetricsFile(r.Experiment, r.ID)
	if err != nil {
		return err
	}
	pts, err := results.ParseSeries(data, r.Objective)
	if err != nil {
		return fmt.Errorf("read metrics of %s/%s: %w", r.Experiment, r.ID, err)
	}
	r.Latest, r.BestIntermediate = nil, nil
	r.AddPoints(pts, keep)
	return nil
}
