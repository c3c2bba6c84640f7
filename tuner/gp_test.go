package tuner

import (
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/tuner/space"
)

func randPoints(r *rand.Rand, n, d int) [][]float64 {
	X := make([][]float64, n)
	for i := range X {
		X[i] = make([]float64, d)
		for j := range X[i] {
			X[i][j] = r.Float64()
		}
	}
	return X
}

// TestGPLikelihoodGradient: the analytic gradient of the negative log
// marginal likelihood matches central differences.
func TestGPLikelihoodGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	X := randPoints(r, 15, 3)
	y := make([]float64, len(X))
	for i, x := range X {
		y[i] = math.Sin(5*x[0]) + x[1]*x[1] + 0.1*r.NormFloat64()
	}
	theta := []float64{-1.2, -0.3, 0.4, 0.2, -4}
	g := make([]float64, len(theta))
	gpLML(theta, X, y, g)
	for i := range theta {
		tp, tm := append([]float64(nil), theta...), append([]float64(nil), theta...)
		tp[i] += 1e-5
		tm[i] -= 1e-5
		num := (gpLML(tp, X, y, nil) - gpLML(tm, X, y, nil)) / 2e-5
		if math.Abs(num-g[i]) > 1e-4*(1+math.Abs(num)) {
			t.Errorf("d/dθ%d: analytic %v, numeric %v", i, g[i], num)
		}
	}
}

// TestGPPredictGradient: the predictive mean and deviation and their
// gradients agree with predict and with central differences.
func TestGPPredictGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	X := randPoints(r, 20, 2)
	y := make([]float64, len(X))
	for i, x := range X {
		y[i] = math.Cos(4*x[0]) * x[1]
	}
	h := gpHyper{ls: []float64{0.3, 0.5}, amp2: 1.3, noise: 1e-4}
	post := newGPPost(X, y, h)
	x := []float64{0.41, 0.77}
	mu, sd, dmu, dsd := post.predictGrad(x)
	pm, ps := post.predict([][]float64{x})
	if math.Abs(mu-pm[0]) > 1e-9 || math.Abs(sd-ps[0]) > 1e-9 {
		t.Fatalf("predictGrad (%v, %v) != predict (%v, %v)", mu, sd, pm[0], ps[0])
	}
	for l := range x {
		xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
		xp[l] += 1e-6
		xm[l] -= 1e-6
		a, b := post.predict([][]float64{xp, xm})
		nm, ns := (a[0]-a[1])/2e-6, (b[0]-b[1])/2e-6
		if math.Abs(nm-dmu[l]) > 1e-4*(1+math.Abs(nm)) || math.Abs(ns-dsd[l]) > 1e-4*(1+math.Abs(ns)) {
			t.Errorf("dim %d: dmu %v vs %v, dsd %v vs %v", l, dmu[l], nm, dsd[l], ns)
		}
	}
	// At a training point the deviation is about the noise's.
	_, s := post.predict([][]float64{X[3]})
	if s[0] > 0.05 {
		t.Errorf("sd at a training point = %v", s[0])
	}
}

// TestGPLeaveOneOut: the closed-form leave-one-out residuals equal a refit
// without the point.
func TestGPLeaveOneOut(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	X := randPoints(r, 12, 2)
	y := make([]float64, len(X))
	for i, x := range X {
		y[i] = x[0] - x[1]
	}
	h := gpHyper{ls: []float64{0.4, 0.4}, amp2: 1, noise: 1e-2}
	res := newGPPost(X, y, h).looResiduals()
	for _, i := range []int{0, 5, 11} {
		var Xo [][]float64
		var yo []float64
		for j := range X {
			if j != i {
				Xo, yo = append(Xo, X[j]), append(yo, y[j])
			}
		}
		mu, sd := newGPPost(Xo, yo, h).predict([][]float64{X[i]})
		s := math.Sqrt(sd[0]*sd[0] + h.noise)
		if want := (y[i] - mu[0]) / s; math.Abs(want-res[i]) > 1e-6 {
			t.Errorf("point %d: loo residual %v, refit gives %v", i, res[i], want)
		}
	}
}

// TestGPFitsLengthScales: on data that varies along x0 only, the fitted
// length scale of x1 is much longer than x0's (ARD).
func TestGPFitsLengthScales(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	X := randPoints(r, 40, 2)
	y := make([]float64, len(X))
	for i, x := range X {
		y[i] = math.Sin(6 * x[0])
	}
	h := fitGP(X, standardise(y), 2, 2, r)
	if !(h.ls[1] > 3*h.ls[0]) {
		t.Fatalf("length scales %v: want x1's much longer than x0's", h.ls)
	}
}

var boNames = []string{"gp", "smac", "metis"}

// TestGPUtilities: each acquisition runs and stays in the space, and
// settings are validated.
func TestGPUtilities(t *testing.T) {
	fn := braninFunc()
	for _, u := range []string{"ei", "ucb", "poi"} {
		tn := mustNew(t, "gp", map[string]any{"utility": u, "startup_trials": 4.0, "kappa": 2.0}, fn.sp)
		hist := loop(t, tn, fn.sp, Minimize, 3, 20, fn.f)
		if b := bestOf(hist, Minimize); b > 5 {
			t.Errorf("utility %s: best %v after 20 trials", u, b)
		}
	}
}

func benchSpace5() *space.Space {
	return &space.Space{Params: []space.Param{
		{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-5, 1}},
		{Name: "mom", Kind: space.Uniform, Args: []float64{0, 1}},
		{Name: "layers", Kind: space.Randint, Args: []float64{1, 8}},
		{Name: "width", Kind: space.Qloguniform, Args: []float64{16, 1024, 16}},
		{Name: "drop", Kind: space.Quniform, Args: []float64{0, 0.5, 0.05}},
	}}
}

// BenchmarkGPSuggest200: one suggestion with 200 completed trials of 5
// parameters (target: under 50 ms).
func BenchmarkGPSuggest200(b *testing.B) { benchBO(b, "gp", nil, 200) }

func benchBO(b *testing.B, name string, settings map[string]any, n int) {
	sp := benchSpace5()
	tn := mustNew(b, name, settings, sp)
	r := rand.New(rand.NewPCG(1, 1))
	hist := make([]Observation, n)
	for i := range hist {
		p := space.SampleSpace(sp, r)
		lr, _ := space.ToFloat(p["lr"])
		m, _ := space.ToFloat(p["mom"])
		hist[i] = Observation{Seq: i + 1, Params: p, State: Completed, Value: math.Pow(math.Log10(lr)+2.5, 2) + (m-0.9)*(m-0.9) + 0.01*r.NormFloat64()}
	}
	req := Request{Space: sp, Goal: Minimize, Seed: 1, History: hist, Seqs: []int{n + 1}}
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := tn.Suggest(req); err != nil {
			b.Fatal(err)
		}
	}
	// On a shared machine wall time includes waiting for a core; the
	// process's CPU time per suggestion is the latency on an idle one.
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGPSuggest2000: a long history is capped at gpMaxPoints.
func BenchmarkGPSuggest2000(b *testing.B) { benchBO(b, "gp", nil, 2000) }
