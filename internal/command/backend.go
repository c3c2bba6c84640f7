package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/internal/mask"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendreg"
	"github.com/trialform/trialform/state/backends"
)

// The working copy's state backend: every command opens it here
// (openBackend), never with state.Open.
//
// The configuration's backend block says which backend the state lives
// in; `trialform init` records it in the state directory
// (state.RecordBackend) and every command compares the two, refusing to
// go on when they differ: a changed block must never silently point a
// working copy at an empty state, or at someone else's. Commands that do
// not load the whole configuration (show, trials, ui, ...) read the
// backend block alone (schema.LoadBackend). Without a block and without a
// record the backend is the local one, as it always was: no init needed.

// schemaBackends are the backend kinds as the schema sees them.
func schemaBackends() []schema.BackendKind {
	var out []schema.BackendKind
	for _, k := range backends.Kinds() {
		out = append(out, schema.BackendKind{Name: k.Name, Summary: k.Summary, Config: k.Config})
	}
	return out
}

// openedBackend is the backend a command opened, kept for the command's
// length (a database backend holds connections).
type openedBackend struct {
	sd string
	b  state.Backend
	// declared: the configuration has a backend block or the working copy
	// a record, so output names the backend (without either, output is
	// as it always was).
	declared bool
	secrets  []string
}

// backendRecordOf is what init records for be (nil: local).
func backendRecordOf(be *schema.Backend) state.BackendRecord {
	if be == nil {
		return state.BackendRecord{Kind: state.LocalBackend}
	}
	return state.BackendRecord{Kind: be.Kind, Settings: be.Settings}
}

// backendEnv is what a backend opens with: the state directory and this
// command's environment.
func (g *Globals) backendEnv(sd string) backendreg.Env {
	return backendreg.Env{StateDir: sd, Getenv: g.getenv, Report: g.reportNotice}
}

// reportNotice says msg, a state backend's outage or recovery: on stderr,
// or in the controller's log (Globals.notice).
func (g *Globals) reportNotice(msg string) {
	if g.notice != nil {
		g.notice(msg)
		return
	}
	views.Notice(g.IO.Err, msg)
}

// getenv reads the command's environment (IO.Environ).
func (g *Globals) getenv(name string) string {
	for i := len(g.IO.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(g.IO.Environ[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// configuredBackend is the configuration's backend block: cfg's when the
// command loaded the configuration, else the block alone (with the
// variables of the environment, and vf's where the command takes -var).
// be is nil without a block; hasConfig is false when the directory has no
// configuration at all.
func (g *Globals) configuredBackend(cfg *schema.Config, vf *varFlags) (be *schema.Backend, hasConfig, ok bool) {
	if cfg != nil {
		return cfg.Backend, true, true
	}
	wd, err := g.workDir()
	if err != nil {
		g.errorf("%v", err)
		return nil, false, false
	}
	opts := schema.LoadOptions{Backends: schemaBackends(), Environ: g.IO.Environ}
	if vf != nil {
		opts.Vars, opts.VarFiles = vf.vars, vf.varFiles
	}
	be, files, diags := schema.LoadBackend(wd, opts)
	if len(diags) > 0 {
		g.printDiags(&schema.Config{Files: files}, diags, false)
	}
	if diags.HasErrors() {
		return nil, files != nil, false
	}
	return be, files != nil, true
}

// backendChangedError says what to do when the configuration's backend is
// not the one the working copy recorded.
func backendChangedError(rec, want state.BackendRecord) error {
	if rec.Kind != want.Kind {
		return fmt.Errorf("backend changed from %s to %s: run `trialform init -migrate-state` to copy the state, or `trialform init -reconfigure` to use the new one as it is", rec.Kind, want.Kind)
	}
	return fmt.Errorf("the settings of backend %s changed (%s): run `trialform init -migrate-state` to copy the state, or `trialform init -reconfigure` to use the new one as it is",
		want.Kind, strings.Join(rec.ChangedSettings(want), ", "))
}

// locationChangedError: the backend block's settings are the recorded
// ones, but its credential settings or the environment now point at
// another server or database.
func locationChangedError(rec, want state.BackendRecord) error {
	return fmt.Errorf("the %s backend now points at %s, but this working copy was initialized with %s (a credential setting such as conn_str, or the environment, changed; neither is recorded): put back the old connection settings, or run `trialform init -reconfigure` to use the new one as it is (init -migrate-state cannot copy from the old one: its connection settings are not recorded; use `trialform state pull` there and `state push` here)",
		want.Kind, want.Location, rec.Location)
}

// openBackend opens the working copy's backend (once per command: later
// calls return the same one) after checking that the configuration's
// backend block is the one `trialform init` recorded. cfg is the loaded
// configuration, or nil for commands that do not load it.
func (g *Globals) openBackend(cfg *schema.Config) (sd string, b state.Backend, ok bool) {
	return g.openBackendWith(cfg, nil)
}

// openBackendWith is openBackend for a command that takes -var and
// -var-file (vf) but has not loaded the configuration (watch, init).
func (g *Globals) openBackendWith(cfg *schema.Config, vf *varFlags) (sd string, b state.Backend, ok bool) {
	if g.backend != nil {
		return g.backend.sd, g.backend.b, true
	}
	sd, err := g.stateDir()
	if err != nil {
		g.errorf("%v", err)
		return "", nil, false
	}
	be, hasConfig, ok := g.configuredBackend(cfg, vf)
	if !ok {
		return "", nil, false
	}
	rec, err := state.RecordedBackend(sd)
	if err != nil {
		g.errorf("%v", err)
		return "", nil, false
	}
	have := state.BackendRecord{Kind: state.LocalBackend}
	if rec != nil {
		have = *rec
	}
	want := backendRecordOf(be)
	var settings any
	if be != nil {
		settings = be.Config
	}
	switch {
	case !hasConfig && have.Kind == state.LocalBackend:
		// No configuration here (show in a copied state directory): the
		// local state, as always.
		want = have
	case !hasConfig:
		g.errorf("this working copy's state is in a %s backend, whose settings are in the configuration's backend block, and %s has no configuration: run the command where the configuration is (or with -chdir)", have.Kind, filepathDir(sd))
		return "", nil, false
	case !have.Same(want) && rec == nil && !localStateExists(sd):
		// A fresh clone of a repository whose definitions name a shared
		// backend (a controller's, to approve its held changes): nothing
		// changed and nothing is to be copied; it said "backend changed
		// from local to pg: run `trialform init -migrate-state`".
		g.errorf("this working copy is not initialized for the configuration's %s backend: run `trialform init` (it records the backend block; there is no local state here to copy)", want.Kind)
		return "", nil, false
	case !have.Same(want):
		g.errorf("%v", backendChangedError(have, want))
		return "", nil, false
	}
	var secrets []string
	if be != nil {
		secrets = be.Secrets
	}
	b, err = backends.Open(want.Kind, settings, g.backendEnv(sd))
	if err != nil {
		g.errorf("%sopen the %s backend: %s", blockAt(be), want.Kind, mask.New(secrets...).String(err.Error()))
		return "", nil, false
	}
	if rec != nil && rec.Location != "" && rec.Kind == want.Kind && want.Kind != state.LocalBackend && b.Location() != rec.Location {
		closeIfCloser(b)
		want.Location = b.Location()
		g.errorf("%v", locationChangedError(*rec, want))
		return "", nil, false
	}
	g.backend = &openedBackend{sd: sd, b: b, declared: be != nil || rec != nil, secrets: secrets}
	return sd, b, true
}

// localStateExists reports whether the state directory sd holds a local
// state file.
func localStateExists(sd string) bool {
	ok, err := state.NewManager(sd).Exists()
	return ok || err != nil
}

func filepathDir(sd string) string {
	if i := strings.LastIndexAny(sd, `/\`); i > 0 {
		return sd[:i]
	}
	return "."
}

// closeBackend closes the command's backend when it holds something
// (connections).
func (g *Globals) closeBackend() {
	if g.backend == nil {
		return
	}
	if c, ok := g.backend.b.(io.Closer); ok {
		c.Close()
	}
	g.backend = nil
}

// lockScope is what a command that changes experiments locks: the
// -target experiments, or else every experiment of the configuration and
// of the state. A backend without experiment locks takes its whole-state
// lock for it (state.LockScope).
func lockScope(cfg *schema.Config, st *state.State, targets []string) []string {
	set := map[string]bool{}
	if len(targets) > 0 {
		for _, t := range targets {
			set[strings.TrimPrefix(t, "experiment.")] = true
		}
	} else {
		if cfg != nil {
			for n := range cfg.Experiments {
				set[n] = true
			}
		}
		if st != nil {
			for n := range st.Experiments {
				set[n] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// lockExperiments takes the lock on the experiments scope returns for the
// state as it is (read without a lock first), loads the state, and when
// someone added an experiment scope now covers meanwhile, takes the lock
// again over the larger set. An empty scope is the whole state. wholeState
// forces the whole-state lock (state push, init).
func (g *Globals) lockExperiments(ctx context.Context, b state.Backend, op string, lf lockFlags, scope func(*state.State) []string) (*state.Lock, *state.State, bool) {
	var names []string
	if scope != nil {
		if _, ok := b.(state.ExperimentLocker); ok {
			st, err := b.Load()
			if err != nil {
				g.errorf("%v", err)
				return nil, nil, false
			}
			names = scope(st)
		}
	}
	if len(names) > 0 {
		if err := ensureState(ctx, b, op, lf); err != nil {
			g.errorf("%v", err)
			return nil, nil, false
		}
	}
	for attempt := 0; ; attempt++ {
		lk, err := state.LockScope(ctx, b, names, op, Version, lf.timeout)
		if err != nil && len(names) > 0 {
			lk, err = waitCreation(ctx, b, names, op, lf, err)
		}
		if err != nil {
			g.errorf("acquire the state lock: %v", err)
			return nil, nil, false
		}
		st := g.loadState(b)
		if st == nil {
			lk.Unlock()
			return nil, nil, false
		}
		if len(names) == 0 || attempt >= 3 {
			return lk, st, true
		}
		now := scope(st)
		if !grew(names, now) {
			return lk, st, true
		}
		lk.Unlock()
		names = now
	}
}

// retrying is the store of a command that writes while trials run (apply,
// watch): a shared backend's writes are retried while its server cannot
// be reached (apply.RetryStore), each outage reported on stderr; the
// local backend's files need no retry.
func (g *Globals) retrying(b state.Backend) apply.StateStore {
	if b.Name() == state.LocalBackend {
		return b
	}
	return apply.RetryStore(b, g.reportNotice)
}

// ensureState creates b's state, empty, when there is none yet, under the
// whole-state lock, before a command takes experiment locks: two working
// copies that start different experiments of a new shared state at once
// would otherwise each create a state of its own lineage, and the second
// one's save would be refused (TestSharedDifferentExperiments). A lost
// state (Lost: what one left is still there) is not created over: the
// command's lost-state check reports it. The lock is waited for at least
// a few seconds even with -lock-timeout=0: whoever holds it is creating
// the state, a matter of one write.
func ensureState(ctx context.Context, b state.Backend, op string, lf lockFlags) error {
	if ok, err := b.Exists(); err != nil || ok {
		return err
	}
	if ls, err := b.Lost(); err != nil || ls != nil {
		return err
	}
	wait := lf.timeout
	if wait < 10*time.Second {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	var lk *state.Lock
	for {
		// Short tries: whoever holds the lock may be another working copy
		// that just created the state and now holds its own experiments
		// (experiment locks exclude the whole-state lock).
		l, err := b.Lock(ctx, op+creatingState, Version, 500*time.Millisecond)
		if err == nil {
			lk = l
			break
		}
		var le *state.LockedError
		if !errors.As(err, &le) {
			return fmt.Errorf("acquire the state lock to create the state: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("acquire the state lock to create the state: waited %s: %w", wait, le)
		}
		if ok, err := b.Exists(); err != nil || ok {
			return err
		}
	}
	defer lk.Unlock()
	if ok, err := b.Exists(); err != nil || ok {
		return err
	}
	st, err := b.Load()
	if err != nil {
		return err
	}
	if err := b.Save(st); err != nil {
		return fmt.Errorf("create the state: %w", err)
	}
	return nil
}

// grew reports whether now names an experiment held lacks.
func grew(held, now []string) bool {
	for _, n := range now {
		if !slices.Contains(held, n) {
			return true
		}
	}
	return false
}

// backendNote names the backend and who holds its locks, on stderr, for
// show, trials and the like: only where the working copy declares a
// backend (without a block or a record, output stays as it always was).
func (g *Globals) backendNote() {
	ob := g.backend
	if ob == nil || !ob.declared {
		return
	}
	var claim *state.LockInfo
	if cl, ok := ob.b.(state.Claimer); ok {
		claim, _ = cl.CurrentClaim()
	}
	locks, err := state.CurrentLocksOf(ob.b)
	views.BackendNote(g.IO.Err, ob.b.Name(), ob.b.Location(), claim, locks, err)
}

// creatingState marks the operation of the whole-state lock ensureState
// holds for the moment it takes to create a new shared state.
const creatingState = " (creating the state)"

// waitCreation retries an experiment lock refused because another working
// copy holds the whole-state lock only to create the state (ensureState):
// that lock goes within moments, and a command that found the state
// created must not fail on it (two working copies starting different
// experiments on a new shared state: TestSharedDifferentExperiments saw
// the second refused, "locked by apply", or on pg "its lock information
// could not be read"). Any other refusal is returned.
func waitCreation(ctx context.Context, b state.Backend, names []string, op string, lf lockFlags, err error) (*state.Lock, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var le *state.LockedError
		// A holder whose lock information cannot be read yet (pg: taken or
		// released between the lock and its row) is most likely that
		// short lock too.
		if !errors.As(err, &le) {
			return nil, err
		}
		creating := (len(le.Info.Experiments) == 0 && strings.HasSuffix(le.Info.Operation, creatingState)) || le.Info.ID == ""
		if !creating || time.Now().After(deadline) {
			return nil, err
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		var lk *state.Lock
		if lk, err = state.LockScope(ctx, b, names, op, Version, lf.timeout); err == nil {
			return lk, nil
		}
	}
}

// blockAt is "FILE:LINE,COL-COL: " of the backend block be, whose
// settings an error is about ("" without one: the local default).
func blockAt(be *schema.Backend) string {
	if be == nil || be.DeclRange.Filename == "" {
		return ""
	}
	return be.DeclRange.String() + ": "
}
