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
	MinBudget float64 `hcl:"min_budget,optional" range:"[1e-9, 1e12]" default:"1" doc:"the smallest budget a trial gets; at most max_budget"`
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
	slots    []hbSlot
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
	h.slots = h.schedule()
	return h, nil
}

// HyperbandRound is the number of trials of one round of hyperband's
// brackets (each bracket once) for max_budget maxB, min_budget minB and
// eta: the max_trials that runs every bracket once.
func HyperbandRound(maxB, minB float64, eta int) int {
	h := &hyperband{maxB: maxB, minB: minB, eta: eta, integral: maxB == math.Trunc(maxB) && minB == math.Trunc(minB)}
	return len(h.schedule())
}

// schedule lays out one round of brackets.
func (h *hyperband) schedule() []hbSlot {
	eta := float64(h.eta)
	sMax := int(math.Floor(math.Log(h.maxB/h.minB)/math.Log(eta) + 1e-9))
	var slots []hbSlot
	for s := sMax; s >= 0; s-- {
		n := int(math.Ceil(float64(sMax+1) / float64(s+1) * math.Pow(eta, float64(s))))
		r := h.maxB * math.Pow(eta, -float64(s))
		prevStart, prevLen := -1, 0
		for i := 0; i <= s; i++ {
			ni := int(math.Floor(float64(n) * math.Pow(eta, -float64(i))))
			if ni < 1 {
				ni = 1
			}
			start := len(slots)
			b := r * math.Pow(eta, float64(i))
			if h.integral {
				b = math.Max(1, math.Round(b))
			}
			for j := 0; j < ni; j++ {
				slots = append(slots, hbSlot{bracket: s, rung: i, rungStart: start, prevStart: prevStart, prevLen: prevLen, pos: j, budget: b})
			}
			prevStart, prevLen = start, ni
		}
	}
	return slots
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
		round, k := seq/len(h.slots), seq%len(h.slots)
		base := round * len(h.slots)
		sl := h.slots[k]
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
