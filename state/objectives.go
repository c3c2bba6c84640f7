package state

import (
	"math"

	"github.com/trialform/trialform/tuner/pareto"
)

// ObjectiveList is the experiment's objectives: Objectives, or the one
// of Metric and Goal.
func (e *Experiment) ObjectiveList() []Objective {
	if len(e.Objectives) > 0 {
		return e.Objectives
	}
	return []Objective{{Metric: e.Metric, Goal: e.Goal}}
}

// MultiObjective reports whether the experiment has several objectives.
func (e *Experiment) MultiObjective() bool { return len(e.Objectives) > 1 }

// ValuesOf returns a trial's value of every objective, in ObjectiveList's
// order: the first is its Value, the others the keys of its final result.
// ok is false when one is missing (the trial is not SUCCEEDED).
func (e *Experiment) ValuesOf(t *Trial) ([]float64, bool) {
	objs := e.ObjectiveList()
	if t.Value == nil {
		return nil, false
	}
	out := make([]float64, len(objs))
	out[0] = *t.Value
	for i := 1; i < len(objs); i++ {
		v, ok := t.Final[objs[i].Metric]
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// ParetoRanks ranks the SUCCEEDED trials of generation gen by Pareto
// dominance over every objective (1 = the front, the trials no other
// dominates; 2 = the front once those are removed; ...), by trial id.
// Trials that are not ranked (other generations, not succeeded, a NaN
// value) are absent. With one objective, rank 1 is the best value (ties
// share it), rank 2 the next, and so on.
func (e *Experiment) ParetoRanks(gen int) map[string]int {
	if e == nil {
		return nil
	}
	objs := e.ObjectiveList()
	var ids []string
	var pts [][]float64
	for _, t := range e.SortedTrials() {
		if t.Generation != gen || t.Status != Succeeded {
			continue
		}
		vals, ok := e.ValuesOf(t)
		if !ok {
			continue
		}
		p := make([]float64, len(vals))
		for i, v := range vals {
			if math.IsNaN(v) {
				p = nil
				break
			}
			p[i] = v
			if objs[i].Goal != "minimize" {
				p[i] = -v
			}
		}
		if p == nil {
			continue
		}
		ids = append(ids, t.ID)
		pts = append(pts, p)
	}
	out := make(map[string]int, len(ids))
	for i, r := range pareto.Ranks(pts) {
		if r > 0 {
			out[ids[i]] = r
		}
	}
	return out
}
