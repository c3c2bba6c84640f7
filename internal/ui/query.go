package ui

import (
	"errors"
	"time"

	"github.com/trialform/trialform/internal/query"
	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/state"
)

// Query is the Querier of the trials command: internal/query's language
// over internal/results' rows, so the table and `trials -q -sort` agree.
type Query struct{}

// Select parses, checks and applies q and sortBy.
func (Query) Select(e *state.Experiment, q, sortBy string, now time.Time) ([]*state.Trial, error) {
	rows := results.FromExperiment(e, now)
	pq, err := query.Parse(q)
	if err != nil {
		return nil, queryError("q", err)
	}
	ps, err := query.ParseSort(sortBy)
	if err != nil {
		return nil, queryError("sort", err)
	}
	sc := query.SchemaOf(rows)
	if err := pq.Check(sc); err != nil {
		return nil, queryError("q", err)
	}
	if err := ps.Check(sc); err != nil {
		return nil, queryError("sort", err)
	}
	rows = pq.Filter(rows)
	ps.Apply(rows)
	out := make([]*state.Trial, 0, len(rows))
	for _, r := range rows {
		if t := e.Trials[r.ID]; t != nil {
			out = append(out, t)
		}
	}
	return out, nil
}

func queryError(param string, err error) error {
	var qe *query.Error
	if errors.As(err, &qe) {
		return &QueryError{Param: param, Msg: qe.Msg, Col: qe.Column() - 1}
	}
	return &QueryError{Param: param, Msg: err.Error(), Col: -1}
}
