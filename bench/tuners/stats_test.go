package main

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestQuantile(t *testing.T) {
	xs := []float64{3, 1, 4, 1, 5, 9, 2, 6}
	// sorted 1 1 2 3 4 5 6 9; type 7: h = q (n-1).
	for _, c := range []struct{ q, want float64 }{
		{0, 1}, {0.25, 1.75}, {0.5, 3.5}, {0.75, 5.25}, {1, 9},
	} {
		if got := Quantile(xs, c.q); !near(got, c.want, 1e-12) {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := Median([]float64{7}); got != 7 {
		t.Errorf("median of one = %v", got)
	}
	if !math.IsNaN(Median(nil)) {
		t.Errorf("median of none is not NaN")
	}
	if xs[0] != 3 {
		t.Errorf("Quantile sorted its input in place")
	}
}

// TestMannWhitneyHand checks a case worked by hand.
//
//	x = 1 2 2 4, y = 2 3 5 6 7
//	pooled ranks: 1->1, the three 2s->3 (midrank of 2,3,4), 3->5, 4->6, 5->7, 6->8, 7->9
//	R_x = 1 + 3 + 3 + 6 = 13, U = 13 - 4*5/2 = 3
//	mu = 10, ties: one group of 3 -> sum(t^3 - t) = 24, 24 / (9*8) = 1/3
//	sigma^2 = 20/12 * (10 - 1/3) = 145/9
//	z = (3 - 10 + 0.5) / sqrt(145/9) = -1.619387, p = Phi(z) = 0.052682
func TestMannWhitneyHand(t *testing.T) {
	u, p := MannWhitneyLess([]float64{1, 2, 2, 4}, []float64{2, 3, 5, 6, 7})
	if u != 3 {
		t.Errorf("U = %v, want 3", u)
	}
	if !near(p, 0.0526820264, 1e-9) {
		t.Errorf("p = %.10f, want 0.0526820264", p)
	}
	// The other direction: U' = nx ny - U = 17, z = (17 - 10 + 0.5)/sigma.
	u2, p2 := MannWhitneyLess([]float64{2, 3, 5, 6, 7}, []float64{1, 2, 2, 4})
	if u2 != 17 {
		t.Errorf("reverse U = %v, want 17", u2)
	}
	if want := NormCDF(7.5 / math.Sqrt(145.0/9)); !near(p2, want, 1e-12) || p2 < 0.9 {
		t.Errorf("reverse p = %v, want %v", p2, want)
	}
}

func TestMannWhitneyEdges(t *testing.T) {
	// Fully separated, no ties: U = 0 and a small p.
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	y := []float64{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	u, p := MannWhitneyLess(x, y)
	if u != 0 || p > 0.001 {
		t.Errorf("separated: U = %v, p = %v", u, p)
	}
	// All tied: no evidence.
	if _, p := MannWhitneyLess([]float64{0, 0, 0}, []float64{0, 0}); p != 1 {
		t.Errorf("all tied: p = %v, want 1", p)
	}
	if _, p := MannWhitneyLess(nil, y); !math.IsNaN(p) {
		t.Errorf("empty x: p = %v, want NaN", p)
	}
}

func TestRatioAndGeoMean(t *testing.T) {
	if r := Ratio(0, 1e-9); r != 1 {
		t.Errorf("Ratio(0, floor) = %v, want 1", r)
	}
	if r := Ratio(2, 0); !near(r, 2e9, 1e-3) {
		t.Errorf("Ratio(2, 0) = %v, want 2e9", r)
	}
	if g := GeoMean([]float64{2, 8, math.NaN()}); !near(g, 4, 1e-12) {
		t.Errorf("GeoMean = %v, want 4", g)
	}
	if g := GeoMean(nil); !math.IsNaN(g) {
		t.Errorf("GeoMean() = %v, want NaN", g)
	}
}
