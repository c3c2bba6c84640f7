package command

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"golang.org/x/term"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/local"
	"github.com/trialform/trialform/providers/remote"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// workDir is the configuration directory (cwd or -chdir).
func (g *Globals) workDir() (string, error) {
	dir := g.Chdir
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("-chdir=%s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("-chdir=%s: not a directory", dir)
	}
	return abs, nil
}

func (g *Globals) stateDir() (string, error) {
	wd, err := g.workDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(wd, ".trialform"), nil
}

func (g *Globals) colors(noColor bool) views.Colors {
	if noColor || !g.IO.IsTTY {
		return views.Colors{}
	}
	for _, e := range g.IO.Environ {
		if strings.HasPrefix(e, "NO_COLOR=") && e != "NO_COLOR=" {
			return views.Colors{}
		}
	}
	return views.Colors{On: true}
}

func (g *Globals) errorf(format string, args ...any) int {
	fmt.Fprintf(g.IO.Err, "Error: "+format+"\n", args...)
	return 1
}

// varFlags are the flags every command that reads the configuration has.
type varFlags struct {
	vars     multiFlag
	varFiles multiFlag
}

func (v *varFlags) register(fs *flag.FlagSet) {
	fs.Var(&v.vars, "var", "set a variable: -var 'name=value' (repeatable)")
	fs.Var(&v.varFiles, "var-file", "read variables from an HCL file (repeatable)")
}

// loadConfig loads and validates the configuration; on errors it prints
// the diagnostics (text or JSON) and returns nil.
func (g *Globals) loadConfig(v varFlags, noColor bool) *schema.Config {
	wd, err := g.workDir()
	if err != nil {
		g.errorf("%v", err)
		return nil
	}
	cfg, diags := schema.Load(wd, schema.LoadOptions{Vars: v.vars, VarFiles: v.varFiles, Environ: g.IO.Environ})
	if len(diags) > 0 {
		g.printDiags(cfg, diags, noColor)
	}
	if diags.HasErrors() {
		return nil
	}
	return cfg
}

func (g *Globals) printDiags(cfg *schema.Config, diags hcl.Diagnostics, noColor bool) {
	files := parsedFiles(cfg)
	width := uint(100)
	_ = schema.WriteDiagnostics(g.IO.Err, files, diags, width, g.colors(noColor).On)
}

// parsedFiles re-parses the sources the config loaded for diagnostic
// snippets.
func parsedFiles(cfg *schema.Config) map[string]*hcl.File {
	files := map[string]*hcl.File{}
	if cfg == nil {
		return files
	}
	for name, src := range cfg.Files {
		files[name] = &hcl.File{Bytes: src}
	}
	return files
}

// providerSet builds each platform's provider on first use. Kinds other
// than local, remote, kubernetes and the CRD kinds (kubeflow, adaptdl,
// frameworkcontroller) are declared in the language but not implemented
// yet.
type providerSet struct {
	cfg      *schema.Config
	stateDir string
	mu       sync.Mutex
	built    map[string]providers.Provider
}

func newProviderSet(cfg *schema.Config, stateDir string) *providerSet {
	return &providerSet{cfg: cfg, stateDir: stateDir, built: map[string]providers.Provider{}}
}

func (ps *providerSet) Provider(key string) (providers.Provider, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.built[key]; ok {
		return p, nil
	}
	var pl *schema.Platform
	if ps.cfg != nil {
		pl = ps.cfg.Platforms[key]
	}
	kind, _, _ := strings.Cut(key, ".")
	if pl == nil && key != "local.default" {
		return nil, fmt.Errorf("platform %s is not in the configuration any more; add its block back to tear its trials down", key)
	}
	if kind == "remote" && pl != nil && pl.Remote != nil {
		p, err := newRemote(pl, filepath.Join(ps.stateDir, "remote", pl.Name))
		if err != nil {
			return nil, err
		}
		ps.built[key] = p
		return p, nil
	}
	if kubernetes.Serves(kind) {
		p, err := kubernetes.FromAttrs(kind, pl.Attrs, ps.cfg.Dir)
		if err != nil {
			return nil, err
		}
		ps.built[key] = p
		return p, nil
	}
	if kind != "local" {
		return nil, fmt.Errorf("platform kind %q is not implemented yet (see the status table in README.md); use platform \"local\", \"remote\", \"kubernetes\", \"kubeflow\", \"adaptdl\" or \"frameworkcontroller\"", kind)
	}
	lc := local.Config{
		Root:   filepath.Join(ps.stateDir, "trials"),
		LibDir: filepath.Join(ps.stateDir, "lib"),
		// One tree for every local trial: .trialform/tensorboard/EXP/TRIAL.
		TensorBoardRoot: filepath.Join(ps.stateDir, "tensorboard"),
	}
	if pl != nil {
		lc.GPUIndices = pl.GPUIndices
		lc.MaxTrialsPerGPU = pl.MaxTrialsPerGPU
	}
	p, err := local.New(lc)
	if err != nil {
		return nil, err
	}
	ps.built[key] = p
	return p, nil
}

// notify merges the Notifier channels of the built providers.
func (ps *providerSet) notify() <-chan struct{} {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make(chan struct{}, 1)
	for _, p := range ps.built {
		if n, ok := p.(apply.Notifier); ok {
			go func(c <-chan struct{}) {
				for range c {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}(n.Changed())
		}
	}
	return out
}

func (ps *providerSet) Close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.built {
		p.Close()
	}
}

// checkPlatforms makes sure every experiment's platform can be built and
// validated before anything is planned.
func (g *Globals) checkPlatforms(ctx context.Context, cfg *schema.Config, ps *providerSet) bool {
	var diags hcl.Diagnostics
	for _, name := range sortedKeys(cfg.Experiments) {
		e := cfg.Experiments[name]
		p, err := ps.Provider(e.Platform.Key())
		if err == nil {
			err = p.Validate(ctx)
		}
		if err != nil {
			rng := e.Platform.DeclRange
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Platform not available",
				Detail:   fmt.Sprintf("experiment %q runs on platform %s: %v", name, e.Platform.Key(), err),
				Subject:  &rng,
			})
		}
	}
	if diags.HasErrors() {
		g.printDiags(cfg, diags, false)
		return false
	}
	return true
}

// memStore is a StateStore that keeps changes in memory: plan refreshes
// through it so planning never writes the state. Metric series read back
// from the state directory, plus what this refresh collected.
type memStore struct {
	m   *state.Manager
	mu  sync.Mutex
	pts map[string][]state.MetricPoint
}

func newMemStore(m *state.Manager) *memStore { return &memStore{m: m} }

func (*memStore) Save(*state.State) error    { return nil }
func (*memStore) RemoveMetrics(string) error { return nil }

func (s *memStore) AppendMetrics(exp, trial string, pts []state.MetricPoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pts == nil {
		s.pts = map[string][]state.MetricPoint{}
	}
	k := exp + "\x00" + trial
	s.pts[k] = append(s.pts[k], pts...)
	return nil
}

func (s *memStore) ReadMetrics(exp, trial string) ([]state.MetricPoint, error) {
	pts, err := s.m.ReadMetrics(exp, trial)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(pts, s.pts[exp+"\x00"+trial]...), nil
}

// lockFlags are -lock-timeout and -lock.
type lockFlags struct {
	timeout time.Duration
}

func (l *lockFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&l.timeout, "lock-timeout", 0, "wait this long for the state lock (e.g. 30s); 0 fails at once")
}

func (g *Globals) lock(ctx context.Context, m *state.Manager, op string, lf lockFlags) (*state.Lock, bool) {
	l, err := m.Lock(ctx, op, Version, lf.timeout)
	if err != nil {
		g.errorf("acquire the state lock: %v", err)
		return nil, false
	}
	return l, true
}

// lockedState takes the state lock for op and loads the state, writing an
// empty one when there is none yet; the caller unlocks.
func (g *Globals) lockedState(ctx context.Context, m *state.Manager, op string, lf lockFlags) (*state.Lock, *state.State, bool) {
	lk, ok := g.lock(ctx, m, op, lf)
	if !ok {
		return nil, nil, false
	}
	st := g.initState(m)
	if st == nil {
		lk.Unlock()
		return nil, nil, false
	}
	return lk, st, true
}

// confirm asks the user to type "yes".
func (g *Globals) confirm(question string) bool {
	fmt.Fprintf(g.IO.Out, "\n%s\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", question)
	r := bufio.NewReader(g.IO.In)
	line, _ := r.ReadString('\n')
	fmt.Fprintln(g.IO.Out)
	return strings.TrimSpace(line) == "yes"
}

// loadState loads the state or prints why it cannot.
func (g *Globals) loadState(m *state.Manager) *state.State {
	st, err := m.Load()
	if err != nil {
		g.errorf("%v", err)
		return nil
	}
	return st
}

// initState loads the state and, when there is none yet, writes an empty
// one: the lineage is made before the first plan, so a saved plan and the
// apply that follows agree on it.
func (g *Globals) initState(m *state.Manager) *state.State {
	st := g.loadState(m)
	if st == nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(m.Dir(), "state.json")); os.IsNotExist(err) {
		if err := m.Save(st); err != nil {
			g.errorf("create the state: %v", err)
			return nil
		}
	}
	return st
}

var _ = plan.FormatVersion

// newRemote builds the provider of a platform "remote" block.
func newRemote(pl *schema.Platform, stateDir string) (*remote.Remote, error) {
	rc := remote.Config{
		Name: pl.Name, KnownHosts: pl.Remote.KnownHosts, WorkDir: pl.Remote.WorkDir,
		LostGrace: pl.Remote.LostGrace, StateDir: stateDir,
	}
	for _, m := range pl.Remote.Machines {
		rc.Machines = append(rc.Machines, remote.Machine{
			Host: m.Host, Port: m.Port, User: m.User, KeyFile: m.SSHKeyFile, Password: m.Password,
			GPUIndices: m.GPUIndices, MaxTrialsPerGPU: m.MaxTrialsPerGPU, MaxTrials: m.MaxTrials,
			PythonPath: m.PythonPath, WorkDir: m.WorkDir,
		})
	}
	return remote.New(rc)
}
