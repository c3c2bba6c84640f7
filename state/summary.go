package state

import (
	"bytes"
	"encoding/json"
	"maps"
	"time"
)

// SeriesSummary is what the views show of a trial's intermediate series
// without reading it: its latest report, and its best by Objective under
// Goal (the experiment's objective and goal when the refresh recorded the
// reports). A view that judges by another objective or goal reads the
// series instead.
type SeriesSummary struct {
	Objective string       `json:"objective"`
	Goal      string       `json:"goal"`
	Latest    *SeriesPoint `json:"latest,omitempty"`
	// Best is nil when it is Latest (Latest has the objective) or when
	// no report had the objective (Latest has not): see BestPoint.
	Best *SeriesPoint `json:"best,omitempty"`
}

// BestPoint is the best report, nil when none had the objective.
func (s *SeriesSummary) BestPoint() *SeriesPoint {
	if s.Best != nil {
		return s.Best
	}
	if s.Latest != nil && s.Latest.Value(s.Objective) != nil {
		return s.Latest
	}
	return nil
}

// SeriesPoint is one intermediate report of a summary, decoded: its
// sequence number (the step), the attempt that reported it, every numeric
// key (a plain number is "default") and when it was reported.
type SeriesPoint struct {
	Step    int                `json:"step"`
	Attempt int                `json:"attempt,omitempty"`
	Metrics map[string]float64 `json:"metrics"`
	Time    time.Time          `json:"time"`
}

// Value is p's value of objective: its key, else the value of a report
// of "default" alone (a plain number, NNI's single-value report); nil when
// p has neither. A report of other keys without the objective has no
// value: never another metric's in the objective's place.
func (p *SeriesPoint) Value(objective string) *float64 {
	return objectiveValue(p.Metrics, orDefault(objective, "default"))
}

// objectiveValue is a report's value of objective (its key, else a lone
// "default"), nil when it has neither.
func objectiveValue(metrics map[string]float64, objective string) *float64 {
	if f, ok := metrics[objective]; ok {
		return &f
	}
	if f, ok := metrics["default"]; ok && len(metrics) == 1 {
		return &f
	}
	return nil
}

// ObjectiveValue is objectiveValue for the views that decode reports
// themselves (internal/results' fast path).
func ObjectiveValue(metrics map[string]float64, objective string) *float64 {
	return objectiveValue(metrics, orDefault(objective, "default"))
}

// For reports whether s summarises by objective and goal (empty: the
// defaults, "default" and maximize).
func (s *SeriesSummary) For(objective, goal string) bool {
	return s != nil && s.Objective == orDefault(objective, "default") && s.Goal == orDefault(goal, "maximize")
}

// NoteIntermediate records one intermediate (PERIODICAL) report in t's
// summary, judged by objective and goal. A summary kept for another
// objective or goal, or missing while t already had reports, is dropped
// (the views then read the series): it could no longer say which report
// was best.
func (t *Trial) NoteIntermediate(p MetricPoint, objective, goal string) {
	objective, goal = orDefault(objective, "default"), orDefault(goal, "maximize")
	switch {
	case t.Summary == nil && t.Intermediate > 0:
		return // it missed reports: the views read the series
	case t.Summary == nil:
		t.Summary = &SeriesSummary{Objective: objective, Goal: goal}
	case !t.Summary.For(objective, goal):
		t.Summary = nil
		return
	}
	metrics, v, ok := PeriodicalValue(p.Value, objective)
	if !ok || p.Type != "PERIODICAL" {
		return // not a report the views show
	}
	if l := t.Summary.Latest; l != nil && p.Attempt > 0 && p.Attempt == l.Attempt && p.Sequence <= l.Step {
		return // a report replayed after a crash: the views drop it too
	}
	sp := &SeriesPoint{Step: p.Sequence, Attempt: p.Attempt, Metrics: metrics, Time: p.Time}
	s := t.Summary
	best := s.BestPoint()
	s.Latest = sp
	if v != nil {
		if b := best.valueOrNil(objective); b == nil || goal == "minimize" && *v < *b || goal != "minimize" && *v > *b {
			best = nil // the new latest is the best
		}
	}
	s.Best = best
}

func (p *SeriesPoint) valueOrNil(objective string) *float64 {
	if p == nil {
		return nil
	}
	return p.Value(objective)
}

// PeriodicalValue decodes an intermediate report's value: every numeric
// key (a plain number is "default") and the objective's value (the
// objective key, else a lone "default"; nil when the report has
// neither). ok is
// false for a value that is not JSON.
func PeriodicalValue(raw json.RawMessage, objective string) (metrics map[string]float64, value *float64, ok bool) {
	objective = orDefault(objective, "default")
	metrics = map[string]float64{}
	v := bytes.TrimSpace(raw)
	if len(v) > 0 && v[0] == '{' {
		var m map[string]any
		if json.Unmarshal(v, &m) != nil {
			return nil, nil, false
		}
		for k, x := range m {
			if f, ok := x.(float64); ok {
				metrics[k] = f
			}
		}
	} else {
		var f *float64
		if json.Unmarshal(v, &f) != nil {
			return nil, nil, false
		}
		if f != nil {
			metrics["default"] = *f
		}
	}
	return metrics, objectiveValue(metrics, objective), true
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (s *SeriesSummary) clone() *SeriesSummary {
	if s == nil {
		return nil
	}
	c := *s
	c.Latest, c.Best = s.Latest.clone(), s.Best.clone()
	return &c
}

func (p *SeriesPoint) clone() *SeriesPoint {
	if p == nil {
		return nil
	}
	c := *p
	c.Metrics = maps.Clone(p.Metrics)
	return &c
}

func (s *SeriesSummary) equal(o *SeriesSummary) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Objective == o.Objective && s.Goal == o.Goal && s.Latest.equal(o.Latest) && s.Best.equal(o.Best)
}

func (p *SeriesPoint) equal(o *SeriesPoint) bool {
	if p == nil || o == nil {
		return p == o
	}
	return p.Step == o.Step && p.Attempt == o.Attempt && p.Time == o.Time &&
		(p.Metrics == nil) == (o.Metrics == nil) && maps.EqualFunc(p.Metrics, o.Metrics, floatEqual)
}
