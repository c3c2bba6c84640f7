package tuner

import (
	"math"
	"math/rand/v2"
	"sort"
)

// A regression random forest for the smac tuner, with categorical features
// native to the trees: a categorical split sends a subset of the options
// left, found by ordering the options by their mean response in the node
// (the optimal subset split for squared error). Trees are grown on
// bootstrap samples, with a random subset of the features tried at each
// node, as SMAC's forest is.

type rfFeature struct {
	ncat int // > 0: categorical with ncat options (value is the index)
}

type rfNode struct {
	feat        int // -1 for a leaf
	thr         float64
	left        uint64 // categorical: bit c set sends option c left
	lo, hi      int32  // children
	mean, vari  float64
	nsamples    int
	categorical bool
}

type rfTree struct{ nodes []rfNode }

type rfForest struct {
	trees []rfTree
	feats []rfFeature
}

type rfConfig struct {
	trees, minSplit, minLeaf, maxDepth int
	featFrac                           float64
}

var rfDefaults = rfConfig{trees: 10, minSplit: 2, minLeaf: 1, maxDepth: 20, featFrac: 5.0 / 6}

func fitForest(X [][]float64, y []float64, feats []rfFeature, cfg rfConfig, rng *rand.Rand) *rfForest {
	f := &rfForest{feats: feats}
	n := len(X)
	for t := 0; t < cfg.trees; t++ {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		tr := rfTree{}
		grow(&tr, X, y, idx, feats, cfg, rng, 0)
		f.trees = append(f.trees, tr)
	}
	return f
}

func meanVar(y []float64, idx []int) (float64, float64) {
	m := 0.0
	for _, i := range idx {
		m += y[i]
	}
	m /= float64(len(idx))
	v := 0.0
	for _, i := range idx {
		v += (y[i] - m) * (y[i] - m)
	}
	return m, v / float64(len(idx))
}

// grow adds the subtree of the samples idx and returns its node's index.
func grow(tr *rfTree, X [][]float64, y []float64, idx []int, feats []rfFeature, cfg rfConfig, rng *rand.Rand, depth int) int32 {
	m, v := meanVar(y, idx)
	me := int32(len(tr.nodes))
	tr.nodes = append(tr.nodes, rfNode{feat: -1, mean: m, vari: v, nsamples: len(idx)})
	if len(idx) < cfg.minSplit || depth >= cfg.maxDepth || v <= 1e-14 {
		return me
	}
	nf := len(feats)
	k := max(1, int(math.Ceil(cfg.featFrac*float64(nf))))
	order := rng.Perm(nf)[:k]
	bestGain, bestFeat := 0.0, -1
	var bestThr float64
	var bestMask uint64
	total := v * float64(len(idx))
	for _, fi := range order {
		if feats[fi].ncat > 0 {
			g, mask := catSplit(X, y, idx, fi, feats[fi].ncat, cfg.minLeaf, total)
			if g > bestGain {
				bestGain, bestFeat, bestMask = g, fi, mask
			}
			continue
		}
		g, thr := numSplit(X, y, idx, fi, cfg.minLeaf, total, rng.Float64())
		if g > bestGain {
			bestGain, bestFeat, bestThr = g, fi, thr
		}
	}
	if bestFeat < 0 {
		return me
	}
	var l, r []int
	cat := feats[bestFeat].ncat > 0
	for _, i := range idx {
		if goesLeft(X[i][bestFeat], cat, bestThr, bestMask) {
			l = append(l, i)
		} else {
			r = append(r, i)
		}
	}
	if len(l) == 0 || len(r) == 0 {
		return me
	}
	lo := grow(tr, X, y, l, feats, cfg, rng, depth+1)
	hi := grow(tr, X, y, r, feats, cfg, rng, depth+1)
	nd := &tr.nodes[me]
	nd.feat, nd.thr, nd.left, nd.lo, nd.hi, nd.categorical = bestFeat, bestThr, bestMask, lo, hi, cat
	return me
}

func goesLeft(x float64, cat bool, thr float64, mask uint64) bool {
	if cat {
		c := int(x)
		return c >= 0 && c < 64 && mask&(1<<uint(c)) != 0
	}
	return x <= thr
}

// numSplit finds the split on feature fi that most reduces the sum of
// squared errors, with at least minLeaf samples on each side; the
// threshold lies at the fraction u of the gap between the two samples (a
// random u smooths the forest's mean, as pyrfr's random split values do).
func numSplit(X [][]float64, y []float64, idx []int, fi, minLeaf int, total, u float64) (float64, float64) {
	s := append([]int(nil), idx...)
	sort.Slice(s, func(a, b int) bool { return X[s[a]][fi] < X[s[b]][fi] })
	n := len(s)
	sumAll, sqAll := 0.0, 0.0
	for _, i := range s {
		sumAll += y[i]
		sqAll += y[i] * y[i]
	}
	sumL, sqL := 0.0, 0.0
	best, thr := 0.0, 0.0
	for k := 0; k < n-1; k++ {
		sumL += y[s[k]]
		sqL += y[s[k]] * y[s[k]]
		nl, nr := k+1, n-k-1
		if nl < minLeaf || nr < minLeaf || X[s[k]][fi] == X[s[k+1]][fi] {
			continue
		}
		sseL := sqL - sumL*sumL/float64(nl)
		sumR, sqR := sumAll-sumL, sqAll-sqL
		sseR := sqR - sumR*sumR/float64(nr)
		if g := total - sseL - sseR; g > best+1e-12 {
			best, thr = g, X[s[k]][fi]+u*(X[s[k+1]][fi]-X[s[k]][fi])
		}
	}
	return best, thr
}

// catSplit finds the subset of options of feature fi to send left: the
// options ordered by mean response, split at the best prefix.
func catSplit(X [][]float64, y []float64, idx []int, fi, ncat, minLeaf int, total float64) (float64, uint64) {
	if ncat > 64 {
		ncat = 64
	}
	sum := make([]float64, ncat)
	sq := make([]float64, ncat)
	cnt := make([]int, ncat)
	for _, i := range idx {
		c := int(X[i][fi])
		if c < 0 || c >= ncat {
			continue
		}
		sum[c] += y[i]
		sq[c] += y[i] * y[i]
		cnt[c]++
	}
	var present []int
	for c := 0; c < ncat; c++ {
		if cnt[c] > 0 {
			present = append(present, c)
		}
	}
	if len(present) < 2 {
		return 0, 0
	}
	sort.SliceStable(present, func(a, b int) bool {
		return sum[present[a]]/float64(cnt[present[a]]) < sum[present[b]]/float64(cnt[present[b]])
	})
	sumAll, sqAll, nAll := 0.0, 0.0, 0
	for _, c := range present {
		sumAll += sum[c]
		sqAll += sq[c]
		nAll += cnt[c]
	}
	best := 0.0
	var mask, cur uint64
	sumL, sqL, nl := 0.0, 0.0, 0
	for k := 0; k < len(present)-1; k++ {
		c := present[k]
		cur |= 1 << uint(c)
		sumL += sum[c]
		sqL += sq[c]
		nl += cnt[c]
		nr := nAll - nl
		if nl < minLeaf || nr < minLeaf {
			continue
		}
		sseL := sqL - sumL*sumL/float64(nl)
		sumR, sqR := sumAll-sumL, sqAll-sqL
		sseR := sqR - sumR*sumR/float64(nr)
		if g := total - sseL - sseR; g > best+1e-12 {
			best, mask = g, cur
		}
	}
	return best, mask
}

// predict returns the forest's mean and standard deviation at x: the
// mean and the spread of the trees' leaf means (SMAC's default, without
// the leaves' own variance).
func (f *rfForest) predict(x []float64) (float64, float64) {
	m, s2 := 0.0, 0.0
	for _, t := range f.trees {
		nd := &t.nodes[0]
		for nd.feat >= 0 {
			if goesLeft(x[nd.feat], nd.categorical, nd.thr, nd.left) {
				nd = &t.nodes[nd.lo]
			} else {
				nd = &t.nodes[nd.hi]
			}
		}
		m += nd.mean
		s2 += nd.mean * nd.mean
	}
	k := float64(len(f.trees))
	m /= k
	v := s2/k - m*m
	return m, math.Sqrt(math.Max(v, 1e-10))
}
