package main

import (
	"fmt"
	"math"

	"github.com/trialform/trialform/tuner/space"
)

// Problem is one minimization benchmark. Regret of a run is the best value
// it found minus Optimum.
type Problem struct {
	Name    string
	Space   *space.Space
	Optimum float64      // the known global minimum
	Argmin  space.Params // a point where it is reached (checked by the tests)
	// Eval is the objective of an analytic problem; nil for a problem that
	// a Python worker evaluates (Worker names the script in this folder).
	Eval   func(space.Params) float64
	Worker string
	Note   string
}

func uniform(name string, lo, hi float64) space.Param {
	return space.Param{Name: name, Kind: space.Uniform, Args: []float64{lo, hi}}
}

// box is the d-dimensional box [lo, hi]^d with params x0..x{d-1}.
func box(d int, lo, hi float64) *space.Space {
	sp := &space.Space{}
	for i := 0; i < d; i++ {
		sp.Params = append(sp.Params, uniform(fmt.Sprintf("x%d", i), lo, hi))
	}
	return sp
}

// vec reads x0..x{d-1} of p.
func vec(p space.Params, d int) []float64 {
	x := make([]float64, d)
	for i := range x {
		x[i], _ = space.ToFloat(p[fmt.Sprintf("x%d", i)])
	}
	return x
}

// point is the Params of x0..x{d-1} = xs.
func point(xs ...float64) space.Params {
	p := space.Params{}
	for i, x := range xs {
		p[fmt.Sprintf("x%d", i)] = x
	}
	return p
}

func repeat(x float64, d int) []float64 {
	xs := make([]float64, d)
	for i := range xs {
		xs[i] = x
	}
	return xs
}

func ofVec(d int, f func([]float64) float64) func(space.Params) float64 {
	return func(p space.Params) float64 { return f(vec(p, d)) }
}

func branin(x []float64) float64 {
	b := 5.1 / (4 * math.Pi * math.Pi)
	c := 5 / math.Pi
	t := 1 / (8 * math.Pi)
	u := x[1] - b*x[0]*x[0] + c*x[0] - 6
	return u*u + 10*(1-t)*math.Cos(x[0]) + 10
}

// hartmann is the Hartmann family: -sum_i alpha_i exp(-sum_j A_ij (x_j - P_ij)^2).
func hartmann(alpha []float64, a, p [][]float64) func([]float64) float64 {
	return func(x []float64) float64 {
		s := 0.0
		for i := range alpha {
			e := 0.0
			for j := range x {
				d := x[j] - p[i][j]
				e += a[i][j] * d * d
			}
			s += alpha[i] * math.Exp(-e)
		}
		return -s
	}
}

var hartmannAlpha = []float64{1.0, 1.2, 3.0, 3.2}

var hartmann3 = hartmann(hartmannAlpha,
	[][]float64{{3, 10, 30}, {0.1, 10, 35}, {3, 10, 30}, {0.1, 10, 35}},
	[][]float64{
		{0.3689, 0.1170, 0.2673},
		{0.4699, 0.4387, 0.7470},
		{0.1091, 0.8732, 0.5547},
		{0.0381, 0.5743, 0.8828},
	})

var hartmann6 = hartmann(hartmannAlpha,
	[][]float64{
		{10, 3, 17, 3.5, 1.7, 8},
		{0.05, 10, 17, 0.1, 8, 14},
		{3, 3.5, 1.7, 10, 17, 8},
		{17, 8, 0.05, 10, 0.1, 14},
	},
	[][]float64{
		{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
		{0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
		{0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
		{0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381},
	})

func rosenbrock(x []float64) float64 {
	s := 0.0
	for i := 0; i+1 < len(x); i++ {
		a := x[i+1] - x[i]*x[i]
		b := 1 - x[i]
		s += 100*a*a + b*b
	}
	return s
}

func ackley(x []float64) float64 {
	n := float64(len(x))
	sq, cs := 0.0, 0.0
	for _, v := range x {
		sq += v * v
		cs += math.Cos(2 * math.Pi * v)
	}
	return -20*math.Exp(-0.2*math.Sqrt(sq/n)) - math.Exp(cs/n) + 20 + math.E
}

func levy(x []float64) float64 {
	d := len(x)
	w := make([]float64, d)
	for i, v := range x {
		w[i] = 1 + (v-1)/4
	}
	sin2 := func(v float64) float64 { s := math.Sin(v); return s * s }
	s := sin2(math.Pi * w[0])
	for i := 0; i < d-1; i++ {
		s += (w[i] - 1) * (w[i] - 1) * (1 + 10*sin2(math.Pi*w[i]+1))
	}
	last := w[d-1] - 1
	return s + last*last*(1+sin2(2*math.Pi*w[d-1]))
}

func styblinskiTang(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v*v*v*v - 16*v*v + 5*v
	}
	return s / 2
}

func sixHumpCamel(x []float64) float64 {
	a, b := x[0], x[1]
	return (4-2.1*a*a+a*a*a*a/3)*a*a + a*b + (-4+4*b*b)*b*b
}

// styblinskiTangX is the coordinate of Styblinski-Tang's minimum, the
// smallest root of 4x^3 - 32x + 5 = 0.
const styblinskiTangX = -2.903534027771178

// The mixed problem: five parameters of five kinds, and an optimizer choice
// that moves the optimum of the other four. For option k the objective is
//
//	offset_k + (log10(lr) - L_k)^2 + ((width - W_k)/2)^2
//	         + ((depth - D_k)/2)^2 + ((log2(batch) - B_k)/3)^2
//
// with the centres below, each on the grid its parameter can take. Its global
// minimum is 0, at opt=adam, lr=1e-3, width=6.5, depth=3, batch=64; the
// other options' best values are their offsets (0.25, 0.5, 1).
var mixedCentres = []struct {
	opt            string
	offset         float64
	lr, w, d, logb float64
}{
	{"sgd", 0.25, -1, 2, 7, 8},
	{"adam", 0, -3, 6.5, 3, 6},
	{"rmsprop", 0.5, -2.5, 9, 5, 3},
	{"adagrad", 1, -1.5, 4, 1, 10},
}

func mixedSpace() *space.Space {
	var opts []space.Option
	for _, c := range mixedCentres {
		opts = append(opts, space.Option{Value: c.opt})
	}
	return &space.Space{Params: []space.Param{
		{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-5, 1}},        // log-float
		{Name: "width", Kind: space.Quniform, Args: []float64{0, 10, 0.5}},    // q-step float
		{Name: "depth", Kind: space.Randint, Args: []float64{1, 9}},           // int 1..8
		{Name: "batch", Kind: space.Qloguniform, Args: []float64{1, 1024, 1}}, // log-int
		{Name: "opt", Kind: space.Choice, Options: opts},                      // 4-way categorical
	}}
}

func mixed(p space.Params) float64 {
	lr, _ := space.ToFloat(p["lr"])
	w, _ := space.ToFloat(p["width"])
	d, _ := space.ToFloat(p["depth"])
	b, _ := space.ToFloat(p["batch"])
	opt, _ := p["opt"].(string)
	for _, c := range mixedCentres {
		if c.opt != opt {
			continue
		}
		u := math.Log10(lr) - c.lr
		v := (w - c.w) / 2
		x := (d - c.d) / 2
		y := (math.Log2(b) - c.logb) / 3
		return c.offset + u*u + v*v + x*x + y*y
	}
	return math.Inf(1)
}

// Problems lists the benchmark problems in report order.
func Problems() []*Problem {
	st5 := repeat(styblinskiTangX, 5)
	return []*Problem{
		{Name: "branin", Space: &space.Space{Params: []space.Param{uniform("x0", -5, 10), uniform("x1", 0, 15)}},
			Eval: ofVec(2, branin), Optimum: 0.397887357729738, Argmin: point(math.Pi, 2.275)},
		{Name: "hartmann3", Space: box(3, 0, 1), Eval: ofVec(3, hartmann3),
			Optimum: -3.86278214782076, Argmin: point(0.114614, 0.555649, 0.852547)},
		{Name: "hartmann6", Space: box(6, 0, 1), Eval: ofVec(6, hartmann6),
			Optimum: -3.32236801141551, Argmin: point(0.20168952, 0.15001069, 0.47687398, 0.27533243, 0.31165162, 0.65730053)},
		{Name: "rosenbrock5", Space: box(5, -5, 10), Eval: ofVec(5, rosenbrock), Optimum: 0, Argmin: point(repeat(1, 5)...)},
		{Name: "ackley5", Space: box(5, -10, 30), Eval: ofVec(5, ackley), Optimum: 0, Argmin: point(repeat(0, 5)...),
			Note: "box [-10, 30]^5 so that the optimum is off-centre"},
		{Name: "levy5", Space: box(5, -10, 10), Eval: ofVec(5, levy), Optimum: 0, Argmin: point(repeat(1, 5)...)},
		{Name: "styblinski5", Space: box(5, -5, 5), Eval: ofVec(5, styblinskiTang),
			Optimum: -195.8308285188571, Argmin: point(st5...)},
		{Name: "camel6", Space: &space.Space{Params: []space.Param{uniform("x0", -3, 3), uniform("x1", -2, 2)}},
			Eval: ofVec(2, sixHumpCamel), Optimum: -1.0316284534898774, Argmin: point(0.08984201368301331, -0.7126564032704135)},
		{Name: "mixed5", Space: mixedSpace(), Eval: mixed, Optimum: 0,
			Argmin: space.Params{"lr": 1e-3, "width": 6.5, "depth": 3.0, "batch": 64.0, "opt": "adam"},
			Note:   "log-float, q-float, int, log-int, 4-way choice that moves the optimum"},
		{Name: "svm-digits", Space: &space.Space{Params: []space.Param{
			{Name: "C", Kind: space.Loguniform, Args: []float64{1e-2, 1e4}},
			{Name: "gamma", Kind: space.Loguniform, Args: []float64{1e-4, 10}},
		}}, Worker: "digits_worker.py", Optimum: 0,
			Note: "3-fold CV error of an RBF SVM on 450 digits; optimum taken as 0, so regret is the error"},
	}
}
