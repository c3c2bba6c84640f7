package tuner

import (
	"fmt"
	"math"

	"github.com/trialform/trialform/tuner/space"
)

// Test functions for the quality tests and the local comparison: each has
// a space, an objective to minimise and its known minimum.
type testFunc struct {
	name string
	sp   *space.Space
	f    func(space.Params) float64
	min  float64
}

func boxSpace(d int, lo, hi float64) *space.Space {
	sp := &space.Space{}
	for i := 0; i < d; i++ {
		sp.Params = append(sp.Params, space.Param{Name: fmt.Sprintf("x%d", i), Kind: space.Uniform, Args: []float64{lo, hi}})
	}
	return sp
}

func vec(p space.Params, d int) []float64 {
	x := make([]float64, d)
	for i := range x {
		x[i], _ = space.ToFloat(p[fmt.Sprintf("x%d", i)])
	}
	return x
}

func sphereFunc(d int) testFunc {
	return testFunc{"sphere", boxSpace(d, -5, 5), func(p space.Params) float64 {
		s := 0.0
		for _, v := range vec(p, d) {
			s += (v - 1) * (v - 1)
		}
		return s
	}, 0}
}

func braninFunc() testFunc {
	sp := &space.Space{Params: []space.Param{
		{Name: "x0", Kind: space.Uniform, Args: []float64{-5, 10}},
		{Name: "x1", Kind: space.Uniform, Args: []float64{0, 15}},
	}}
	return testFunc{"branin", sp, func(p space.Params) float64 {
		x := vec(p, 2)
		b, c, t := 5.1/(4*math.Pi*math.Pi), 5/math.Pi, 1/(8*math.Pi)
		y := x[1] - b*x[0]*x[0] + c*x[0] - 6
		return y*y + 10*(1-t)*math.Cos(x[0]) + 10
	}, 0.397887357729738}
}

func hartmann6Func() testFunc {
	alpha := []float64{1, 1.2, 3, 3.2}
	A := [][]float64{{10, 3, 17, 3.5, 1.7, 8}, {0.05, 10, 17, 0.1, 8, 14}, {3, 3.5, 1.7, 10, 17, 8}, {17, 8, 0.05, 10, 0.1, 14}}
	P := [][]float64{{1312, 1696, 5569, 124, 8283, 5886}, {2329, 4135, 8307, 3736, 1004, 9991}, {2348, 1451, 3522, 2883, 3047, 6650}, {4047, 8828, 8732, 5743, 1091, 381}}
	return testFunc{"hartmann6", boxSpace(6, 0, 1), func(p space.Params) float64 {
		x := vec(p, 6)
		s := 0.0
		for i := 0; i < 4; i++ {
			e := 0.0
			for j := 0; j < 6; j++ {
				d := x[j] - P[i][j]*1e-4
				e += A[i][j] * d * d
			}
			s += alpha[i] * math.Exp(-e)
		}
		return -s
	}, -3.32236801141551}
}

func rosenbrockFunc(d int) testFunc {
	return testFunc{"rosenbrock", boxSpace(d, -5, 10), func(p space.Params) float64 {
		x := vec(p, d)
		s := 0.0
		for i := 0; i+1 < d; i++ {
			s += 100*math.Pow(x[i+1]-x[i]*x[i], 2) + math.Pow(1-x[i], 2)
		}
		return s
	}, 0}
}

func ackleyFunc(d int) testFunc {
	return testFunc{"ackley", boxSpace(d, -10, 30), func(p space.Params) float64 {
		x := vec(p, d)
		s1, s2 := 0.0, 0.0
		for _, v := range x {
			s1 += v * v
			s2 += math.Cos(2 * math.Pi * v)
		}
		n := float64(d)
		return -20*math.Exp(-0.2*math.Sqrt(s1/n)) - math.Exp(s2/n) + 20 + math.E
	}, 0}
}

func styblinskiFunc(d int) testFunc {
	return testFunc{"styblinski", boxSpace(d, -5, 5), func(p space.Params) float64 {
		s := 0.0
		for _, v := range vec(p, d) {
			s += v*v*v*v - 16*v*v + 5*v
		}
		return s / 2
	}, -39.16616570377142 * float64(d)}
}

// mixedFunc has a log-float, a q-float, an int, a log-int and a 4-way
// choice that moves the optimum.
func mixedFunc() testFunc {
	sp := &space.Space{Params: []space.Param{
		{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-5, 1}},
		{Name: "q", Kind: space.Quniform, Args: []float64{0, 10, 0.5}},
		{Name: "n", Kind: space.Randint, Args: []float64{1, 20}},
		{Name: "w", Kind: space.Qloguniform, Args: []float64{1, 1024, 1}},
		{Name: "c", Kind: space.Choice, Options: []space.Option{{Value: "a"}, {Value: "b"}, {Value: "c"}, {Value: "d"}}},
	}}
	shift := map[any]float64{"a": 0, "b": 1, "c": 2, "d": 3}
	return testFunc{"mixed", sp, func(p space.Params) float64 {
		f := func(k string) float64 { v, _ := space.ToFloat(p[k]); return v }
		s := shift[p["c"]]
		l := math.Log10(f("lr")) + 3 - 0.3*s
		q := f("q") - 3 - s
		n := f("n") - 7 - 2*s
		w := math.Log2(f("w")) - 5
		return l*l + 0.3*q*q + 0.05*n*n + 0.2*w*w + 0.5*(3-s)
	}, 0}
}

func hartmann3Func() testFunc {
	alpha := []float64{1, 1.2, 3, 3.2}
	A := [][]float64{{3, 10, 30}, {0.1, 10, 35}, {3, 10, 30}, {0.1, 10, 35}}
	P := [][]float64{{3689, 1170, 2673}, {4699, 4387, 7470}, {1091, 8732, 5547}, {381, 5743, 8828}}
	return testFunc{"hartmann3", boxSpace(3, 0, 1), func(p space.Params) float64 {
		x := vec(p, 3)
		s := 0.0
		for i := 0; i < 4; i++ {
			e := 0.0
			for j := 0; j < 3; j++ {
				d := x[j] - P[i][j]*1e-4
				e += A[i][j] * d * d
			}
			s += alpha[i] * math.Exp(-e)
		}
		return -s
	}, -3.86278214782076}
}

func levyFunc(d int) testFunc {
	return testFunc{"levy", boxSpace(d, -10, 10), func(p space.Params) float64 {
		x := vec(p, d)
		w := make([]float64, d)
		for i, v := range x {
			w[i] = 1 + (v-1)/4
		}
		s := math.Pow(math.Sin(math.Pi*w[0]), 2)
		for i := 0; i+1 < d; i++ {
			s += (w[i] - 1) * (w[i] - 1) * (1 + 10*math.Pow(math.Sin(math.Pi*w[i]+1), 2))
		}
		wd := w[d-1]
		return s + (wd-1)*(wd-1)*(1+math.Pow(math.Sin(2*math.Pi*wd), 2))
	}, 0}
}

func camelFunc() testFunc {
	sp := &space.Space{Params: []space.Param{
		{Name: "x0", Kind: space.Uniform, Args: []float64{-3, 3}},
		{Name: "x1", Kind: space.Uniform, Args: []float64{-2, 2}},
	}}
	return testFunc{"camel", sp, func(p space.Params) float64 {
		x := vec(p, 2)
		a, b := x[0], x[1]
		return (4-2.1*a*a+a*a*a*a/3)*a*a + a*b + (-4+4*b*b)*b*b
	}, -1.031628453489877}
}

func allFuncs() []testFunc {
	return []testFunc{braninFunc(), hartmann3Func(), hartmann6Func(), rosenbrockFunc(5), ackleyFunc(5), levyFunc(5), styblinskiFunc(5), camelFunc(), mixedFunc()}
}
