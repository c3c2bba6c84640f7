package tuner

import (
	"fmt"
	"math"
	"sort"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/tuner/space"
)

// BudgetParam is the parameter through which hyperband and bohb hand each
// trial its budget (epochs, steps, ...), as NNI does: the trial reads
// params["TRIAL_BUDGET"] (and a command template can use
// ${param.TRIAL_BUDGET}).
const BudgetParam = "TRIAL_BUDGET"

// WaitError is returned by a tuner that cannot propose all the trials
// asked for until running ones finish (a Hyperband rung waits for the one
// below it). The first Ready suggestions it returned are valid.
type WaitError struct {
	Ready int
	Why   string
}

func (e *WaitError) Error() string { return e.Why }

// HyperbandSettings are the hyperband tuner's settings.
type HyperbandSettings struct {
	MaxBudget float64 `hcl:"max_budget,attr" range:"[1e-9, 1e12]" doc:"the budget of a trial that runs in full, e.g. 81 epochs"`
	MinBudget float64 `hcl:"min_budget,optional" range:"[1e-9, 1e12]" default:"1" doc:"the smallest budget a trial gets; at most max_budget, and at most 2^53 trials a round (eta 2: max_budget/min_budget < 2^51)"`
	Eta       int     `hcl:"eta,optional" range:"[2,)" default:"3" doc:"the halving rate: each rung keeps 1/eta of the trials with eta times the budget"`
	Seeded
}

// BOHBSettings are the bohb tuner's settings.
type BOHBSettings struct {
	HyperbandSettings
	StartupTrials int `hcl:"startup_trials,optional" range:"[1,)" default:"10" doc:"results needed at a budget before its model proposes new configurations"`
}

func hyperbandKind() Kind {
	return Kind{
		Name: "hyperband", Spaces: "all kinds",
		Summary:  "Hyperband brackets of successive halving; each trial gets its budget as the param `TRIAL_BUDGET` (as in NNI; usable as `${param.TRIAL_BUDGET}`); a rung waits for the one below it, and the plan says so",
		Settings: func() any { return &HyperbandSettings{MinBudget: 1, Eta: 3} },
		New: func(cfg any, sp *space.Space) (Tuner, error) {
			return newHyperband("hyperband", cfg.(*HyperbandSettings), 10, sp)
		},
		Params: []string{BudgetParam},
	}
}

func bohbKind() Kind {
	return Kind{
		Name: "bohb", Spaces: "all kinds",
		Summary: "hyperband whose new configurations come from a TPE model of the results at the largest budget with enough of them",
		Settings: func() any {
			return &BOHBSettings{HyperbandSettings: HyperbandSettings{MinBudget: 1, Eta: 3}, StartupTrials: 10}
		},
		New: func(cfg any, sp *space.Space) (Tuner, error) {
			c := cfg.(*BOHBSettings)
			return newHyperband("bohb", &c.HyperbandSettings, c.StartupTrials, sp)
		},
		Params: []string{BudgetParam},
	}
}

// hyperband is Li et al.'s Hyperband as a schedule of trial slots: brackets
// s = s_max..0, each running successive halving from n_s configurations at
// budget max_budget·eta^-s. Slot k of the schedule is the trial with
// sequence number k (the schedule repeats when it ends), so the tuner
// stays a pure function of the history. A slot in rung i > 0 re-runs,
// with eta times the budget, one of the best configurations of rung i-1
// of its bracket; it waits (WaitError) while that rung has trials running.
// A promoted configuration is a new trial with the same parameters and a
// larger TRIAL_BUDGET, as in NNI (a trial may load its own checkpoint from
// a shared directory to continue instead of starting over).
//
// bohb (Falkner et al.) proposes rung-0 configurations from a TPE model
// fitted on the results at the largest budget that has startup_trials of
// them (random until then), instead of at random.
type hyperband struct {
	seeder
	name     string
	sp       *space.Space
	maxB     float64
	minB     float64
	eta      int
	startup  int
	integral bool // budgets are whole numbers (both bounds are)
	brackets []hbBracket
	round    int // trials in one round of brackets
}

// hbSlot is one trial of the schedule.
type hbSlot struct {
	bracket, rung int
	rungStart     int // index of the rung's first slot in the schedule
	prevStart     int // index of the previous rung's first slot (rung > 0)
	prevLen       int // size of the previous rung
	pos           int // position within the rung
	budget        float64
}

// hbRung is one rung of a bracket: n trials from slot start, each with
// the same budget.
type hbRung struct {
	start, n int
	budget   float64
}

// hbBracket is one bracket of the schedule: its rungs, from slot start.
type hbBracket struct {
	s, start, size int
	rungs          []hbRung
}

// maxHyperbandRound is the most trials one round of brackets may have:
// 2^53, beyond which the float formulas of the bracket sizes (as NNI's)
// are no longer exact whole numbers, and far beyond what any max_trials
// reaches (a larger round would only ever run the first bracket's
// rung 0).
const maxHyperbandRound = 1 << 53

func newHyperband(name string, c *HyperbandSettings, startup int, sp *space.Space) (Tuner, error) {
	sd, maxB, minB, eta := c.seeder(), c.MaxBudget, c.MinBudget, c.Eta
	if minB > maxB {
		return nil, decl.Errorf("min_budget", "min_budget (%g) must not exceed max_budget (%g).", minB, maxB)
	}
	if sp != nil {
		for _, p := range sp.Params {
			if p.Name == BudgetParam {
				return nil, fmt.Errorf("tuner %q sets the param %q itself; remove it from the search space", name, BudgetParam)
			}
		}
	}
	h := &hyperband{
		seeder: sd, name: name, sp: sp, maxB: maxB, minB: minB, eta: eta, startup: startup,
		integral: maxB == math.Trunc(maxB) && minB == math.Trunc(minB),
	}
	var err error
	if h.brackets, h.round, err = h.schedule(); err != nil {
		return nil, err
	}
	return h, nil
}

// HyperbandRound is the number of trials of one round of hyperband's
// brackets (each bracket once) for max_budget maxB, min_budget minB and
// eta: the max_trials that runs every bracket once. It fails as the
// tuner does where that round is too large to run.
func HyperbandRound(maxB, minB float64, eta int) (int, error) {
	h := &hyperband{maxB: maxB, minB: minB, eta: eta, integral: maxB == math.Trunc(maxB) && minB == math.Trunc(minB)}
	_, n, err := h.schedule()
	return n, err
}

// sMax is the largest bracket's s for a ratio max_budget/min_budget.
func hbSMax(ratio float64, eta int) int {
	return int(math.Floor(math.Log(ratio)/math.Log(float64(eta)) + 1e-9))
}

// hbRoundSize is the number of trials of one round with brackets
// sMax..0, as a float (it may not fit an int).
func hbRoundSize(sMax, eta int) float64 {
	e := float64(eta)
	total := 0.0
	for s := sMax; s >= 0; s-- {
		n := math.Ceil(float64(sMax+1) / float64(s+1) * math.Pow(e, float64(s)))
		for i := 0; i <= s; i++ {
			total += math.Max(1, math.Floor(n*math.Pow(e, -float64(i))))
		}
	}
	return total
}

// schedule lays out one round of brackets in closed form: per bracket s
// (s_max..0) n = ceil((s_max+1)/(s+1)·eta^s) configurations at budget
// max_budget·eta^-s, rung i keeping floor(n·eta^-i) of them with eta^i
// times the budget. It holds the rungs, not the trials, so its size does
// not grow with the budget; a round of more than maxHyperbandRound trials
// is refused, at max_budget.
func (h *hyperband) schedule() ([]hbBracket, int, error) {
	eta := float64(h.eta)
	sMax := hbSMax(h.maxB/h.minB, h.eta)
	if size := hbRoundSize(sMax, h.eta); size > maxHyperbandRound {
		// The largest s_max whose round fits, and the min_budget it needs.
		fit := sMax - 1
		for fit > 0 && hbRoundSize(fit, h.eta) > maxHyperbandRound {
			fit--
		}
		need := roundUp4(h.maxB / math.Pow(eta, float64(fit)))
		return nil, 0, &decl.AttrError{Attr: "max_budget", Problem: decl.Problem{
			Summary: "Hyperband round too large",
			Detail: fmt.Sprintf("max_budget %g over min_budget %g with eta %d makes %d brackets, and one round of them %.3g trials (the first rung alone %.3g trials at budget %.3g): more than any experiment runs, and more than the %.3g a round may have. Raise min_budget to %g or more, raise eta, or lower max_budget.",
				h.maxB, h.minB, h.eta, sMax+1, size, math.Ceil(math.Pow(eta, float64(sMax))), h.maxB*math.Pow(eta, -float64(sMax)), float64(maxHyperbandRound), need),
		}}
	}
	var brackets []hbBracket
	next := 0
	for s := sMax; s >= 0; s-- {
		n := math.Ceil(float64(sMax+1) / float64(s+1) * math.Pow(eta, float64(s)))
		r := h.maxB * math.Pow(eta, -float64(s))
		b := hbBracket{s: s, start: next}
		for i := 0; i <= s; i++ {
			ni := int(math.Max(1, math.Floor(n*math.Pow(eta, -float64(i)))))
			bud := r * math.Pow(eta, float64(i))
			if h.integral {
				bud = math.Max(1, math.Round(bud))
			}
			b.rungs = append(b.rungs, hbRung{start: next, n: ni, budget: bud})
			next += ni
		}
		b.size = next - b.start
		brackets = append(brackets, b)
	}
	return brackets, next, nil
}

// roundUp4 rounds x > 0 up to 4 significant digits.
func roundUp4(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x))-3)
	return math.Ceil(x/p) * p
}

// slot is slot k (0 <= k < h.round) of the schedule.
func (h *hyperband) slot(k int) hbSlot {
	for _, b := range h.brackets {
		if k >= b.start+b.size {
			continue
		}
		prevStart, prevLen := -1, 0
		for i, r := range b.rungs {
			if k < r.start+r.n {
				return hbSlot{bracket: b.s, rung: i, rungStart: r.start, prevStart: prevStart, prevLen: prevLen, pos: k - r.start, budget: r.budget}
			}
			prevStart, prevLen = r.start, r.n
		}
	}
	panic(fmt.Sprintf("hyperband: slot %d outside a round of %d", k, h.round))
}

func (h *hyperband) Suggest(req Request) ([]space.Params, error) {
	sp, err := spaceOf(req, h.sp)
	if err != nil {
		return nil, err
	}
	hist := history(req)
	bySeq := make(map[int]Observation, len(hist))
	for _, o := range hist {
		bySeq[o.Seq] = o
	}
	asked := map[int]bool{}
	for _, s := range req.Seqs {
		asked[s] = true
	}
	out := make([]space.Params, 0, len(req.Seqs))
	for _, i := range ascending(req.Seqs) {
		seq := req.Seqs[i]
		if seq < 0 {
			return nil, fmt.Errorf("negative sequence number %d", seq)
		}
		round, k := seq/h.round, seq%h.round
		base := round * h.round
		sl := h.slot(k)
		var p space.Params
		if sl.rung == 0 {
			p = h.fresh(req, sp, hist, seq)
		} else {
			// The previous rung, ranked; its unfinished trials make us wait.
			type ranked struct {
				o     Observation
				value float64
			}
			var rs []ranked
			for j := 0; j < sl.prevLen; j++ {
				ps := base + sl.prevStart + j
				o, ok := bySeq[ps]
				switch {
				case ok && o.State == Completed && !math.IsNaN(o.Value):
					v := o.Value
					if req.Goal == Minimize {
						v = -v
					}
					rs = append(rs, ranked{o, v})
				case ok && o.State == Failed:
					rs = append(rs, ranked{o, math.Inf(-1)})
				case !ok && ps < seq && !asked[ps]:
					// Not in the history (left out by a search-space
					// change): counts as failed.
				default:
					return out, &WaitError{Ready: len(out), Why: fmt.Sprintf(
						"%s waits for rung %d of bracket %d (trials %d-%d) to finish before promoting the best 1/%d",
						h.name, sl.rung-1, sl.bracket, base+sl.prevStart, base+sl.prevStart+sl.prevLen-1, h.eta)}
				}
			}
			sort.SliceStable(rs, func(a, b int) bool { return rs[a].value > rs[b].value })
			if sl.pos >= len(rs) || math.IsInf(rs[sl.pos].value, -1) {
				p = h.fresh(req, sp, hist, seq) // too few usable results: a fresh configuration
			} else {
				p = space.Params{}
				for k, v := range rs[sl.pos].o.Params {
					if k != BudgetParam {
						p[k] = v
					}
				}
			}
		}
		p[BudgetParam] = h.budgetValue(sl.budget)
		out = append(out, p)
		hist = append(hist, Observation{Seq: seq, Params: p, State: Pending})
		bySeq[seq] = hist[len(hist)-1]
	}
	// Results in the order of req.Seqs.
	res := make([]space.Params, len(req.Seqs))
	for n, i := range ascending(req.Seqs) {
		res[i] = out[n]
	}
	return res, nil
}

func (h *hyperband) budgetValue(b float64) any {
	if h.integral {
		return int64(b)
	}
	return b
}

// fresh is a rung-0 configuration: random (hyperband), or from a TPE model
// of the results at the largest budget that has enough of them (bohb).
func (h *hyperband) fresh(req Request, sp *space.Space, hist []Observation, seq int) space.Params {
	if h.name == "bohb" {
		byBudget := map[string][]Observation{}
		var budgets []float64
		for _, o := range hist {
			b, ok := space.ToFloat(o.Params[BudgetParam])
			if !ok || o.State != Completed {
				continue
			}
			key := fmt.Sprint(b)
			if len(byBudget[key]) == 0 {
				budgets = append(budgets, b)
			}
			byBudget[key] = append(byBudget[key], o)
		}
		sort.Float64s(budgets)
		for i := len(budgets) - 1; i >= 0; i-- {
			obs := byBudget[fmt.Sprint(budgets[i])]
			if len(obs) < h.startup {
				continue
			}
			model := &tpeTuner{seeder: h.seeder, sp: sp, startup: h.startup, candidates: 24, priorWeight: 1}
			stripped := make([]Observation, len(obs))
			for j, o := range obs {
				q := space.Params{}
				for k, v := range o.Params {
					if k != BudgetParam {
						q[k] = v
					}
				}
				stripped[j] = Observation{Seq: o.Seq, Params: q, State: o.State, Value: o.Value}
			}
			got, err := model.Suggest(Request{Space: sp, Goal: req.Goal, Seed: req.Seed, History: stripped, Seqs: []int{seq}})
			if err == nil && len(got) == 1 {
				return got[0]
			}
			break
		}
	}
	return space.SampleSpace(sp, h.rng(req, seq))
}
