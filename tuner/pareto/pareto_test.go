package pareto

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestRanksHandFront(t *testing.T) {
	pts := [][]float64{
		{1, 5}, // front
		{2, 2}, // front
		{5, 1}, // front
		{3, 3}, // dominated by {2,2}
		{4, 4}, // dominated by {3,3}
		{2, 2}, // equal to a front member: front too
		{math.NaN(), 1},
	}
	got := Ranks(pts)
	want := []int{1, 1, 1, 2, 3, 1, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Ranks = %v, want %v", got, want)
		}
	}
}

// TestRanksMatchDefinition: on random points in 2 to 4 objectives, with
// ties, repeated points, infinities and NaN, every rank is the definition's:
// 0 for a point holding NaN, else 1 plus the largest rank of the points
// that dominate it (1 when none does).
func TestRanksMatchDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	for trial := 0; trial < 200; trial++ {
		m := 2 + trial%3
		n := 1 + rng.IntN(120)
		pts := make([][]float64, n)
		for i := range pts {
			p := make([]float64, m)
			for k := range p {
				p[k] = float64(rng.IntN(6)) // coarse: many ties
				if trial%2 == 0 {
					p[k] = rng.Float64()
				}
			}
			switch rng.IntN(40) {
			case 0:
				p[rng.IntN(m)] = math.NaN()
			case 1:
				p[rng.IntN(m)] = math.Inf(1)
			case 2:
				if i > 0 {
					p = append([]float64(nil), pts[rng.IntN(i)]...)
				}
			}
			pts[i] = p
		}
		got := Ranks(pts)
		want := make([]int, n)
		var rankOf func(i int) int
		rankOf = func(i int) int {
			if want[i] != 0 || hasNaN(pts[i]) {
				return want[i]
			}
			r := 1
			for j := range pts {
				if !hasNaN(pts[j]) && Dominates(pts[j], pts[i]) {
					r = max(r, rankOf(j)+1)
				}
			}
			want[i] = r
			return r
		}
		for i := range pts {
			if rankOf(i) != got[i] {
				t.Fatalf("trial %d: point %d %v has rank %d, want %d", trial, i, pts[i], got[i], want[i])
			}
		}
	}
}

func TestHypervolumeHandComputed(t *testing.T) {
	cases := []struct {
		name string
		pts  [][]float64
		ref  []float64
		want float64
	}{
		// Staircase: (1,3),(2,2),(3,1) under (4,4): 3*1 + 2*1 + 1*1 = 6.
		{"2d staircase", [][]float64{{1, 3}, {2, 2}, {3, 1}}, []float64{4, 4}, 6},
		// A dominated point and one outside the reference add nothing.
		{"2d dominated and outside", [][]float64{{1, 3}, {2, 2}, {3, 1}, {3, 3}, {5, 0}}, []float64{4, 4}, 6},
		{"2d empty", nil, []float64{1, 1}, 0},
		// One point: a box.
		{"3d box", [][]float64{{1, 2, 3}}, []float64{4, 4, 4}, 3 * 2 * 1},
		// Boxes [0,3]x[2,3]x[0,1] and [2,3]x[0,3]x[0,1] (3 each) overlap
		// in [2,3]x[2,3]x[0,1]: 3 + 3 - 1.
		{"3d two boxes", [][]float64{{0, 2, 0}, {2, 0, 0}}, []float64{3, 3, 1}, 3 + 3 - 1},
		// (0,1,1),(1,0,1),(1,1,0) under (2,2,2): three 2x1x1 boxes, each
		// two sharing the cube [1,2]^3, which all three share:
		// 6 - 3 + 1 = 4.
		{"3d corners", [][]float64{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}, []float64{2, 2, 2}, 4},
	}
	for _, c := range cases {
		if got := Hypervolume(c.pts, c.ref); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: Hypervolume = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestHypervolume3DMatchesGridCount checks the sweep against counting
// grid cells on random integer fronts (exact: every box edge is on the
// grid).
func TestHypervolume3DMatchesGridCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 30; trial++ {
		var pts [][]float64
		for i := 0; i < 1+rng.IntN(12); i++ {
			pts = append(pts, []float64{float64(rng.IntN(8)), float64(rng.IntN(8)), float64(rng.IntN(8))})
		}
		ref := []float64{8, 8, 8}
		count := 0
		for x := 0; x < 8; x++ {
			for y := 0; y < 8; y++ {
				for z := 0; z < 8; z++ {
					for _, p := range pts {
						if p[0] <= float64(x) && p[1] <= float64(y) && p[2] <= float64(z) {
							count++
							break
						}
					}
				}
			}
		}
		if got := Hypervolume(pts, ref); got != float64(count) {
			t.Fatalf("points %v: Hypervolume = %v, grid count %d", pts, got, count)
		}
	}
}

func TestCrowdingExtremesInfinite(t *testing.T) {
	d := Crowding([][]float64{{0, 4}, {1, 2}, {3, 1}, {4, 0}})
	if !math.IsInf(d[0], 1) || !math.IsInf(d[3], 1) {
		t.Fatalf("extremes = %v, %v", d[0], d[3])
	}
	// (1,2): neighbours (0,4),(3,1): 3/4 + 3/4 = 1.5.
	if math.Abs(d[1]-1.5) > 1e-12 {
		t.Fatalf("d[1] = %v, want 1.5", d[1])
	}
}

func TestContributions(t *testing.T) {
	c := Contributions([][]float64{{1, 3}, {2, 2}, {3, 1}}, []float64{4, 4})
	// (2,2) alone owns the 1x1 square [2,3]x[2,3].
	if math.Abs(c[1]-1) > 1e-12 || math.Abs(c[0]-1) > 1e-12 || math.Abs(c[2]-1) > 1e-12 {
		t.Fatalf("Contributions = %v", c)
	}
}
