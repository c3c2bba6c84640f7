// Package results is the one view model of trial results that every
// renderer shares: the `trials` table, its JSON, JSONL, CSV and markdown,
// `export`, and the web dashboard. It turns state (and, where asked, the
// intermediate series) into Rows; it is pure: no files, no clock (the
// caller passes now), no printing.
package results

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/trialform/trialform/state"
)

// Row is one trial as every results view shows it. Pointer fields are nil
// when the value does not exist (yet).
type Row struct {
	Experiment string
	ID         string
	Seq        int
	Generation int
	Status     string
	Reason     string
	// Params are the trial's hyperparameters (numbers are float64, as
	// decoded from JSON; strings; bools).
	Params map[string]any
	// Metrics holds every numeric key of the final result ("default" for
	// a plain number). Never nil.
	Metrics map[string]float64
	// Objective is the experiment's objective metric name ("default" when
	// the experiment names none), Goal "maximize" or "minimize", Metric the
	// trial's value of that objective (ObjectiveValue: an earlier
	// generation's from its final result, none under a strategy unless
	// its Value was taken for the same one).
	Objective string
	Goal      string
	Metric    *float64
	// Best marks the best succeeded trial of its experiment; with
	// several objectives, every trial on the Pareto front.
	Best bool
	// ParetoRank is the trial's Pareto rank among the succeeded trials
	// of its experiment's current generation when the experiment has
	// several objectives (1 = the front); 0 otherwise.
	ParetoRank int
	// CurrentGeneration is the experiment's generation, the one whose
	// succeeded trials compete for the best (0: not known).
	CurrentGeneration int

	// Provenance is what the trial was created from (git commits, the
	// trialform version); nil when its state recorded none.
	Provenance *state.Provenance

	Attempts  int
	ExitCode  *int
	CreatedAt time.Time
	StartedAt *time.Time
	EndedAt   *time.Time
	// StartedAt and EndedAt are the latest attempt's. Duration is
	// EndedAt-StartedAt once that attempt stopped (ended, or PAUSED or
	// LOST: the clock stops with the process); Elapsed is now-StartedAt
	// for an attempt still running.
	Duration *time.Duration
	Elapsed  *time.Duration

	// Intermediate is the number of intermediate results received.
	Intermediate int
	// Latest is the last intermediate result, BestIntermediate the best
	// one by the experiment's goal; set by AddSeries (nil otherwise).
	Latest           *Point
	BestIntermediate *Point
	// Summarized is true when Latest and BestIntermediate came from the
	// state's summary of the series (the series was not read).
	Summarized bool
	// Series is the whole intermediate series, kept only when AddSeries
	// was asked to keep it.
	Series []Point
}

// ObjectiveValue is t's value of e's current (first) objective, the one
// the `metric` column is named after: its Value when that was taken for
// this objective (state.Trial.ValueIsFor: its generation's, or recorded)
// or the value apply took again from its series for it (state.Retaken),
// else, without a strategy, its final result's key of the objective (an
// earlier generation's Value is its own objective's, which may have been
// another metric: objectives renamed or reordered), and nil otherwise:
// under a strategy such a Value is the strategy of another metric or
// another strategy, and taking it the current way needs the series, which
// the views do not read (apply records it). The tuner's history (plan)
// and the dashboard's charts take the value the same way.
func ObjectiveValue(e *state.Experiment, t *state.Trial) *float64 {
	objective := e.Metric
	if objective == "" {
		objective = "default"
	}
	return objectiveValue(e, t, objective)
}

func objectiveValue(e *state.Experiment, t *state.Trial, objective string) *float64 {
	if v, known := t.ValueOf(state.ObjectiveFor(objective, e.Strategy), e.Generation); known {
		return v
	}
	if e.Strategy == "" && t.Final != nil {
		if v, ok := t.Final[objective]; ok {
			return &v
		}
	}
	return nil
}

// Point is one intermediate (PERIODICAL) result.
type Point struct {
	// Step is NNI's sequence number of the report (0, 1, 2, ...).
	Step int `json:"step"`
	// Attempt is the trial's attempt that reported it (each attempt
	// numbers its reports from 0); 0 when the series did not record it.
	Attempt int `json:"attempt,omitempty"`
	// Value is the objective key of the report, else its "default" when
	// that is its only key (a plain number); nil when it has neither.
	Value *float64 `json:"value"`
	// Metrics is every numeric key of the report.
	Metrics map[string]float64 `json:"metrics"`
	Time    time.Time          `json:"time"`
}

// FromExperiment returns one row per trial of e, in sequence order.
func FromExperiment(e *state.Experiment, now time.Time) []*Row {
	best := BestTrial(e)
	objective := e.Metric
	if objective == "" {
		objective = "default"
	}
	goal := e.Goal
	if goal == "" {
		goal = "maximize"
	}
	var ranks map[string]int
	if e.MultiObjective() {
		ranks = e.ParetoRanks(e.Generation)
	}
	ts := e.SortedTrials()
	rows := make([]*Row, 0, len(ts))
	for _, t := range ts {
		r := &Row{
			Experiment: e.Name, ID: t.ID, Seq: t.Seq, Generation: t.Generation, CurrentGeneration: e.Generation,
			Status: t.Status, Reason: t.Reason, Params: t.Params, Metrics: t.Final,
			Objective: objective, Goal: goal, Metric: objectiveValue(e, t, objective), Best: t.ID == best,
			Attempts: t.Attempts, ExitCode: t.ExitCode, CreatedAt: t.CreatedAt, Provenance: t.Provenance,
			StartedAt: t.StartedAt, EndedAt: t.EndedAt, Intermediate: t.Intermediate,
		}
		if t.Intermediate > 0 && t.Summary.For(objective, goal) {
			r.fromSummary(t.Summary)
		}
		if ranks != nil {
			r.ParetoRank = ranks[t.ID]
			r.Best = r.ParetoRank == 1
		}
		if r.Params == nil {
			r.Params = map[string]any{}
		}
		if r.Metrics == nil {
			r.Metrics = map[string]float64{}
		}
		if t.StartedAt != nil {
			if t.EndedAt != nil {
				d := t.EndedAt.Sub(*t.StartedAt)
				if d < 0 {
					// Start and end stamped by different clocks (an
					// older state): never a negative duration.
					d = 0
				}
				r.Duration = &d
			} else if !state.Terminal(t.Status) && !now.IsZero() {
				d := now.Sub(*t.StartedAt)
				if d < 0 {
					d = 0
				}
				r.Elapsed = &d
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// BestTrial returns the id of the best succeeded trial of e's current
// generation, or "" (state.Experiment.Best).
// With several objectives no one trial is best: "" (ParetoFront).
func BestTrial(e *state.Experiment) string {
	if e.MultiObjective() {
		return ""
	}
	if b := e.Best(); b != nil {
		return b.ID
	}
	return ""
}

// ParetoFront returns the ids of the trials on the Pareto front of e's
// current generation, in sequence order; nil with one objective.
func ParetoFront(e *state.Experiment) []string {
	if !e.MultiObjective() {
		return nil
	}
	ranks := e.ParetoRanks(e.Generation)
	var out []string
	for _, t := range e.SortedTrials() {
		if ranks[t.ID] == 1 {
			out = append(out, t.ID)
		}
	}
	return out
}

// NeedsSeries reports whether the table needs r's series: a running trial
// shows its latest intermediate value, an early-stopped one its best;
// false once the state's summary of the series gave them.
func (r *Row) NeedsSeries() bool {
	return r.Intermediate > 0 && !r.Summarized && (r.Status == state.Running || r.Status == state.EarlyStopped || r.Status == state.Lost)
}

// fromSummary sets Latest and BestIntermediate from the state's summary
// of the series, as AddSeries would from the series.
func (r *Row) fromSummary(s *state.SeriesSummary) {
	point := func(p *state.SeriesPoint) *Point {
		if p == nil {
			return nil
		}
		return &Point{Step: p.Step, Attempt: p.Attempt, Value: p.Value(r.Objective), Metrics: p.Metrics, Time: p.Time}
	}
	r.Latest, r.BestIntermediate = point(s.Latest), point(s.BestPoint())
	r.Summarized = true
}

// AddSeries sets r's Latest and BestIntermediate from the trial's metric
// file points (FINAL points are skipped); keep also stores the series.
func (r *Row) AddSeries(pts []state.MetricPoint, keep bool) {
	if keep {
		r.Series = make([]Point, 0, len(pts))
	}
	for _, mp := range pts {
		p, ok := ToPoint(mp, r.Objective)
		if !ok {
			continue
		}
		if keep {
			r.Series = append(r.Series, p)
		}
		pc := p
		r.Latest = &pc
		if p.Value != nil && (r.BestIntermediate == nil || r.BestIntermediate.Value == nil || better(r.Goal, *p.Value, *r.BestIntermediate.Value)) {
			r.BestIntermediate = &pc
		}
	}
}

// Better reports whether a beats b under goal.
func better(goal string, a, b float64) bool {
	if goal == "minimize" {
		return a < b
	}
	return a > b
}

// ToPoint converts one PERIODICAL metric point; ok is false for any other
// type of point or a value that is neither a number nor an object.
func ToPoint(mp state.MetricPoint, objective string) (Point, bool) {
	if mp.Type != "PERIODICAL" {
		return Point{}, false
	}
	if objective == "" {
		objective = "default"
	}
	metrics, value, ok := state.PeriodicalValue(mp.Value, objective)
	if !ok {
		return Point{}, false
	}
	p := Point{Step: mp.Sequence, Attempt: mp.Attempt, Time: mp.Time, Metrics: metrics, Value: value}
	return p, true
}

// ParamNames returns the sorted union of the rows' parameter names.
func ParamNames(rows []*Row) []string {
	return keys(rows, func(r *Row) []string { return mapKeys(r.Params) })
}

// MetricNames returns the sorted union of the rows' final metric names.
func MetricNames(rows []*Row) []string {
	return keys(rows, func(r *Row) []string { return mapKeys(r.Metrics) })
}

func keys(rows []*Row, f func(*Row) []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		for _, k := range f(r) {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
