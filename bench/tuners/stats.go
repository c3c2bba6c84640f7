package main

import (
	"math"
	"sort"
)

// Quantile is the q-quantile of xs with linear interpolation between order
// statistics (Hyndman and Fan's type 7, the default of R and NumPy). NaN for
// an empty sample.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// Median is Quantile(xs, 0.5).
func Median(xs []float64) float64 { return Quantile(xs, 0.5) }

// IQR returns the first and third quartiles.
func IQR(xs []float64) (q1, q3 float64) { return Quantile(xs, 0.25), Quantile(xs, 0.75) }

// MannWhitneyLess is the one-sided Mann-Whitney U test of "x tends to be
// smaller than y". It returns U for x (the number of pairs (x_i, y_j) with
// x_i > y_j, ties counting one half: small U means small x) and the p-value
// from the normal approximation with the tie correction of the variance and
// a continuity correction of 1/2:
//
//	mu = nx ny / 2
//	sigma^2 = nx ny / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1)))
//	p = Phi((U - mu + 1/2) / sigma)
//
// where t runs over the sizes of groups of tied values in the pooled
// sample. When every value is tied (sigma = 0) there is no evidence and p
// is 1. Empty samples give NaN.
func MannWhitneyLess(x, y []float64) (u, p float64) {
	nx, ny := len(x), len(y)
	if nx == 0 || ny == 0 {
		return math.NaN(), math.NaN()
	}
	type obs struct {
		v   float64
		inX bool
	}
	all := make([]obs, 0, nx+ny)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].v < all[j].v })
	n := len(all)
	rankSumX, tieSum := 0.0, 0.0
	for i := 0; i < n; {
		j := i
		for j < n && all[j].v == all[i].v {
			j++
		}
		// positions i..j-1 (ranks i+1..j) are tied: each gets the midrank.
		mid := float64(i+1+j) / 2
		for k := i; k < j; k++ {
			if all[k].inX {
				rankSumX += mid
			}
		}
		t := float64(j - i)
		tieSum += t*t*t - t
		i = j
	}
	fx, fy, fn := float64(nx), float64(ny), float64(n)
	u = rankSumX - fx*(fx+1)/2
	mu := fx * fy / 2
	v := fx * fy / 12 * ((fn + 1) - tieSum/(fn*(fn-1)))
	if v <= 0 {
		return u, 1
	}
	z := (u - mu + 0.5) / math.Sqrt(v)
	return u, NormCDF(z)
}

// NormCDF is the standard normal distribution function.
func NormCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// RegretFloor is the smallest regret the ratios use: a median regret of 0
// (an optimum hit exactly, as on a discrete space) counts as 1e-9, so that a
// ratio or a geometric mean never divides by or takes the log of zero.
const RegretFloor = 1e-9

// Ratio is a/b with both floored at RegretFloor.
func Ratio(a, b float64) float64 {
	return math.Max(a, RegretFloor) / math.Max(b, RegretFloor)
}

// GeoMean is the geometric mean of positive xs, skipping NaNs; NaN when
// none is left.
func GeoMean(xs []float64) float64 {
	s, k := 0.0, 0
	for _, x := range xs {
		if math.IsNaN(x) {
			continue
		}
		s += math.Log(x)
		k++
	}
	if k == 0 {
		return math.NaN()
	}
	return math.Exp(s / float64(k))
}
