// Command tuners is trialform's tuner benchmark: it runs our Go tuners and
// Optuna 3.1's samplers side by side on the same problems (the Go side
// evaluates every objective, Optuna runs in optuna_peer.py), then prints the
// regret of each, Mann-Whitney U tests, geometric-mean ratios against
// targets, and suggest latency on long histories. See docs/benchmarks.md, "Tuner
// benchmark".
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/tuner"
)

type config struct {
	trials, seeds, workers int
	seed0                  int   // the first seed
	budgets                []int // also report at these trial counts (from the same runs)
	cache                  string
	pars                   []int
	goTuners               []string
	optuna                 []string
	nni                    []string // NNI's own tuners (nni_peer.py), from TRIALFORM_NNI_SRC
	nniMissing             string   // why the NNI tuners asked for are not run
	problems               []*Problem
	latency                []int
	python, dir, out       string
	peerPerRun             bool
	skipped                []string // requested Go tuners that are not registered
}

func main() {
	if err := mainErr(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tuners:", err)
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func mainErr(args []string) error {
	if len(args) > 0 && args[0] == "multi" {
		return multiMain(args[1:])
	}
	fs := flag.NewFlagSet("tuners", flag.ContinueOnError)
	var c config
	fs.IntVar(&c.trials, "trials", 100, "trials per run")
	fs.IntVar(&c.seeds, "seeds", 10, "seeds (runs) per problem and sampler")
	fs.IntVar(&c.seed0, "seed0", 1, "first seed: the runs use seeds seed0 .. seed0+seeds-1 (another range is a held-out check)")
	budFlag := fs.String("budgets", "", "comma list of trial counts up to -trials to report too, read off the same runs (each run's best after k trials)")
	fs.StringVar(&c.cache, "cache", "", "folder that keeps the Optuna and NNI runs (by sampler, problem, seed, parallelism; deterministic) and reuses them, also for fewer trials; clear it when the peer changes")
	fs.IntVar(&c.workers, "workers", runtime.NumCPU(), "runs at a time (each with its own Python processes)")
	parFlag := fs.String("parallel", "1", "comma list of trials in flight per run, one report section each (e.g. 1,8)")
	goFlag := fs.String("go", "random,tpe,auto", `Go tuners to run, comma list ("all": every registered one; "tpe-uv": tpe with multivariate = false, Optuna 3.1's default TPE; "tpe-mv": tpe with multivariate = true, its default); unregistered names are skipped with a note`)
	optFlag := fs.String("optuna", "random,tpe", "Optuna samplers to run (random, tpe); empty for none")
	nniFlag := fs.String("nni", "", "NNI's own tuners to run (gp, metis) from the sources in $TRIALFORM_NNI_SRC; missing sources skip them with a note, or fail with TRIALFORM_REQUIRE_ALL=1")
	probFlag := fs.String("problems", "", "comma list of problems (default all)")
	latFlag := fs.String("latency", "100,1000,10000", "history sizes for the suggest-latency table; empty to skip")
	fs.StringVar(&c.python, "python", "/usr/bin/python3", "Python with Debian's python3-optuna and python3-sklearn")
	fs.StringVar(&c.dir, "dir", "bench/tuners", "folder of optuna_peer.py and digits_worker.py")
	fs.StringVar(&c.out, "out", "", "also write the report to this file")
	fs.BoolVar(&c.peerPerRun, "peer-per-run", false, "start a fresh Optuna process for every run (default: one per worker, studies multiplexed)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if c.pars, err = intList(*parFlag); err != nil {
		return fmt.Errorf("-parallel: %v", err)
	}
	if c.budgets, err = intList(*budFlag); err != nil {
		return fmt.Errorf("-budgets: %v", err)
	}
	for _, b := range c.budgets {
		if b > c.trials {
			return fmt.Errorf("-budgets: %d is more than -trials %d", b, c.trials)
		}
	}
	if c.latency, err = intList(*latFlag); err != nil {
		return fmt.Errorf("-latency: %v", err)
	}
	if c.trials < 1 || c.seeds < 1 || c.workers < 1 {
		return fmt.Errorf("-trials, -seeds and -workers must be positive")
	}
	want := splitList(*goFlag)
	if len(want) == 1 && want[0] == "all" {
		want = builtinTuners.Names()
	}
	for _, n := range want {
		if builtinTuners.Lookup(registeredName(n)) != nil {
			c.goTuners = append(c.goTuners, n)
		} else {
			c.skipped = append(c.skipped, n)
		}
	}
	for _, n := range splitList(*optFlag) {
		if n != "random" && n != "tpe" {
			return fmt.Errorf("-optuna: unknown sampler %q (random, tpe)", n)
		}
		c.optuna = append(c.optuna, n)
	}
	for _, n := range splitList(*nniFlag) {
		if n != "gp" && n != "metis" {
			return fmt.Errorf("-nni: unknown tuner %q (gp, metis)", n)
		}
		c.nni = append(c.nni, n)
	}
	all := Problems()
	if names := splitList(*probFlag); len(names) > 0 {
		for _, n := range names {
			var found *Problem
			for _, p := range all {
				if p.Name == n {
					found = p
				}
			}
			if found == nil {
				return fmt.Errorf("-problems: unknown problem %q", n)
			}
			c.problems = append(c.problems, found)
		}
	} else {
		c.problems = all
	}

	if err := preflight(&c); err != nil {
		return err
	}
	var rep bytes.Buffer
	w := io.MultiWriter(os.Stdout, &rep)
	header(w, &c, args)
	for _, par := range c.pars {
		t0 := time.Now()
		res := runAll(&c, par)
		took := time.Since(t0)
		for _, b := range c.budgets {
			if b != c.trials {
				cb := c
				cb.trials = b
				report(w, &cb, par, atBudget(res, b), took)
			}
		}
		report(w, &c, par, res, took)
	}
	if len(c.latency) > 0 {
		latencyReport(w, &c)
	}
	if c.out != "" {
		return os.WriteFile(c.out, rep.Bytes(), 0o644)
	}
	return nil
}

// preflight fails early, with what to do, when a Python side cannot run:
// otherwise every run of it would fail on its own.
func preflight(c *config) error {
	need := map[string]string{} // script -> module
	if len(c.optuna) > 0 {
		need[peerScript] = "optuna"
	}
	for _, pr := range c.problems {
		if pr.Worker != "" {
			need[pr.Worker] = "sklearn"
		}
	}
	if len(c.nni) > 0 {
		if err := nniPreflight(c); err != nil {
			if os.Getenv("TRIALFORM_REQUIRE_ALL") == "1" {
				return fmt.Errorf("-nni %s: %v (TRIALFORM_REQUIRE_ALL=1)", strings.Join(c.nni, ","), err)
			}
			c.nniMissing = err.Error()
			fmt.Fprintf(os.Stderr, "tuners: NNI's tuners skipped: %v\n", err)
			c.nni = nil
		}
	}
	for script, mod := range need {
		if _, err := os.Stat(filepath.Join(c.dir, script)); err != nil {
			return fmt.Errorf("%v (run from the repository root, or pass -dir)", err)
		}
		if out, err := exec.Command(c.python, "-c", "import "+mod).CombinedOutput(); err != nil {
			return fmt.Errorf("%s cannot import %s (%v: %s); run scripts/deps.sh, or leave it out with -optuna '' or -problems",
				c.python, mod, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func optunaVersion(c *config) string {
	out, err := exec.Command(c.python, "-c", "import optuna; print(optuna.__version__)").Output()
	if err != nil {
		return "not installed"
	}
	return strings.TrimSpace(string(out))
}

func header(w io.Writer, c *config, args []string) {
	fmt.Fprintf(w, "# Tuner benchmark\n\n")
	fmt.Fprintf(w, "- date: %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "- machine: %d cores, %s; %s/%s, %s\n", runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(w, "- peer: Optuna %s via %s\n", optunaVersion(c), c.python)
	fmt.Fprintf(w, "- command: `go run ./bench/tuners %s`\n", shellJoin(args))
	fmt.Fprintf(w, "- %d trials x %d seeds (%d..%d) per problem and sampler, %d runs at a time; Go tuners: %s",
		c.trials, c.seeds, c.seed0, c.seed0+c.seeds-1, c.workers, strings.Join(c.goTuners, ", "))
	if len(c.skipped) > 0 {
		fmt.Fprintf(w, " (not registered, skipped: %s)", strings.Join(c.skipped, ", "))
	}
	fmt.Fprintf(w, "; Optuna samplers: %s", strings.Join(c.optuna, ", "))
	if len(c.nni) > 0 {
		fmt.Fprintf(w, "; NNI tuners (NNI's sources from %s, class args at their defaults): %s", os.Getenv("TRIALFORM_NNI_SRC"), strings.Join(c.nni, ", "))
	}
	if c.nniMissing != "" {
		fmt.Fprintf(w, "; NNI tuners skipped: %s", c.nniMissing)
	}
	fmt.Fprintf(w, "\n\n")
	row(w, "problem", "params", "optimum", "note")
	row(w, "---", "---", "---", "---")
	for _, pr := range c.problems {
		row(w, pr.Name, fmt.Sprint(len(pr.Space.Params)), fmt.Sprintf("%.10g", pr.Optimum), pr.Note)
	}
	fmt.Fprintln(w)
}

// shellJoin quotes the arguments that a shell would split or drop.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\|&;<>()*?[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

func (c *config) samplers() []Sampler {
	var ss []Sampler
	for _, n := range c.goTuners {
		ss = append(ss, Sampler{"go", n})
	}
	for _, n := range c.optuna {
		ss = append(ss, Sampler{"optuna", n})
	}
	for _, n := range c.nni {
		ss = append(ss, Sampler{"nni", n})
	}
	return ss
}

// results[problem][sampler] holds one Outcome per seed.
type results map[string]map[Sampler][]Outcome

// runAll runs every (problem, sampler, seed) on c.workers goroutines, each
// owning its Python processes. Costly runs are started first.
func runAll(c *config, par int) results {
	type job struct {
		pr   *Problem
		s    Sampler
		seed int
		cost int
	}
	var jobs []job
	res := results{}
	for _, pr := range c.problems {
		res[pr.Name] = map[Sampler][]Outcome{}
		for _, s := range c.samplers() {
			res[pr.Name][s] = make([]Outcome, c.seeds)
			for seed := c.seed0; seed < c.seed0+c.seeds; seed++ {
				cost := 1
				if s.Side == "optuna" {
					cost += 2
				}
				if s.Side == "nni" {
					cost += 8
				}
				if pr.Worker != "" {
					cost += 4
				}
				jobs = append(jobs, job{pr, s, seed, cost})
			}
		}
	}
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].cost > jobs[j].cost })
	ch := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i := 0; i < c.workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := &runEnv{procs: procs{python: c.python, dir: c.dir}, peerPerRun: c.peerPerRun}
			defer env.procs.closeAll()
			for j := range ch {
				o, hit := c.cached(j.s, j.pr, j.seed, par)
				if !hit {
					o = env.Run(j.s, j.pr, int64(j.seed), c.trials, par)
					c.store(j.s, j.pr, j.seed, par, o)
				}
				mu.Lock()
				res[j.pr.Name][j.s][j.seed-c.seed0] = o
				done++
				if o.Err != nil {
					fmt.Fprintf(os.Stderr, "tuners: %s on %s, seed %d: %v\n", j.s, j.pr.Name, j.seed, o.Err)
				}
				if done%50 == 0 || done == len(jobs) {
					fmt.Fprintf(os.Stderr, "\rparallel %d: %d/%d runs", par, done, len(jobs))
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	fmt.Fprintln(os.Stderr)
	return res
}

// nniPreflight checks that nni_peer.py can load NNI's tuners from
// $TRIALFORM_NNI_SRC.
func nniPreflight(c *config) error {
	src := os.Getenv("TRIALFORM_NNI_SRC")
	if src == "" {
		return fmt.Errorf("TRIALFORM_NNI_SRC is not set; set it to a checkout of github.com/microsoft/nni (the folder that holds nni/)")
	}
	script := filepath.Join(c.dir, nniPeerScript)
	cmd := exec.Command(c.python, "-c", "import runpy; runpy.run_path("+strconv.Quote(script)+", run_name='check')['load_nni']("+strconv.Quote(src)+")")
	if out, err := cmd.CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("%s cannot load NNI's tuners from %s: %s", c.python, src, lines[len(lines)-1])
	}
	return nil
}

// atBudget is res as it stood after b trials of every run.
func atBudget(res results, b int) results {
	out := results{}
	for pn, bySampler := range res {
		out[pn] = map[Sampler][]Outcome{}
		for s, os := range bySampler {
			cut := make([]Outcome, len(os))
			for i, o := range os {
				cut[i] = o
				if o.Err == nil && len(o.Curve) >= b {
					cut[i].Regret = o.Curve[b-1]
					cut[i].Curve = o.Curve[:b]
					cut[i].Suggest = o.Suggest * time.Duration(b) / time.Duration(len(o.Curve))
				} else if o.Err == nil {
					cut[i].Err = fmt.Errorf("run has %d trials, not %d", len(o.Curve), b)
				}
			}
			out[pn][s] = cut
		}
	}
	return out
}

// cachedRun is a peer run as -cache keeps it.
type cachedRun struct {
	Curve     []float64 `json:"curve"`
	SuggestNs int64     `json:"suggest_ns"`
}

func (c *config) cacheFile(s Sampler, pr *Problem, seed, par int) string {
	if c.cache == "" || s.Side == "go" {
		return ""
	}
	return filepath.Join(c.cache, fmt.Sprintf("%s-%s-%s-seed%d-par%d.json", s.Side, s.Name, pr.Name, seed, par))
}

// cached returns a kept run of at least c.trials trials, cut to c.trials.
func (c *config) cached(s Sampler, pr *Problem, seed, par int) (Outcome, bool) {
	f := c.cacheFile(s, pr, seed, par)
	if f == "" {
		return Outcome{}, false
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return Outcome{}, false
	}
	var r cachedRun
	if json.Unmarshal(b, &r) != nil || len(r.Curve) < c.trials {
		return Outcome{}, false
	}
	o := Outcome{Curve: r.Curve[:c.trials], Regret: r.Curve[c.trials-1],
		Suggest: time.Duration(r.SuggestNs) * time.Duration(c.trials) / time.Duration(len(r.Curve))}
	return o, true
}

// store keeps a successful peer run, unless a longer one is kept.
func (c *config) store(s Sampler, pr *Problem, seed, par int, o Outcome) {
	f := c.cacheFile(s, pr, seed, par)
	if f == "" || o.Err != nil {
		return
	}
	if b, err := os.ReadFile(f); err == nil {
		var r cachedRun
		if json.Unmarshal(b, &r) == nil && len(r.Curve) >= len(o.Curve) {
			return
		}
	}
	b, _ := json.Marshal(cachedRun{Curve: o.Curve, SuggestNs: int64(o.Suggest)})
	if err := os.MkdirAll(c.cache, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "tuners: -cache:", err)
		return
	}
	if err := fsx.WriteFileAtomic(f, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "tuners: -cache:", err)
	}
}

// builtinTuners is trialform's list of tuners and assessors.
var builtinTuners = tuner.Builtin()
