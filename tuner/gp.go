package tuner

import (
	"cmp"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/optimize"

	"github.com/trialform/trialform/tuner/space"
)

// GPSettings are the gp tuner's settings.
type GPSettings struct {
	Seeded
	Utility       string  `hcl:"utility,optional" oneof:"ei ucb poi" default:"ei" doc:"the acquisition function, as NNI's GP utility"`
	Kappa         float64 `hcl:"kappa,optional" range:"[0, 1e6]" default:"5" doc:"the exploration weight of ucb (as NNI)"`
	Xi            float64 `hcl:"xi,optional" range:"[0, 1e6]" default:"0" doc:"the improvement margin of ei and poi in standardised units (as NNI)"`
	StartupTrials int     `hcl:"startup_trials,optional" range:"[1,)" default:"10" doc:"random trials before the model is used (NNI's cold_start_num)"`
	Restarts      int     `hcl:"restarts,optional" range:"[0, 20]" default:"2" doc:"random restarts of the hyperparameter fit besides the default start"`
	Liar          string  `hcl:"liar,optional" oneof:"mean min max" default:"mean" doc:"the value assumed for running trials (constant liar)"`
}

func defaultGPSettings() *GPSettings {
	return &GPSettings{Utility: "ei", Kappa: 5, StartupTrials: 10, Restarts: 2, Liar: "mean"}
}

func gpKind() Kind {
	return Kind{
		Name: "gp", Spaces: "all kinds; nested choices drawn at random",
		Summary:  "NNI's GP tuner: a Gaussian process with a Matern 5/2 kernel and one length scale per input (ARD), fitted by maximising the marginal likelihood (L-BFGS, restarts); log params in log space, ints and q-steps rounded at the end, plain choices one-hot; the acquisition is maximised over random and local candidates, then by L-BFGS; running trials are in the model at the liar's value and a repeated point is never proposed. About 30 ms CPU per suggestion with 200 trials of 5 params (`BenchmarkGPSuggest200`); the model keeps at most 300 trials (the best half and a spread of the rest)",
		Settings: func() any { return defaultGPSettings() },
		New:      func(cfg any, sp *space.Space) (Tuner, error) { return newBO("gp", cfg.(*GPSettings), sp), nil },
	}
}

// boTuner is Bayesian optimisation with the GP of gpmodel.go: the gp tuner,
// and the model half of metis.
//
// Coordinates: every numeric parameter has its unit coordinate (unit.go:
// log kinds in log space, randint and q-kinds continuous and rounded when
// a trial's values are produced, unbounded kinds mu ± 3 sigma); every
// choice of plain values is one-hot, one coordinate per option, each with
// its own length scale. Nested choices are drawn at random (the model
// does not see them); a space of nested choices only is random search.
//
// Suggest keeps no state. Failed trials count with the worst completed
// loss. Hyperparameters are fitted to the completed trials (at most
// gpFitMax of them: the best half and an even spread of the rest); the
// posterior uses them (at most gpMaxPoints, chosen alike) plus every running trial at the liar's value, so
// trials asked for together, or while others run, spread out. Suggestions
// for several trials are made in sequence order, each added as running
// before the next, so the answer equals asking one at a time. A suggestion
// that equals an earlier trial's values (after rounding) is replaced by the
// next-best candidate, then by random draws.
type boTuner struct {
	seeder
	name     string
	sp       *space.Space
	acq      acquisition
	startup  int
	restarts int
	liar     string
	// lieFor, when set, gives the running trials' value in loss units from
	// the completed losses, instead of liar (auto's GP phase: see
	// warpedLie).
	lieFor func(loss []float64) float64
	// maxPoints, when set, is the posterior's cap instead of gpMaxPoints
	// (mogp, which fits a model per suggestion, keeps fewer).
	maxPoints int
	// lineDraws, when positive, restricts the candidates to the lines
	// through the best completed trial along each numeric coordinate,
	// lineDraws uniform points on each, and to its other options of each
	// plain choice, and skips the L-BFGS refinement: the proposal differs
	// from the best trial in one param (auto's coordinate moves). When
	// every such point repeats an earlier trial, the usual candidates are
	// used.
	lineDraws int
}

const (
	gpFitMax    = 48  // points of the hyperparameter fit
	gpMaxPoints = 300 // points of the posterior
)

func newBO(name string, c *GPSettings, sp *space.Space) *boTuner {
	t := &boTuner{seeder: c.seeder(), name: name, sp: sp}
	t.acq.kind = map[string]acqKind{"ei": acqEI, "ucb": acqUCB, "poi": acqPI}[c.Utility]
	t.acq.kappa, t.acq.xi = c.Kappa, c.Xi
	t.startup, t.restarts, t.liar = c.StartupTrials, c.Restarts, c.Liar
	return t
}

// gpCodec maps a point to model coordinates: the numeric unit coordinates,
// then one coordinate per option of each plain choice.
type gpCodec struct {
	unit    *unitCodec
	choices []space.Param // plain choices, one-hot
	offs    []int         // first coordinate of each choice
	nested  []space.Param // drawn at random
	d       int
}

func newGPCodec(sp *space.Space) *gpCodec {
	c := &gpCodec{unit: newUnitCodec(sp)}
	c.d = len(c.unit.dims)
	for _, p := range c.unit.other {
		plain := p.Kind == space.Choice && len(p.Options) > 0
		for _, o := range p.Options {
			if space.IsNested(o) {
				plain = false
			}
		}
		if !plain {
			c.nested = append(c.nested, p)
			continue
		}
		c.choices = append(c.choices, p)
		c.offs = append(c.offs, c.d)
		c.d += len(p.Options)
	}
	return c
}

// continuous reports whether coordinate i is a numeric parameter's.
func (c *gpCodec) continuous(i int) bool { return i < len(c.unit.dims) }

func (c *gpCodec) encode(ps space.Params) ([]float64, bool) {
	x, ok := c.unit.encode(ps)
	if !ok {
		return nil, false
	}
	x = append(x, make([]float64, c.d-len(x))...)
	for k, p := range c.choices {
		v, has := ps[p.Name]
		if !has {
			return nil, false
		}
		found := false
		for j, o := range p.Options {
			if space.EqualValues(o.Value, v) {
				x[c.offs[k]+j], found = 1, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return x, true
}

// decode turns x into parameters, drawing the nested choices from rng.
func (c *gpCodec) decode(x []float64, rng *rand.Rand) space.Params {
	p := space.Params{}
	c.unit.decode(x[:len(c.unit.dims)], p)
	for k, cp := range c.choices {
		best := 0
		for j := range cp.Options {
			if x[c.offs[k]+j] > x[c.offs[k]+best] {
				best = j
			}
		}
		p[cp.Name] = cp.Options[best].Value
	}
	for _, np := range c.nested {
		p[np.Name] = space.Sample(np, rng)
	}
	return p
}

// random is a uniform point: numbers in [0, 1], one option per choice.
func (c *gpCodec) random(rng *rand.Rand) []float64 {
	x := make([]float64, c.d)
	for i := range c.unit.dims {
		x[i] = rng.Float64()
	}
	for k, cp := range c.choices {
		x[c.offs[k]+rng.IntN(len(cp.Options))] = 1
	}
	return x
}

// perturb returns x moved by N(0, sigma²) in every number (clipped to
// [0, 1]); each choice switches to a random option with probability pc.
func (c *gpCodec) perturb(x []float64, sigma, pc float64, rng *rand.Rand) []float64 {
	y := append([]float64(nil), x...)
	for i := range c.unit.dims {
		y[i] = clampF(y[i]+sigma*rng.NormFloat64(), 0, 1)
	}
	for k, cp := range c.choices {
		if rng.Float64() < pc {
			for j := range cp.Options {
				y[c.offs[k]+j] = 0
			}
			y[c.offs[k]+rng.IntN(len(cp.Options))] = 1
		}
	}
	return y
}

// boData is the history in model coordinates.
type boData struct {
	X       [][]float64 // completed (and failed) trials
	loss    []float64   // their losses, failed ones at the worst completed loss
	seqs    []int
	params  []space.Params
	done    []bool // completed with a value (not failed)
	pending [][]float64
	seen    map[string]bool
	ndone   int // completed trials with a value
}

// boHistory encodes the scored history with encode (a model's codec);
// points that do not encode are only marked seen.
func boHistory(req Request, sign float64, encode func(space.Params) ([]float64, bool)) *boData {
	hist := scoredHistory(req, sign)
	b := &boData{seen: make(map[string]bool, len(hist)+len(req.Seqs))}
	worst := math.Inf(-1)
	for _, h := range hist {
		if !math.IsInf(h.loss, 1) {
			worst = math.Max(worst, h.loss)
		}
	}
	for _, h := range hist {
		b.seen[pointKey(h.params)] = true
		x, ok := encode(h.params)
		if !ok {
			continue
		}
		switch {
		case h.pending:
			b.pending = append(b.pending, x)
		case !math.IsInf(h.loss, 1):
			b.X, b.loss, b.seqs, b.params = append(b.X, x), append(b.loss, h.loss), append(b.seqs, h.seq), append(b.params, h.params)
			b.done = append(b.done, true)
			b.ndone++
		case !math.IsInf(worst, -1):
			b.X, b.loss, b.seqs, b.params = append(b.X, x), append(b.loss, worst), append(b.seqs, h.seq), append(b.params, h.params)
			b.done = append(b.done, false)
		}
	}
	return b
}

// standardise returns (y - mean) / sd.
func standardise(y []float64) []float64 {
	m, s := standardScale(y)
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = (v - m) / s
	}
	return out
}

// standardScale returns the mean and standard deviation (1 when zero) of y.
func standardScale(y []float64) (m, s float64) {
	for _, v := range y {
		m += v
	}
	m /= float64(len(y))
	for _, v := range y {
		s += (v - m) * (v - m)
	}
	s = math.Sqrt(s / float64(len(y)))
	if s == 0 || math.IsNaN(s) {
		s = 1
	}
	return m, s
}

// fitSubset picks at most max indexes of y for the hyperparameter fit: the
// best half and an even spread of the rest, in increasing order.
func fitSubset(y []float64, max int) []int {
	n := len(y)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if n <= max {
		return idx
	}
	sort.SliceStable(idx, func(a, b int) bool { return y[idx[a]] < y[idx[b]] })
	keep := append([]int(nil), idx[:max/2]...)
	rest := idx[max/2:]
	m := max - len(keep)
	for k := 0; k < m; k++ {
		keep = append(keep, rest[k*len(rest)/m])
	}
	sort.Ints(keep)
	return keep
}

// boModel is the fitted model of one Suggest call.
type boModel struct {
	c     *gpCodec
	h     gpHyper
	y     []float64 // standardised losses of data.X
	lie   float64
	best  float64
	order []int // data.X indexes by increasing loss
}

// capPoints keeps at most max of the completed and failed trials (the
// best half and an even spread of the rest, by fitSubset): the GP's cost
// grows with the cube of its points, and a long history adds little that
// the best trials and a spread of the others do not say.
func (b *boData) capPoints(max int) {
	if len(b.X) <= max {
		return
	}
	keep := fitSubset(b.loss, max)
	var nd boData
	for _, i := range keep {
		nd.X, nd.loss, nd.seqs, nd.params, nd.done = append(nd.X, b.X[i]), append(nd.loss, b.loss[i]), append(nd.seqs, b.seqs[i]), append(nd.params, b.params[i]), append(nd.done, b.done[i])
	}
	b.X, b.loss, b.seqs, b.params, b.done = nd.X, nd.loss, nd.seqs, nd.params, nd.done
}

func (t *boTuner) fit(c *gpCodec, data *boData, seed int64) *boModel {
	y := standardise(data.loss)
	sub := fitSubset(y, gpFitMax)
	Xs, ys := make([][]float64, len(sub)), make([]float64, len(sub))
	for k, i := range sub {
		Xs[k], ys[k] = data.X[i], y[i]
	}
	m := &boModel{c: c, y: y}
	m.h = fitGP(Xs, ys, c.d, t.restarts, newRNG(seed, -1000-len(data.X)))
	m.order = make([]int, len(y))
	for i := range m.order {
		m.order[i] = i
	}
	sort.SliceStable(m.order, func(a, b int) bool { return y[m.order[a]] < y[m.order[b]] })
	m.best = y[m.order[0]]
	switch t.liar {
	case "min":
		m.lie = m.best
	case "max":
		m.lie = y[m.order[len(y)-1]]
	default:
		m.lie = 0 // the mean of standardised losses
	}
	if t.lieFor != nil {
		mu, sd := standardScale(data.loss)
		m.lie = (t.lieFor(data.loss) - mu) / sd
	}
	return m
}

func (t *boTuner) Suggest(req Request) ([]space.Params, error) {
	out, _, err := t.suggest(req)
	return out, err
}

// suggest is Suggest, also returning the model (nil during startup) for
// metis's diagnostic.
func (t *boTuner) suggest(req Request) ([]space.Params, *boModel, error) {
	sp, sign, err := spaceAndSign(req, t.sp)
	if err != nil {
		return nil, nil, err
	}
	c := newGPCodec(sp)
	seed := t.seedOf(req)
	data := boHistory(req, sign, c.encode)
	data.capPoints(cmp.Or(t.maxPoints, gpMaxPoints))
	var m *boModel
	if c.d > 0 && data.ndone >= t.startup && data.ndone >= 2 {
		m = t.fit(c, data, seed)
	}
	out := drawEach(req, sp, seed, data, c.encode, func(rng *rand.Rand) space.Params {
		if m == nil {
			return nil
		}
		return t.propose(m, data, rng)
	})
	return out, m, nil
}

// drawEach suggests a point per requested seq, in ascending order, each
// from its own rng: propose's, or when that is nil a random point (redrawn
// while it repeats an earlier one, at most maxRedraws times). Each point is
// marked seen and, when encode takes it, joins data.pending, so later
// proposals treat it as running.
func drawEach(req Request, sp *space.Space, seed int64, data *boData, encode func(space.Params) ([]float64, bool), propose func(*rand.Rand) space.Params) []space.Params {
	out := make([]space.Params, len(req.Seqs))
	for _, i := range ascending(req.Seqs) {
		rng := newRNG(seed, req.Seqs[i])
		p := propose(rng)
		if p == nil {
			p = space.SampleSpace(sp, rng)
			for n := 0; data.seen[pointKey(p)] && n < maxRedraws; n++ {
				p = space.SampleSpace(sp, rng)
			}
		}
		data.seen[pointKey(p)] = true
		if x, ok := encode(p); ok {
			data.pending = append(data.pending, x)
		}
		out[i] = p
	}
	return out
}

const (
	gpRandomCands = 200
	gpLocalBest   = 5
	gpLocalCands  = 30
	gpRefine      = 2
)

// propose maximises the acquisition over the posterior given the data and
// the running trials; nil when every candidate repeats an earlier point.
func (t *boTuner) propose(m *boModel, data *boData, rng *rand.Rand) space.Params {
	return t.proposeFrom(m, data, rng, t.lineDraws > 0 && len(m.c.unit.dims) > 0)
}

// proposeFrom is propose, over the lines through the best trial (see
// lineDraws) when line is set.
func (t *boTuner) proposeFrom(m *boModel, data *boData, rng *rand.Rand, line bool) space.Params {
	X := append(append([][]float64(nil), data.X...), data.pending...)
	y := append([]float64(nil), m.y...)
	for range data.pending {
		y = append(y, m.lie)
	}
	post := newGPPost(X, y, m.h)
	c := m.c
	cands := make([][]float64, 0, gpRandomCands+gpLocalBest*gpLocalCands)
	nRandom, nLocal, nRefine := gpRandomCands, gpLocalBest, gpRefine
	if line {
		nRandom, nLocal, nRefine = 0, 0, 0
		best := data.X[m.order[0]]
		for i := range c.unit.dims {
			for j := 0; j < t.lineDraws; j++ {
				y := append([]float64(nil), best...)
				y[i] = rng.Float64()
				cands = append(cands, y)
			}
		}
		// A choice's line is its other options.
		for k, cp := range c.choices {
			for j := range cp.Options {
				if best[c.offs[k]+j] == 1 {
					continue
				}
				y := append([]float64(nil), best...)
				for o := range cp.Options {
					y[c.offs[k]+o] = 0
				}
				y[c.offs[k]+j] = 1
				cands = append(cands, y)
			}
		}
	}
	for i := 0; i < nRandom; i++ {
		cands = append(cands, c.random(rng))
	}
	for k := 0; k < nLocal && k < len(m.order); k++ {
		x := data.X[m.order[k]]
		for j := 0; j < gpLocalCands; j++ {
			sigma := 0.02
			if j%2 == 1 {
				sigma = 0.1
			}
			cands = append(cands, c.perturb(x, sigma, 0.15, rng))
		}
	}
	mu, sd := post.predict(cands)
	score := make([]float64, len(cands))
	for i := range cands {
		score[i], _, _ = t.acq.value(mu[i], sd[i], m.best)
	}
	idx := make([]int, len(cands))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return score[idx[a]] > score[idx[b]] })
	// Refine the best few by L-BFGS over the numbers (choices held).
	type scoredX struct {
		x []float64
		s float64
	}
	var pool []scoredX
	if len(c.unit.dims) > 0 {
		for k := 0; k < nRefine && k < len(idx); k++ {
			x, s := t.refine(post, m.best, cands[idx[k]], len(c.unit.dims))
			pool = append(pool, scoredX{x, s})
		}
	}
	for _, i := range idx {
		pool = append(pool, scoredX{cands[i], score[i]})
	}
	sort.SliceStable(pool, func(a, b int) bool { return pool[a].s > pool[b].s })
	for _, cand := range pool {
		p := c.decode(cand.x, rng)
		if !data.seen[pointKey(p)] {
			return p
		}
	}
	if line {
		return t.proposeFrom(m, data, rng, false)
	}
	return nil
}

// refine climbs the acquisition from x0 over its first nu coordinates
// (the numbers), returning the best point seen and its acquisition.
func (t *boTuner) refine(post *gpPost, best float64, x0 []float64, nu int) ([]float64, float64) {
	x := append([]float64(nil), x0...)
	obj := func(u, g []float64) float64 {
		for i := 0; i < nu; i++ {
			x[i] = clampF(u[i], 0, 1)
		}
		mu, sd, dmu, dsd := post.predictGrad(x)
		v, vm, vs := t.acq.value(mu, sd, best)
		if g != nil {
			for i := 0; i < nu; i++ {
				g[i] = -(vm*dmu[i] + vs*dsd[i])
				if (u[i] <= 0 && g[i] > 0) || (u[i] >= 1 && g[i] < 0) {
					g[i] = 0
				}
			}
		}
		return -v
	}
	ev := &cachedObj{f: obj}
	p := optimize.Problem{Func: ev.fn, Grad: ev.grad}
	_, _ = optimize.Minimize(p, append([]float64(nil), x0[:nu]...), &optimize.Settings{
		MajorIterations:   20,
		FuncEvaluations:   40,
		GradientThreshold: 1e-8,
		Converger:         &optimize.FunctionConverge{Absolute: 1e-10, Relative: 1e-6, Iterations: 5},
	}, &optimize.LBFGS{})
	out := append([]float64(nil), x0...)
	if ev.bestX == nil {
		v, _, _ := t.acq.value(0, 1, best)
		return out, v
	}
	for i := 0; i < nu; i++ {
		out[i] = clampF(ev.bestX[i], 0, 1)
	}
	return out, -ev.bestF
}
