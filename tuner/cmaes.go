package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/trialform/trialform/tuner/space"
)

// CMAESSettings are the cmaes tuner's settings.
type CMAESSettings struct {
	Seeded
	Popsize *int    `hcl:"popsize,optional" range:"[2, 4096]" default:"4 + ⌊3 ln d⌋" doc:"population of the first run (d: the numeric params); doubles at every restart"`
	Sigma0  float64 `hcl:"sigma0,optional" range:"[1e-6, 1]" default:"0.25" doc:"initial step size as a fraction of each parameter's range"`
}

func cmaesKind() Kind {
	return Kind{
		Name: "cmaes", Spaces: "needs a numeric param; choices drawn at random",
		Summary:  "CMA-ES with IPOP restarts (population doubles) in the normalised space (log params in log space; ints and q-steps rounded at the end); its state is rebuilt by replaying the history, so trials of other tuners count too",
		Settings: func() any { return &CMAESSettings{Sigma0: 0.25} },
		New:      newCMAES,
	}
}

// cmaesTuner is CMA-ES with IPOP restarts over the numeric parameters, in
// unit coordinates (unit.go): each bounded parameter's range (log range for
// log kinds) is [0, 1]; randint and q-kinds are searched continuously and
// rounded when a trial's values are produced. Choices and nested choices
// are drawn at random for every trial (CMA-ES has no model of them); a
// space without a numeric parameter is refused (use tpe).
//
// Suggest keeps no state: the search state is rebuilt by replaying the
// history in sequence order. Trials form generations of popsize in that
// order; a generation whose members have all ended is told (failed trials
// rank last), one with a pending member is not yet told, and new trials
// are drawn from the current state. A past trial's continuous point is
// recovered by re-drawing it from its own random stream; when the recorded
// values differ (another tuner proposed it, or the space changed), its
// values are used as an injected point instead.
//
// A run restarts (IPOP: population doubled, mean drawn at random, step
// size reset) when the step size has shrunk below 1e-5 of the range, the
// covariance is ill-conditioned (condition number above 1e14), the best
// values of the recent generations are flat, or the best has not improved
// for 10 + 30 d / popsize generations.
type cmaesTuner struct {
	seeder
	sp      *space.Space
	popsize int
	sigma0  float64
}

func newCMAES(cfg any, sp *space.Space) (Tuner, error) {
	c := cfg.(*CMAESSettings)
	if sp != nil {
		if err := cmaesSpaceOK(sp); err != nil {
			return nil, err
		}
	}
	pop := 0
	if c.Popsize != nil {
		pop = *c.Popsize
	}
	return &cmaesTuner{seeder: c.seeder(), sp: sp, popsize: pop, sigma0: c.Sigma0}, nil
}

func cmaesSpaceOK(sp *space.Space) error {
	if len(newUnitCodec(sp).dims) == 0 {
		return fmt.Errorf("tuner %q: the search space has no numeric parameter (CMA-ES models numbers only); use tuner \"tpe\" or \"auto\" for an all-choice space", "cmaes")
	}
	return nil
}

func (t *cmaesTuner) Suggest(req Request) ([]space.Params, error) {
	sp, err := spaceOf(req, t.sp)
	if err != nil {
		return nil, err
	}
	if err := cmaesSpaceOK(sp); err != nil {
		return nil, err
	}
	sign, err := goalSign(req.Goal)
	if err != nil {
		return nil, err
	}
	c := newUnitCodec(sp)
	seed := t.seedOf(req)
	cfg := cmaConfig{lambda: t.popsize, sigma0: t.sigma0, startSigma: t.sigma0}
	run := replayCMA(c, cfg, seed, scoredHistory(req, sign))
	out := make([]space.Params, len(req.Seqs))
	for _, i := range ascending(req.Seqs) {
		rng := newRNG(seed, req.Seqs[i])
		x := run.es.draw(c, rng)
		p := space.Params{}
		c.decode(x, p)
		for _, o := range c.other {
			p[o.Name] = space.Sample(o, rng)
		}
		out[i] = p
	}
	return out, nil
}

func (s seeder) seedOf(req Request) int64 {
	if s.hasSeed {
		return s.seed
	}
	return req.Seed
}

// cmaConfig says how the runs of a replay start.
type cmaConfig struct {
	lambda int     // first run's population; 0 for the default
	sigma0 float64 // restarts' step size

	startMean  []float64 // first run's mean; nil for the centre
	startSigma float64   // first run's step size
}

// cmaRun is the state a replay ends in.
type cmaRun struct {
	es       *cmaState
	restarts int
}

// replayCMA rebuilds the CMA-ES state from the trials in hist (sequence
// order), all of them CMA-ES members.
func replayCMA(c *unitCodec, cfg cmaConfig, seed int64, hist []scored) *cmaRun {
	d := len(c.dims)
	lambda := cfg.lambda
	if lambda <= 0 {
		lambda = 4 + int(3*math.Log(float64(d)))
	}
	run := &cmaRun{es: newCMAState(d, cfg.startMean, cfg.startSigma, lambda)}
	var xs [][]float64
	var losses []float64
	pending := false
	for _, h := range hist {
		es := run.es
		x := es.draw(c, newRNG(seed, h.seq))
		if !c.sameNumbers(x, h.params) {
			var ok bool
			if x, ok = c.encode(h.params); !ok {
				continue
			}
		}
		if pending {
			continue // a generation waits for a running member
		}
		xs = append(xs, x)
		losses = append(losses, h.loss)
		pending = pending || h.pending
		if len(xs) < es.lambda || pending {
			continue
		}
		es.tell(xs, losses)
		xs, losses = xs[:0], losses[:0]
		if es.shouldRestart() {
			run.restarts++
			rng := newRNG(seed, -1-run.restarts)
			m := make([]float64, d)
			for i := range m {
				m[i] = rng.Float64()
			}
			run.es = newCMAState(d, m, cfg.sigma0, min(es.lambda*2, 4096))
		}
	}
	return run
}

// cmaState is one CMA-ES run (Hansen's tutorial, positive weights only):
// mean, step size, covariance C = B diag(D²) Bᵀ, evolution paths.
type cmaState struct {
	d, lambda, mu                   int
	w                               []float64
	mueff, cs, ds, cc, c1, cmu, chi float64

	mean, pc, ps []float64
	sigma        float64
	C, B, D      []float64
	eigenGen     int // generation of the last eigendecomposition
	gen          int // generations told
	best         float64
	bestGen      int
	genBest      []float64 // best loss of every told generation
}

func newCMAState(d int, mean []float64, sigma float64, lambda int) *cmaState {
	s := &cmaState{d: d, lambda: lambda, mu: lambda / 2, sigma: sigma, best: math.Inf(1)}
	fd := float64(d)
	s.w = make([]float64, s.mu)
	sum := 0.0
	for i := range s.w {
		s.w[i] = math.Log(float64(lambda+1)/2) - math.Log(float64(i+1))
		sum += s.w[i]
	}
	sq := 0.0
	for i := range s.w {
		s.w[i] /= sum
		sq += s.w[i] * s.w[i]
	}
	s.mueff = 1 / sq
	s.cs = (s.mueff + 2) / (fd + s.mueff + 5)
	s.ds = 1 + 2*math.Max(0, math.Sqrt((s.mueff-1)/(fd+1))-1) + s.cs
	s.cc = (4 + s.mueff/fd) / (fd + 4 + 2*s.mueff/fd)
	s.c1 = 2 / ((fd+1.3)*(fd+1.3) + s.mueff)
	s.cmu = math.Min(1-s.c1, 2*(s.mueff-2+1/s.mueff)/((fd+2)*(fd+2)+s.mueff))
	s.chi = math.Sqrt(fd) * (1 - 1/(4*fd) + 1/(21*fd*fd))
	s.mean = make([]float64, d)
	if mean != nil {
		copy(s.mean, mean)
	} else {
		for i := range s.mean {
			s.mean[i] = 0.5
		}
	}
	s.pc, s.ps = make([]float64, d), make([]float64, d)
	s.C, s.B, s.D = make([]float64, d*d), make([]float64, d*d), make([]float64, d)
	for i := 0; i < d; i++ {
		s.C[i*d+i], s.B[i*d+i], s.D[i] = 1, 1, 1
	}
	return s
}

// draw samples a point of N(mean, sigma² C) from rng, redrawing up to 10
// times a point outside the bounds, then clipping.
func (s *cmaState) draw(c *unitCodec, rng *rand.Rand) []float64 {
	d := s.d
	x := make([]float64, d)
	z := make([]float64, d)
	for try := 0; ; try++ {
		for i := range z {
			z[i] = rng.NormFloat64() * s.D[i]
		}
		for i := 0; i < d; i++ {
			v := 0.0
			for j := 0; j < d; j++ {
				v += s.B[i*d+j] * z[j]
			}
			x[i] = s.mean[i] + s.sigma*v
		}
		if c.feasible(x) || try == 9 {
			break
		}
	}
	for i, u := range c.dims {
		if u.bounded {
			x[i] = clampF(x[i], 0, 1)
		}
	}
	return x
}

// invSqrtTimes returns C^{-1/2} y.
func (s *cmaState) invSqrtTimes(y []float64) []float64 {
	d := s.d
	t := make([]float64, d)
	for j := 0; j < d; j++ {
		v := 0.0
		for i := 0; i < d; i++ {
			v += s.B[i*d+j] * y[i]
		}
		t[j] = v / s.D[j]
	}
	out := make([]float64, d)
	for i := 0; i < d; i++ {
		v := 0.0
		for j := 0; j < d; j++ {
			v += s.B[i*d+j] * t[j]
		}
		out[i] = v
	}
	return out
}

// tell updates the run with one generation's points and losses (+Inf for
// failed members). A generation without a finite loss changes nothing but
// the generation count.
func (s *cmaState) tell(xs [][]float64, losses []float64) {
	d := s.d
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return losses[idx[a]] < losses[idx[b]] })
	s.gen++
	gb := losses[idx[0]]
	s.genBest = append(s.genBest, gb)
	if math.IsInf(gb, 1) {
		return
	}
	if gb < s.best {
		s.best, s.bestGen = gb, s.gen
	}
	// Steps of the best mu, each clipped to a Mahalanobis length of at
	// most sqrt(d) + 2d/(d+2) (points not drawn by this state are
	// injected; the clip keeps them from derailing the paths).
	// Only finite losses select: with failures among the best mu, the
	// weights of the successful ones are renormalised.
	mu := 0
	for mu < s.mu && mu < len(idx) && !math.IsInf(losses[idx[mu]], 1) {
		mu++
	}
	w := s.w[:mu]
	if mu < s.mu {
		tot := 0.0
		for _, v := range w {
			tot += v
		}
		w = append([]float64(nil), w...)
		for k := range w {
			w[k] /= tot
		}
	}
	maxLen := math.Sqrt(float64(d)) + 2*float64(d)/float64(d+2)
	ys := make([][]float64, mu)
	yw := make([]float64, d)
	for k := 0; k < mu; k++ {
		x := xs[idx[k]]
		y := make([]float64, d)
		for i := range y {
			y[i] = (x[i] - s.mean[i]) / s.sigma
		}
		if n := norm(s.invSqrtTimes(y)); n > maxLen {
			for i := range y {
				y[i] *= maxLen / n
			}
		}
		ys[k] = y
		for i := range yw {
			yw[i] += w[k] * y[i]
		}
	}
	for i := range s.mean {
		s.mean[i] += s.sigma * yw[i]
	}
	cy := s.invSqrtTimes(yw)
	a := math.Sqrt(s.cs * (2 - s.cs) * s.mueff)
	for i := range s.ps {
		s.ps[i] = (1-s.cs)*s.ps[i] + a*cy[i]
	}
	psn := norm(s.ps)
	hs := 0.0
	if psn/math.Sqrt(1-math.Pow(1-s.cs, 2*float64(s.gen))) < (1.4+2/float64(d+1))*s.chi {
		hs = 1
	}
	b := math.Sqrt(s.cc * (2 - s.cc) * s.mueff)
	for i := range s.pc {
		s.pc[i] = (1-s.cc)*s.pc[i] + hs*b*yw[i]
	}
	keep := 1 - s.c1 - s.cmu + (1-hs)*s.c1*s.cc*(2-s.cc)
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			v := keep*s.C[i*d+j] + s.c1*s.pc[i]*s.pc[j]
			for k, y := range ys {
				v += s.cmu * w[k] * y[i] * y[j]
			}
			s.C[i*d+j], s.C[j*d+i] = v, v
		}
	}
	s.sigma *= math.Exp(math.Min(1, (s.cs/s.ds)*(psn/s.chi-1)))
	// Lazy eigendecomposition, as Hansen recommends: O(d³) at most every
	// 1/(10 d (c1 + cmu)) generations.
	if float64(s.gen-s.eigenGen) >= 1/(10*float64(d)*(s.c1+s.cmu)) {
		s.eigenGen = s.gen
		s.D = jacobiEigen(s.C, s.B, d)
		for i := range s.D {
			s.D[i] = math.Sqrt(math.Max(s.D[i], 1e-300))
		}
	}
}

// shouldRestart reports whether the run has converged or stalled.
func (s *cmaState) shouldRestart() bool {
	d := s.d
	maxC, maxD, minD := 0.0, 0.0, math.Inf(1)
	for i := 0; i < d; i++ {
		maxC = math.Max(maxC, s.C[i*d+i])
		maxD, minD = math.Max(maxD, s.D[i]), math.Min(minD, s.D[i])
	}
	switch {
	case s.sigma*math.Sqrt(maxC) < 1e-5: // tolx
		return true
	case maxD > 1e7*minD: // condition number of C above 1e14
		return true
	case math.IsNaN(s.sigma) || s.sigma > 1e8:
		return true
	}
	flat := 10 + int(math.Ceil(30*float64(d)/float64(s.lambda)))
	if s.gen-s.bestGen > flat && !math.IsInf(s.best, 1) {
		return true // stagnation
	}
	if len(s.genBest) >= 10 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range s.genBest[len(s.genBest)-10:] {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if !math.IsInf(hi, 0) && hi-lo <= 1e-12*math.Max(1, math.Abs(lo)) { // tolfun
			return true
		}
	}
	return false
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// jacobiEigen computes the eigenvalues of the symmetric d×d matrix a (row
// major, not modified) by cyclic Jacobi rotations; the eigenvectors are
// written as the columns of vecs.
func jacobiEigen(a, vecs []float64, d int) []float64 {
	m := append([]float64(nil), a...)
	for i := range vecs[:d*d] {
		vecs[i] = 0
	}
	for i := 0; i < d; i++ {
		vecs[i*d+i] = 1
	}
	for sweep := 0; sweep < 100; sweep++ {
		off, diag := 0.0, 0.0
		for i := 0; i < d; i++ {
			diag += m[i*d+i] * m[i*d+i]
			for j := i + 1; j < d; j++ {
				off += m[i*d+j] * m[i*d+j]
			}
		}
		if off <= 1e-30*diag || off == 0 {
			break
		}
		for p := 0; p < d; p++ {
			for q := p + 1; q < d; q++ {
				apq := m[p*d+q]
				if apq == 0 {
					continue
				}
				theta := (m[q*d+q] - m[p*d+p]) / (2 * apq)
				t := 1 / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				if theta < 0 {
					t = -t
				}
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := 0; k < d; k++ {
					akp, akq := m[k*d+p], m[k*d+q]
					m[k*d+p], m[k*d+q] = c*akp-s*akq, s*akp+c*akq
				}
				for k := 0; k < d; k++ {
					apk, aqk := m[p*d+k], m[q*d+k]
					m[p*d+k], m[q*d+k] = c*apk-s*aqk, s*apk+c*aqk
				}
				for k := 0; k < d; k++ {
					vkp, vkq := vecs[k*d+p], vecs[k*d+q]
					vecs[k*d+p], vecs[k*d+q] = c*vkp-s*vkq, s*vkp+c*vkq
				}
			}
		}
	}
	ev := make([]float64, d)
	for i := range ev {
		ev[i] = m[i*d+i]
	}
	return ev
}
