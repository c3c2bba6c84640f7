package tuner

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/trialform/trialform/tuner/space"
)

// This file is TPE's multivariate mode (setting multivariate = true), in the
// style of Optuna's TPESampler(multivariate=True): the top-level numeric
// parameters and flat choices are modelled jointly. Each good or bad trial
// is one kernel over all of them (a product of one-dimensional kernels), so
// candidates are drawn from whole good trials and scored jointly, which
// keeps correlated parameters together.
//
//   - A trial is a kernel only when it has a value of every joint parameter;
//     the split into good and bad is the univariate one (splitGood) over
//     those trials. Nested choices and parameters that cannot be modelled
//     are proposed by the univariate model, as are all parameters while
//     fewer than min(startup_trials, 4) trials have every joint value.
//   - Bandwidths (tpe's own joint model, gaps = true): each numeric kernel
//     has its own, per parameter: jointGapWiden times the larger gap to its
//     neighbours when the kernels' centres in that parameter (the prior's
//     among them) are sorted, the univariate rule of Optuna, clipped into
//     [W/min(100, n+2), W] as the univariate ones are. The gaps of one
//     parameter's projection are narrower than the spacing of the kernels
//     in all d dimensions, hence the widening (jointGapWiden below).
//   - Bandwidths with gaps = false (motpe, and auto's several-objective
//     phase, as tuned): one per parameter and estimator, Scott's rule as
//     Optuna's multivariate TPE uses it: 0.2 n^(-1/(d+4)) times the range
//     (d joint parameters, n kernels), clipped the same way.
//   - The prior kernel has the range as bandwidth. Scores follow Optuna 3.1
//     as the univariate ones do (densities times bandwidth; cell masses for
//     discrete kinds).
//   - A choice's kernel puts prior_weight/(n+1) on every option and 1 more
//     on the trial's option, normalised; the prior kernel is uniform.

// jointParam is one jointly modelled parameter.
type jointParam struct {
	p space.Param
	d *numDim // nil for a choice
}

// jointModel is a product-kernel Parzen estimator over the joint params.
type jointModel struct {
	ps   []jointParam
	logW []float64   // per kernel (last: the prior)
	cum  []float64   // cumulative weights
	mu   [][]float64 // [kernel][param] model-space centre (numeric)
	opt  [][]int     // [kernel][param] option index (choice); -1 for the prior
	sig  [][]float64 // [kernel][param] bandwidth (numeric params)
	logP [][]float64 // [param] log probability of each option for an observation kernel: [0] off, [1] on
	nOpt []int
	lo   []float64 // truncation bounds per param
	hi   []float64
	// per kernel and numeric param: log of the scoring coefficient
	// (1/(Z sqrt(2 pi)) continuous, 1/Z discrete)
	logC [][]float64
	// discrete params: the distinct (centre, bandwidth) pairs of the
	// observation kernels (few: the values the param took, each with at
	// most three bandwidths) and each kernel's index among them, so that a
	// candidate's cell masses are computed once per pair.
	centres [][][2]float64
	centre  [][]int // [kernel][param]
	// order is the params' order in logScore: the discrete ones last (a
	// kernel's terms are summed in this order; the benchmark figures were
	// measured with it).
	order []int
	// cellMass[j][a]: the log masses of the cell starting at a of
	// discrete param j under each (centre, bandwidth) pair, for the
	// candidates' cells (prepare).
	cellMass []map[float64][]float64
}

// prepare computes the cell masses that scoring cs needs: once per
// distinct cell of a discrete param, not once per candidate, as many
// candidates share a value. logScore needs it first.
func (m *jointModel) prepare(cs []*jointCand) {
	m.cellMass = make([]map[float64][]float64, len(m.ps))
	for j, jp := range m.ps {
		if jp.d == nil || !jp.d.discrete {
			continue
		}
		m.cellMass[j] = map[float64][]float64{}
		for _, c := range cs {
			a, b := c.a[j], c.b[j]
			if _, ok := m.cellMass[j][a]; ok {
				continue
			}
			ms := make([]float64, len(m.centres[j]))
			for x, cp := range m.centres[j] {
				mu, sg := cp[0], cp[1]
				ms[x] = logNormMass((a-mu)/sg, (b-mu)/sg)
			}
			m.cellMass[j][a] = ms
		}
	}
}

const sigma0Magnitude = 0.2

// jointGapWiden widens the joint model's neighbour-gap bandwidths. Chosen
// on Go tpe against itself, nine problems, 100 trials, seeds 11-210 (R of
// median regrets over the univariate model at 50 / 100 trials: 1.0 0.70 /
// 0.80, 1.25 0.67 / 0.72, 1.5 0.70 / 0.70, 2 0.77 / 0.66, 3 0.94 / 0.66;
// at 1.0 levy5 was 3.2 times worse, at 1.5 at most 1.07), then checked on
// the held-out seeds 411-810: 0.69 / 0.74 (bench/tuners/RESULTS.md).
const jointGapWiden = 1.5

// newJointModel is the estimator of rows (model-space values, chronological,
// with weights ws) plus the prior kernel; gaps picks the bandwidth rule.
func newJointModel(ps []jointParam, rows [][]float64, ws []float64, priorWeight float64, gaps bool) *jointModel {
	n := len(rows)
	k := n + 1
	m := &jointModel{ps: ps, logW: make([]float64, k), cum: make([]float64, k)}
	total := priorWeight
	for _, w := range ws {
		total += w
	}
	c := 0.0
	for i := 0; i < k; i++ {
		w := priorWeight
		if i < n {
			w = ws[i]
		}
		m.logW[i] = math.Log(w / total)
		c += w / total
		m.cum[i] = c
	}
	m.mu, m.logC, m.sig = rowsOf[float64](k, len(ps)), rowsOf[float64](k, len(ps)), rowsOf[float64](k, len(ps))
	m.opt, m.centre = rowsOf[int](k, len(ps)), rowsOf[int](k, len(ps))
	m.centres = make([][][2]float64, len(ps))
	for j, jp := range ps {
		if jp.d == nil || !jp.d.discrete {
			m.order = append(m.order, j)
		}
	}
	for j, jp := range ps {
		if jp.d != nil && jp.d.discrete {
			m.order = append(m.order, j)
		}
	}
	m.logP = make([][]float64, len(ps))
	m.nOpt = make([]int, len(ps))
	m.lo = make([]float64, len(ps))
	m.hi = make([]float64, len(ps))
	scott := sigma0Magnitude * math.Pow(float64(max(n, 1)), -1/float64(len(ps)+4))
	// The params are independent (each writes its own column): on long
	// histories they are built in parallel.
	parallelFor(len(ps), k*len(ps), func(j int) {
		jp := ps[j]
		if jp.d == nil {
			no := len(jp.p.Options)
			m.nOpt[j] = no
			fill := priorWeight / float64(n+1)
			row := float64(no)*fill + 1
			m.logP[j] = []float64{math.Log(fill / row), math.Log((fill + 1) / row)}
			for i := 0; i < k; i++ {
				m.opt[i][j] = -1
				if i < n {
					m.opt[i][j] = int(rows[i][j])
				}
			}
			return
		}
		d := jp.d
		W := d.priorSigma
		m.lo[j], m.hi[j] = d.lo, d.hi
		minS := W / math.Min(100, float64(n+2))
		var gs []float64
		if gaps {
			mus := make([]float64, n)
			for i := range mus {
				mus[i] = rows[i][j]
			}
			gs = gapSigmas(mus, d.priorMu, minS, W)
		}
		index := map[[2]float64]int{}
		for i := 0; i < k; i++ {
			mu, sg := d.priorMu, W
			if i < n {
				mu, sg = rows[i][j], clampF(scott*W, minS, W)
				if gaps {
					sg = gs[i]
				}
				if d.discrete {
					key := [2]float64{mu, sg}
					c, ok := index[key]
					if !ok {
						c = len(m.centres[j])
						index[key] = c
						m.centres[j] = append(m.centres[j], key)
					}
					m.centre[i][j] = c
				}
			}
			m.mu[i][j], m.sig[i][j] = mu, sg
			z := normMass((d.lo-mu)/sg, (d.hi-mu)/sg)
			if z < 1e-300 {
				z = 1e-300
			}
			if d.discrete {
				m.logC[i][j] = -math.Log(z)
			} else {
				m.logC[i][j] = -math.Log(z * sqrt2Pi)
			}
		}
	})
	return m
}

// rowsOf is n rows of d zeros, in one allocation.
func rowsOf[T any](n, d int) [][]T {
	all := make([]T, n*d)
	rows := make([][]T, n)
	for i := range rows {
		rows[i] = all[i*d : (i+1)*d : (i+1)*d]
	}
	return rows
}

func (m *jointModel) kernelSigma(i, j int) float64 { return m.sig[i][j] }

// gapSigmas are the bandwidths of kernels at mus in one parameter: each
// jointGapWiden times the larger gap to its neighbours among mus and the
// prior's centre, sorted (the outermost take their inner gap, as Optuna's
// univariate rule), clipped into [minS, W].
func gapSigmas(mus []float64, priorMu, minS, W float64) []float64 {
	// w holds the kernel's index (len(mus): the prior); the sort is
	// stable, so equal centres stay in index order.
	ks := make([]kernel, 0, len(mus)+1)
	for i, m := range mus {
		ks = append(ks, kernel{m, float64(i)})
	}
	ks = append(ks, kernel{priorMu, float64(len(mus))})
	sortKernels(ks)
	out := make([]float64, len(mus))
	for x, k := range ks {
		i := int(k.w)
		if i == len(mus) {
			continue
		}
		out[i] = clampF(jointGapWiden*neighbourGap(ks, x), minS, W)
	}
	return out
}

// jointCand is a candidate: per param the model point (numeric; the point
// scored), the value, the discrete cell, or the option index.
type jointCand struct {
	x, a, b []float64
	vals    []any
	score   float64
}

func (m *jointModel) sample(rng *rand.Rand) *jointCand {
	u := rng.Float64() * m.cum[len(m.cum)-1]
	i := sort.SearchFloat64s(m.cum, u)
	if i >= len(m.cum) {
		i = len(m.cum) - 1
	}
	np := len(m.ps)
	c := &jointCand{x: make([]float64, np), a: make([]float64, np), b: make([]float64, np), vals: make([]any, np)}
	for j, jp := range m.ps {
		if jp.d == nil {
			o := rng.IntN(m.nOpt[j]) // the prior kernel is uniform
			if k := m.opt[i][j]; k >= 0 {
				// fill on every option, 1 more on k: pick k with
				// probability exp(logP on), else uniformly.
				if rng.Float64() < math.Exp(m.logP[j][1])-math.Exp(m.logP[j][0]) {
					o = k
				}
			}
			c.x[j] = float64(o)
			continue
		}
		d := jp.d
		xu := truncNormal(rng, m.mu[i][j], m.kernelSigma(i, j), d.lo, d.hi)
		v, a, b := d.finish(xu)
		c.a[j], c.b[j] = a, b
		c.x[j] = xu
		if d.scoreAtValue {
			c.x[j] = d.toModel(v)
		}
		c.vals[j] = v
	}
	return c
}

// logScore is the log of the estimator at c (Optuna 3.1's log_pdf).
func (m *jointModel) logScore(c *jointCand) float64 {
	// Cell masses of the discrete params (prepare).
	mass := make([][]float64, len(m.ps))
	for j, jp := range m.ps {
		if jp.d != nil && jp.d.discrete {
			mass[j] = m.cellMass[j][c.a[j]]
		}
	}
	// Kernel by kernel; a kernel whose partial log score falls jointCut
	// below the best whole one so far is dropped: its share of the sum
	// is under e^-jointCut (every later term is at most log(1/Z) of a
	// truncated kernel centred in the range, under 1.2, or 0 for a
	// choice, hence the margin of 2 a param).
	prior := len(m.mu) - 1
	cut := jointCut + 2*float64(len(m.ps))
	acc := make([]float64, 0, len(m.mu))
	best := math.Inf(-1)
	for i := 0; i <= prior; i++ {
		v := m.logW[i]
		for _, j := range m.order {
			jp := m.ps[j]
			switch {
			case jp.d == nil:
				switch {
				case i == prior:
					v -= math.Log(float64(m.nOpt[j]))
				case m.opt[i][j] == int(c.x[j]):
					v += m.logP[j][1]
				default:
					v += m.logP[j][0]
				}
			case jp.d.discrete:
				if i == prior {
					sg, mu := m.sig[i][j], m.mu[i][j]
					v += m.logC[i][j] + logNormMass((c.a[j]-mu)/sg, (c.b[j]-mu)/sg)
				} else {
					v += m.logC[i][j] + mass[j][m.centre[i][j]]
				}
			default:
				z := (c.x[j] - m.mu[i][j]) / m.sig[i][j]
				v += m.logC[i][j] - 0.5*z*z
			}
			if v < best-cut {
				break
			}
		}
		if v < best-cut {
			continue
		}
		best = math.Max(best, v)
		acc = append(acc, v)
	}
	if math.IsInf(best, -1) {
		return best
	}
	sum := 0.0
	for _, v := range acc {
		sum += math.Exp(v - best)
	}
	return best + math.Log(sum)
}

// jointCut: see logScore.
const jointCut = 40

// sampleJoint proposes one trial's parameters with the joint model.
func (t *tpeTuner) sampleJoint(sp *space.Space, obs []tpeObs, rng *rand.Rand) space.Params {
	var ps []jointParam
	for _, p := range sp.Params {
		if p.Kind == space.Choice {
			flat := len(p.Options) > 0
			for _, o := range p.Options {
				flat = flat && !space.IsNested(o)
			}
			if flat {
				ps = append(ps, jointParam{p: p})
			}
			continue
		}
		if d, ok := newNumDim(p); ok {
			ps = append(ps, jointParam{p: p, d: d})
		}
	}
	if len(ps) == 0 {
		return t.sampleLevel(sp, obs, rng)
	}
	rows := make([][]float64, 0, len(obs))
	losses, ws := make([]float64, 0, len(obs)), make([]float64, 0, len(obs))
	buf := rowsOf[float64](len(obs), len(ps))
	for x, o := range obs {
		row := buf[x]
		ok := true
		for j, jp := range ps {
			v, has := o.vals[jp.p.Name]
			if !has {
				ok = false
				break
			}
			if jp.d == nil {
				k := optionIndex(jp.p, v)
				ok = k >= 0
				row[j] = float64(k)
			} else {
				row[j], ok = jp.d.modelledVal(v)
			}
			if !ok {
				break
			}
		}
		if ok {
			rows = append(rows, row)
			losses = append(losses, o.loss)
			ws = append(ws, o.w)
		}
	}
	below, nComp := splitGood(losses)
	if nComp < t.minModelled() {
		return t.sampleLevel(sp, obs, rng)
	}
	br, ar := partition(rows, below)
	bw, _ := partition(ws, below)
	l := newJointModel(ps, br, goodWeights(bw), t.priorWeight, t.gaps)
	aw := rampWeights(len(ar))
	if len(ar) > maxAboveKernels { // as the univariate model's g (resample)
		idx := resampleIndex(aw, maxAboveKernels)
		picked := make([][]float64, len(idx))
		for i, x := range idx {
			picked[i] = ar[x]
		}
		ar, aw = picked, ones(len(idx))
	}
	g := newJointModel(ps, ar, aw, t.priorWeight, t.gaps)
	// Candidates are drawn in order from the seeded stream; their scores
	// are pure, so they are computed in parallel on long histories.
	cs := make([]*jointCand, t.candidates)
	for c := range cs {
		cs[c] = l.sample(rng)
	}
	l.prepare(cs)
	g.prepare(cs)
	parallelFor(len(cs), len(cs)*len(ps)*(len(br)+len(ar)), func(c int) {
		cs[c].score = l.logScore(cs[c]) - g.logScore(cs[c])
	})
	best := cs[0]
	for _, cd := range cs[1:] {
		if cd.score > best.score {
			best = cd
		}
	}
	out := space.Params{}
	joint := map[string]bool{}
	for j, jp := range ps {
		joint[jp.p.Name] = true
		if jp.d == nil {
			out[jp.p.Name] = jp.p.Options[int(best.x[j])].Value
		} else {
			out[jp.p.Name] = best.vals[j]
		}
	}
	for _, p := range sp.Params {
		if joint[p.Name] {
			continue
		}
		if p.Kind == space.Choice {
			out[p.Name] = t.sampleChoice(p, obs, rng)
		} else {
			out[p.Name] = t.sampleNumber(p, obs, rng)
		}
	}
	return out
}
