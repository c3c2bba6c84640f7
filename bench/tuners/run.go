package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/trialform/trialform/tuner"
	"github.com/trialform/trialform/tuner/space"
)

// Sampler is one contestant: a registered Go tuner, an Optuna sampler or
// one of NNI's own tuners.
type Sampler struct {
	Side string // "go", "optuna" or "nni"
	Name string // tuner name, or "random"/"tpe" for Optuna, "gp"/"metis" for NNI
}

func (s Sampler) String() string {
	switch s.Side {
	case "go":
		return "Go " + s.Name
	case "nni":
		return "NNI " + s.Name
	}
	return "Optuna " + s.Name
}

// Outcome is one run: a sampler on a problem with a seed.
type Outcome struct {
	Regret  float64
	Suggest time.Duration // total time spent asking for parameters
	Err     error
	// Curve[k] is the regret of the best of the first k+1 completed trials
	// (in completion order), so one run gives the regret at every smaller
	// budget too: a sequential run's first k trials do not depend on the
	// total (every tuner here is seeded and none reads the budget).
	Curve []float64
}

// runEnv is what one worker goroutine owns: its Python processes.
type runEnv struct {
	procs      procs
	peerPerRun bool
}

// evaluate computes the objective of p, in Go or in the problem's worker.
func (e *runEnv) evaluate(pr *Problem, p space.Params) (float64, error) {
	if pr.Eval != nil {
		return pr.Eval(p), nil
	}
	w, err := e.procs.get(pr.Worker)
	if err != nil {
		return 0, err
	}
	var r struct {
		Value float64 `json:"value"`
	}
	if err := w.call(p, &r); err != nil {
		return 0, err
	}
	return r.Value, nil
}

// asker is one side's ask/tell interface over a run.
type asker interface {
	ask() (handle int, p space.Params, err error)
	tell(handle int, value float64) error
}

// schedule runs trials with up to par trials in flight: it asks until par
// are pending (each ask sees the earlier ones as pending), then completes
// the oldest, and so on. With par = 1 that is the plain sequential loop; with
// par = 8 the first 8 are asked before any is told. It returns the best value
// and the time spent in ask.
func schedule(a asker, trials, par int, eval func(space.Params) (float64, error)) (float64, []float64, time.Duration, error) {
	type inflight struct {
		h int
		p space.Params
	}
	var queue []inflight
	best, asked := math.Inf(1), 0
	var spent time.Duration
	curve := make([]float64, 0, trials)
	for asked < trials || len(queue) > 0 {
		for len(queue) < par && asked < trials {
			t0 := time.Now()
			h, p, err := a.ask()
			spent += time.Since(t0)
			if err != nil {
				return 0, nil, spent, fmt.Errorf("trial %d: %w", asked+1, err)
			}
			queue = append(queue, inflight{h, p})
			asked++
		}
		tr := queue[0]
		queue = queue[1:]
		v, err := eval(tr.p)
		if err != nil {
			return 0, nil, spent, err
		}
		if err := a.tell(tr.h, v); err != nil {
			return 0, nil, spent, err
		}
		best = math.Min(best, v)
		curve = append(curve, best)
	}
	return best, curve, spent, nil
}

// goAsker drives a Go tuner: the history holds every trial, pending ones
// with State Pending.
type goAsker struct {
	tn   tuner.Tuner
	sp   *space.Space
	seed int64
	hist []tuner.Observation
}

func (g *goAsker) ask() (int, space.Params, error) {
	seq := len(g.hist) + 1
	out, err := g.tn.Suggest(tuner.Request{Space: g.sp, Goal: tuner.Minimize, Seed: g.seed, History: g.hist, Seqs: []int{seq}})
	if err != nil {
		return 0, nil, err
	}
	if len(out) != 1 || !g.sp.Contains(out[0]) {
		return 0, nil, fmt.Errorf("suggestion %v is not one point of the space", out)
	}
	g.hist = append(g.hist, tuner.Observation{Seq: seq, Params: out[0], State: tuner.Pending})
	return seq - 1, out[0], nil
}

func (g *goAsker) tell(h int, v float64) error {
	g.hist[h].State, g.hist[h].Value = tuner.Completed, v
	return nil
}

// tunerSettings are the settings a Go tuner is built with in the benchmark;
// nil (the defaults, with the run's seed from the request) for those not
// listed. Grid search needs a number of points for continuous parameters.
var tunerSettings = map[string]map[string]any{
	"grid":   {"grid_points": int64(5)},
	"tpe-mv": {"multivariate": true},  // the default since 2026-11-27, kept for older commands
	"tpe-uv": {"multivariate": false}, // one model per parameter: Optuna 3.1's default TPE
}

// variants are benchmark names for a registered tuner with other settings
// (in tunerSettings); -go accepts them besides the registered names.
var variants = map[string]string{"tpe-mv": "tpe", "tpe-uv": "tpe"}

// registeredName is the tuner that the benchmark name n runs: a variant's,
// or the part before the first ":" of "NAME:key=value:..." (see settingsOf).
func registeredName(n string) string {
	if r, ok := variants[n]; ok {
		return r
	}
	name, _, _ := strings.Cut(n, ":")
	return name
}

// settingsOf is the settings that the benchmark name n runs its tuner with:
// tunerSettings[n], or for "NAME:key=value:key=value" those pairs (a value
// that parses as an integer is one, then a number, then true/false, else a
// string), so that a setting can be compared without a code change, e.g.
// -go 'tpe,tpe:prior_weight=0.5'.
func settingsOf(n string) (map[string]any, error) {
	if s, ok := tunerSettings[n]; ok {
		return s, nil
	}
	parts := strings.Split(n, ":")
	if len(parts) == 1 {
		return nil, nil
	}
	out := map[string]any{}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want NAME:key=value[:key=value...], not %q", n, kv)
		}
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[k] = i
		} else if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[k] = f
		} else if b, err := strconv.ParseBool(v); err == nil {
			out[k] = b
		} else {
			out[k] = v
		}
	}
	return out, nil
}

// Run does one run of s on pr.
func (e *runEnv) Run(s Sampler, pr *Problem, seed int64, trials, par int) Outcome {
	eval := func(p space.Params) (float64, error) { return e.evaluate(pr, p) }
	var a asker
	switch s.Side {
	case "go":
		set, err := settingsOf(s.Name)
		if err != nil {
			return Outcome{Err: err}
		}
		tn, err := builtinTuners.New(registeredName(s.Name), set, pr.Space)
		if err != nil {
			return Outcome{Err: err}
		}
		a = &goAsker{tn: tn, sp: pr.Space, seed: seed}
	case "nni":
		// nni_peer.py speaks optuna_peer.py's protocol.
		peer, err := e.procs.get(nniPeerScript)
		if err != nil {
			return Outcome{Err: err}
		}
		st, err := newOptunaStudy(peer, s.Name, seed, false, pr.Space)
		if err != nil {
			return Outcome{Err: err}
		}
		defer st.close()
		a = st
	case "optuna":
		peer, err := e.procs.get(peerScript)
		if e.peerPerRun {
			peer, err = startProc(e.procs.python, e.procs.dir+"/"+peerScript)
			if err == nil {
				defer peer.close()
			}
		}
		if err != nil {
			return Outcome{Err: err}
		}
		st, err := newOptunaStudy(peer, s.Name, seed, par > 1 && s.Name == "tpe", pr.Space)
		if err != nil {
			return Outcome{Err: err}
		}
		defer st.close()
		a = st
	default:
		return Outcome{Err: fmt.Errorf("unknown side %q", s.Side)}
	}
	best, curve, spent, err := schedule(a, trials, par, eval)
	for i := range curve {
		curve[i] -= pr.Optimum
	}
	return Outcome{Regret: best - pr.Optimum, Suggest: spent, Err: err, Curve: curve}
}
