package state

import "math"

// Budget is what an experiment's budget (max_trials) counts: the trials of
// one generation. A change of the search space, tuner, objective, trial or
// platform starts a new generation and with it a fresh budget; the trials
// of earlier generations stay in the history (All) but count no more.
type Budget struct {
	Generation int
	// Trials counts the generation's trials, whatever their status.
	Trials int
	// Used counts those max_trials counts: every one but CANCELED (torn
	// down by trialform when its experiment was removed, destroyed or
	// past its max_duration; they did not use the budget).
	Used int
	// Ended counts those that ended: succeeded, failed, stopped early or
	// stopped by the user.
	Ended int
	// ByStatus counts the generation's trials by status.
	ByStatus map[string]int
	// All counts the trials of every generation.
	All int
}

// BudgetOf counts e's trials against the budget of generation gen (the
// experiment's current one, or the one a plan starts).
func (e *Experiment) BudgetOf(gen int) Budget {
	b := Budget{Generation: gen, ByStatus: map[string]int{}}
	if e == nil {
		return b
	}
	for _, t := range e.Trials {
		b.All++
		if t.Generation != gen {
			continue
		}
		b.Trials++
		b.ByStatus[t.Status]++
		if t.Status != Canceled {
			b.Used++
		}
		switch t.Status {
		case Succeeded, Failed, EarlyStopped, UserCanceled:
			b.Ended++
		}
	}
	return b
}

// Budget counts e's trials against the budget of its current generation.
func (e *Experiment) Budget() Budget { return e.BudgetOf(e.Generation) }

// BestOf returns the best trial of generation gen: a succeeded one with a
// value (not NaN), the greatest or least by the experiment's goal, the
// earliest on a tie; nil when there is none yet. Trials of other
// generations are not compared: their search space, tuner or objective
// differed, so their values may not even measure the same thing.
func (e *Experiment) BestOf(gen int) *Trial {
	var best *Trial
	if e == nil {
		return nil
	}
	for _, t := range e.Trials {
		if t.Generation != gen || t.Status != Succeeded || t.Value == nil || math.IsNaN(*t.Value) {
			continue
		}
		if best == nil || Better(e.Goal, *t.Value, *best.Value) || (*t.Value == *best.Value && t.Seq < best.Seq) {
			best = t
		}
	}
	return best
}

// Best returns the best trial of e's current generation (BestOf).
func (e *Experiment) Best() *Trial { return e.BestOf(e.Generation) }

// Better reports whether a is a better objective value than b for goal
// ("minimize", else maximize).
func Better(goal string, a, b float64) bool {
	if goal == "minimize" {
		return a < b
	}
	return a > b
}
