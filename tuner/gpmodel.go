package tuner

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// This file is the Gaussian-process model behind the gp and metis tuners:
// a zero-mean GP on standardised losses over points of [0, 1]^d, with a
// Matern 5/2 kernel with one length scale per dimension (ARD), a signal
// variance and a noise variance. The hyperparameters maximise the log
// marginal likelihood plus weak log-normal priors (which keep them sane on
// a handful of points), by L-BFGS from a fixed start and a few random
// ones. gonum does the linear algebra and the optimiser; the kernel, the
// likelihood's gradient and the predictive gradients are here.

// gpHyper are a GP's hyperparameters.
type gpHyper struct {
	ls    []float64 // length scale per dimension, in unit coordinates
	amp2  float64   // signal variance
	noise float64   // noise variance (on standardised losses)
}

const (
	gpNoiseFloor = 1e-6
	gpLogLsMu    = -0.9 // prior: log length scale ~ N(log 0.4, 1)
	gpLogLsSd    = 1.0
	gpLogAmpSd   = 1.0  // prior: log amp2 ~ N(0, 1)
	gpLogNoiseMu = -6.0 // prior: log noise ~ N(-6, 3)
	gpLogNoiseSd = 3.0
)

// theta packs h as the optimiser's vector: log ls..., log amp2, log(noise-floor).
func (h gpHyper) theta() []float64 {
	t := make([]float64, len(h.ls)+2)
	for i, l := range h.ls {
		t[i] = math.Log(l)
	}
	t[len(h.ls)] = math.Log(h.amp2)
	t[len(h.ls)+1] = math.Log(math.Max(h.noise-gpNoiseFloor, 1e-12))
	return t
}

func hyperOf(t []float64) gpHyper {
	d := len(t) - 2
	h := gpHyper{ls: make([]float64, d)}
	for i := 0; i < d; i++ {
		h.ls[i] = math.Exp(clampF(t[i], -7, 5))
	}
	h.amp2 = math.Exp(clampF(t[d], -10, 6))
	h.noise = gpNoiseFloor + math.Exp(clampF(t[d+1], -25, 2))
	return h
}

// matern52 returns k(r)/amp2 and -dk/dr / (amp2 r) (finite at r = 0),
// for the scaled distance r.
func matern52(r float64) (k, dkr float64) {
	s5r := math.Sqrt(5) * r
	e := math.Exp(-s5r)
	return (1 + s5r + 5*r*r/3) * e, 5.0 / 3 * (1 + s5r) * e
}

// scaledDist2 is sum ((a_i-b_i)/ls_i)².
func scaledDist2(a, b, ls []float64) float64 {
	s := 0.0
	for i := range a {
		d := (a[i] - b[i]) / ls[i]
		s += d * d
	}
	return s
}

// gpLML is the negative log marginal likelihood minus the log prior at
// theta, with its gradient written to grad (when not nil).
func gpLML(theta []float64, X [][]float64, y []float64, grad []float64) float64 {
	return new(lmlWork).lml(theta, X, y, grad)
}

// lmlWork holds gpLML's matrices between evaluations of one fit, so that
// the optimiser's many evaluations allocate nothing (a suggestion's
// garbage was mostly these, and collecting it cost as much again).
type lmlWork struct {
	K      *mat.SymDense
	kr, kk []float64
	ch     mat.Cholesky
	alpha  mat.VecDense
	Kinv   mat.SymDense
	inv2   []float64
}

func (w *lmlWork) lml(theta []float64, X [][]float64, y []float64, grad []float64) float64 {
	h := hyperOf(theta)
	n, d := len(X), len(h.ls)
	if w.K == nil || w.K.SymmetricDim() != n {
		w.K = mat.NewSymDense(n, nil)
		w.kr, w.kk = make([]float64, n*n), make([]float64, n*n)
		w.alpha.Reset()
		w.Kinv.Reset()
	}
	K := w.K
	kr := w.kr // dkr of every pair, for the gradient
	kk := w.kk // k/amp2 of every pair
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			k, dkr := matern52(math.Sqrt(scaledDist2(X[i], X[j], h.ls)))
			v := h.amp2 * k
			if i == j {
				v += h.noise
			}
			K.SetSym(i, j, v)
			kr[i*n+j], kr[j*n+i] = dkr, dkr
			kk[i*n+j], kk[j*n+i] = k, k
		}
	}
	ch := &w.ch
	if ok := ch.Factorize(K); !ok {
		if grad != nil {
			for i := range grad {
				grad[i] = 0
			}
		}
		return 1e10
	}
	yv := mat.NewVecDense(n, y)
	alpha := &w.alpha
	if err := ch.SolveVecTo(alpha, yv); err != nil {
		return 1e10
	}
	nll := 0.5*mat.Dot(yv, alpha) + 0.5*ch.LogDet() + 0.5*float64(n)*math.Log(2*math.Pi)
	// priors
	for i := 0; i < d; i++ {
		z := (theta[i] - gpLogLsMu) / gpLogLsSd
		nll += 0.5 * z * z
	}
	za := theta[d] / gpLogAmpSd
	zn := (theta[d+1] - gpLogNoiseMu) / gpLogNoiseSd
	nll += 0.5*za*za + 0.5*zn*zn
	if grad == nil {
		return nll
	}
	Kinv := &w.Kinv
	if err := ch.InverseTo(Kinv); err != nil {
		return 1e10
	}
	// W = alpha alphaᵀ - K⁻¹; d nll/dθ = -½ tr(W dK/dθ).
	a := alpha.RawVector().Data
	for i := range grad {
		grad[i] = 0
	}
	gAmp, gNoise := 0.0, 0.0
	ki := Kinv.RawSymmetric() // upper triangle
	if len(w.inv2) != d {
		w.inv2 = make([]float64, d)
	}
	inv2 := w.inv2
	for l := range inv2 {
		inv2[l] = 1 / (h.ls[l] * h.ls[l])
	}
	for i := 0; i < n; i++ {
		w := a[i]*a[i] - ki.Data[i*ki.Stride+i]
		gAmp += w * h.amp2 * kk[i*n+i]
		gNoise += w * (h.noise - gpNoiseFloor)
		xi := X[i]
		for j := i + 1; j < n; j++ {
			// each off-diagonal pair counts twice
			w := 2 * (a[i]*a[j] - ki.Data[i*ki.Stride+j])
			gAmp += w * h.amp2 * kk[i*n+j]
			c := w * h.amp2 * kr[i*n+j]
			xj := X[j]
			for l := 0; l < d; l++ {
				dx := xi[l] - xj[l]
				grad[l] += c * dx * dx * inv2[l]
			}
		}
	}
	for l := 0; l < d; l++ {
		grad[l] = -0.5*grad[l] + (theta[l]-gpLogLsMu)/(gpLogLsSd*gpLogLsSd)
	}
	grad[d] = -0.5*gAmp + theta[d]/(gpLogAmpSd*gpLogAmpSd)
	grad[d+1] = -0.5*gNoise + (theta[d+1]-gpLogNoiseMu)/(gpLogNoiseSd*gpLogNoiseSd)
	return nll
}

// fitGP picks the hyperparameters for (X, y): L-BFGS from a default start
// and from restarts starts drawn from the priors, keeping the best.
func fitGP(X [][]float64, y []float64, d, restarts int, rng *rand.Rand) gpHyper {
	def := gpHyper{ls: make([]float64, d), amp2: 1, noise: 1e-3}
	for i := range def.ls {
		def.ls[i] = 0.4
	}
	starts := [][]float64{def.theta()}
	for r := 0; r < restarts; r++ {
		t := make([]float64, d+2)
		for i := 0; i < d; i++ {
			t[i] = gpLogLsMu + gpLogLsSd*rng.NormFloat64()
		}
		t[d] = gpLogAmpSd * rng.NormFloat64()
		t[d+1] = -9 + 2*rng.NormFloat64()
		starts = append(starts, t)
	}
	var w lmlWork
	best, bestF := starts[0], w.lml(starts[0], X, y, nil)
	for _, s := range starts {
		// The evaluator remembers the best point it saw, so a line search
		// that gives up still leaves a usable answer.
		ev := &cachedObj{f: func(t, g []float64) float64 { return w.lml(t, X, y, g) }}
		p := optimize.Problem{Func: ev.fn, Grad: ev.grad}
		_, _ = optimize.Minimize(p, append([]float64(nil), s...), &optimize.Settings{
			MajorIterations:   60,
			FuncEvaluations:   60,
			GradientThreshold: 1e-5,
			Converger:         &optimize.FunctionConverge{Absolute: 1e-6, Iterations: 10},
		}, &optimize.LBFGS{})
		if ev.bestX != nil && ev.bestF < bestF {
			best, bestF = ev.bestX, ev.bestF
		}
	}
	return hyperOf(best)
}

// cachedObj serves gonum's separate Func and Grad calls from one
// evaluation per point and remembers the best point seen.
type cachedObj struct {
	f       func(x, g []float64) float64
	lastX   []float64
	lastF   float64
	lastG   []float64
	bestX   []float64
	bestF   float64
	started bool
}

func (c *cachedObj) eval(x []float64) {
	if c.lastX != nil && equalF(c.lastX, x) {
		return
	}
	if c.lastG == nil {
		c.lastG = make([]float64, len(x))
	}
	c.lastX = append(c.lastX[:0], x...)
	c.lastF = c.f(x, c.lastG)
	if math.IsNaN(c.lastF) {
		c.lastF = math.Inf(1)
		for i := range c.lastG {
			c.lastG[i] = 0
		}
	}
	if !c.started || c.lastF < c.bestF {
		c.started = true
		c.bestF = c.lastF
		c.bestX = append([]float64(nil), x...)
	}
}

func (c *cachedObj) fn(x []float64) float64 { c.eval(x); return c.lastF }
func (c *cachedObj) grad(g, x []float64) {
	c.eval(x)
	copy(g, c.lastG)
}

func equalF(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// gpPost is the posterior of a GP with fixed hyperparameters given (X, y).
type gpPost struct {
	h     gpHyper
	X     [][]float64
	L     mat.TriDense // lower Cholesky factor of K
	alpha []float64    // K⁻¹ y
	// predictGrad's scratch, reused from call to call (an acquisition
	// climb calls it dozens of times): not for concurrent use.
	ks, dk []float64
}

func newGPPost(X [][]float64, y []float64, h gpHyper) *gpPost {
	n := len(X)
	for jitter := 0.0; ; jitter = math.Max(jitter*10, 1e-8) {
		K := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				k, _ := matern52(math.Sqrt(scaledDist2(X[i], X[j], h.ls)))
				v := h.amp2 * k
				if i == j {
					v += h.noise + jitter
				}
				K.SetSym(i, j, v)
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(K) {
			if jitter > 1 {
				panic("gp: covariance not positive definite")
			}
			continue
		}
		p := &gpPost{h: h, X: X}
		ch.LTo(&p.L)
		var a mat.VecDense
		_ = ch.SolveVecTo(&a, mat.NewVecDense(n, append([]float64(nil), y...)))
		p.alpha = a.RawVector().Data
		return p
	}
}

// predict returns the posterior mean and standard deviation at each of xs.
func (p *gpPost) predict(xs [][]float64) (mu, sd []float64) {
	n, m := len(p.X), len(xs)
	mu, sd = make([]float64, m), make([]float64, m)
	if m == 0 {
		return
	}
	Ks := mat.NewDense(n, m, nil)
	for j, x := range xs {
		s := 0.0
		for i, xi := range p.X {
			k, _ := matern52(math.Sqrt(scaledDist2(x, xi, p.h.ls)))
			k *= p.h.amp2
			Ks.Set(i, j, k)
			s += k * p.alpha[i]
		}
		mu[j] = s
	}
	V := Ks.RawMatrix()
	blas64.Trsm(blas.Left, blas.NoTrans, 1, p.L.RawTriangular(), V)
	for j := 0; j < m; j++ {
		s := 0.0
		for i := 0; i < n; i++ {
			v := V.Data[i*V.Stride+j]
			s += v * v
		}
		sd[j] = math.Sqrt(math.Max(p.h.amp2-s, 1e-12))
	}
	return
}

// predictGrad returns the mean and standard deviation at x with their
// gradients in x.
func (p *gpPost) predictGrad(x []float64) (mu, sd float64, dmu, dsd []float64) {
	n, d := len(p.X), len(x)
	if len(p.ks) != n || len(p.dk) != n*d {
		p.ks, p.dk = make([]float64, n), make([]float64, n*d)
	}
	ks := p.ks
	dk := p.dk // dk_i/dx_l
	dmu = make([]float64, d)
	for i, xi := range p.X {
		k, dkr := matern52(math.Sqrt(scaledDist2(x, xi, p.h.ls)))
		ks[i] = p.h.amp2 * k
		mu += ks[i] * p.alpha[i]
		for l := 0; l < d; l++ {
			g := -p.h.amp2 * dkr * (x[l] - xi[l]) / (p.h.ls[l] * p.h.ls[l])
			dk[i*d+l] = g
			dmu[l] += g * p.alpha[i]
		}
	}
	L := p.L.RawTriangular()
	w := blas64.Vector{N: n, Inc: 1, Data: ks} // overwritten: L⁻¹ k*
	blas64.Trsv(blas.NoTrans, L, w)
	var2 := p.h.amp2 - blas64.Dot(w, w)
	blas64.Trsv(blas.Trans, L, w) // now K⁻¹ k*
	sd = math.Sqrt(math.Max(var2, 1e-12))
	dsd = make([]float64, d)
	zr := w.Data
	for i := 0; i < n; i++ {
		for l := 0; l < d; l++ {
			dsd[l] += -2 * dk[i*d+l] * zr[i]
		}
	}
	for l := range dsd {
		dsd[l] /= 2 * sd
	}
	return
}

// looResiduals returns, for each training point, its standardised
// leave-one-out residual (y_i - μ_-i) / σ_-i, from K⁻¹ (Rasmussen and
// Williams, eq. 5.12).
func (p *gpPost) looResiduals() []float64 {
	z, _ := p.loo()
	return z
}

// loo returns the standardised leave-one-out residuals and the residuals
// y_i - μ_-i themselves.
func (p *gpPost) loo() (z, resid []float64) {
	n := len(p.X)
	z, resid = make([]float64, n), make([]float64, n)
	var Linv mat.TriDense
	if err := Linv.InverseTri(&p.L); err != nil {
		return
	}
	for i := 0; i < n; i++ {
		// (K⁻¹)_ii = sum_k (L⁻¹)_ki²
		kii := 0.0
		for k := i; k < n; k++ {
			v := Linv.At(k, i)
			kii += v * v
		}
		z[i] = p.alpha[i] / math.Sqrt(kii)
		resid[i] = p.alpha[i] / kii
	}
	return
}

// acquisition scores of a standardised prediction; larger is better. best
// is the smallest standardised loss observed.
type acqKind int

const (
	acqEI acqKind = iota
	acqUCB
	acqPI
)

type acquisition struct {
	kind  acqKind
	kappa float64
	xi    float64
}

// value returns the acquisition at (mu, sd) and its partial derivatives in
// mu and sd.
func (a acquisition) value(mu, sd, best float64) (v, dmu, dsd float64) {
	switch a.kind {
	case acqUCB:
		return -mu + a.kappa*sd, -1, a.kappa
	case acqPI:
		z := (best - mu - a.xi) / sd
		phi := normPDF(z)
		return normCDF(z), -phi / sd, -phi * z / sd
	}
	z := (best - mu - a.xi) / sd
	cdf, pdf := normCDF(z), normPDF(z)
	return (best-mu-a.xi)*cdf + sd*pdf, -cdf, pdf
}

func normPDF(z float64) float64 { return math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi) }
func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
