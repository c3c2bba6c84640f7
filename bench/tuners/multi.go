package main

// The multi-objective benchmark (`go run ./bench/tuners multi`): our
// multi-objective tuners (nsga2, motpe, mogp, auto; random as the floor) and
// Optuna 3.1's NSGA-II and MOTPE (its TPESampler with several objectives)
// on the same problems, each run for -trials trials and -seeds seeds, the
// hypervolume of each run's front against a fixed reference point read at
// every -budgets trial count from the same runs. Every objective is
// minimised and evaluated on the Go side; Optuna asks and is told through
// optuna_peer.py, as in the single-objective benchmark.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trialform/trialform/tuner"
	"github.com/trialform/trialform/tuner/pareto"
	"github.com/trialform/trialform/tuner/space"
)

// MOProblem is a problem with several objectives, all minimised.
type MOProblem struct {
	Name  string
	Space *space.Space
	Eval  func(space.Params) []float64
	Ref   []float64 // the hypervolume's reference point
}

func boxSpace(d int) *space.Space {
	sp := &space.Space{}
	for i := 0; i < d; i++ {
		sp.Params = append(sp.Params, uniform(fmt.Sprintf("x%d", i), 0, 1))
	}
	return sp
}

func xs(p space.Params, d int) []float64 {
	x := make([]float64, d)
	for i := range x {
		x[i], _ = space.ToFloat(p[fmt.Sprintf("x%d", i)])
	}
	return x
}

// zdt is ZDT1 (concave = false: f2 = g(1 - sqrt(f1/g))) or ZDT2 (f2 =
// g(1 - (f1/g)²)) in d variables on [0, 1].
func zdt(d int, second bool) func(space.Params) []float64 {
	return func(p space.Params) []float64 {
		x := xs(p, d)
		g := 0.0
		for _, v := range x[1:] {
			g += v
		}
		g = 1 + 9*g/float64(d-1)
		r := x[0] / g
		h := 1 - math.Sqrt(r)
		if second {
			h = 1 - r*r
		}
		return []float64{x[0], g * h}
	}
}

// dtlz2 is DTLZ2 with m objectives and k distance variables (m-1+k in
// all) on [0, 1]: the front is the unit sphere's positive orthant.
func dtlz2(m, k int) func(space.Params) []float64 {
	n := m - 1 + k
	return func(p space.Params) []float64 {
		x := xs(p, n)
		g := 0.0
		for _, v := range x[m-1:] {
			g += (v - 0.5) * (v - 0.5)
		}
		f := make([]float64, m)
		for i := 0; i < m; i++ {
			v := 1 + g
			for j := 0; j < m-1-i; j++ {
				v *= math.Cos(x[j] * math.Pi / 2)
			}
			if i > 0 {
				v *= math.Sin(x[m-1-i] * math.Pi / 2)
			}
			f[i] = v
		}
		return f
	}
}

// hpoCost is the second objective of the HPO-shaped problem: a model's
// cost (size, latency) that grows with depth and width and shrinks with
// the batch size, so that it conflicts with mixed's error, whose optimum
// sits at a middling depth and width for each optimiser.
func hpoCost(p space.Params) float64 {
	w, _ := space.ToFloat(p["width"])
	d, _ := space.ToFloat(p["depth"])
	b, _ := space.ToFloat(p["batch"])
	return 0.2*d + 0.1*w + 0.5/math.Log2(b+1)
}

// MOProblems lists the multi-objective problems in report order.
func MOProblems() []*MOProblem {
	return []*MOProblem{
		{Name: "zdt1", Space: boxSpace(10), Eval: zdt(10, false), Ref: []float64{1.1, 11}},
		{Name: "zdt2", Space: boxSpace(10), Eval: zdt(10, true), Ref: []float64{1.1, 11}},
		{Name: "dtlz2-2", Space: boxSpace(11), Eval: dtlz2(2, 10), Ref: []float64{3, 3}},
		{Name: "dtlz2-3", Space: boxSpace(12), Eval: dtlz2(3, 10), Ref: []float64{3, 3, 3}},
		{Name: "hpo-mixed", Space: mixedSpace(), Eval: func(p space.Params) []float64 { return []float64{mixed(p), hpoCost(p)} }, Ref: []float64{20, 3}},
	}
}

type moConfig struct {
	trials, seeds, seed0, workers int
	budgets                       []int
	goTuners, optuna              []string
	problems                      []*MOProblem
	python, dir, cache            string
	latency                       int
}

// moRun is one run's objective values, trial by trial.
type moRun struct {
	Values [][]float64 `json:"values"`
}

func multiMain(args []string) error {
	fs := flag.NewFlagSet("tuners multi", flag.ContinueOnError)
	var c moConfig
	fs.IntVar(&c.trials, "trials", 200, "trials per run")
	fs.IntVar(&c.seeds, "seeds", 10, "seeds per problem and sampler")
	fs.IntVar(&c.seed0, "seed0", 1, "first seed (-seed0 6 -seeds 5 runs seeds 6 to 10)")
	fs.IntVar(&c.workers, "workers", 2, "runs at a time")
	budFlag := fs.String("budgets", "50,100,200", "trial counts to report, read off the same runs")
	goFlag := fs.String("go", "nsga2,motpe,mogp,auto,random", "our tuners")
	optFlag := fs.String("optuna", "nsga2,motpe", "Optuna samplers (nsga2, motpe, random); empty for none")
	probFlag := fs.String("problems", "", "comma list of problems (default all)")
	fs.StringVar(&c.python, "python", "/usr/bin/python3", "Python with Debian's python3-optuna")
	fs.StringVar(&c.dir, "dir", "bench/tuners", "folder of optuna_peer.py")
	fs.StringVar(&c.cache, "cache", "", "folder that keeps the Optuna runs (deterministic by sampler, problem, seed, trials) and reuses them")
	fs.IntVar(&c.latency, "latency", 1000, "history size for the suggest-latency table; 0 to skip")
	out := fs.String("out", "", "also write the report to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if c.budgets, err = intList(*budFlag); err != nil {
		return fmt.Errorf("-budgets: %v", err)
	}
	for _, b := range c.budgets {
		if b > c.trials {
			return fmt.Errorf("-budgets: %d is more than -trials %d", b, c.trials)
		}
	}
	for _, n := range splitList(*goFlag) {
		if k := builtinTuners.Lookup(n); k == nil || !k.MultiObjective {
			return fmt.Errorf("-go: %q is not a multi-objective tuner (%s)", n, strings.Join(builtinTuners.MultiObjectiveNames(), ", "))
		}
		c.goTuners = append(c.goTuners, n)
	}
	for _, n := range splitList(*optFlag) {
		if n != "nsga2" && n != "motpe" && n != "random" {
			return fmt.Errorf("-optuna: unknown sampler %q (nsga2, motpe, random)", n)
		}
		c.optuna = append(c.optuna, n)
	}
	all := MOProblems()
	if names := splitList(*probFlag); len(names) > 0 {
		for _, n := range names {
			found := false
			for _, p := range all {
				if p.Name == n {
					c.problems, found = append(c.problems, p), true
				}
			}
			if !found {
				return fmt.Errorf("-problems: unknown problem %q", n)
			}
		}
	} else {
		c.problems = all
	}
	var rep strings.Builder
	w := io.MultiWriter(os.Stdout, &rep)
	fmt.Fprintf(w, "multi-objective benchmark: %d trials, %d seeds, budgets %v; ours %v, Optuna %v (%s)\n",
		c.trials, c.seeds, c.budgets, c.goTuners, c.optuna, time.Now().UTC().Format(time.RFC3339))
	t0 := time.Now()
	res, err := moRunAll(&c)
	if err != nil {
		return err
	}
	moReport(w, &c, res)
	fmt.Fprintf(w, "\n(runs took %s)\n", time.Since(t0).Round(time.Second))
	if c.latency > 0 {
		moLatency(w, &c)
	}
	if *out != "" {
		return os.WriteFile(*out, []byte(rep.String()), 0o644)
	}
	return nil
}

type moKey struct {
	problem, sampler string
	seed             int
}

func moSamplers(c *moConfig) []string {
	var s []string
	for _, n := range c.goTuners {
		s = append(s, n)
	}
	for _, n := range c.optuna {
		s = append(s, "optuna-"+n)
	}
	return s
}

func moRunAll(c *moConfig) (map[moKey]moRun, error) {
	var jobs []moKey
	for _, p := range c.problems {
		// Optuna's runs first: the slowest (MOTPE) start early.
		for _, s := range optunaFirst(moSamplers(c)) {
			for seed := c.seed0; seed < c.seed0+c.seeds; seed++ {
				jobs = append(jobs, moKey{p.Name, s, seed})
			}
		}
	}
	probs := map[string]*MOProblem{}
	for _, p := range c.problems {
		probs[p.Name] = p
	}
	res := map[moKey]moRun{}
	var mu sync.Mutex
	var firstErr error
	ch := make(chan moKey)
	var wg sync.WaitGroup
	for i := 0; i < c.workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps := &procs{python: c.python, dir: c.dir}
			defer ps.closeAll()
			for k := range ch {
				r, err := moRunOne(c, ps, probs[k.problem], k.sampler, k.seed)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s on %s, seed %d: %w", k.sampler, k.problem, k.seed, err)
				}
				res[k] = r
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return res, firstErr
}

func optunaFirst(s []string) []string {
	out := append([]string(nil), s...)
	sort.SliceStable(out, func(i, j int) bool {
		return strings.HasPrefix(out[i], "optuna-") && !strings.HasPrefix(out[j], "optuna-")
	})
	return out
}

func moRunOne(c *moConfig, ps *procs, p *MOProblem, sampler string, seed int) (moRun, error) {
	if name, ok := strings.CutPrefix(sampler, "optuna-"); ok {
		return moRunOptuna(c, ps, p, name, seed)
	}
	tn, err := builtinTuners.New(sampler, nil, p.Space)
	if err != nil {
		return moRun{}, err
	}
	goals := make([]tuner.Goal, len(p.Ref))
	for i := range goals {
		goals[i] = tuner.Minimize
	}
	var run moRun
	var hist []tuner.Observation
	for seq := 0; seq < c.trials; seq++ {
		out, err := tn.Suggest(tuner.Request{Space: p.Space, Goal: goals[0], Goals: goals, Seed: int64(seed), History: hist, Seqs: []int{seq}})
		if err != nil {
			return run, err
		}
		v := p.Eval(out[0])
		hist = append(hist, tuner.Observation{Seq: seq, Params: out[0], State: tuner.Completed, Value: v[0], Values: v})
		run.Values = append(run.Values, v)
	}
	return run, nil
}

func moRunOptuna(c *moConfig, ps *procs, p *MOProblem, sampler string, seed int) (moRun, error) {
	var run moRun
	cacheFile := ""
	if c.cache != "" {
		cacheFile = filepath.Join(c.cache, fmt.Sprintf("mo-%s-%s-%d.json", sampler, p.Name, seed))
		var cached moRun
		if b, err := os.ReadFile(cacheFile); err == nil && json.Unmarshal(b, &cached) == nil && len(cached.Values) >= c.trials {
			cached.Values = cached.Values[:c.trials]
			return cached, nil
		}
	}
	peer, err := ps.get(peerScript)
	if err != nil {
		return run, err
	}
	spec, err := OptunaSpace(p.Space)
	if err != nil {
		return run, err
	}
	dirs := make([]string, len(p.Ref))
	for i := range dirs {
		dirs[i] = "minimize"
	}
	id := nextStudyID()
	var ok struct{}
	if err := peer.call(map[string]any{"op": "new", "id": id, "sampler": sampler, "seed": seed, "space": spec, "directions": dirs}, &ok); err != nil {
		return run, err
	}
	defer peer.call(map[string]any{"op": "close", "id": id}, &ok)
	for i := 0; i < c.trials; i++ {
		var r struct {
			Number int            `json:"number"`
			Params map[string]any `json:"params"`
		}
		if err := peer.call(map[string]any{"op": "ask", "id": id}, &r); err != nil {
			return run, err
		}
		params, err := FromOptuna(p.Space, r.Params)
		if err != nil {
			return run, err
		}
		v := p.Eval(params)
		if err := peer.call(map[string]any{"op": "tell", "id": id, "number": r.Number, "values": v}, &ok); err != nil {
			return run, err
		}
		run.Values = append(run.Values, v)
	}
	if cacheFile != "" {
		if b, err := json.Marshal(run); err == nil {
			os.MkdirAll(c.cache, 0o755)
			os.WriteFile(cacheFile, b, 0o644)
		}
	}
	return run, nil
}

// moReport prints, per problem and budget, each sampler's median
// hypervolume over the seeds (and the interquartile range), the ratio of
// our best tuner's median to Optuna's best, and auto's to our best.
func moReport(w io.Writer, c *moConfig, res map[moKey]moRun) {
	samplers := moSamplers(c)
	for _, b := range c.budgets {
		fmt.Fprintf(w, "\nhypervolume after %d trials (median of %d seeds; higher is better)\n", b, c.seeds)
		fmt.Fprintf(w, "%-10s", "problem")
		for _, s := range samplers {
			fmt.Fprintf(w, " %14s", s)
		}
		fmt.Fprintf(w, " %12s %10s\n", "ours/optuna", "auto/ours")
		for _, p := range c.problems {
			fmt.Fprintf(w, "%-10s", p.Name)
			med := map[string]float64{}
			for _, s := range samplers {
				var hs []float64
				for seed := c.seed0; seed < c.seed0+c.seeds; seed++ {
					r := res[moKey{p.Name, s, seed}]
					if len(r.Values) >= b {
						hs = append(hs, pareto.Hypervolume(r.Values[:b], p.Ref))
					}
				}
				if len(hs) == 0 {
					fmt.Fprintf(w, " %14s", "-")
					continue
				}
				med[s] = Median(hs)
				fmt.Fprintf(w, " %14.5g", med[s])
			}
			bestOurs, bestOptuna := math.Inf(-1), math.Inf(-1)
			for s, m := range med {
				switch {
				case strings.HasPrefix(s, "optuna-"):
					bestOptuna = math.Max(bestOptuna, m)
				case s != "random" && s != "auto":
					bestOurs = math.Max(bestOurs, m)
				}
			}
			ratio, autoRatio := "-", "-"
			if !math.IsInf(bestOurs, 0) && !math.IsInf(bestOptuna, 0) && bestOptuna > 0 {
				ratio = fmt.Sprintf("%.3f", bestOurs/bestOptuna)
			}
			if a, ok := med["auto"]; ok && !math.IsInf(bestOurs, 0) && bestOurs > 0 {
				autoRatio = fmt.Sprintf("%.3f", a/bestOurs)
			}
			fmt.Fprintf(w, " %12s %10s\n", ratio, autoRatio)
		}
	}
	fmt.Fprintf(w, "\nreference points:")
	for _, p := range c.problems {
		fmt.Fprintf(w, " %s %v;", p.Name, p.Ref)
	}
	fmt.Fprintln(w, "\nours/optuna: our best tuner (auto and random aside) over Optuna's best of its samplers (target >= 1.0 at 100 and 200 trials); auto/ours: auto over our best (target >= 0.95)")
}

// moLatency times one suggestion of each of our tuners after a history
// of c.latency random trials on ZDT1 and on the HPO-shaped problem.
func moLatency(w io.Writer, c *moConfig) {
	fmt.Fprintf(w, "\nsuggest latency after %d trials (median of 9, ms of wall clock, and of the process's CPU time: on a loaded machine the wall clock includes waiting for a core)\n", c.latency)
	for _, p := range []*MOProblem{MOProblems()[0], MOProblems()[4]} {
		rng := rand.New(rand.NewPCG(1, 2))
		var hist []tuner.Observation
		for seq := 0; seq < c.latency; seq++ {
			ps := space.SampleSpace(p.Space, rng)
			v := p.Eval(ps)
			hist = append(hist, tuner.Observation{Seq: seq, Params: ps, State: tuner.Completed, Value: v[0], Values: v})
		}
		goals := []tuner.Goal{tuner.Minimize, tuner.Minimize}
		fmt.Fprintf(w, "%-10s", p.Name)
		for _, name := range c.goTuners {
			tn, err := builtinTuners.New(name, nil, p.Space)
			if err != nil {
				fmt.Fprintf(w, " %s: %v", name, err)
				continue
			}
			var ts, cpu []float64
			for i := 0; i < 9; i++ {
				c0, t0 := cpuTime(), time.Now()
				tn.Suggest(tuner.Request{Space: p.Space, Goal: goals[0], Goals: goals, Seed: 1, History: hist, Seqs: []int{c.latency + i}})
				ts = append(ts, float64(time.Since(t0).Microseconds())/1000)
				cpu = append(cpu, float64((cpuTime()-c0).Microseconds())/1000)
			}
			fmt.Fprintf(w, " %s %.2f (cpu %.2f)", name, Median(ts), Median(cpu))
		}
		fmt.Fprintln(w)
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
