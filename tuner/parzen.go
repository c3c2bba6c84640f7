package tuner

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/trialform/trialform/tuner/space"
)

// This file is the Parzen-estimator half of TPE: one-dimensional mixtures
// of truncated normal kernels for numeric parameters and smoothed
// categorical distributions for choices.

// numDim describes how a numeric parameter is modelled: the model space
// (log space for log kinds), where kernels are truncated, the prior kernel,
// and how a draw in model space becomes a value and, for discrete kinds, the
// cell of model space that rounds to that value.
type numDim struct {
	lo, hi     float64 // truncation bounds in model space (±Inf for normal kinds)
	priorMu    float64
	priorSigma float64 // also the width used by the bandwidth clip
	discrete   bool
	// scoreAtValue: a continuous model of a rounded kind, whose candidates
	// are scored at the model point of their rounded value.
	scoreAtValue bool
	toModel      func(v float64) float64
	finish       func(u float64) (v, a, b float64) // value; cell [a, b] when discrete
	modelledVal  func(v any) (float64, bool)       // an observed value's kernel centre
}

// newNumDim returns the model of p, or false when p cannot be modelled
// (malformed, or a zero-width range), in which case TPE samples it randomly.
func newNumDim(p space.Param) (*numDim, bool) {
	if p.Kind == space.Randint {
		L, H, ok := space.IntRange(p)
		if !ok {
			return nil, false
		}
		lo, hi := float64(L), float64(H-1)
		d := &numDim{lo: lo - 0.5, hi: hi + 0.5, discrete: true, toModel: ident}
		d.finish = func(u float64) (float64, float64, float64) {
			k := clampF(math.RoundToEven(u), lo, hi)
			if k == 0 {
				k = 0 // never -0
			}
			return k, k - 0.5, k + 0.5
		}
		return d.withPrior(p, (d.lo+d.hi)/2, d.hi-d.lo)
	}
	if len(p.Args) < 2 {
		return nil, false
	}
	a0, a1 := p.Args[0], p.Args[1]
	q := 0.0
	if len(p.Args) >= 3 {
		q = p.Args[2]
	}
	quant := func(x float64) float64 { return space.RoundQ(x, q) }
	// The normal kinds draw on the whole line; a draw is kept within
	// mu ± space.MaxNormalZ·sigma (in log space for the log kinds), which
	// Validate guarantees is finite.
	zclamp := func(u float64) float64 {
		return clampF(u, a0-space.MaxNormalZ*a1, a0+space.MaxNormalZ*a1)
	}
	d := &numDim{toModel: ident}
	switch p.Kind {
	case space.Uniform:
		d.lo, d.hi = a0, a1
		d.finish = func(u float64) (float64, float64, float64) { return clampF(u, a0, a1), 0, 0 }
	case space.Loguniform:
		if !(a0 > 0) {
			return nil, false
		}
		d.lo, d.hi, d.toModel = math.Log(a0), math.Log(a1), math.Log
		d.finish = func(u float64) (float64, float64, float64) { return clampF(math.Exp(u), a0, a1), 0, 0 }
	case space.Quniform:
		if !(q > 0) {
			return nil, false
		}
		d.lo, d.hi, d.discrete = a0, a1, true
		if onGrid(a0, q) && onGrid(a1, q) {
			// As Optuna's stepped floats: every value's cell is whole,
			// [lo - q/2, hi + q/2] in all.
			d.lo, d.hi = a0-q/2, a1+q/2
		}
		d.finish = func(u float64) (float64, float64, float64) {
			k := quant(u)
			return clampF(k, a0, a1), math.Max(d.lo, k-q/2), math.Min(d.hi, k+q/2)
		}
	case space.Qloguniform:
		if !(q > 0) || !(a0 > 0) {
			return nil, false
		}
		// As Optuna models log-scaled ints and floats: continuously in log
		// space, a drawn point rounded to the grid and scored at the log of
		// its value. On-grid bounds widen by half a step (an int's cell).
		d.lo, d.hi, d.toModel, d.scoreAtValue = math.Log(a0), math.Log(a1), math.Log, true
		if onGrid(a0, q) && onGrid(a1, q) && a0-q/2 > 0 {
			d.lo, d.hi = math.Log(a0-q/2), math.Log(a1+q/2)
		}
		d.finish = func(u float64) (float64, float64, float64) {
			return clampF(quant(math.Exp(u)), a0, a1), 0, 0
		}
	case space.Normal:
		d.lo, d.hi = math.Inf(-1), math.Inf(1)
		d.finish = func(u float64) (float64, float64, float64) { return zclamp(u), 0, 0 }
	case space.Qnormal:
		if !(q > 0) {
			return nil, false
		}
		d.lo, d.hi, d.discrete = math.Inf(-1), math.Inf(1), true
		d.finish = func(u float64) (float64, float64, float64) {
			k := quant(zclamp(u))
			return k, k - q/2, k + q/2
		}
	case space.Lognormal:
		d.lo, d.hi, d.toModel = math.Inf(-1), math.Inf(1), math.Log
		d.finish = func(u float64) (float64, float64, float64) { return math.Exp(zclamp(u)), 0, 0 }
	case space.Qlognormal:
		if !(q > 0) {
			return nil, false
		}
		d.lo, d.hi, d.discrete = math.Inf(-1), math.Inf(1), true
		// 0 is the cell (-Inf, log(q/2)); its kernels sit at log(q/4).
		d.toModel = func(v float64) float64 { return math.Log(math.Max(v, q/4)) }
		d.finish = func(u float64) (float64, float64, float64) {
			k := quant(math.Exp(zclamp(u)))
			return k, math.Log(math.Max(0, k-q/2)), math.Log(k + q/2)
		}
	default:
		return nil, false
	}
	switch p.Kind {
	case space.Normal, space.Qnormal, space.Lognormal, space.Qlognormal:
		return d.withPrior(p, a0, a1)
	}
	return d.withPrior(p, (d.lo+d.hi)/2, d.hi-d.lo)
}

func (d *numDim) withPrior(p space.Param, mu, sigma float64) (*numDim, bool) {
	if !(sigma > 0) || math.IsInf(sigma, 0) || math.IsNaN(mu) || math.IsInf(mu, 0) {
		return nil, false
	}
	d.priorMu, d.priorSigma = mu, sigma
	d.modelledVal = func(v any) (float64, bool) {
		if !space.Contains(p, v) {
			return 0, false
		}
		x, _ := space.ToFloat(v)
		m := d.toModel(x)
		return m, !math.IsNaN(m) && !math.IsInf(m, 0)
	}
	return d, true
}

func ident(x float64) float64 { return x }

// onGrid reports whether x is a multiple of q, up to rounding.
func onGrid(x, q float64) bool {
	k := math.Round(x / q)
	return math.Abs(k*q-x) <= 1e-9*math.Max(1, math.Abs(x))
}

func clampF(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// mixture is a weighted sum of normal kernels truncated to [lo, hi].
type mixture struct {
	lo, hi    float64
	discrete  bool
	mu        []float64
	invSigma  []float64
	sigma     []float64
	coef      []float64 // continuous: w/(σ Z √(2π)); discrete: w/Z
	scoreCoef []float64 // continuous: w/(Z √(2π)), the kernel's density times σ (see logScore)
	cum       []float64 // cumulative weights, for sampling
}

type kernel struct{ mu, w float64 }

// newMixture builds the Parzen estimator of observations mus (model space,
// chronological, with weights ws) plus the prior kernel of weight
// priorWeight. Bandwidths follow Optuna's univariate rule: each kernel's
// sigma is the larger gap to its sorted neighbours (the outermost kernels
// take their inner gap), clipped into [W/min(100, n+2), W] with W the
// prior's sigma (the range width for bounded kinds), and the prior keeps
// sigma W. Kernels equal in centre and width are merged.
func newMixture(d *numDim, mus, ws []float64, priorWeight float64) *mixture {
	n := len(mus)
	ks := make([]kernel, n+1)
	for i := range mus {
		ks[i] = kernel{mus[i], ws[i]}
	}
	ks[n] = kernel{d.priorMu, -1} // w < 0 marks the prior
	sortKernels(ks)
	W := d.priorSigma
	minS, maxS := W/math.Min(100, float64(n+2)), W
	m := &mixture{lo: d.lo, hi: d.hi, discrete: d.discrete}
	m.mu = make([]float64, 0, n+1)
	m.sigma = make([]float64, 0, n+1)
	ws2 := make([]float64, 0, n+1)
	total := 0.0
	for i, k := range ks {
		var s float64
		switch {
		case k.w < 0:
			s = W
		case len(ks) == 1:
			s = W
		default:
			s = neighbourGap(ks, i)
		}
		s = clampF(s, minS, maxS)
		w := k.w
		if w < 0 {
			w = priorWeight
		}
		total += w
		if j := len(m.mu) - 1; j >= 0 && m.mu[j] == k.mu && m.sigma[j] == s {
			ws2[j] += w
			continue
		}
		m.mu = append(m.mu, k.mu)
		m.sigma = append(m.sigma, s)
		ws2 = append(ws2, w)
	}
	m.invSigma = make([]float64, len(m.mu))
	m.coef = make([]float64, len(m.mu))
	m.scoreCoef = make([]float64, len(m.mu))
	m.cum = make([]float64, len(m.mu))
	c := 0.0
	for i := range m.mu {
		w := ws2[i] / total
		c += w
		m.cum[i] = c
		m.invSigma[i] = 1 / m.sigma[i]
		z := normMass((m.lo-m.mu[i])*m.invSigma[i], (m.hi-m.mu[i])*m.invSigma[i])
		if z < 1e-300 {
			z = 1e-300
		}
		if m.discrete {
			m.coef[i] = w / z
		} else {
			m.coef[i] = w * m.invSigma[i] / (z * sqrt2Pi)
			m.scoreCoef[i] = w / (z * sqrt2Pi)
		}
	}
	return m
}

// neighbourGap is Optuna's univariate bandwidth of kernel i of ks (sorted
// by centre, at least two): the larger gap to its neighbours, the inner
// one for the outermost.
func neighbourGap(ks []kernel, i int) float64 {
	switch {
	case i == 0:
		return ks[1].mu - ks[0].mu
	case i == len(ks)-1:
		return ks[i].mu - ks[i-1].mu
	}
	return math.Max(ks[i].mu-ks[i-1].mu, ks[i+1].mu-ks[i].mu)
}

const sqrt2Pi = 2.5066282746310002

// sortKernels sorts kernels by centre, stably. Large inputs use an LSD
// radix sort on the float bits (linear time, skipping byte positions all
// keys share), small ones an insertion-based stable sort.
func sortKernels(ks []kernel) {
	if len(ks) < 256 {
		slices.SortStableFunc(ks, func(a, b kernel) int { return cmp.Compare(a.mu, b.mu) })
		return
	}
	orig := ks
	keys := make([]uint64, len(ks))
	for i, k := range ks {
		b := math.Float64bits(k.mu)
		if b>>63 == 1 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		keys[i] = b
	}
	keys2 := make([]uint64, len(ks))
	ks2 := make([]kernel, len(ks))
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		count = [256]int{}
		for _, k := range keys {
			count[(k>>shift)&0xff]++
		}
		if count[(keys[0]>>shift)&0xff] == len(keys) {
			continue // every key has this byte
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for i, k := range keys {
			d := (k >> shift) & 0xff
			keys2[count[d]] = k
			ks2[count[d]] = ks[i]
			count[d]++
		}
		keys, keys2 = keys2, keys
		ks, ks2 = ks2, ks
	}
	if &ks[0] != &orig[0] {
		copy(orig, ks)
	}
}

// sample draws a point in model space: a kernel by weight, then a value of
// its truncated normal.
func (m *mixture) sample(rng *rand.Rand) float64 {
	u := rng.Float64() * m.cum[len(m.cum)-1]
	i := sort.SearchFloat64s(m.cum, u)
	if i >= len(m.mu) {
		i = len(m.mu) - 1
	}
	return truncNormal(rng, m.mu[i], m.sigma[i], m.lo, m.hi)
}

// logDensity is the log of the mixture's density at x (continuous kinds).
func (m *mixture) logDensity(x float64) float64 {
	s := 0.0
	for i, mu := range m.mu {
		z := (x - mu) * m.invSigma[i]
		s += m.coef[i] * math.Exp(-0.5*z*z)
	}
	if s > 0 {
		return math.Log(s)
	}
	// Every kernel underflowed: add the terms in log space.
	return logSumExp(len(m.mu), func(i int) float64 {
		z := (x - m.mu[i]) * m.invSigma[i]
		return math.Log(m.coef[i]) - 0.5*z*z
	})
}

// logScore is what TPE compares for continuous kinds: the log of the sum
// of each kernel's weighted truncated density times its bandwidth σ. This
// is Optuna 3.1's log_pdf (its truncated-normal logpdf leaves out the
// -log σ term), which we follow on purpose: in the bad-trial estimator,
// whose kernels are narrow where trials are dense, it flattens g(x) towards
// a uniform, so the ratio l(x)/g(x) leans on l and TPE exploits the good
// region harder; on our benchmark that converges markedly faster than the
// normalised ratio (bench/tuners/RESULTS.md). It is not a density.
func (m *mixture) logScore(x float64) float64 {
	s := 0.0
	for i, mu := range m.mu {
		z := (x - mu) * m.invSigma[i]
		s += m.scoreCoef[i] * math.Exp(-0.5*z*z)
	}
	if s > 0 {
		return math.Log(s)
	}
	return logSumExp(len(m.mu), func(i int) float64 {
		z := (x - m.mu[i]) * m.invSigma[i]
		return math.Log(m.scoreCoef[i]) - 0.5*z*z
	})
}

// logMass is the log of the mixture's probability of the cell [a, b]
// (discrete kinds).
func (m *mixture) logMass(a, b float64) float64 {
	s := 0.0
	for i, mu := range m.mu {
		s += m.coef[i] * normMass((a-mu)*m.invSigma[i], (b-mu)*m.invSigma[i])
	}
	if s > 0 {
		return math.Log(s)
	}
	return logSumExp(len(m.mu), func(i int) float64 {
		return math.Log(m.coef[i]) + logNormMass((a-m.mu[i])*m.invSigma[i], (b-m.mu[i])*m.invSigma[i])
	})
}

func logSumExp(n int, term func(int) float64) float64 {
	mx := math.Inf(-1)
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = term(i)
		mx = math.Max(mx, ts[i])
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	s := 0.0
	for _, t := range ts {
		s += math.Exp(t - mx)
	}
	return mx + math.Log(s)
}

// normMass is Φ(zb) - Φ(za) for za <= zb, computed from the tail nearer to
// the interval so that far-tail intervals keep their precision.
func normMass(za, zb float64) float64 {
	switch {
	case za < -8.5 && zb > 8.5:
		return 1 // each tail is under 1e-17: 1 minus them rounds to 1
	case za >= 0:
		return 0.5 * (math.Erfc(za/math.Sqrt2) - math.Erfc(zb/math.Sqrt2))
	case zb <= 0:
		return 0.5 * (math.Erfc(-zb/math.Sqrt2) - math.Erfc(-za/math.Sqrt2))
	}
	return 1 - 0.5*math.Erfc(-za/math.Sqrt2) - 0.5*math.Erfc(zb/math.Sqrt2)
}

// logNormMass is log(Φ(zb) - Φ(za)) when that underflows: both ends in one
// far tail, where log Q(z) ≈ -z²/2 - log(z√(2π)).
func logNormMass(za, zb float64) float64 {
	if m := normMass(za, zb); m > 0 {
		return math.Log(m)
	}
	if zb <= 0 {
		za, zb = -zb, -za
	}
	if za <= 0 || za >= zb {
		return math.Inf(-1)
	}
	la := logQ(za)
	lb := logQ(zb)
	return la + math.Log1p(-math.Exp(lb-la))
}

func logQ(z float64) float64 {
	if q := 0.5 * math.Erfc(z/math.Sqrt2); q > 0 {
		return math.Log(q)
	}
	if math.IsInf(z, 1) {
		return math.Inf(-1)
	}
	return -0.5*z*z - math.Log(z*sqrt2Pi) + math.Log1p(-1/(z*z))
}

// truncNormal draws from N(mu, sigma²) truncated to [lo, hi] by inverting
// the CDF, working in the lower tail for precision.
func truncNormal(rng *rand.Rand, mu, sigma, lo, hi float64) float64 {
	za, zb := (lo-mu)/sigma, (hi-mu)/sigma
	flip := za > 0
	if flip {
		za, zb = -zb, -za
	}
	pa, pb := phi(za), phi(zb)
	u := (float64(rng.Uint64()>>11) + 0.5) / (1 << 53) // in (0, 1)
	p := pa + u*(pb-pa)
	z := -math.Sqrt2 * math.Erfcinv(2*p)
	if math.IsNaN(z) || z < za {
		z = za
	}
	if z > zb {
		z = zb
	}
	if math.IsInf(z, 0) {
		z = 0
	}
	if flip {
		z = -z
	}
	return mu + sigma*z
}

func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// catModel is a smoothed categorical distribution over a choice's options:
// Optuna's estimator with one kernel per observation (weight w_j, mass
// prior_weight/n_kernels on every option plus 1 on the observed one, then
// normalised) and a uniform prior kernel of weight prior_weight. Its
// probabilities reduce to sums per option, so it is built in linear time.
type catModel struct {
	logP []float64
	cum  []float64
}

func newCatModel(nOpt int, idx []int, ws []float64, priorWeight float64) *catModel {
	p := make([]float64, nOpt)
	if len(idx) == 0 {
		for i := range p {
			p[i] = 1 / float64(nOpt)
		}
	} else {
		acc := make([]float64, nOpt)
		sumW := 0.0
		for j, o := range idx {
			acc[o] += ws[j]
			sumW += ws[j]
		}
		fill := priorWeight / float64(len(idx)+1)
		row := float64(nOpt)*fill + 1
		total := sumW + priorWeight
		for c := range p {
			p[c] = ((sumW*fill+acc[c])/row + priorWeight/float64(nOpt)) / total
		}
	}
	m := &catModel{logP: make([]float64, nOpt), cum: make([]float64, nOpt)}
	c := 0.0
	for i, v := range p {
		m.logP[i] = math.Log(v)
		c += v
		m.cum[i] = c
	}
	return m
}

func (m *catModel) sample(rng *rand.Rand) int {
	u := rng.Float64() * m.cum[len(m.cum)-1]
	i := sort.SearchFloat64s(m.cum, u)
	if i >= len(m.cum) {
		i = len(m.cum) - 1
	}
	return i
}

// rampWeights are Optuna's default observation weights for a group of n
// trials in chronological order: all 1 up to 25 trials; beyond, the oldest
// n-25 ramp linearly from 1/n up to 1 and the newest 25 weigh 1.
func rampWeights(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	if n > 25 {
		m := n - 25
		for i := 0; i < m; i++ {
			if m == 1 {
				w[i] = 1 / float64(n)
				continue
			}
			w[i] = 1/float64(n) + float64(i)*(1-1/float64(n))/float64(m-1)
		}
	}
	return w
}
