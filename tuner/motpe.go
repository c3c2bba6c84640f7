package tuner

import (
	"math"
	"sort"

	"github.com/trialform/trialform/tuner/pareto"
	"github.com/trialform/trialform/tuner/space"
)

func motpeKind() Kind {
	return Kind{
		Name: "motpe", Spaces: "all kinds, nested choice",
		Summary: "for [several objectives](objectives.md): TPE whose \"good\" trials are the Pareto front (then the next ranks), and where the front holds more than γ(n), those covering the most hypervolume, as Optuna's multi-objective TPE; trials alternate between a joint model of all parameters and one model per parameter; with one objective it is `tpe` with `multivariate = false`",
		Settings: func() any {
			return &MOTPESettings{StartupTrials: 10, Candidates: 24, PriorWeight: 1, Model: "alternate", Weights: "equal"}
		},
		New:            newMOTPE,
		MultiObjective: true,
	}
}

// motpeTuner is TPE for several objectives, after Optuna's
// multi-objective TPESampler (MOTPE): the good trials TPE models are taken
// by Pareto dominance instead of by one value (see scalarised). Pending
// trials stay constant liars; failed ones, and completed ones missing an
// objective, are left out. With one objective it is tpe.
//
// By default (model = "alternate") even-numbered trials are proposed by
// the joint model (tpe's multivariate mode: each good trial one kernel
// over all parameters) and odd-numbered ones by one model per parameter
// (Optuna's default), and the good trials weigh the same. Neither model
// alone does well on every problem: the joint one keeps a good trial's
// values together, which suits ZDT-like problems, but with many
// parameters it hardly chooses (in 12 dimensions its candidates' scores
// agree to 1e-6: scores count each kernel's density times its bandwidth,
// as Optuna 3.1 does, so the wide prior kernel outweighs every trial's),
// and on DTLZ2 with 3 objectives it was no better than random search; one
// model per parameter chooses each value against the bad trials' and
// recombines good trials' values, which suits DTLZ2-like problems.
// On held-out problems and seeds alternating was at most a few percent
// below the better of the two, and ahead of both on several
// (bench/tuners/RESULTS.md).
//
// The zero value of model and hvWeights is the default, so auto's
// several-objective phase, which builds a motpeTuner around its own tpe,
// gets motpe's defaults.
type motpeTuner struct {
	tpe       *tpeTuner
	model     motpeModel
	hvWeights bool // weight each good trial by its exclusive hypervolume (Optuna's rule)
}

type motpeModel int

const (
	motpeAlternate motpeModel = iota
	motpeJoint
	motpeUnivariate
)

// jointFor reports whether trial seq is proposed by the joint model.
func (m motpeModel) jointFor(seq int) bool {
	switch m {
	case motpeJoint:
		return true
	case motpeUnivariate:
		return false
	}
	return seq%2 == 0
}

// MOTPESettings are motpe's settings: tpe's, with the model and the good
// trials' weights chosen as held-out problems and seeds favoured
// (bench/tuners/RESULTS.md, "Several objectives").
type MOTPESettings struct {
	Seeded
	StartupTrials int     `hcl:"startup_trials,optional" range:"[0, 1e9]" default:"10" doc:"completed trials sampled at random before the model is used"`
	Candidates    int     `hcl:"candidates,optional" range:"[1, 10000]" default:"24" doc:"candidates drawn from the good-trial model for each parameter"`
	PriorWeight   float64 `hcl:"prior_weight,optional" range:"(0, 1e12]" default:"1" doc:"weight of the prior kernel in every estimator"`
	Model         string  `hcl:"model,optional" oneof:"alternate joint univariate" default:"alternate" doc:"alternate: even trials joint (one model of the top-level numbers and flat choices), odd ones univariate (one per parameter)"`
	Weights       string  `hcl:"weights,optional" oneof:"equal hypervolume" default:"equal" doc:"the good trials' kernel weights: all 1, or each one's exclusive hypervolume among them over the largest (Optuna's)"`
}

func newMOTPE(cfg any, sp *space.Space) (Tuner, error) {
	c := cfg.(*MOTPESettings)
	t := &motpeTuner{tpe: tpeFrom(&TPESettings{Seeded: c.Seeded, StartupTrials: c.StartupTrials, Candidates: c.Candidates,
		PriorWeight: c.PriorWeight, Multivariate: c.Model == "joint"}, sp), hvWeights: c.Weights == "hypervolume"}
	switch c.Model {
	case "joint":
		t.model = motpeJoint
	case "univariate":
		t.model = motpeUnivariate
	}
	return t, nil
}

func (t *motpeTuner) Suggest(req Request) ([]space.Params, error) {
	if len(goalsOf(req)) < 2 {
		return t.tpe.Suggest(req)
	}
	if t.model != motpeAlternate || len(req.Seqs) < 2 {
		return t.suggest(req)
	}
	// Trials asked for together are proposed one after another in
	// sequence order, each added as pending before the next (as tpe
	// does), since they may differ in model.
	out := make([]space.Params, len(req.Seqs))
	one := req
	one.History = history(req) // without stale entries of the trials asked for
	for _, i := range ascending(req.Seqs) {
		one.Seqs = []int{req.Seqs[i]}
		ps, err := t.suggest(one)
		if err != nil {
			return nil, err
		}
		out[i] = ps[0]
		one.History = append(one.History, Observation{Seq: req.Seqs[i], Params: ps[0], State: Pending})
	}
	return out, nil
}

// suggest proposes req.Seqs with several objectives; with the alternate
// model req has one seq.
func (t *motpeTuner) suggest(req Request) ([]space.Params, error) {
	// Without hypervolume weights every good trial weighs 1 (tpe's
	// default for at most 25 of them).
	inner, weights, err := scalarise(req, t.hvWeights)
	if err != nil {
		return nil, err
	}
	tp := *t.tpe
	tp.joint = t.model.jointFor(req.Seqs[0])
	return tp.suggest(inner, weights)
}

// scalarised is req with every completed trial's values replaced by a
// loss a single-objective model can split on, and the weights of the good
// trials' kernels, as Optuna 3.1's multi-objective TPE chooses them:
//
//   - The good trials are the gamma(n) = min(ceil(0.1 n), 25) best by
//     non-domination rank (n counting pending trials, as tpe's split
//     does); in the rank that does not fit whole, the members are chosen
//     greedily by hypervolume (each time the one adding the most to those
//     already chosen: the hypervolume subset selection). Their losses are
//     0..k-1, so tpe's split takes exactly them.
//   - Each good trial's weight is its exclusive hypervolume among the good
//     ones, over the largest (plus a tiny floor): a good trial another
//     good trial dominates, or one in a crowded part of the front, counts
//     less than one that alone covers a region. motpe uses these weights
//     only with weights = "hypervolume"; by default the good trials weigh
//     the same (tpe's default).
//
// Objectives are normalised to the completed trials' range first, and
// hypervolumes are taken against the good trials' worst point plus 0.1
// of their range, so no objective's scale dominates. The other trials'
// losses follow in NSGA-II's crowded order (only the split uses them).
func scalarised(req Request) (Request, map[int]float64, error) {
	return scalarise(req, true)
}

// scalarise is scalarised, with the weights only when hv is true (nil
// otherwise: tpe's default, every good trial weighs 1).
func scalarise(req Request, hv bool) (Request, map[int]float64, error) {
	if err := checkMulti(req); err != nil {
		return Request{}, nil, err
	}
	obs, err := moHistory(req)
	if err != nil {
		return Request{}, nil, err
	}
	var done []int
	var losses [][]float64
	for i, o := range obs {
		if !o.pending {
			done = append(done, i)
			losses = append(losses, o.loss)
		}
	}
	rank, spread := paretoOrder(losses)
	order := make([]int, len(done))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return crowdedBetter(rank, spread, order[a], order[b]) })
	k := min((len(obs)+9)/10, 25, len(done))
	var good []int
	if k > 0 {
		good = goodByHypervolume(normalise(losses), rank, order, k)
		inGood := make(map[int]bool, k)
		for _, i := range good {
			inGood[i] = true
		}
		rest := order[:0:0]
		for _, i := range order {
			if !inGood[i] {
				rest = append(rest, i)
			}
		}
		order = append(append([]int(nil), good...), rest...)
	}
	pos := make(map[int]float64, len(done))
	for k, i := range order {
		pos[done[i]] = float64(k)
	}
	var weights map[int]float64
	if hv && len(good) > 0 {
		norm := normalise(losses)
		pts := make([][]float64, len(good))
		for j, i := range good {
			pts[j] = norm[i]
		}
		c := pareto.Contributions(pts, worstPlus(pts, 0.1))
		top := 0.0
		for _, v := range c {
			top = math.Max(top, v)
		}
		weights = make(map[int]float64, len(good))
		for j, i := range good {
			w := 1.0
			if top > 0 {
				w = math.Min(1, (c[j]+1e-12)/(top+1e-12))
			}
			weights[obs[done[i]].seq] = math.Max(w, 1e-12)
		}
	}
	hist := make([]Observation, len(obs))
	for i, o := range obs {
		hist[i] = Observation{Seq: o.seq, Params: o.params, State: Pending}
		if !o.pending {
			hist[i].State, hist[i].Value = Completed, pos[i]
		}
	}
	inner := req
	inner.Goal, inner.Goals, inner.History = Minimize, nil, hist
	return inner, weights, nil
}

// goodByHypervolume picks k points (indexes into norm): whole ranks in
// order, then from the rank that does not fit whole, greedily the point
// that adds most hypervolume to those of that rank already picked
// (against that rank's worst point plus 0.1 of its range); ties: the crowded order.
func goodByHypervolume(norm [][]float64, rank, order []int, k int) []int {
	var good []int
	for len(good) < k {
		r := rank[order[len(good)]]
		var members []int
		for _, i := range order[len(good):] {
			if rank[i] == r {
				members = append(members, i)
			}
		}
		if len(good)+len(members) <= k {
			good = append(good, members...)
			continue
		}
		pts := make([][]float64, len(members))
		for j, i := range members {
			pts[j] = norm[i]
		}
		ref := worstPlus(pts, 0.1)
		good = append(good, greedyHypervolume(pts, ref, k-len(good), members)...)
	}
	return good
}

// greedyHypervolume picks k of pts (returning their labels), each time
// the one whose addition grows the hypervolume of those picked the most;
// ties: the earlier. A point's gain only shrinks as others are picked
// (hypervolume is submodular), so a gain computed earlier bounds it: the
// candidates are kept by their last gain and only the leader's is
// recomputed until it stays the leader (lazy greedy: the same choice as
// recomputing every gain, in far fewer hypervolumes).
func greedyHypervolume(pts [][]float64, ref []float64, k int, labels []int) []int {
	type cand struct {
		j     int
		bound float64
		round int // the number picked when bound was computed
	}
	cs := make([]cand, len(pts))
	for j, p := range pts {
		v := 1.0
		for m := range p {
			v *= math.Max(0, ref[m]-p[m])
		}
		cs[j] = cand{j: j, bound: v}
	}
	less := func(a, b cand) bool { // a ranks before b
		if a.bound != b.bound {
			return a.bound > b.bound
		}
		return a.j < b.j
	}
	var chosen [][]float64
	var out []int
	base := 0.0
	for len(out) < k && len(cs) > 0 {
		top := 0
		for i := range cs {
			if less(cs[i], cs[top]) {
				top = i
			}
		}
		c := cs[top]
		if c.round != len(out) {
			cs[top].bound = pareto.Hypervolume(append(chosen, pts[c.j]), ref) - base
			cs[top].round = len(out)
			continue
		}
		chosen = append(chosen, pts[c.j])
		base += c.bound
		out = append(out, labels[c.j])
		cs = append(cs[:top], cs[top+1:]...)
	}
	return out
}

// worstPlus is the points' worst value in each objective plus margin
// times their range in it (a tiny step where they all agree).
func worstPlus(pts [][]float64, margin float64) []float64 {
	ref := make([]float64, len(pts[0]))
	for m := range ref {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range pts {
			lo, hi = math.Min(lo, p[m]), math.Max(hi, p[m])
		}
		ref[m] = hi + math.Max(margin*(hi-lo), 1e-9)
	}
	return ref
}
