package state

import (
	"bytes"
	"encoding/json"
)

// SeriesSummary is what the views show of a trial's intermediate series
// without reading it: its latest report, and its best by Objective under
// Goal (the experiment's objective and goal when the refresh recorded the
// reports). A view that judges by another objective or goal reads the
// series instead.
type SeriesSummary struct {
	Objective string       `json:"objective"`
	Goal      string       `json:"goal"`
	Latest    *MetricPoint `json:"latest,omitempty"`
	Best      *MetricPoint `json:"best,omitempty"`
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
	if _, _, ok := PeriodicalValue(p.Value, objective); !ok || p.Type != "PERIODICAL" {
		return // not a report the views show
	}
	if l := t.Summary.Latest; l != nil && p.Attempt > 0 && p.Attempt == l.Attempt && p.Sequence <= l.Sequence {
		return // a report replayed after a crash: the views drop it too
	}
	pc := p
	pc.Value = append(json.RawMessage(nil), p.Value...)
	s := t.Summary
	s.Latest = &pc
	_, v, _ := PeriodicalValue(pc.Value, objective)
	if v == nil {
		return // no objective: never the best
	}
	if s.Best != nil {
		if _, b, _ := PeriodicalValue(s.Best.Value, objective); b != nil && !(goal == "minimize" && *v < *b || goal != "minimize" && *v > *b) {
			return
		}
	}
	s.Best = &pc
}

// PeriodicalValue decodes an intermediate report's value: every numeric
// key (a plain number is "default") and the objective's value (the
// objective key, else "default"; nil when the report has neither). ok is
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
	if f, ok := metrics[objective]; ok {
		value = &f
	} else if f, ok := metrics["default"]; ok {
		value = &f
	}
	return metrics, value, true
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

func (p *MetricPoint) clone() *MetricPoint {
	if p == nil {
		return nil
	}
	c := *p
	c.Value = append(json.RawMessage(nil), p.Value...)
	return &c
}

func (s *SeriesSummary) equal(o *SeriesSummary) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Objective == o.Objective && s.Goal == o.Goal && s.Latest.equal(o.Latest) && s.Best.equal(o.Best)
}

func (p *MetricPoint) equal(o *MetricPoint) bool {
	if p == nil || o == nil {
		return p == o
	}
	return p.Type == o.Type && p.Sequence == o.Sequence && p.Attempt == o.Attempt && bytes.Equal(p.Value, o.Value) && p.Time == o.Time
}
