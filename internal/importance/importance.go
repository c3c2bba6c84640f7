// Package importance says which parameters matter for the objective, with
// fANOVA (Hutter, Hoos and Leyton-Brown, 2014) on a random forest: the
// forest is fitted to (params → objective), and each parameter's
// importance is the share of the objective's variance that its marginal
// explains, averaged over the trees and normalised to sum to 1. This is
// the method of Optuna's default FanovaImportanceEvaluator. As Optuna does,
// numeric params are fitted on their own scale (a loguniform param too:
// Optuna's fANOVA does not transform log params) with the search space's
// bounds; a choice is one axis of equally wide cells (Optuna one-hot
// encodes it instead), so the numbers differ a little from Optuna's while
// the ranking is meant to agree (a test checks it). Pure: no I/O, seeded
// randomness.
package importance

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Param describes one input axis.
type Param struct {
	Name string
	// Lo and Hi bound the axis (the search space's bounds; for a choice of
	// K options, -0.5 and K-0.5). Lo == Hi means: take them from the data.
	Lo, Hi float64
}

// Options tunes the forest.
type Options struct {
	Trees    int    // default 64
	MaxDepth int    // default 64
	Seed     uint64 // the forest's random source
	// MaxSamples caps the rows used (a seeded subsample beyond it); default 2000.
	MaxSamples int
}

// Result is one param's importance.
type Result struct {
	Name       string  `json:"name"`
	Importance float64 `json:"importance"`
}

// Method names the method for people.
const Method = "fANOVA on a random forest (64 trees, Optuna's default evaluator)"

// Compute returns the importance of each param, highest first. X holds one
// row per trial (values already mapped onto the axes), y the objective.
// With fewer than two rows or no variance every importance is 0.
func Compute(params []Param, X [][]float64, y []float64, o Options) []Result {
	if o.Trees <= 0 {
		o.Trees = 64
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = 64
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = 2000
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	if len(X) > o.MaxSamples {
		idx := rng.Perm(len(X))[:o.MaxSamples]
		sort.Ints(idx)
		nx, ny := make([][]float64, len(idx)), make([]float64, len(idx))
		for i, j := range idx {
			nx[i], ny[i] = X[j], y[j]
		}
		X, y = nx, ny
	}
	d := len(params)
	lo, hi := make([]float64, d), make([]float64, d)
	for j, p := range params {
		lo[j], hi[j] = p.Lo, p.Hi
		if !(p.Hi > p.Lo) {
			lo[j], hi[j] = math.Inf(1), math.Inf(-1)
			for _, row := range X {
				lo[j], hi[j] = math.Min(lo[j], row[j]), math.Max(hi[j], row[j])
			}
			if !(hi[j] > lo[j]) {
				lo[j], hi[j] = 0, 1
			}
		}
	}
	sum := make([]float64, d)
	used := 0
	if len(X) >= 2 {
		for t := 0; t < o.Trees; t++ {
			n := len(X)
			idx := make([]int, n)
			for i := range idx {
				idx[i] = rng.IntN(n) // bootstrap
			}
			tr := grow(X, y, idx, o.MaxDepth, d)
			imp, ok := tr.fanova(lo, hi)
			if !ok {
				continue
			}
			used++
			for j := range sum {
				sum[j] += imp[j]
			}
		}
	}
	total := 0.0
	for j := range sum {
		if used > 0 {
			sum[j] /= float64(used)
		}
		total += sum[j]
	}
	out := make([]Result, d)
	for j, p := range params {
		v := 0.0
		if total > 0 {
			v = sum[j] / total
		}
		out[j] = Result{Name: p.Name, Importance: v}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Importance > out[b].Importance })
	return out
}

// node is a tree node: a split (feature >= 0) or a leaf (value).
type node struct {
	feature     int
	threshold   float64
	left, right int
	value       float64
}

type tree struct{ nodes []node }

// grow fits a CART regression tree (variance reduction, every feature
// tried at every split, leaves of one sample allowed), as scikit-learn's
// RandomForestRegressor does with Optuna's settings.
func grow(X [][]float64, y []float64, idx []int, maxDepth, d int) *tree {
	t := &tree{}
	var build func(idx []int, depth int) int
	order := make([]int, len(idx))
	build = func(idx []int, depth int) int {
		mean := 0.0
		for _, i := range idx {
			mean += y[i]
		}
		mean /= float64(len(idx))
		me := len(t.nodes)
		t.nodes = append(t.nodes, node{feature: -1, value: mean})
		if len(idx) < 2 || depth >= maxDepth {
			return me
		}
		bestGain, bestF, bestThr := 1e-12, -1, 0.0
		total, totalSq := 0.0, 0.0
		for _, i := range idx {
			total += y[i]
			totalSq += y[i] * y[i]
		}
		n := float64(len(idx))
		parentSSE := totalSq - total*total/n
		if parentSSE <= 1e-12*math.Max(1, totalSq) {
			return me
		}
		ord := order[:len(idx)]
		for f := 0; f < d; f++ {
			copy(ord, idx)
			sort.Slice(ord, func(a, b int) bool { return X[ord[a]][f] < X[ord[b]][f] })
			ls, lsq := 0.0, 0.0
			for k := 0; k < len(ord)-1; k++ {
				v := y[ord[k]]
				ls += v
				lsq += v * v
				a, b := X[ord[k]][f], X[ord[k+1]][f]
				if a == b {
					continue
				}
				nl := float64(k + 1)
				nr := n - nl
				rs, rsq := total-ls, totalSq-lsq
				sse := (lsq - ls*ls/nl) + (rsq - rs*rs/nr)
				if gain := parentSSE - sse; gain > bestGain {
					bestGain, bestF, bestThr = gain, f, (a+b)/2
				}
			}
		}
		if bestF < 0 {
			return me
		}
		var l, r []int
		for _, i := range idx {
			if X[i][bestF] <= bestThr {
				l = append(l, i)
			} else {
				r = append(r, i)
			}
		}
		li := build(l, depth+1)
		ri := build(r, depth+1)
		t.nodes[me] = node{feature: bestF, threshold: bestThr, left: li, right: ri, value: mean}
		return me
	}
	build(idx, 0)
	return t
}

// leaf is a leaf's cell in the input box.
type leaf struct {
	lo, hi []float64
	value  float64
}

// fanova returns V_j / V for every feature j: the variance of the
// marginal of feature j (the objective averaged over every other feature,
// uniformly within the bounds) over the total variance.
func (t *tree) fanova(lo, hi []float64) ([]float64, bool) {
	d := len(lo)
	var leaves []leaf
	splits := make([][]float64, d)
	var walk func(i int, l, h []float64)
	walk = func(i int, l, h []float64) {
		nd := t.nodes[i]
		if nd.feature < 0 {
			leaves = append(leaves, leaf{lo: append([]float64(nil), l...), hi: append([]float64(nil), h...), value: nd.value})
			return
		}
		f, thr := nd.feature, nd.threshold
		thr = math.Max(lo[f], math.Min(hi[f], thr))
		splits[f] = append(splits[f], thr)
		old := h[f]
		h[f] = math.Min(old, thr)
		walk(nd.left, l, h)
		h[f] = old
		old = l[f]
		l[f] = math.Max(old, thr)
		walk(nd.right, l, h)
		l[f] = old
	}
	walk(0, append([]float64(nil), lo...), append([]float64(nil), hi...))

	width := make([]float64, d)
	for j := range width {
		width[j] = hi[j] - lo[j]
	}
	frac := func(lf leaf, j int) float64 { return math.Max(0, lf.hi[j]-lf.lo[j]) / width[j] }
	mean, sq := 0.0, 0.0
	vols := make([]float64, len(leaves))
	for k, lf := range leaves {
		v := 1.0
		for j := 0; j < d; j++ {
			v *= frac(lf, j)
		}
		vols[k] = v
		mean += v * lf.value
		sq += v * lf.value * lf.value
	}
	total := sq - mean*mean
	if total <= 1e-15*math.Max(1, sq) {
		return nil, false
	}
	out := make([]float64, d)
	for j := 0; j < d; j++ {
		cuts := append([]float64{lo[j], hi[j]}, splits[j]...)
		sort.Float64s(cuts)
		cuts = uniq(cuts)
		cells := len(cuts) - 1
		if cells < 2 {
			continue
		}
		// diff[k] accumulates, over the leaves covering cell k of axis j,
		// value × the leaf's volume in the other axes.
		diff := make([]float64, cells+1)
		for k, lf := range leaves {
			fj := frac(lf, j)
			if fj == 0 {
				continue
			}
			w := vols[k] / fj * lf.value
			a := sort.SearchFloat64s(cuts, lf.lo[j])
			b := sort.SearchFloat64s(cuts, lf.hi[j])
			diff[a] += w
			diff[b] -= w
		}
		acc, vj := 0.0, 0.0
		for k := 0; k < cells; k++ {
			acc += diff[k]
			p := (cuts[k+1] - cuts[k]) / width[j]
			vj += p * (acc - mean) * (acc - mean)
		}
		out[j] = vj / total
	}
	return out, true
}

func uniq(s []float64) []float64 {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
