package command

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/apply/watch"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"

	"github.com/trialform/trialform/internal/fsread"
)

type watchOptions struct {
	vars         varFlags
	lock         lockFlags
	autoApprove  bool
	allowDestroy bool
	interval     time.Duration
	poll         bool
	pollInterval time.Duration
	targets      targetFlag
	noColor      bool
	parallelism  int
}

func runWatch(ctx context.Context, g *Globals, args []string) int {
	defer loopGC()()
	var o watchOptions
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	o.vars.register(fs)
	o.lock.register(fs)
	fs.BoolVar(&o.autoApprove, "auto-approve", false, "apply every plan (without it, watch only plans)")
	fs.BoolVar(&o.allowDestroy, "allow-destroy", false, "with -auto-approve: also apply plans that remove experiments or tear down trials because definitions changed")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "time between reconcile passes when no file changed")
	fs.BoolVar(&o.poll, "poll", false, "poll the files instead of using filesystem events (NFS and other mounts without inotify)")
	fs.DurationVar(&o.pollInterval, "poll-interval", time.Second, "with -poll: time between polls")
	fs.Var(&o.targets, "target", "limit to experiment.NAME (repeatable)")
	fs.BoolVar(&o.noColor, "no-color", false, "no colours")
	fs.IntVar(&o.parallelism, "parallelism", 16, "concurrent platform operations")
	if _, code, ok := g.parse(fs, args, argSpec{hint: "watch takes no arguments: to watch another directory, run trialform -chdir=DIR watch."}); !ok {
		return code
	}
	if o.interval <= 0 {
		return g.errorf("-interval must be positive (got %s)", o.interval)
	}
	wd, err := g.workDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	sd, m, ok := g.openBackendWith(nil, &o.vars)
	if !ok {
		return 1
	}
	w := &watcher{
		g: g, o: o, dir: wd, m: m, stateDir: sd,
		view: views.NewWatch(g.IO.Out, g.IO.IsTTY, g.colors(o.noColor), apply.IsSkipped),
	}
	defer func() {
		if w.ps != nil {
			w.ps.Close()
		}
	}()

	poll := time.Duration(0)
	if o.poll {
		poll = max(o.pollInterval, 10*time.Millisecond)
	}
	fw, err := watch.New(watch.Options{Dir: wd, Extra: w.absVarFiles(), Poll: poll})
	if err != nil {
		return g.errorf("watch %s: %v (try -poll)", wd, err)
	}
	defer fw.Close()
	w.extraSetter = fw.SetExtra

	w.view.Started(wd, o.autoApprove, o.allowDestroy)
	w.reload(ctx, nil)

	// A backend that tells of changes (pg's NOTIFY) wakes a pass at once
	// when another working copy writes the state; the interval stays the
	// fallback.
	var stateChanged <-chan struct{}
	if cn, ok := m.(state.ChangeNotifier); ok {
		if c, err := cn.Changes(ctx); err != nil {
			w.view.NoChangeNotices(m.Name(), err, o.interval)
		} else {
			stateChanged = c
		}
	}

	tick := time.NewTimer(o.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			w.view.Stopped()
			return 0
		case b, ok := <-fw.C:
			if !ok {
				return g.errorf("file watcher stopped")
			}
			if b.Err != nil {
				w.view.FilesError(b.Err)
				continue
			}
			w.reload(ctx, &b)
		case <-w.providerChanged():
			w.reconcile(ctx, false)
		case _, ok := <-stateChanged:
			if !ok {
				stateChanged = nil
				continue
			}
			w.reconcile(ctx, false)
		case <-tick.C:
			w.reconcile(ctx, false)
		}
		if ctx.Err() == nil {
			tick.Reset(o.interval)
		}
	}
}

// watcher is the state of one watch session.
type watcher struct {
	g        *Globals
	o        watchOptions
	dir      string
	stateDir string
	m        state.Backend
	view     *views.Watch

	cfg      *schema.Config // last configuration that loaded
	units    map[string]schema.Unit
	extra    map[string][]byte // nni_file contents of cfg
	ps       *providerSet      // closed and replaced when the platforms change
	psKey    string
	lastPlan string // rendering of the last printed plan (plan-only mode)
	held     string // what the last held plan would destroy
	// heldGen names the experiments whose new generation a held plan
	// holds: once their old trials have ended, the plan tears nothing
	// down, and it stays held all the same (until the definitions are
	// restored or someone applies it).
	heldGen map[string]bool
	locked  string // holder of the lock the last pass could not get
	done    bool   // "all done" was announced
	changed time.Time
	what    string     // files of the last change
	last    *plan.Plan // the last plan computed

	extraSetter func(paths []string) // the file watcher's SetExtra
}

func (w *watcher) absVarFiles() []string {
	var out []string
	for _, f := range w.o.vars.varFiles {
		if abs, err := filepath.Abs(f); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// reload re-reads the configuration after a change (b nil: at start),
// prints what changed in the definitions, and plans (and applies).
func (w *watcher) reload(ctx context.Context, b *watch.Batch) {
	now := time.Now()
	if b != nil {
		var names []string
		for _, p := range b.Paths {
			if rel, err := filepath.Rel(w.dir, p); err == nil && !strings.HasPrefix(rel, "..") {
				p = rel
			}
			names = append(names, p)
		}
		what := strings.Join(names, ", ")
		if b.Rescan {
			what = "events were lost; rescanned"
		}
		w.changed, w.what = now, what
		w.view.Changed(what, now)
	}
	cfg, diags := schema.Load(w.dir, schema.LoadOptions{Platforms: platformRegistry, Tuners: tunerRegistry, Backends: schemaBackends(), Vars: w.o.vars.vars, VarFiles: w.o.vars.varFiles, Environ: w.g.IO.Environ})
	if len(diags) > 0 {
		w.view.Out.ClearStatus()
		w.g.printDiags(cfg, diags, w.o.noColor)
	}
	if diags.HasErrors() {
		w.view.ConfigErrors(w.cfg != nil)
		w.status()
		return
	}
	extra := map[string][]byte{}
	var extraPaths []string
	for _, name := range sortedKeys(cfg.Spaces) {
		if f := cfg.Spaces[name].NNIFile; f != "" {
			extraPaths = append(extraPaths, f)
			if src, err := fsread.ReadFile(f, fsread.MaxConfig); err == nil {
				extra[f] = src
			}
		}
	}
	extraPaths = append(extraPaths, w.absVarFiles()...)
	units := schema.Units(cfg.Files)
	if w.cfg != nil {
		// A variable sensitive in either configuration: its value is not
		// shown (issue 25 B).
		hide := w.cfg.SensitiveVars()
		for k := range cfg.SensitiveVars() {
			hide[k] = true
		}
		diff := schema.BlockDiff(schema.HideSensitive(w.units, hide), schema.HideSensitive(units, hide))
		diff += w.fileDiffs(extra)
		w.view.DefinitionsDiff(diff)
	}
	w.cfg, w.units, w.extra = cfg, units, extra
	w.setExtra(extraPaths)
	w.buildProviders()
	w.lastPlan, w.held = "", ""
	w.reconcile(ctx, true)
}

// setExtra is replaced in tests; it tells the file watcher about the files
// the configuration points at.
func (w *watcher) setExtra(paths []string) {
	if w.extraSetter != nil {
		w.extraSetter(paths)
	}
}

// fileDiffs diffs the nni_file search spaces.
func (w *watcher) fileDiffs(now map[string][]byte) string {
	var sb strings.Builder
	paths := map[string]bool{}
	for p := range now {
		paths[p] = true
	}
	for p := range w.extra {
		paths[p] = true
	}
	for _, p := range sortedKeys(paths) {
		if bytes.Equal(w.extra[p], now[p]) {
			continue
		}
		name := p
		if rel, err := filepath.Rel(w.dir, p); err == nil && !strings.HasPrefix(rel, "..") {
			name = rel
		}
		fmt.Fprintf(&sb, "# %s changed\n", name)
		sb.WriteString(schema.UnifiedDiff(name, w.extra[p], now[p]))
	}
	return sb.String()
}

// buildProviders keeps the provider set while the platform blocks are
// unchanged and rebuilds it when they change (reuseProviders).
func (w *watcher) buildProviders() {
	w.ps, w.psKey = reuseProviders(w.ps, w.psKey, w.cfg, w.stateDir)
}

// reuseProviders returns ps, now serving cfg, while cfg's platform blocks
// are those ps was built for (psKey): providers hold caches and
// notifiers. When the blocks changed it closes ps and returns a new set
// for cfg, with its key.
func reuseProviders(ps *providerSet, psKey string, cfg *schema.Config, stateDir string) (*providerSet, string) {
	var key strings.Builder
	for _, k := range sortedKeys(cfg.Platforms) {
		fmt.Fprintf(&key, "%s=%v;", k, cfg.Platforms[k].Attrs)
	}
	if ps != nil && key.String() == psKey {
		ps.mu.Lock()
		ps.cfg = cfg
		ps.mu.Unlock()
		return ps, psKey
	}
	if ps != nil {
		ps.Close()
	}
	ps = newProviderSet(cfg, stateDir)
	ps.followTrials() // watch and the controller refresh again and again
	return ps, key.String()
}

// providerChanged receives when a provider of the current set signals a
// change (a trial process exited: reconcile now rather than at the
// interval); nil, which never receives, before a configuration loads.
func (w *watcher) providerChanged() <-chan struct{} {
	if w.ps == nil {
		return nil
	}
	return w.ps.notify()
}

// reconcile plans against the last good configuration and, with
// -auto-approve, applies. printPlan prints the plan even when it did not
// change (after a file change).
func (w *watcher) reconcile(ctx context.Context, printPlan bool) {
	defer w.status()
	if w.cfg == nil || ctx.Err() != nil {
		return
	}
	opts := plan.Options{Targets: w.o.targets}
	if !w.g.checkPlatformsTo(ctx, w.cfg, w.ps, w.view.Out) {
		return
	}
	if !w.o.autoApprove {
		if err := lostError(ctx, w.m, w.stateDir, w.cfg, w.ps); err != nil {
			w.view.Error(err)
			return
		}
		st, err := state.Peek(w.m)
		if err != nil {
			w.view.Error(err)
			return
		}
		s := apply.NewSession(w.cfg, st, newMemStore(w.m), w.ps)
		s.PlanOnly = true // a memory store: what it refreshes is not kept
		p, err := s.Plan(ctx, opts)
		if err != nil {
			w.view.Error(fmt.Errorf("plan: %w", err))
			return
		}
		w.last = p
		if text := w.view.PlanText(p); printPlan || text != w.lastPlan {
			w.view.PrintText(text)
			w.lastPlan = text
		}
		return
	}

	// Apply mode: hold the lock only for this pass, so trials, show and
	// plan keep working between passes.
	var names []string
	if _, ok := w.m.(state.ExperimentLocker); ok {
		if st, err := state.Peek(w.m); err == nil {
			names = lockScope(w.cfg, st, w.o.targets)
		}
	}
	lk, err := state.LockScope(ctx, w.m, names, "watch", Version, w.o.lock.timeout)
	if err != nil {
		var le *state.LockedError
		if errors.As(err, &le) {
			if msg := err.Error(); msg != w.locked {
				w.locked = msg
				w.view.Waiting(err, w.o.interval)
			}
			return
		}
		w.view.Error(fmt.Errorf("acquire the state lock: %w", err))
		return
	}
	defer lk.Unlock()
	w.locked = ""
	st, err := w.m.Load()
	if err != nil {
		w.view.Error(err)
		return
	}
	if err := lostError(ctx, w.m, w.stateDir, w.cfg, w.ps); err != nil {
		w.view.Error(err)
		return
	}
	s := apply.NewSession(w.cfg, st, w.g.retrying(w.m), w.ps)
	// Read again at each pass: a commit made while watch runs is what the
	// trials created from now on come from.
	s.Provenance = w.g.readProvenance(w.cfg, w.stateDir).byExp
	s.Parallelism = w.o.parallelism
	s.Hard = w.g.hard(ctx)
	s.Hooks = w.view.Apply
	p, err := s.Plan(ctx, opts)
	if err != nil {
		w.view.Error(fmt.Errorf("plan: %w", err))
		return
	}
	w.last = p
	d := p.Destructive()
	for _, ep := range p.Experiments {
		if ep.NewGeneration && w.heldGen[ep.Name] && !slices.ContainsFunc(d, func(l string) bool { return strings.Contains(l, "experiment "+ep.Name+" ") }) {
			d = append(d, fmt.Sprintf("experiment %s would start generation %d (its definitions changed while its trials ran; they have ended since)", ep.Name, ep.Generation))
		}
	}
	if len(d) > 0 && !w.o.allowDestroy {
		held := heldKey(d)
		if printPlan || held != w.held {
			w.view.Held(p, d)
			w.held = held
		}
		w.heldGen = map[string]bool{}
		for _, ep := range p.Experiments {
			if ep.NewGeneration {
				w.heldGen[ep.Name] = true
			}
		}
		return
	}
	w.held, w.heldGen = "", nil
	if printPlan {
		w.view.Apply.Plan(p, false)
	} else {
		w.view.Apply.Pass(p, nil) // the warnings not printed yet
	}
	if err := s.Apply(ctx, p); err != nil && ctx.Err() == nil {
		w.printApplyErr(err)
	}
	if apply.Finished(p) {
		if !w.done {
			w.view.AllDone(p)
			w.done = true
		}
	} else {
		w.done = false
	}
}

// heldKey is what a held plan is printed again for: what it would
// destroy, without the counts, so trials finishing one by one (3, then 2
// trials to tear down) do not reprint the same held plan each time.
func heldKey(destructive []string) string {
	var b strings.Builder
	for _, l := range destructive {
		b.WriteString(strings.TrimLeft(l, "0123456789"))
		b.WriteByte('\n')
	}
	return b.String()
}

func (w *watcher) printApplyErr(err error) {
	for _, e := range applyErrors(err) {
		w.view.Error(e)
	}
}

// status redraws the status line (terminals only).
func (w *watcher) status() {
	w.view.Status(w.last, w.changed, w.what, w.held != "")
}

// checkPlatformsTo is checkPlatforms writing its diagnostics through w.
func (g *Globals) checkPlatformsTo(ctx context.Context, cfg *schema.Config, ps *providerSet, w *views.StatusWriter) bool {
	w.ClearStatus()
	return g.checkPlatforms(ctx, cfg, ps)
}
