package command

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/term"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/internal/workcopy"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/local"
	"github.com/trialform/trialform/providers/platforms"
	"github.com/trialform/trialform/providers/registry"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner"
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
	if g.stateDirAt != "" {
		return g.stateDirAt, nil
	}
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
	if g.events != nil {
		g.events.Diagnostic("error", fmt.Sprintf(format, args...), "")
		return 1
	}
	views.Error(g.IO.Err, fmt.Sprintf(format, args...))
	return 1
}

// warnf shows a warning (on stderr, or as a diagnostic event).
func (g *Globals) warnf(format string, args ...any) {
	if g.events != nil {
		g.events.Diagnostic("warning", fmt.Sprintf(format, args...), "")
		return
	}
	views.Warning(g.IO.Err, fmt.Sprintf(format, args...))
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
	return g.loadConfigSaved(v, nil, noColor)
}

// loadConfigSaved is loadConfig with the variables a saved plan kept.
func (g *Globals) loadConfigSaved(v varFlags, saved map[string]cty.Value, noColor bool) *schema.Config {
	wd, err := g.workDir()
	if err != nil {
		g.errorf("%v", err)
		return nil
	}
	cfg, diags := schema.Load(wd, schema.LoadOptions{Platforms: platformRegistry, Tuners: tunerRegistry, Backends: schemaBackends(), Vars: v.vars, VarFiles: v.varFiles, Environ: g.IO.Environ, SavedVars: saved})
	if len(diags) > 0 {
		g.printDiags(cfg, diags, noColor)
	}
	if diags.HasErrors() {
		return nil
	}
	return cfg
}

func (g *Globals) printDiags(cfg *schema.Config, diags hcl.Diagnostics, noColor bool) {
	if g.events != nil {
		for _, d := range diags {
			sev, detail := "error", d.Detail
			if d.Severity == hcl.DiagWarning {
				sev = "warning"
			}
			if d.Subject != nil {
				detail = fmt.Sprintf("%s:%d: %s", d.Subject.Filename, d.Subject.Start.Line, detail)
			}
			g.events.Diagnostic(sev, d.Summary, detail)
		}
		return
	}
	files := parsedFiles(cfg)
	width := uint(100)
	views.Diagnostics(g.IO.Err, files, diags, width, g.colors(noColor).On)
}

// parsedFiles re-parses the sources the config loaded for diagnostic
// snippets.
func parsedFiles(cfg *schema.Config) map[string]*hcl.File {
	files := map[string]*hcl.File{}
	if cfg == nil {
		return files
	}
	for name, src := range cfg.SnippetSources() {
		files[name] = &hcl.File{Bytes: src}
	}
	return files
}

// localTrialsDir is where, under the state directory, the local platform
// keeps its trial directories (localTrialsDir/EXPERIMENT/TRIAL).
const localTrialsDir = local.TrialsDir

// platformRegistry is every platform kind, built in one place
// (providers/platforms).
var platformRegistry = platforms.Registry()

// tunerRegistry is every tuner and assessor, built in one place
// (tuner.Builtin) and passed to schema as the platforms are.
var tunerRegistry = tuner.Builtin()

// providerSet builds each platform's provider on first use, through the
// platform registry.
//
// The set is itself a Notifier: notify's channel gets a value whenever a
// provider it built signals a change. One forwarding goroutine per such
// provider runs under the set's context, which Close cancels; Close waits
// for them, so a set that is closed (watch rebuilds it on every platform
// edit) leaves no goroutine behind and nothing that keeps its providers.
type providerSet struct {
	cfg      *schema.Config
	stateDir string
	mu       sync.Mutex
	built    map[string]providers.Provider

	me     *state.WorkingCopy // this working copy, once identified (WorkingCopy)
	meErr  error
	meDone bool

	follow bool // the providers follow their trials (followTrials)

	ctx     context.Context // the forwarders'; Close cancels it
	cancel  context.CancelFunc
	fwd     sync.WaitGroup // the running forwarders
	changed chan struct{}  // what notify returns; never closed
}

func newProviderSet(cfg *schema.Config, stateDir string) *providerSet {
	ctx, cancel := context.WithCancel(context.Background())
	return &providerSet{
		cfg: cfg, stateDir: stateDir, built: map[string]providers.Provider{},
		ctx: ctx, cancel: cancel, changed: make(chan struct{}, 1),
	}
}

// add records a built provider and forwards its Notifier, if it has
// one, to the set's channel; ps.mu is held.
func (ps *providerSet) add(key string, p providers.Provider) {
	ps.built[key] = p
	if f, ok := p.(providers.Follower); ok && ps.follow {
		f.Follow()
	}
	n, ok := p.(apply.Notifier)
	if !ok || ps.ctx.Err() != nil {
		return
	}
	c := n.Changed()
	ps.fwd.Add(1)
	go func() {
		defer ps.fwd.Done()
		for {
			select {
			case <-ps.ctx.Done():
				return
			case _, ok := <-c:
				if !ok { // the provider closed it
					return
				}
				select {
				case ps.changed <- struct{}{}:
				default:
				}
			}
		}
	}()
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
	kind, name, _ := strings.Cut(key, ".")
	if pl == nil && key != "local.default" {
		return nil, fmt.Errorf("platform %s is not in the configuration any more; add its block back to tear its trials down", key)
	}
	env := registry.Env{Name: name, StateDir: ps.stateDir}
	var cfg any
	if ps.cfg != nil {
		env.Dir = ps.cfg.Dir
	}
	if pl != nil {
		cfg = pl.Config
	}
	p, err := platformRegistry.Build(kind, cfg, env)
	if err != nil {
		return nil, err
	}
	ps.add(key, p)
	return p, nil
}

// WorkingCopy identifies the working copy whose .trialform holds the
// set's state directory (plan.WorkingCopier): trials of its local
// platform record it as their owner. nil when the set has no state
// directory or the id cannot be kept there (a read-only directory): then
// no trial is recorded as anyone's, as before owners existed.
func (ps *providerSet) WorkingCopy() *state.WorkingCopy {
	w, _ := ps.identify()
	return w
}

// identify is WorkingCopy with the reason it knows none; commands that
// start trials check it first (a damaged id is an error, not a new
// identity that would leave this working copy's trials to no one).
func (ps *providerSet) identify() (*state.WorkingCopy, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.meDone {
		ps.meDone = true
		if ps.stateDir != "" {
			ps.me, ps.meErr = workcopy.Identify(ps.stateDir)
		}
	}
	return ps.me, ps.meErr
}

// followTrials makes the set's providers, built before or after the
// call, follow their trials (providers.Follower): for the commands that
// refresh again and again (apply -wait, watch, the controller).
func (ps *providerSet) followTrials() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.follow = true
	for _, p := range ps.built {
		if f, ok := p.(providers.Follower); ok {
			f.Follow()
		}
	}
}

// notify returns a channel that receives a value when a provider of the
// set, built before or after the call, signals a change (apply's
// Notifier). It is never closed; after Close it stays silent.
func (ps *providerSet) notify() <-chan struct{} { return ps.changed }

// Close stops the forwarders, waits for them and closes the providers.
func (ps *providerSet) Close() {
	ps.mu.Lock() // add starts no forwarder after this
	ps.cancel()
	ps.mu.Unlock()
	ps.fwd.Wait()
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
		fail := func(summary string, rng hcl.Range, err error) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: summary, Subject: &rng,
				Detail: fmt.Sprintf("experiment %q runs on platform %s: %v", name, e.Platform.Key(), err),
			})
		}
		if err != nil {
			fail("Platform not available", e.Platform.DeclRange, err)
			continue
		}
		if gc, ok := p.(providers.GPUChecker); ok && e.Trial.GPUs > 0 {
			if err := gc.CheckGPUs(e.Trial.GPUs); err != nil {
				fail("GPUs not available", e.Trial.Range, fmt.Errorf("%w.", err))
			}
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
	m     state.MetricSeries
	mu    sync.Mutex
	pts   map[string][]state.MetricPoint
	moved map[string]string // new experiment name -> the name its series are stored under
}

// MoveMetrics records a rename the plan made in memory, so the series
// are read under the old name.
func (s *memStore) MoveMetrics(from, to string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.moved == nil {
		s.moved = map[string]string{}
	}
	if old, ok := s.moved[from]; ok {
		from = old
	}
	s.moved[to] = from
	return nil
}

func newMemStore(m state.MetricSeries) *memStore { return &memStore{m: m} }

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
	s.mu.Lock()
	stored := exp
	if old, ok := s.moved[exp]; ok {
		stored = old
	}
	s.mu.Unlock()
	pts, err := s.m.ReadMetrics(stored, trial)
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

// openLockedState opens the working copy's backend (openBackend), takes
// the lock for op and loads the state (a new one, not written until
// something changes, when there is none yet), printing why when it
// cannot; the caller unlocks lk. cfg is the loaded configuration (nil for
// commands that do not load it). scope names the experiments op changes,
// given the state (nil: the whole state); a backend that locks per
// experiment locks just those (see lockExperiments). sd is the state
// directory (the local platform's trials live there whichever backend
// holds the state).
func (g *Globals) openLockedState(ctx context.Context, cfg *schema.Config, op string, lf lockFlags, scope func(*state.State) []string) (sd string, m state.Backend, lk *state.Lock, st *state.State, ok bool) {
	sd, m, ok = g.openBackend(cfg)
	if !ok {
		return "", nil, nil, nil, false
	}
	lk, st, ok = g.lockExperiments(ctx, m, op, lf, scope)
	return sd, m, lk, st, ok
}

// configScope is the lock scope of a command that plans cfg: the
// -target experiments, or every experiment of the configuration and the
// state.
func configScope(cfg *schema.Config, targets []string) func(*state.State) []string {
	return func(st *state.State) []string { return lockScope(cfg, st, targets) }
}

// lockedSession is openLockedState with an apply session over the state
// and cfg's providers; done closes the providers, then unlocks.
func (g *Globals) lockedSession(ctx context.Context, cfg *schema.Config, op string, lf lockFlags, scope func(*state.State) []string) (s *apply.Session, st *state.State, done func(), ok bool) {
	sd, m, lk, st, ok := g.openLockedState(ctx, cfg, op, lf, scope)
	if !ok {
		return nil, nil, nil, false
	}
	ps := newProviderSet(cfg, sd)
	return apply.NewSession(cfg, st, m, ps), st, func() {
		ps.Close()
		lk.Unlock()
	}, true
}

// confirm asks the user to type "yes"; Ctrl-C (ctx) ends the question.
func (g *Globals) confirm(ctx context.Context, question string) (bool, error) {
	views.Question(g.IO.Out, question)
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(g.IO.In).ReadString('\n')
		ch <- answer{line, err}
	}()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case a := <-ch:
		views.AnswerEnd(g.IO.Out)
		if a.err != nil && a.line == "" {
			if errors.Is(a.err, io.EOF) {
				return false, nil
			}
			return false, a.err
		}
		return strings.TrimSpace(a.line) == "yes", nil
	}
}

// loadState loads the state or prints why it cannot.
func (g *Globals) loadState(m state.SnapshotReader) *state.State {
	st, err := m.Load()
	if err != nil {
		g.errorf("%v", err)
		return nil
	}
	for _, w := range m.Warnings() {
		g.warnf("%s", w)
	}
	return st
}

// checkLost refuses to plan over a lost state: no state file, but a
// backup, metric series or local trial directories are left (see
// state.LostState).
func (g *Globals) checkLost(ctx context.Context, m state.Backend, sd string, cfg *schema.Config, ps *providerSet) bool {
	err := lostError(ctx, m, sd, cfg, ps)
	if err != nil {
		g.errorf("%v", err)
		return false
	}
	return true
}

// lostError says what a lost state left, in the backend and in the state
// directory sd (the local platform's trial directories), and, when cfg and
// ps are given, which trials of the experiments it left still run on
// their platforms.
func lostError(ctx context.Context, m state.Backend, sd string, cfg *schema.Config, ps *providerSet) error {
	ls, err := m.Lost()
	if err != nil {
		return err
	}
	if ok, err := m.Exists(); err != nil || ok {
		return err
	}
	if ls == nil {
		ls = &state.LostState{Dir: sd}
	}
	// The local platform's trial directories (.trialform/trials/EXP).
	if ents, err := os.ReadDir(filepath.Join(sd, localTrialsDir)); err == nil {
		var names []string
		for _, e := range ents {
			if sub, err := os.ReadDir(filepath.Join(sd, localTrialsDir, e.Name())); err == nil && len(sub) > 0 {
				names = append(names, e.Name())
			}
		}
		ls.AddTraces("trial directories", names)
	}
	if len(ls.Backups) == 0 && len(ls.Traces) == 0 {
		return nil
	}
	ls.Running = runningTrials(ctx, ls.Experiments, cfg, ps)
	return errors.New(ls.String())
}

// runningTrials lists, as EXP/TRIAL, the trials of the named experiments
// of cfg that their platforms hold as running or pending; a platform that
// cannot list, or fails to, is left out (this only informs an error).
func runningTrials(ctx context.Context, names []string, cfg *schema.Config, ps *providerSet) []string {
	if cfg == nil || ps == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []string
	for _, n := range names {
		e := cfg.Experiments[n]
		if e == nil || e.Platform == nil {
			continue
		}
		p, err := ps.Provider(e.Platform.Key())
		if err != nil {
			continue
		}
		l, ok := p.(providers.Lister)
		if !ok {
			continue
		}
		obs, err := l.List(ctx, n)
		if err != nil {
			continue
		}
		var ids []string
		for _, o := range obs {
			if o.Exists && (o.Phase == providers.PhaseRunning || o.Phase == providers.PhasePending) {
				ids = append(ids, n+"/"+o.TrialID)
			}
		}
		sort.Strings(ids)
		out = append(out, ids...)
	}
	return out
}

var _ = plan.FormatVersion
