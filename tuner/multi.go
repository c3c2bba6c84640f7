package tuner

import (
	"fmt"
	"math"
	"sort"

	"github.com/trialform/trialform/tuner/pareto"
	"github.com/trialform/trialform/tuner/space"
)

// This file is what the multi-objective tuners (motpe.go, nsga2.go)
// share: the history as loss vectors, ranked by Pareto dominance.

// goalsOf is the request's objectives' directions: Goals, or Goal alone.
func goalsOf(req Request) []Goal {
	if len(req.Goals) > 0 {
		return req.Goals
	}
	return []Goal{req.Goal}
}

// moObs is a past trial as a multi-objective tuner sees it.
type moObs struct {
	seq     int
	params  space.Params
	loss    []float64 // sign*value per objective (all minimised); nil when pending
	pending bool
}

// moHistory returns the completed trials with a finite value for every
// objective, and the pending ones, in sequence order; failed trials (and
// completed ones missing an objective) are left out.
func moHistory(req Request) ([]moObs, error) {
	goals := goalsOf(req)
	signs := make([]float64, len(goals))
	for i, g := range goals {
		s, err := goalSign(g)
		if err != nil {
			return nil, err
		}
		signs[i] = s
	}
	var out []moObs
	for _, o := range history(req) {
		switch o.State {
		case Pending:
			out = append(out, moObs{seq: o.Seq, params: o.Params, pending: true})
		case Completed:
			vals := o.Values
			if len(vals) == 0 && len(goals) == 1 {
				vals = []float64{o.Value}
			}
			if len(vals) != len(goals) {
				continue
			}
			loss := make([]float64, len(vals))
			ok := true
			for i, v := range vals {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					ok = false
					break
				}
				loss[i] = signs[i] * v
			}
			if ok {
				out = append(out, moObs{seq: o.Seq, params: o.Params, loss: loss})
			}
		}
	}
	return out, nil
}

// paretoOrder ranks loss vectors: the non-domination rank (1 = the front)
// and, within a rank, a spread score (larger = more worth keeping): the
// exclusive hypervolume of each point of its rank for two objectives,
// NSGA-II's crowding distance for more. Objectives are normalised to the
// points' range first, so no objective's scale dominates.
func paretoOrder(losses [][]float64) (rank []int, spread []float64) {
	n := len(losses)
	spread = make([]float64, n)
	if n == 0 {
		return nil, spread
	}
	norm := normalise(losses)
	rank = pareto.Ranks(norm)
	byRank := map[int][]int{}
	for i, r := range rank {
		byRank[r] = append(byRank[r], i)
	}
	for _, idx := range byRank {
		pts := make([][]float64, len(idx))
		for k, i := range idx {
			pts[k] = norm[i]
		}
		var s []float64
		if len(norm[0]) == 2 {
			s = contributions2(pts)
		} else {
			s = pareto.Crowding(pts)
		}
		for k, i := range idx {
			spread[i] = s[k]
		}
	}
	return rank, spread
}

// normalise maps each objective onto [0, 1] over the points.
func normalise(ps [][]float64) [][]float64 {
	d := len(ps[0])
	lo, hi := make([]float64, d), make([]float64, d)
	for m := 0; m < d; m++ {
		lo[m], hi[m] = math.Inf(1), math.Inf(-1)
		for _, p := range ps {
			lo[m], hi[m] = math.Min(lo[m], p[m]), math.Max(hi[m], p[m])
		}
	}
	out := make([][]float64, len(ps))
	for i, p := range ps {
		q := make([]float64, d)
		for m := range p {
			if hi[m] > lo[m] {
				q[m] = (p[m] - lo[m]) / (hi[m] - lo[m])
			}
		}
		out[i] = q
	}
	return out
}

// contributions2 is each point's exclusive hypervolume among mutually
// non-dominated two-objective points in [0, 1]², against the reference
// point (1.1, 1.1): the rectangle between its neighbours on the sorted
// front. Equal points share nothing exclusively (0).
func contributions2(ps [][]float64) []float64 {
	const ref = 1.1
	n := len(ps)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		pa, pb := ps[idx[a]], ps[idx[b]]
		if pa[0] != pb[0] {
			return pa[0] < pb[0]
		}
		return pa[1] < pb[1]
	})
	out := make([]float64, n)
	for k, i := range idx {
		right, up := ref, ref
		if k+1 < n {
			right = ps[idx[k+1]][0]
		}
		if k > 0 {
			up = ps[idx[k-1]][1]
		}
		out[i] = math.Max(0, right-ps[i][0]) * math.Max(0, up-ps[i][1])
	}
	return out
}

// better reports whether trial a is preferred to b in NSGA-II's crowded
// comparison: lower rank, then larger spread, then the earlier trial.
func crowdedBetter(rank []int, spread []float64, a, b int) bool {
	if rank[a] != rank[b] {
		return rank[a] < rank[b]
	}
	if spread[a] != spread[b] {
		return spread[a] > spread[b]
	}
	return a < b
}

// checkMulti refuses a request whose goals are unknown.
func checkMulti(req Request) error {
	for _, g := range goalsOf(req) {
		if _, err := goalSign(g); err != nil {
			return err
		}
	}
	if len(req.Goals) > 1 && req.Goals[0] != req.Goal && req.Goal != "" {
		return fmt.Errorf("goal %q differs from the first of goals %v", req.Goal, req.Goals)
	}
	return nil
}
