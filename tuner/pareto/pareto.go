// Package pareto is the arithmetic of several objectives: Pareto
// dominance, non-dominated sorting into ranks, crowding distance and the
// hypervolume indicator. Every function takes points to be minimised
// (negate a maximised objective first); it does no I/O and keeps no state.
package pareto

import (
	"math"
	"sort"
)

// Dominates reports whether a Pareto-dominates b: no worse in every
// objective and better in at least one (all minimised).
func Dominates(a, b []float64) bool {
	better := false
	for i := range a {
		switch {
		case a[i] > b[i]:
			return false
		case a[i] < b[i]:
			better = true
		}
	}
	return better
}

// Ranks sorts points into non-dominated fronts: rank 1 is the Pareto
// front, rank 2 the front once rank 1 is removed, and so on. A point
// holding NaN gets rank 0 (unranked). Equal points share a rank.
//
// It is the efficient non-dominated sort with sequential search (Zhang et
// al., 2015): the points are taken in lexicographic order, so whatever
// dominates a point comes before it, and each goes to the first front
// none of whose members dominates it. The ranks are those of Deb's fast
// non-dominated sort without its n² lists of who dominates whom: on 1,000
// points in 3 objectives it is many times faster.
func Ranks(points [][]float64) []int {
	ranks := make([]int, len(points))
	idx := make([]int, 0, len(points))
	for i, p := range points {
		if !hasNaN(p) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool {
		pa, pb := points[idx[a]], points[idx[b]]
		for m := range pa {
			if pa[m] != pb[m] {
				return pa[m] < pb[m]
			}
		}
		return false
	})
	var fronts [][]int
	for _, i := range idx {
		r := 0
		for ; r < len(fronts); r++ {
			if !dominatedByAny(points, fronts[r], points[i]) {
				break
			}
		}
		if r == len(fronts) {
			fronts = append(fronts, nil)
		}
		fronts[r] = append(fronts[r], i)
		ranks[i] = r + 1
	}
	return ranks
}

// dominatedByAny reports whether a member of front dominates p; the
// latest members, nearest p in the order, are tried first.
func dominatedByAny(points [][]float64, front []int, p []float64) bool {
	for k := len(front) - 1; k >= 0; k-- {
		if Dominates(points[front[k]], p) {
			return true
		}
	}
	return false
}

func hasNaN(p []float64) bool {
	for _, v := range p {
		if math.IsNaN(v) {
			return true
		}
	}
	return false
}

// Crowding returns NSGA-II's crowding distance of each point of one front:
// for each objective, the gap between its two neighbours divided by the
// front's extent; the extremes get +Inf.
func Crowding(points [][]float64) []float64 {
	n := len(points)
	d := make([]float64, n)
	if n == 0 {
		return d
	}
	if n <= 2 {
		for i := range d {
			d[i] = math.Inf(1)
		}
		return d
	}
	idx := make([]int, n)
	for m := range points[0] {
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return points[idx[a]][m] < points[idx[b]][m] })
		lo, hi := points[idx[0]][m], points[idx[n-1]][m]
		d[idx[0]], d[idx[n-1]] = math.Inf(1), math.Inf(1)
		if hi <= lo || math.IsInf(hi-lo, 0) {
			continue
		}
		for k := 1; k < n-1; k++ {
			d[idx[k]] += (points[idx[k+1]][m] - points[idx[k-1]][m]) / (hi - lo)
		}
	}
	return d
}

// Hypervolume is the volume of the region that the points dominate and
// that dominates the reference point ref (all minimised): the larger, the
// better the front. Points that do not strictly dominate ref in every
// objective add nothing. It is exact: a sort for two objectives, and for
// more a sweep along the last objective that sums slabs of the
// hypervolume of one dimension less (fine for a few hundred points in
// three objectives).
func Hypervolume(points [][]float64, ref []float64) float64 {
	var ps [][]float64
	for _, p := range points {
		if len(p) != len(ref) || hasNaN(p) {
			continue
		}
		in := true
		for i := range p {
			if !(p[i] < ref[i]) {
				in = false
				break
			}
		}
		if in {
			ps = append(ps, p)
		}
	}
	return hv(ps, ref)
}

// hv is Hypervolume of points that all dominate ref.
func hv(ps [][]float64, ref []float64) float64 {
	if len(ps) == 0 {
		return 0
	}
	d := len(ref)
	switch d {
	case 1:
		best := ref[0]
		for _, p := range ps {
			best = math.Min(best, p[0])
		}
		return ref[0] - best
	case 2:
		s := append([][]float64(nil), ps...)
		sort.Slice(s, func(a, b int) bool {
			if s[a][0] != s[b][0] {
				return s[a][0] < s[b][0]
			}
			return s[a][1] < s[b][1]
		})
		vol, lastY := 0.0, ref[1]
		for _, p := range s {
			if p[1] < lastY {
				vol += (ref[0] - p[0]) * (lastY - p[1])
				lastY = p[1]
			}
		}
		return vol
	}
	// Sweep the last objective upwards: between two consecutive values
	// the slab's cross-section is the (d-1)-volume of the points seen.
	s := append([][]float64(nil), ps...)
	sort.Slice(s, func(a, b int) bool { return s[a][d-1] < s[b][d-1] })
	vol := 0.0
	var seen [][]float64
	for i, p := range s {
		seen = nonDominated(append(seen, p[:d-1]))
		top := ref[d-1]
		if i+1 < len(s) {
			top = s[i+1][d-1]
		}
		if top > p[d-1] {
			vol += hv(seen, ref[:d-1]) * (top - p[d-1])
		}
	}
	return vol
}

// nonDominated keeps the points no other point dominates (and one copy
// of equal points), which keeps the sweep's slabs cheap.
func nonDominated(ps [][]float64) [][]float64 {
	var out [][]float64
	for i, p := range ps {
		keep := true
		for j, q := range ps {
			if j != i && (Dominates(q, p) || (j < i && equal(p, q))) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	return out
}

func equal(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Contributions returns each point's exclusive hypervolume: how much the
// hypervolume of all of them drops without it.
func Contributions(points [][]float64, ref []float64) []float64 {
	total := Hypervolume(points, ref)
	out := make([]float64, len(points))
	rest := make([][]float64, 0, len(points))
	for i := range points {
		rest = rest[:0]
		rest = append(rest, points[:i]...)
		rest = append(rest, points[i+1:]...)
		out[i] = total - Hypervolume(rest, ref)
	}
	return out
}
