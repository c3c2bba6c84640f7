// Package apply executes plans: it records intent in state before it acts,
// starts, resumes and tears down trials through providers with bounded
// concurrency, and saves state after every change, so a crash or Ctrl-C at
// any moment leaves a state the next run can finish from — never a lost or
// a duplicated trial. The run loop (apply -wait) and watch mode reuse the
// same refresh → plan → apply path. It never prints: progress goes through
// Hooks.
package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/mask"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// Hooks receive progress. Implementations must be safe for concurrent use.
type Hooks interface {
	// TrialAction is called before (err == nil, done == false) and after
	// (done == true) each trial action.
	TrialAction(a *plan.TrialAction, done bool, err error)
	// Observed is called for each change refresh found and recorded.
	Observed(o plan.Observed)
}

// NopHooks ignores everything.
type NopHooks struct{}

func (NopHooks) TrialAction(*plan.TrialAction, bool, error) {}
func (NopHooks) Observed(plan.Observed)                     {}

// StateStore is the part of state.Manager apply needs.
type StateStore interface {
	Save(s *state.State) error
	AppendMetrics(experiment, trial string, pts []state.MetricPoint) error
	RemoveMetrics(experiment string) error
}

// Session is one command invocation's view of the world: the
// configuration, the state (owned and mutated only through the session),
// the providers, and the clock.
type Session struct {
	Config    *schema.Config
	Store     StateStore
	Providers plan.ProviderSet
	Hooks     Hooks
	Now       func() time.Time
	// Parallelism bounds concurrent provider calls (default 16).
	Parallelism int
	// StopGrace is the time a torn-down trial gets between SIGTERM and
	// SIGKILL (default 10s).
	StopGrace time.Duration
	// Provenance, by experiment name, is recorded on each trial apply
	// creates (the command reads it from git); nil records none.
	Provenance map[string]state.Provenance
	// Hard, if set, is the context of the platform calls apply has
	// started: they finish even after ctx (Apply's) is cancelled, unless
	// Hard is cancelled too (a second Ctrl-C). Nil: they always finish.
	Hard context.Context
	// PlanOnly: the session only plans and keeps nothing it refreshes
	// (plan, ui, watch without -auto-approve: a memory store). Its
	// refreshes leave running trials' new metrics unread on platforms
	// where each costs a request (a pod's log), for experiments without
	// an assessor: nothing a plan computes reads them.
	PlanOnly bool

	mu      sync.Mutex // guards st, version and the dirty set
	st      *state.State
	version uint64
	// The trials changed since the last save, for a store that saves
	// only those (TrialStore); dirtyAll when a change did not name them.
	dirty    []state.TrialRef
	dirtyAll bool
	// shared is set once view handed out trials of st: from then on a
	// change replaces a trial by a copy instead of changing it in place.
	shared bool
	saveMu sync.Mutex
	saved  uint64

	moves []plan.Move // made by Refresh, for the next plan to show

	curveMu    sync.Mutex
	curveCache map[string]curveEntry
	valueCache map[string]*float64 // seriesValues' by experiment, trial, objective and length
	// retake is what the last Plan took from series (seriesValues), by
	// experiment and trial, for Apply to record (state.Retaken) so that
	// neither later plans nor the views read those series again.
	retake map[string]map[string]*float64 // guarded by mu

	// ListInterval, when set (Run sets it), is how often a refresh lists
	// the trials a platform holds for an experiment the state has: the
	// passes in between only read the state's unfinished trials. A
	// listing looks at every trial of the experiment's history, so
	// listing at every pass made a run's cost grow with its length.
	ListInterval time.Duration
	listed       map[string]time.Time // guarded by mu
	// handoff: starts return once the platform's supervisor has the
	// trial (StartRequest.Handoff), and a teardown whose machine cannot be
	// reached waits for it (providers.ErrUnreachable); Run sets it.
	handoff bool

	// TakeOver makes the next Plan first record this working copy as the
	// owner of every unfinished trial another working copy owns (apply
	// -take-over, for a working copy that is gone for good): they are then
	// read on this working copy's platform, found LOST and resumed here.
	TakeOver bool
}

// NewSession starts a session on st (as loaded from the store).
func NewSession(cfg *schema.Config, st *state.State, store StateStore, ps plan.ProviderSet) *Session {
	return &Session{Config: cfg, st: st, Store: store, Providers: ps, Hooks: NopHooks{}, Now: time.Now}
}

// State returns a deep copy of the session's current state.
func (s *Session) State() *state.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Clone()
}

// view returns a snapshot of the state for reading only: its own maps and
// experiment records, but the trials are st's (a change copies a trial
// before changing it once a view exists), so it costs a map copy, not a
// deep copy of every trial.
func (s *Session) view() *state.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shared = true
	c := *s.st
	c.Experiments = make(map[string]*state.Experiment, len(s.st.Experiments))
	for name, e := range s.st.Experiments {
		h := *e
		h.Trials = nil
		ce := h.Clone()
		ce.Trials = maps.Clone(e.Trials)
		c.Experiments[name] = ce
	}
	return &c
}

// unshare makes the trials refs names (every trial, for nil refs) st's own
// before a change, when a view may share them. The caller holds mu.
func (s *Session) unshare(refs []state.TrialRef) {
	if !s.shared {
		return
	}
	if refs == nil {
		s.st = s.st.Clone()
		s.shared = false
		return
	}
	for _, r := range refs {
		if e := s.st.Experiments[r.Experiment]; e != nil {
			if t := e.Trials[r.ID]; t != nil {
				e.Trials[r.ID] = t.Clone()
			}
		}
	}
}

// trialView returns, under the lock, deep copies of experiment exp without
// its trials map (nil when absent) and of its trial id (nil when absent),
// and the state's lineage: what a trial action needs, without cloning the
// whole state once per action.
func (s *Session) trialView(exp, id string) (e *state.Experiment, t *state.Trial, lineage string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lineage = s.st.Lineage
	src := s.st.Experiment(exp)
	if src == nil {
		return nil, nil, lineage
	}
	hdr := *src
	hdr.Trials = nil
	e = hdr.Clone()
	e.Trials = map[string]*state.Trial{}
	if tr := src.Trials[id]; tr != nil {
		t = tr.Clone()
		e.Trials[id] = t
	}
	return e, t, lineage
}

// change mutates the state under the lock and saves it. Concurrent changes
// are group-committed: one Save covers every change made before it began.
// fn may change anything: the save compares the whole state.
func (s *Session) change(fn func(st *state.State)) error {
	return s.changeTrials(nil, fn)
}

// noteTrials changes the trials named like changeTrials, in memory only:
// the next save carries the change (see start).
func (s *Session) noteTrials(refs []state.TrialRef, fn func(st *state.State)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unshare(refs)
	fn(s.st)
	s.markDirty(refs)
	s.version++
	return nil
}

// changeTrials is change for an fn that changes (adds, modifies or removes)
// only the trials refs names, and experiments' own fields: the save
// compares and writes only those, so it costs what changed. A nil refs is
// change.
func (s *Session) changeTrials(refs []state.TrialRef, fn func(st *state.State)) error {
	s.mu.Lock()
	s.unshare(refs)
	fn(s.st)
	s.markDirty(refs)
	s.version++
	v := s.version
	s.mu.Unlock()

	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if s.saved >= v {
		return nil
	}
	s.mu.Lock()
	cur := s.version
	if gs, ok := s.Store.(GroupStore); ok {
		// Compute the change under the lock, make it durable without it:
		// changes made during the fsync wait on saveMu and share the next
		// one.
		commit, err := s.prepare(gs)
		s.mu.Unlock()
		if err == nil && commit != nil {
			err = commit()
		}
		if err != nil {
			return fatal{fmt.Errorf("save state: %w", err)}
		}
		s.saved = cur
		return nil
	}
	s.dirty, s.dirtyAll = nil, false
	err := s.Store.Save(s.st)
	s.mu.Unlock()
	if err != nil {
		return fatal{fmt.Errorf("save state: %w", err)}
	}
	s.saved = cur
	return nil
}

// markDirty adds refs to the trials the next save must look at (nil:
// everything). The caller holds mu.
func (s *Session) markDirty(refs []state.TrialRef) {
	if refs == nil {
		s.dirtyAll = true
		return
	}
	s.dirty = append(s.dirty, refs...)
}

// prepare computes the next save with gs, naming the changed trials when
// gs can use them. The caller holds mu.
func (s *Session) prepare(gs GroupStore) (func() error, error) {
	ts, ok := gs.(TrialStore)
	if !ok || s.dirtyAll {
		s.dirty, s.dirtyAll = nil, false
		return gs.Prepare(s.st)
	}
	refs := s.dirty
	if refs == nil {
		refs = []state.TrialRef{}
	}
	s.dirty = nil
	return ts.PrepareTrials(s.st, refs)
}

// TrialStore is the optional part of a GroupStore (state.Manager) that
// saves only the trials a change names.
type TrialStore interface {
	PrepareTrials(s *state.State, refs []state.TrialRef) (commit func() error, err error)
}

// GroupStore is the optional part of a StateStore (state.Manager) that
// splits a save in two: Prepare reads the state (under the session's
// lock), Commit writes and fsyncs it (without), so trials that change
// while one change is being made durable share the next fsync.
type GroupStore interface {
	Prepare(s *state.State) (commit func() error, err error)
}

// observe folds observations into the state and records them: the metric
// points are appended to the metric files first, and only then is the
// state, with the metric offsets past those points, saved. A crash between
// the two, or an append error, leaves the offsets where they were, so the
// next refresh reads the points again; readers drop the duplicates by
// (type, sequence). On an append error the state does not change, and the
// error is fatal: the metric series are part of the state, and an append
// that failed (a full or read-only disk) fails again at the next pass.
func (s *Session) observe(obs *plan.Observations, now time.Time) ([]plan.Observed, error) {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	// Observe changes only the trials observed: it works on copies of
	// those (the state is untouched if recording the metrics fails), which
	// then replace the originals.
	view, refs := observedView(s.st, obs)
	changes, batches := plan.Observe(view, obs, now)
	if bs, ok := s.Store.(BatchMetricsStore); ok && len(batches) > 1 {
		// One round of parallel fsyncs for every trial observed.
		mb := make([]state.MetricsBatch, len(batches))
		for i, b := range batches {
			mb[i] = state.MetricsBatch{Experiment: b.Experiment, Trial: b.TrialID, Points: b.Points}
		}
		if err := bs.AppendMetricsBatch(mb); err != nil {
			return nil, fatal{fmt.Errorf("record metrics of %d trials: %w", len(batches), err)}
		}
	} else {
		for _, b := range batches {
			if err := s.Store.AppendMetrics(b.Experiment, b.TrialID, b.Points); err != nil {
				return nil, fatal{fmt.Errorf("record metrics of %s/%s: %w", b.Experiment, b.TrialID, err)}
			}
		}
	}
	for name, ve := range view.Experiments {
		e := s.st.Experiments[name]
		for id, t := range ve.Trials {
			e.Trials[id] = t
		}
	}
	s.markDirty(refs)
	s.version++
	v := s.version
	var err error
	if gs, ok := s.Store.(GroupStore); ok {
		var commit func() error
		commit, err = s.prepare(gs)
		if err == nil && commit != nil {
			err = commit()
		}
	} else {
		s.dirty, s.dirtyAll = nil, false
		err = s.Store.Save(s.st)
	}
	if err != nil {
		return nil, fatal{fmt.Errorf("save state: %w", err)}
	}
	s.saved = v
	return changes, nil
}

// BatchMetricsStore is the optional part of a StateStore (state.Manager)
// that appends several trials' metric points with one round of fsyncs.
type BatchMetricsStore interface {
	AppendMetricsBatch(batches []state.MetricsBatch) error
}

// observedView returns a state holding copies of st's trials that obs
// observed (and of their experiments' own fields), and their names.
func observedView(st *state.State, obs *plan.Observations) (*state.State, []state.TrialRef) {
	view := &state.State{Version: st.Version, Serial: st.Serial, Lineage: st.Lineage, Experiments: map[string]*state.Experiment{}}
	refs := []state.TrialRef{}
	for name, seen := range obs.Trials {
		e := st.Experiments[name]
		if e == nil {
			continue
		}
		h := *e
		h.Trials = make(map[string]*state.Trial, len(seen))
		for id := range seen {
			if t := e.Trials[id]; t != nil {
				h.Trials[id] = t.Clone()
				refs = append(refs, state.TrialRef{Experiment: name, ID: id})
			}
		}
		view.Experiments[name] = &h
	}
	return view, refs
}

// Refresh reads the platforms, folds what they report into the state,
// saves it (with the new metric points) and returns the observations.
func (s *Session) Refresh(ctx context.Context) (*plan.Observations, []plan.Observed, error) {
	return s.RefreshTargets(ctx, nil)
}

// RefreshTargets is Refresh of the experiments targets names
// ("experiment.NAME" or NAME, as plan.Options.Targets; none: every one of
// the configuration). A command run with -target locks only those on a
// shared backend, so it must not record what it would read of the others:
// their saves are refused (and belong to whoever holds them).
func (s *Session) RefreshTargets(ctx context.Context, targets []string) (*plan.Observations, []plan.Observed, error) {
	moves, moveWarnings, err := s.move()
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.moves = append(s.moves, moves...)
	s.mu.Unlock()
	cur := s.view()
	if len(targets) > 0 {
		// The state's experiments are read too (those removed from the
		// configuration): only the targeted ones.
		only := *cur
		only.Experiments = map[string]*state.Experiment{}
		for n, e := range cur.Experiments {
			if targeted(targets, n) {
				only.Experiments[n] = e
			}
		}
		cur = &only
	}
	names := map[string]string{}
	for n, e := range s.Config.Experiments {
		if targeted(targets, n) {
			names[n] = e.Platform.Key()
		}
	}
	now := s.Now()
	noList := map[string]bool{}
	s.mu.Lock()
	for n := range names {
		if at, ok := s.listed[n]; ok && s.ListInterval > 0 && cur.Experiments[n] != nil && now.Sub(at) < s.ListInterval {
			noList[n] = true
		}
	}
	s.mu.Unlock()
	var skip map[string]bool
	if s.PlanOnly {
		skip = map[string]bool{}
		for n, e := range s.Config.Experiments {
			if e.Assessor == nil {
				skip[n] = true
			}
		}
	}
	obs, err := plan.RefreshWith(ctx, cur, s.Providers, names, plan.RefreshOptions{NoList: noList, SkipRunningMetrics: skip})
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if s.listed == nil {
		s.listed = map[string]time.Time{}
	}
	for n := range obs.Listed {
		s.listed[n] = now
	}
	s.mu.Unlock()
	obs.Warnings = append(moveWarnings, obs.Warnings...)
	plan.DetectDrift(s.Config, cur, obs, s.Providers)
	changes, err := s.observe(obs, s.Now())
	if err != nil {
		return nil, nil, err
	}
	if rm, ok := s.Store.(RefreshMarker); ok {
		st := s.view()
		var refreshed []string
		for n := range names {
			if st.Experiments[n] != nil {
				refreshed = append(refreshed, n)
			}
		}
		if err := rm.MarkRefreshed(st.Lineage, refreshed, s.Now()); err != nil {
			return nil, nil, err
		}
	}
	for _, c := range changes {
		s.Hooks.Observed(c)
	}
	return obs, changes, nil
}

// targeted reports whether targets ("experiment.NAME" or NAME; none:
// all) names experiment name.
func targeted(targets []string, name string) bool {
	if len(targets) == 0 {
		return true
	}
	for _, t := range targets {
		if strings.TrimPrefix(t, "experiment.") == name {
			return true
		}
	}
	return false
}

// RefreshMarker is the optional part of a StateStore that records when
// experiments were last refreshed (state.Manager; `trials` shows the age).
type RefreshMarker interface {
	MarkRefreshed(lineage string, experiments []string, t time.Time) error
}

// Plan refreshes and computes a plan against the refreshed state.
func (s *Session) Plan(ctx context.Context, opts plan.Options) (*plan.Plan, error) {
	if s.TakeOver {
		if err := s.takeOver(opts.Targets); err != nil {
			return nil, err
		}
		s.TakeOver = false
	}
	obs, changes, err := s.RefreshTargets(ctx, opts.Targets)
	if err != nil {
		return nil, err
	}
	st := s.view()
	curves, err := s.curves(st)
	if err != nil {
		return nil, err
	}
	values, err := s.seriesValues(st)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	moves := s.moves
	s.moves = nil
	s.retake = values
	s.mu.Unlock()
	return plan.Compute(plan.Input{
		Config: s.Config, State: st, Observed: changes, Listed: obs.Listed, Drift: obs.Drift,
		Warnings: obs.Warnings, Now: s.Now(), Options: opts, Curves: curves, Values: values, Moves: moves,
		Me: plan.MeOf(plan.WorkingCopyOf(s.Providers)),
	})
}

// takeOver records this working copy as the owner of the unfinished
// trials other working copies own, in the targeted experiments (all when
// targets is empty).
func (s *Session) takeOver(targets []string) error {
	me := plan.WorkingCopyOf(s.Providers)
	if me == nil {
		return fmt.Errorf("-take-over: this working copy has no identity (its .trialform directory cannot keep one)")
	}
	targeted := func(name string) bool {
		if len(targets) == 0 {
			return true
		}
		for _, t := range targets {
			if t == name || t == "experiment."+name {
				return true
			}
		}
		return false
	}
	var refs []state.TrialRef
	for name, e := range s.view().Experiments {
		if !targeted(name) {
			continue
		}
		for id, t := range e.Trials {
			if t.Elsewhere(me.ID) {
				refs = append(refs, state.TrialRef{Experiment: name, ID: id})
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	return s.changeTrials(refs, func(st *state.State) {
		for _, r := range refs {
			if t := st.Experiments[r.Experiment].Trials[r.ID]; t != nil {
				w := *me
				t.Owner = &w
			}
		}
	})
}

// MetricsReader is the optional part of a StateStore that reads a trial's
// metric series back; assessors need the intermediate results.
type MetricsReader interface {
	ReadMetrics(experiment, trial string) ([]state.MetricPoint, error)
}

type curveEntry struct {
	n    int // the trial's Intermediate count when read
	vals []float64
}

// curves reads the intermediate objective values of the trials of
// experiments that have an assessor. A trial's series is read again only
// when it reported more since.
func (s *Session) curves(st *state.State) (map[string]map[string][]float64, error) {
	r, ok := s.Store.(MetricsReader)
	if !ok {
		return nil, nil
	}
	s.curveMu.Lock()
	defer s.curveMu.Unlock()
	if s.curveCache == nil {
		s.curveCache = map[string]curveEntry{}
	}
	out := map[string]map[string][]float64{}
	for name, cfg := range s.Config.Experiments {
		e := st.Experiments[name]
		if cfg.Assessor == nil || e == nil {
			continue
		}
		m := map[string][]float64{}
		for id, t := range e.Trials {
			if t.Intermediate == 0 {
				continue
			}
			switch t.Status {
			case state.Running, state.Succeeded, state.EarlyStopped:
			default:
				continue
			}
			key := name + "\x00" + id
			if c, ok := s.curveCache[key]; ok && c.n == t.Intermediate {
				m[id] = c.vals
				continue
			}
			pts, err := r.ReadMetrics(name, id)
			if err != nil {
				return nil, err
			}
			vals := plan.CurveOf(pts, cfg.WatchedObjective().Metric)
			s.curveCache[key] = curveEntry{n: t.Intermediate, vals: vals}
			m[id] = vals
		}
		out[name] = m
	}
	return out, nil
}

// seriesValues reads, for the trials whose recorded value is not their
// value of the configuration's objective (plan.NeedsSeriesValue: an
// earlier generation's, under another metric or strategy), that value
// from their series. A finished trial's series does not change: each is
// read once a session (per objective).
func (s *Session) seriesValues(st *state.State) (map[string]map[string]*float64, error) {
	r, ok := s.Store.(MetricsReader)
	if !ok {
		return nil, nil
	}
	s.curveMu.Lock()
	defer s.curveMu.Unlock()
	if s.valueCache == nil {
		s.valueCache = map[string]*float64{}
	}
	out := map[string]map[string]*float64{}
	for name, cfg := range s.Config.Experiments {
		e := st.Experiments[name]
		if e == nil {
			continue
		}
		var m map[string]*float64
		for id, t := range e.Trials {
			if !plan.NeedsSeriesValue(cfg, e, t) {
				continue
			}
			if m == nil {
				m = map[string]*float64{}
			}
			key := name + "\x00" + id + "\x00" + cfg.Objective.Metric + "\x00" + cfg.Objective.Strategy + "\x00" + strconv.Itoa(t.Intermediate)
			if v, ok := s.valueCache[key]; ok {
				m[id] = v
				continue
			}
			pts, err := r.ReadMetrics(name, id)
			if err != nil {
				return nil, err
			}
			v := plan.SeriesValue(t, pts, cfg.Objective.Metric, cfg.Objective.Strategy)
			s.valueCache[key] = v
			m[id] = v
		}
		if m != nil {
			out[name] = m
		}
	}
	return out, nil
}

// recordRetaken records in the state what the last Plan took from the
// series of trials whose Value is another objective's (seriesValues), as
// each trial's value of its experiment's objective now (state.Retaken).
// A finished trial's series does not change, so it is taken once per
// objective, not at every plan; and the views, which read no series,
// show it.
func (s *Session) recordRetaken() error {
	s.mu.Lock()
	retake := s.retake
	s.retake = nil
	s.mu.Unlock()
	var refs []state.TrialRef
	for name, m := range retake {
		for id := range m {
			refs = append(refs, state.TrialRef{Experiment: name, ID: id})
		}
	}
	if len(refs) == 0 {
		return nil
	}
	return s.changeTrials(refs, func(st *state.State) {
		for name, m := range retake {
			e, cfg := st.Experiments[name], s.Config.Experiments[name]
			if e == nil || cfg == nil {
				continue
			}
			obj := state.ObjectiveFor(cfg.Objective.Metric, cfg.Objective.Strategy)
			for id, v := range m {
				if t := e.Trials[id]; t != nil && plan.NeedsSeriesValue(cfg, e, t) {
					r := &state.Retaken{ValueFor: obj}
					if v != nil {
						vv := *v
						r.Value = &vv
					}
					t.Retaken = r
				}
			}
		}
	})
}

// ErrStalePlan is returned when a saved plan no longer matches the state.
var ErrStalePlan = errors.New("saved plan is stale")

// CheckFresh refuses a saved plan computed from another state. A plan made
// when there was no state yet (serial 0) applies to a state that is still
// unsaved (serial 0): st adopts the plan's lineage. Once any state has
// been written, such a plan is stale.
func CheckFresh(p *plan.Plan, st *state.State) error {
	if p.Serial == 0 && st.Serial == 0 && p.Lineage != "" {
		st.Lineage = p.Lineage
	}
	if p.Lineage != st.Lineage {
		return fmt.Errorf("%w: it was made for state lineage %s but the state has lineage %s; run plan again", ErrStalePlan, p.Lineage, st.Lineage)
	}
	if p.Serial != st.Serial {
		return fmt.Errorf("%w: the state changed since the plan was made (serial %d, now %d); run plan again", ErrStalePlan, p.Serial, st.Serial)
	}
	return nil
}

// Apply executes p. Experiments are created or updated first, then
// teardowns, then resumes and creates (intent recorded before any start).
// Every action re-checks its precondition against the current state and
// is skipped when the world moved on. Errors of single trials are joined
// and returned after everything else was done.
func (s *Session) Apply(ctx context.Context, p *plan.Plan) error {
	now := s.Now().UTC()
	var errs []error

	// 1. Experiment records: their own fields only, so the save compares
	// those and no trial (a pass of apply -wait costs what changed, not
	// the history).
	secrets := s.Config.Secrets()
	err := s.changeTrials([]state.TrialRef{}, func(st *state.State) {
		for _, ep := range p.Experiments {
			if ep.Action == plan.Delete {
				continue
			}
			if cfg := s.Config.Experiments[ep.Name]; cfg != nil {
				recordMasks(recordExperiment(st, ep, cfg, now), secrets)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := s.recordRetaken(); err != nil {
		return err
	}

	// 2. Teardowns.
	var teardowns, starts []*plan.TrialAction
	for _, ep := range p.Experiments {
		for _, a := range ep.Trials {
			switch a.Action {
			case plan.Teardown:
				teardowns = append(teardowns, a)
			case plan.Create, plan.Resume:
				starts = append(starts, a)
			}
		}
	}
	errs = append(errs, s.parallel(ctx, teardowns, s.teardown)...)

	// 3. Deleted experiments leave the state once their trials are down.
	for _, ep := range p.Experiments {
		if ep.Action != plan.Delete {
			continue
		}
		name := ep.Name
		if p.Destroy && !s.purge(ctx, ep, &errs) {
			continue // keep the record so the next destroy retries
		}
		if err := s.change(func(st *state.State) {
			e := st.Experiments[name]
			if e == nil {
				return
			}
			for _, t := range e.Trials {
				if !state.Terminal(t.Status) {
					return // a teardown failed: keep the record so the next run retries
				}
			}
			delete(st.Experiments, name)
		}); err != nil {
			return err
		}
		if s.State().Experiment(name) == nil {
			if err := s.Store.RemoveMetrics(name); err != nil {
				errs = append(errs, fmt.Errorf("remove metrics of %s: %w", name, err))
			}
		}
	}

	// 4. Record the intent of every new trial, then start.
	if ctx.Err() == nil && len(starts) > 0 {
		refs := make([]state.TrialRef, 0, len(starts))
		for _, a := range starts {
			refs = append(refs, refOf(a)[0])
		}
		owners := s.owners(starts)
		err := s.changeTrials(refs, func(st *state.State) {
			for _, a := range starts {
				// The working copy whose private platform runs it (nil:
				// every working copy sees it) owns it from now on, before
				// it starts: a crash between the two leaves it to this one.
				if e := st.Experiments[a.Experiment]; e != nil && e.Trials[a.TrialID] != nil && !state.Terminal(e.Trials[a.TrialID].Status) {
					e.Trials[a.TrialID].Owner = owners[a.Experiment]
				}
				if a.Action == plan.Resume && a.Cause == plan.CauseReplace {
					// -replace of an ended trial: a new attempt, its old
					// result is no longer its result.
					if e := st.Experiment(a.Experiment); e != nil && e.Trials[a.TrialID] != nil && state.Terminal(e.Trials[a.TrialID].Status) && e.Trials[a.TrialID].Status == a.Status {
						t := e.Trials[a.TrialID]
						// Its last attempt keeps its StartedAt and EndedAt
						// until the new one starts: a PAUSED trial does not age.
						t.Status, t.Reason = state.Paused, a.Reason
						t.Value, t.Final, t.ExitCode = nil, nil, nil
					}
					continue
				}
				if a.Action != plan.Create || a.Recorded {
					continue
				}
				e := st.Experiments[a.Experiment]
				if e == nil || e.Trials[a.TrialID] != nil {
					continue
				}
				e.Trials[a.TrialID] = &state.Trial{
					ID: a.TrialID, Seq: a.Seq, ParameterID: a.ParameterID, Generation: a.Generation,
					SpecHash: e.SpecHash, Params: a.Params, Status: state.Waiting, CreatedAt: now,
					Owner: owners[a.Experiment],
				}
				if pv, ok := s.Provenance[a.Experiment]; ok {
					e.Trials[a.TrialID].Provenance = &pv
				}
				if a.Seq+1 > e.NextSeq {
					e.NextSeq = a.Seq + 1
				}
			}
		})
		if err != nil {
			return err
		}
		errs = append(errs, s.parallel(ctx, starts, s.start)...)
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// owners returns, per experiment of starts, the owner its new and resumed
// trials get: this working copy when the experiment's platform is private
// to it (providers.Private), nil otherwise.
func (s *Session) owners(starts []*plan.TrialAction) map[string]*state.WorkingCopy {
	me := plan.WorkingCopyOf(s.Providers)
	out := map[string]*state.WorkingCopy{}
	if me == nil {
		return out
	}
	cur := s.view()
	for _, a := range starts {
		e := cur.Experiments[a.Experiment]
		if e == nil {
			continue
		}
		if _, done := out[a.Experiment]; done {
			continue
		}
		out[a.Experiment] = nil
		prov, err := s.Providers.Provider(e.Platform)
		if err != nil {
			continue // the start reports it
		}
		if p, ok := prov.(providers.Private); ok && p.PrivateToWorkingCopy() {
			w := *me
			out[a.Experiment] = &w
		}
	}
	return out
}

// recordExperiment writes ep (planned from cfg) into st's experiment
// record, creating it when st has none.
func recordExperiment(st *state.State, ep *plan.ExperimentPlan, cfg *schema.Experiment, now time.Time) *state.Experiment {
	e := st.Experiments[ep.Name]
	if e == nil {
		e = &state.Experiment{Name: ep.Name, ID: ep.ID, CreatedAt: now, Trials: map[string]*state.Trial{}}
		st.Experiments[ep.Name] = e
	}
	e.Platform = ep.Platform
	e.Generation = ep.Generation
	e.SpecHash = ep.SpecHash
	e.PartHashes = plan.PartHashes(cfg)
	e.MaxTrials = ep.Settings.MaxTrials
	e.Concurrency = ep.Settings.Concurrency
	e.MaxFailedTrials = ep.Settings.MaxFailedTrials
	e.MaxDuration = ep.Settings.MaxDuration
	e.TrialMaxDuration = ep.Settings.TrialMaxDuration
	e.OnMaxDuration = ep.Settings.OnMaxDuration
	e.Goal = ep.Settings.Goal
	e.Metric = ep.Settings.Metric
	e.Strategy = ep.Settings.Strategy
	e.Objectives = nil
	for _, o := range ep.Settings.Objectives {
		e.Objectives = append(e.Objectives, state.Objective{Metric: o.Metric, Goal: o.Goal})
	}
	e.Paused = ep.Settings.Paused
	if ep.Done {
		if e.DoneAt == nil || e.DoneReason != ep.DoneReason {
			t := now
			e.DoneAt = &t
			e.DoneReason = ep.DoneReason
		}
		e.Failed = ep.Failed
	} else {
		e.DoneAt = nil
		e.DoneReason = ""
		e.Failed = false
	}
	return e
}

// recordMasks adds the hashes of secrets to e's masks (see
// state.Experiment.Masks), before any trial that could print them starts.
func recordMasks(e *state.Experiment, secrets []string) {
	if len(secrets) == 0 {
		return
	}
	var rec mask.Record
	if e.Masks != nil {
		rec = mask.Record{Salt: e.Masks.Salt, Hashes: e.Masks.Hashes}
	}
	rec, err := rec.With(secrets...)
	if err != nil {
		// a salt edited by hand: start the record again
		if rec, err = (mask.Record{}).With(secrets...); err != nil {
			return
		}
	}
	e.Masks = &state.Masks{Salt: rec.Salt, Hashes: rec.Hashes}
}

func (s *Session) parallel(ctx context.Context, actions []*plan.TrialAction, fn func(context.Context, *plan.TrialAction) error) []error {
	n := s.Parallelism
	if n <= 0 {
		n = 16
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for _, a := range actions {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(a *plan.TrialAction) {
			defer wg.Done()
			defer func() { <-sem }()
			s.Hooks.TrialAction(a, false, nil)
			// A started action finishes even after Ctrl-C, so its result
			// reaches the state.
			actx := context.WithoutCancel(ctx)
			if s.Hard != nil {
				actx = s.Hard
			}
			err := fn(actx, a)
			s.Hooks.TrialAction(a, true, err)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s trial %s/%s: %w", a.Action, a.Experiment, a.TrialID, err))
				mu.Unlock()
			}
		}(a)
	}
	wg.Wait()
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// fatal marks an error after which the run loop must stop (the state
// could not be saved).
type fatal struct{ err error }

func (f fatal) Error() string { return f.err.Error() }
func (f fatal) Unwrap() error { return f.err }

// IsFatal reports whether err means the state could not be saved.
func IsFatal(err error) bool {
	var f fatal
	return errors.As(err, &f)
}

// errSkipped marks an action whose precondition no longer holds.
type skipped struct{ why string }

func (e skipped) Error() string { return "skipped: " + e.why }

// IsSkipped reports whether an action was skipped because the world moved on.
func IsSkipped(err error) bool {
	var s skipped
	return errors.As(err, &s)
}

func (s *Session) teardown(ctx context.Context, a *plan.TrialAction) error {
	e, t, _ := s.trialView(a.Experiment, a.TrialID)
	if e == nil {
		return nil
	}
	platform := e.Platform
	var handle providers.Handle
	if t != nil {
		if state.Terminal(t.Status) {
			return nil
		}
		if me := plan.MeOf(plan.WorkingCopyOf(s.Providers)); t.Elsewhere(me) {
			return skipped{"the trial runs in " + t.Owner.Where + ", left to that working copy"}
		}
		handle = providers.Handle(t.Handle)
	}
	prov, err := s.Providers.Provider(platform)
	if err != nil {
		return err
	}
	if t != nil {
		// The intent first: killed between the stop and the record of
		// its end, the next refresh still ends the trial as intended.
		if err := s.changeTrials(refOf(a), func(st *state.State) {
			if e := st.Experiments[a.Experiment]; e != nil {
				if t := e.Trials[a.TrialID]; t != nil && !state.Terminal(t.Status) {
					t.Stopping = &state.Stopping{Status: teardownStatus(a.Cause), Reason: a.Reason}
				}
			}
		}); err != nil {
			return err
		}
	}
	grace := s.StopGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	if err := prov.Stop(ctx, providers.StopRequest{
		Experiment: e.OnPlatform(), TrialID: a.TrialID, Handle: handle, Grace: grace, Purge: a.Purge, Reason: a.Reason,
	}); err != nil {
		if s.handoff && errors.Is(err, providers.ErrUnreachable) {
			// The run loop: the trial keeps its teardown intent and a
			// later pass stops it once its machine answers; meanwhile
			// the pass has not failed (five in a row end the loop).
			return skipped{err.Error()}
		}
		return err
	}
	end := s.Now().UTC()
	return s.changeTrials(refOf(a), func(st *state.State) {
		e := st.Experiments[a.Experiment]
		if e == nil {
			return
		}
		if t := e.Trials[a.TrialID]; t != nil && !state.Terminal(t.Status) {
			// Stopped to start again (PAUSED): not ended, but this
			// attempt's process is gone, so its clock stops here
			// (EndedAt); a resume is a new attempt with its own
			// StartedAt.
			// A PAUSED or LOST trial's attempt stopped already: it keeps
			// that end (the time it waited did not run).
			stopped := (t.Status == state.Paused || t.Status == state.Lost) && t.EndedAt != nil
			t.Status, t.Reason, t.Stopping = teardownStatus(a.Cause), a.Reason, nil
			if !stopped {
				t.EndedAt = &end
			}
		}
	})
}

// teardownStatus is the status a teardown for cause leaves its trial in.
func teardownStatus(cause string) string {
	switch cause {
	case plan.CausePaused, plan.CauseReplace:
		return state.Paused
	case plan.CauseEarlyStop, plan.CauseTrialMaxDuration:
		// Past its own max_duration: stopped early, as NNI does at
		// maxTrialDuration. It used its budget slot (CANCELED would not
		// count, and an experiment whose trials all run too long would
		// never end).
		return state.EarlyStopped
	case plan.CauseStop:
		return state.UserCanceled
	default:
		return state.Canceled
	}
}

func (s *Session) start(ctx context.Context, a *plan.TrialAction) error {
	e, t, lineage := s.trialView(a.Experiment, a.TrialID)
	if e == nil {
		return skipped{"experiment not in state"}
	}
	if t == nil {
		return skipped{"trial not recorded"}
	}
	if me := plan.MeOf(plan.WorkingCopyOf(s.Providers)); t.Elsewhere(me) {
		return skipped{"the trial runs in " + t.Owner.Where + ", left to that working copy"}
	}
	switch {
	case a.Action == plan.Resume && t.Status != state.Lost && t.Status != state.Paused:
		return skipped{"trial is " + t.Status + ", not LOST or PAUSED"}
	case a.Action == plan.Create && t.Status != state.Waiting:
		return skipped{"trial is " + t.Status + ", not WAITING"}
	}
	cfg := s.Config.Experiments[a.Experiment]
	if cfg == nil {
		return skipped{"experiment not in the configuration"}
	}
	req, err := plan.StartRequest(cfg, e, t, a.Action == plan.Resume)
	if err != nil {
		return err
	}
	req.Lineage = lineage
	// The run loop needs no pid: the trial is recorded once its
	// supervisor has it, and the next pass's refresh reads the rest (it
	// plans while the supervisor starts the trial). A single apply waits,
	// so the state it leaves holds the trial's pids.
	req.Handoff = s.handoff
	prov, err := s.Providers.Provider(e.Platform)
	if err != nil {
		return err
	}
	h, err := prov.Start(ctx, req)
	if errors.Is(err, providers.ErrNoCapacity) {
		why := err.Error()
		_ = s.changeTrials(refOf(a), func(st *state.State) {
			if t := st.Experiments[a.Experiment].Trials[a.TrialID]; t != nil {
				t.Reason = why
			}
		})
		return skipped{why}
	}
	if err != nil {
		msg := err.Error()
		permanent := providers.IsPermanent(err)
		end := s.Now().UTC()
		_ = s.changeTrials(refOf(a), func(st *state.State) {
			t := st.Experiments[a.Experiment].Trials[a.TrialID]
			if t == nil {
				return
			}
			t.StartFailures++
			if permanent || t.StartFailures >= MaxStartFailures {
				// It will not start: it ends FAILED and counts toward
				// max_trials and max_failed_trials like any failed trial,
				// so a platform that cannot start anything ends the
				// experiment instead of holding its slots for ever.
				t.Status = state.Failed
				t.Reason = "failed to start: " + msg
				if t.EndedAt == nil {
					// A resumed trial keeps its last attempt's end (when it
					// was paused or lost): the time it waited did not run.
					t.EndedAt = &end
				}
				return
			}
			t.Reason = fmt.Sprintf("start failed (%d of %d attempts, retried on the next apply): %s", t.StartFailures, MaxStartFailures, msg)
		})
		return err
	}
	started := s.Now().UTC()
	record := s.changeTrials
	if req.Handoff {
		// Not saved on its own (the run loop's starts): the trial is
		// already saved as being created, and Start adopts what an
		// earlier Start made (the providers contract), so after a crash
		// the next apply finds it again. The next save (the pass's
		// observations) carries it: a launch costs one journal fsync fewer.
		record = s.noteTrials
	}
	return record(refOf(a), func(st *state.State) {
		t := st.Experiments[a.Experiment].Trials[a.TrialID]
		if t == nil {
			return
		}
		t.Handle = map[string]string(h)
		t.Status = state.Running
		t.Reason = ""
		t.Stopping = nil // a new attempt: no teardown of it began
		t.StartFailures = 0
		t.Attempts++
		if a.Action == plan.Resume || t.StartedAt == nil {
			t.StartedAt = &started
		}
		t.EndedAt = nil
		t.ExitCode = nil
	})
}

// MaxStartFailures is how many times in a row apply tries to start a
// trial (each apply or pass of apply -wait tries once) before it marks the
// trial FAILED. A permanent error (providers.Permanent) fails it at once.
const MaxStartFailures = 3

// purge asks the experiment's platform to remove what it still holds for
// it (providers.ExperimentPurger), once its trials are down. It reports
// whether the experiment may leave the state.
func (s *Session) purge(ctx context.Context, ep *plan.ExperimentPlan, errs *[]error) bool {
	if ep.Platform == "" {
		return true
	}
	prov, err := s.Providers.Provider(ep.Platform)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("destroy %s: %w", ep.Name, err))
		return false
	}
	st := s.State()
	on := ep.Name
	if e := st.Experiment(ep.Name); e != nil {
		on = e.OnPlatform()
		for _, t := range e.Trials {
			if !state.Terminal(t.Status) {
				return false // a teardown failed; the next destroy retries
			}
		}
	}
	pg, ok := prov.(providers.ExperimentPurger)
	if !ok {
		return s.purgeTensorBoard(prov, ep, on, errs)
	}
	if err := pg.PurgeExperiment(ctx, on, st.Lineage); err != nil {
		*errs = append(*errs, fmt.Errorf("destroy %s: remove its objects on %s: %w", ep.Name, ep.Platform, err))
		return false
	}
	return s.purgeTensorBoard(prov, ep, on, errs)
}

// tensorBoardRemover is a StateStore that keeps the local TensorBoard
// tree (state.Manager).
type tensorBoardRemover interface {
	RemoveTensorBoard(experiment string) error
}

// purgeTensorBoard removes the copies of the experiment's TensorBoard logs
// that `trialform tensorboard` made from a platform that syncs them
// (providers.TensorBoardSyncer); a platform that writes into the tree
// itself (local) removes its logs in PurgeExperiment. on is the name the
// experiment carries on its platform, which the copies are kept under.
func (s *Session) purgeTensorBoard(prov providers.Provider, ep *plan.ExperimentPlan, on string, errs *[]error) bool {
	tr, ok := s.Store.(tensorBoardRemover)
	if _, syncs := prov.(providers.TensorBoardSyncer); !ok || !syncs {
		return true
	}
	if err := tr.RemoveTensorBoard(on); err != nil {
		*errs = append(*errs, fmt.Errorf("destroy %s: %w", ep.Name, err))
		return false
	}
	return true
}

// refOf names the trial of an action, for changeTrials.
func refOf(a *plan.TrialAction) []state.TrialRef {
	return []state.TrialRef{{Experiment: a.Experiment, ID: a.TrialID}}
}

// ChangeExperiments changes experiments' own fields (not their trials:
// the save compares only the experiments' own fields) and saves the
// state: the controller's holds (state.Hold).
func (s *Session) ChangeExperiments(fn func(st *state.State)) error {
	return s.changeTrials([]state.TrialRef{}, fn)
}
