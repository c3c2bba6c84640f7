package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/internal/fsread"
	"github.com/trialform/trialform/internal/mask"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backends"
)

// runInit initializes the working copy's backend, as `terraform init`
// does: it records the configuration's backend block (kind and the
// settings that are not credentials) in the state directory, which every
// other command then checks the block against. When the block changed:
// -migrate-state copies the state, every metric series and the refresh
// marks from the recorded backend to the configured one; -reconfigure
// takes the configured one as it is.
func runInit(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	migrate := fs.Bool("migrate-state", false, "copy the state, its metric series and refresh marks from the recorded backend to the configured one")
	reconfigure := fs.Bool("reconfigure", false, "use the configured backend as it is, leaving the state in the recorded one where it is")
	var vf varFlags
	vf.register(fs)
	var lf lockFlags
	lf.register(fs)
	if _, code, ok := g.parse(fs, args, argSpec{hint: "init takes no arguments: trialform init [-migrate-state | -reconfigure]"}); !ok {
		return code
	}
	if *migrate && *reconfigure {
		return g.errorf("-migrate-state and -reconfigure exclude each other: copy the state to the new backend (-migrate-state) or use the new one as it is (-reconfigure)")
	}
	sd, err := g.stateDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	be, hasConfig, ok := g.configuredBackend(nil, &vf)
	if !ok {
		return 1
	}
	if !hasConfig {
		wd, _ := g.workDir()
		return g.errorf("%s has no configuration (*.hcl files): init reads its backend block", wd)
	}
	rec, err := state.RecordedBackend(sd)
	if err != nil && !*reconfigure {
		return g.errorf("%v", err)
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
	secrets := []string(nil)
	if be != nil {
		secrets = be.Secrets
	}
	dst, err := backends.Open(want.Kind, settings, g.backendEnv(sd))
	if err != nil {
		return g.errorf("%sopen the %s backend: %s", blockAt(be), want.Kind, maskText(secrets, err.Error()))
	}
	defer closeIfCloser(dst)
	if _, err := dst.Exists(); err != nil {
		return g.errorf("%sthe %s backend (%s) cannot be read: %s", blockAt(be), want.Kind, dst.Location(), maskText(secrets, err.Error()))
	}
	if want.Kind != state.LocalBackend {
		want.Location = dst.Location()
	}
	if have.Same(want) {
		if have.Location != "" && have.Location != want.Location && !*reconfigure {
			return g.errorf("%v", locationChangedError(have, want))
		}
		if *migrate {
			views.NothingToMigrate(g.IO.Out, backendView(dst))
			return 0
		}
		if err := state.RecordBackend(sd, want); err != nil {
			return g.errorf("%v", err)
		}
		views.BackendInitialized(g.IO.Out, backendView(dst), "")
		return 0
	}
	if *reconfigure {
		if err := state.RecordBackend(sd, want); err != nil {
			return g.errorf("%v", err)
		}
		views.BackendInitialized(g.IO.Out, backendView(dst), views.PreviousBackendLeft(have.String()))
		return 0
	}
	srcCfg, err := decodeRecordedSettings(have)
	if err != nil {
		return g.errorf("%v", err)
	}
	src, err := backends.Open(have.Kind, srcCfg, g.backendEnv(sd))
	if err != nil {
		return g.errorf("open the recorded %s backend: %s", have.Kind, maskText(secrets, err.Error()))
	}
	defer closeIfCloser(src)
	if have.Location != "" && have.Kind != state.LocalBackend && src.Location() != have.Location {
		// Its connection settings are not recorded: opened from the
		// environment, it must be the one this working copy used, or an
		// empty one elsewhere would pass for it (and its state be left
		// behind unseen).
		return g.errorf("this working copy's state is in the %s backend at %s, but its connection settings (not recorded; read from the environment now) point at %s; nothing was changed: set them for %s (PGHOST, PGDATABASE, ... for pg) and run init again, or run `trialform init -reconfigure` to leave that state where it is",
			have.Kind, have.Location, src.Location(), have.Location)
	}
	if !*migrate {
		// Nothing to copy: take the new backend without asking.
		empty, err := backendEmpty(src)
		if err != nil {
			return g.errorf("the recorded %s backend (%s) cannot be read: %s%s", have.Kind, src.Location(), maskText(secrets, err.Error()), recordedCredentialHint(have.Kind))
		}
		if !empty {
			return g.errorf("%v", backendChangedError(have, want))
		}
		if err := state.RecordBackend(sd, want); err != nil {
			return g.errorf("%v", err)
		}
		views.BackendInitialized(g.IO.Out, backendView(dst), views.PreviousBackendEmpty(have.Kind))
		return 0
	}
	if _, err := src.Exists(); err != nil {
		return g.errorf("the recorded %s backend (%s) cannot be read: %s; nothing was copied%s", have.Kind, src.Location(), maskText(secrets, err.Error()), recordedCredentialHint(have.Kind))
	}
	n, err := g.migrateState(ctx, src, dst, lf)
	if err != nil {
		return g.errorf("%s", maskText(secrets, err.Error()))
	}
	if err := state.RecordBackend(sd, want); err != nil {
		return g.errorf("the state was copied, but %v; run `trialform init -reconfigure` to record the new backend", err)
	}
	if n.Lineage == "" {
		views.NothingCopied(g.IO.Out, backendView(src), backendView(dst))
		return 0
	}
	views.StateCopied(g.IO.Out, n, backendView(src), backendView(dst))
	return 0
}

// recordedCredentialHint explains, for a recorded backend that cannot be
// reached, that its credential settings were not recorded: it is opened
// from the environment alone (the configuration now names another).
func recordedCredentialHint(kind string) string {
	k := backends.Lookup(kind)
	if k == nil || k.Config == nil {
		return ""
	}
	s, err := decl.SchemaOf(k.Config())
	if err != nil {
		return ""
	}
	var creds []string
	for _, a := range s.Attrs {
		if a.Sensitive {
			creds = append(creds, a.Name)
		}
	}
	if len(creds) == 0 {
		return ""
	}
	env := "the environment it reads"
	if kind == "pg" {
		env = "PGHOST, PGPORT, PGDATABASE, PGUSER and PGPASSWORD (or ~/.pgpass)"
	}
	return fmt.Sprintf(". The recorded %s backend's %s is never recorded, so it is opened from the environment alone: set %s to reach it (the same server and database its %s named), then run init again",
		kind, strings.Join(creds, ", "), env, strings.Join(creds, ", "))
}

func closeIfCloser(b state.Backend) {
	if c, ok := b.(io.Closer); ok {
		c.Close()
	}
}

func maskText(secrets []string, s string) string {
	if len(secrets) == 0 {
		return s
	}
	return mask.New(secrets...).String(s)
}

// decodeRecordedSettings decodes a record's settings into its kind's
// settings struct (the credentials then come from the environment: they
// are never recorded).
func decodeRecordedSettings(r state.BackendRecord) (any, error) {
	k := backends.Lookup(r.Kind)
	if k == nil {
		return nil, fmt.Errorf("the recorded backend kind %q is not one this trialform knows (%v): run `trialform init -reconfigure`", r.Kind, backends.Names())
	}
	if k.Config == nil {
		return nil, nil
	}
	cfg := k.Config()
	s, err := decl.SchemaOf(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.DecodeGo(r.Settings, cfg, func(name string) string { return fmt.Sprintf("setting %q", name) }); err != nil {
		return nil, fmt.Errorf("the recorded settings of the %s backend: %v; run `trialform init -reconfigure`", r.Kind, err)
	}
	return cfg, nil
}

// backendEmpty reports whether b holds no state and no trace of a lost
// one.
func backendEmpty(b state.Backend) (bool, error) {
	ok, err := b.Exists()
	if err != nil || ok {
		return false, err
	}
	ls, err := b.Lost()
	if err != nil {
		return false, err
	}
	return ls == nil, nil
}

// migrated counts what migrateState copied.
type migrated = views.Migrated

// migrateState copies the state, every metric series of its trials and
// its refresh marks from src to dst, holding both whole-state locks. It
// refuses to write over a state of another lineage, or over a newer one
// of the same lineage; a copy interrupted halfway can be run again.
func (g *Globals) migrateState(ctx context.Context, src, dst state.Backend, lf lockFlags) (migrated, error) {
	var n migrated
	slk, err := src.Lock(ctx, "init -migrate-state", Version, lf.timeout)
	if err != nil {
		return n, fmt.Errorf("lock the %s backend's state (%s): %w", src.Name(), src.Location(), err)
	}
	defer slk.Unlock()

	exists, err := src.Exists()
	if err != nil {
		return n, fmt.Errorf("read the %s backend's state: %w", src.Name(), err)
	}
	if !exists {
		if ls, err := src.Lost(); err != nil || ls != nil {
			if err == nil {
				err = errors.New(ls.String())
			}
			return n, fmt.Errorf("the %s backend holds no state but traces of a lost one; nothing was copied: %w", src.Name(), err)
		}
	}
	if !exists {
		return n, nil // nothing to copy: dst is taken as it is
	}
	// The destination's lock only once there is something to copy: a
	// shared state others are applying is joined without waiting for them.
	dlk, err := dst.Lock(ctx, "init -migrate-state", Version, lf.timeout)
	if err != nil {
		return n, fmt.Errorf("lock the %s backend's state (%s): %w", dst.Name(), dst.Location(), err)
	}
	defer dlk.Unlock()
	st, err := src.Load()
	if err != nil {
		return n, fmt.Errorf("read the %s backend's state: %w", src.Name(), err)
	}
	if err := checkOverwrite(dst, st, false); err != nil {
		return n, err
	}
	n.Lineage, n.Serial, n.Experiments = st.Lineage, st.Serial, len(st.Experiments)
	if exists {
		// What an earlier migration left in dst (a round trip local ->
		// pg -> local): the series of experiments its state holds that
		// st no longer does (renamed with state mv, or removed, since)
		// are stale: a later experiment of that name would inherit them.
		if ok, err := dst.Exists(); err != nil {
			return n, fmt.Errorf("read the %s backend's state: %w", dst.Name(), err)
		} else if ok {
			old, err := dst.Load()
			if err != nil {
				return n, fmt.Errorf("read the %s backend's state: %w", dst.Name(), err)
			}
			for _, name := range sortedKeys(old.Experiments) {
				if _, ok := st.Experiments[name]; ok {
					continue
				}
				if err := dst.RemoveMetrics(name); err != nil {
					return n, fmt.Errorf("remove the stale metric series of experiment %s (no longer in the state being copied) from the %s backend: %w", name, dst.Name(), err)
				}
			}
		}
		// Series first: a copy interrupted after them leaves dst without
		// a state, and the next run copies them again. Only the points
		// dst does not hold yet are appended, so a series an earlier
		// migration left there does not grow with each round trip.
		for _, name := range sortedKeys(st.Experiments) {
			e := st.Experiments[name]
			var batch []state.MetricsBatch
			for _, id := range sortedKeys(e.Trials) {
				n.Trials++
				pts, err := src.ReadMetrics(name, id)
				if err != nil {
					return n, fmt.Errorf("read the metric series of %s/%s: %w", name, id, err)
				}
				if len(pts) == 0 {
					continue
				}
				n.Series++
				n.Points += len(pts)
				have, err := dst.ReadMetrics(name, id)
				if err != nil {
					return n, fmt.Errorf("read the metric series of %s/%s in the %s backend: %w", name, id, dst.Name(), err)
				}
				if pts = missingPoints(pts, have); len(pts) > 0 {
					batch = append(batch, state.MetricsBatch{Experiment: name, Trial: id, Points: pts})
				}
			}
			if len(batch) > 0 {
				if err := dst.AppendMetricsBatch(batch); err != nil {
					return n, fmt.Errorf("write the metric series of experiment %s to the %s backend: %w", name, dst.Name(), err)
				}
			}
		}
		if err := putState(dst, st); err != nil {
			return n, fmt.Errorf("write the state to the %s backend: %w", dst.Name(), err)
		}
		marks := map[time.Time][]string{}
		for name, t := range src.RefreshedAt(st.Lineage) {
			marks[t] = append(marks[t], name)
		}
		for t, names := range marks {
			sort.Strings(names)
			if err := dst.MarkRefreshed(st.Lineage, names, t); err != nil {
				return n, fmt.Errorf("write the refresh marks to the %s backend: %w", dst.Name(), err)
			}
		}
	}
	return n, nil
}

// missingPoints is the points of pts that have does not hold, as readers
// tell points apart (type, sequence, attempt and value: a point appended
// twice is read once).
func missingPoints(pts, have []state.MetricPoint) []state.MetricPoint {
	if len(have) == 0 {
		return pts
	}
	type key struct {
		typ          string
		seq, attempt int
		value        string
	}
	keyOf := func(p state.MetricPoint) key {
		v := p.Value
		var b bytes.Buffer
		if json.Compact(&b, v) == nil {
			v = b.Bytes()
		}
		return key{p.Type, p.Sequence, p.Attempt, string(v)}
	}
	held := make(map[key]bool, len(have))
	for _, p := range have {
		held[keyOf(p)] = true
	}
	var out []state.MetricPoint
	for _, p := range pts {
		if !held[keyOf(p)] {
			out = append(out, p)
		}
	}
	return out
}

// checkOverwrite refuses to write st over a state of another lineage in
// b, or over a newer one of the same lineage (a higher serial), unless
// force.
func checkOverwrite(b state.Backend, st *state.State, force bool) error {
	ok, err := b.Exists()
	if err != nil {
		return fmt.Errorf("read the %s backend's state (%s): %w", b.Name(), b.Location(), err)
	}
	if !ok || force {
		return nil
	}
	cur, err := b.Load()
	if err != nil {
		return fmt.Errorf("read the %s backend's state (%s): %w", b.Name(), b.Location(), err)
	}
	switch {
	case cur.Lineage != st.Lineage:
		return fmt.Errorf("the %s backend (%s) already holds a state of another lineage (%s, serial %d; the state being written has lineage %s): refusing to overwrite it, nothing was written. Use that state as it is (`trialform init -reconfigure`), or remove it from the backend first",
			b.Name(), b.Location(), cur.Lineage, cur.Serial, st.Lineage)
	case cur.Serial > st.Serial:
		return fmt.Errorf("the %s backend (%s) already holds a newer version of this state (serial %d; the state being written has serial %d): refusing to overwrite it, nothing was written",
			b.Name(), b.Location(), cur.Serial, st.Serial)
	}
	return nil
}

// putState makes st the state of b, keeping its lineage and serial where b
// can (Replacer), else through Save over what b holds.
func putState(b state.Backend, st *state.State) error {
	if r, ok := b.(state.Replacer); ok {
		return r.Replace(st.Clone())
	}
	cp := st.Clone()
	ok, err := b.Exists()
	if err != nil {
		return err
	}
	if ok {
		cur, err := b.Load()
		if err != nil {
			return err
		}
		if cur.Lineage != cp.Lineage {
			return fmt.Errorf("the %s backend cannot replace a state of another lineage (%s)", b.Name(), cur.Lineage)
		}
		cp.Serial = cur.Serial
	} else {
		cp.Serial = 0
	}
	return state.SaveWhole(b, cp)
}

// runStatePull prints the state as a document (the local backend's file
// format), whichever backend holds it.
func (g *Globals) statePull() int {
	_, m, ok := g.openBackend(nil)
	if !ok {
		return 1
	}
	st := g.loadState(m)
	if st == nil {
		return 1
	}
	if ok, err := m.Exists(); err != nil {
		return g.errorf("%v", err)
	} else if !ok {
		return g.errorf("there is no state in the %s backend (%s) to pull", m.Name(), m.Location())
	}
	b, err := state.Encode(st)
	if err != nil {
		return g.errorf("%v", err)
	}
	views.StateDocument(g.IO.Out, b)
	return 0
}

// statePush writes the state document in path ("-": standard input) as
// the backend's state, holding the whole-state lock. Without force it
// refuses a state of another lineage, or one older (a lower serial) than
// what the backend holds, as Terraform's state push does.
func (g *Globals) statePush(ctx context.Context, path string, force bool, lf lockFlags) int {
	var data []byte
	var err error
	name := path
	if path == "-" {
		name = "standard input"
		data, err = io.ReadAll(io.LimitReader(g.IO.In, fsread.MaxState+1))
		if err == nil && len(data) > fsread.MaxState {
			err = &fsread.TooLargeError{Path: name, Limit: fsread.MaxState}
		}
	} else {
		data, err = fsread.ReadFile(path, fsread.MaxState)
	}
	if err != nil {
		return g.errorf("state push: %v", err)
	}
	st, err := state.Decode(name, data)
	if err != nil {
		var ce *state.CorruptError
		if errors.As(err, &ce) {
			return g.errorf("state push: %s is not a trialform state: it %s; nothing was pushed", name, ce.Problem)
		}
		return g.errorf("state push: %v; nothing was pushed", err)
	}
	if err := state.CheckDocument(name, data, st); err != nil {
		return g.errorf("state push: %v; nothing was pushed", err)
	}
	if err := state.Check(st); err != nil {
		return g.errorf("state push: %s is not a state trialform wrote: %v; nothing was pushed: fix it in the document (a hand edit, or one made in the backend's storage, gone wrong)", name, err)
	}
	if !g.checkPushedParams(name, st) {
		return 1
	}
	// The whole-state lock, without reading the state first (as the
	// other commands do): a state no command can read is what a push of
	// a good copy repairs.
	_, m, ok := g.openBackend(nil)
	if !ok {
		return 1
	}
	lk, err := state.LockScope(ctx, m, nil, "state push", Version, lf.timeout)
	if err != nil {
		return g.errorf("acquire the state lock: %v", err)
	}
	defer lk.Unlock()
	var held *state.State // what the backend holds; nil: no state yet, or unreadable
	var ce *state.CorruptError
	if ex, err := m.Exists(); err != nil {
		return g.errorf("state push: %v", err)
	} else if ex {
		// An unreadable state is replaced whole: the local backend keeps
		// the unreadable file aside, a Replacer (pg, kubernetes) writes
		// the pushed copy over what it holds.
		_, replaces := m.(state.Replacer)
		local := m.Name() == state.LocalBackend
		var je *state.JournalError
		if held, err = m.Load(); local && errors.As(err, &je) {
			// A damaged journal record: as unreadable as a damaged
			// state.json, and repaired the same way (Replace keeps the
			// journal aside).
			if !force {
				return g.errorf("state push: %s", je.PushAdvice(name))
			}
			ce = &state.CorruptError{Path: je.Path, Problem: fmt.Sprintf("record %d (byte offset %d) %s", je.Record, je.Offset, je.Problem), Err: je}
			g.warnf("state push -force: the state the %s backend holds cannot be read (%s %s): %s replaces it, unchecked against it; the damaged journal is kept beside it, as %s.corrupt", m.Name(), ce.Path, ce.Problem, name, je.Path)
		} else if errors.As(err, &ce) && (local || replaces) {
			if !force {
				if local {
					return g.errorf("state push: %v; or replace it with this copy: trialform state push -force %s (the unreadable file is kept beside it, as %s.corrupt)", err, name, ce.Path)
				}
				return g.errorf("state push: %v; to replace it with this copy: trialform state push -force %s", err, name)
			}
			kept := "the unreadable one is kept beside it"
			if !local {
				kept = "the unreadable one is deleted"
			}
			g.warnf("state push -force: the state the %s backend holds cannot be read (%s %s): %s replaces it, unchecked against it; %s", m.Name(), ce.Path, ce.Problem, name, kept)
		} else if err != nil {
			ce = nil
			return g.errorf("state push: %v", err)
		}
	}
	if err := g.checkPushedHandles(name, held, st, m.Name() == "local", force); err != nil {
		return g.errorf("state push: %v (or push it anyway with -force)", err)
	}
	if ce == nil {
		err = checkOverwrite(m, st, false)
		if err == nil {
			err = sameSerialDiffers(m, st)
		}
	}
	if err != nil {
		if !force {
			return g.errorf("state push: %v (or push it anyway with -force)", err)
		}
		if _, ok := m.(state.Replacer); !ok {
			if cur, lerr := m.Load(); lerr == nil && cur.Lineage != st.Lineage {
				return g.errorf("state push -force: the %s backend cannot replace a state of another lineage; nothing was pushed", m.Name())
			}
		}
	}
	// The metric series of a state of another lineage that -force
	// replaces belong to its trials, not to the pushed state's trials of
	// the same experiment and id: they go with it (after the push, so a
	// failed push loses nothing).
	var stale []string
	var staleLineage string
	if force && ce == nil {
		if ex, _ := m.Exists(); ex {
			if old, lerr := m.Load(); lerr == nil && old.Lineage != st.Lineage {
				stale, staleLineage = sortedKeys(old.Experiments), old.Lineage
			}
		}
	}
	if err := putState(m, st); err != nil {
		return g.errorf("state push: %v", err)
	}
	if dropped := droppedTrials(held, st); len(dropped) > 0 {
		g.warnf("%s", droppedAdvice(name, held, st, dropped))
	}
	for _, n := range stale {
		if err := m.RemoveMetrics(n); err != nil {
			g.warnf("state push: the metric series of experiment %s of the replaced state (lineage %s) could not be removed: %v; they may show as the pushed trials' intermediate results", n, staleLineage, err)
		}
	}
	if len(stale) > 0 {
		views.MetricSeriesRemoved(g.IO.Out, staleLineage, stale)
	}
	cur, err := m.Load()
	if err != nil {
		return g.errorf("state push: read back: %v", err)
	}
	views.StatePushed(g.IO.Out, name, m.Name(), m.Location(), cur.Lineage, cur.Serial)
	return 0
}

// checkPushedHandles refuses (an error, unless force: then a warning) a
// pushed state that brings unfinished trials this working copy could
// neither read nor tear down where they run (foreignTrials).
// cur is the state the backend holds (nil: none).
func (g *Globals) checkPushedHandles(name string, cur, st *state.State, localBackend, force bool) error {
	sd, _ := g.stateDir()
	cfg := g.loadConfigQuiet()
	ps := newProviderSet(cfg, sd)
	defer ps.Close()
	found := foreignTrials(st, cur, cfg, ps, localBackend, func(w string) { g.warnf("state push: %s: %s", name, w) })
	if len(found) == 0 {
		return nil
	}
	list := "\n  - " + strings.Join(found, "\n  - ")
	if force {
		g.warnf("state push -force: %s holds trials this working copy cannot reach where they run:%s\nPushed anyway: once they have ended where they run, `trialform state rm experiment.NAME.trial.ID` forgets each one that stays unfinished here", name, list)
		return nil
	}
	return fmt.Errorf("%s holds trials this working copy cannot reach where they run:%s\nnothing was pushed: push it in the working copy (and with the platform settings) that runs them, or wait until they end there and pull the state again", name, list)
}

// checkPushedParams checks the pushed trials' parameters against the
// search spaces of the configuration in the working directory, if there
// is one. A trial of the generation the experiment is at, whose
// definition the configuration still has (same spec hash), must hold a
// value of each parameter of its search space: one that does not (a
// hand edit: x = "hello" for a uniform) is refused, as the tuner would
// learn from it. One of an older generation, or of an experiment whose
// definition changed since, may have left the space: a warning.
func (g *Globals) checkPushedParams(name string, st *state.State) bool {
	trials := 0
	for _, e := range st.Experiments {
		trials += len(e.Trials)
	}
	if trials == 0 {
		return true
	}
	cfg := g.loadConfigQuiet()
	if cfg == nil {
		g.warnf("state push: no valid configuration in the working directory: the parameters of %s's trials were not checked against their experiments' search spaces", name)
		return true
	}
	warned := 0
	for _, en := range sortedKeys(st.Experiments) {
		e := st.Experiments[en]
		ce := cfg.Experiments[en]
		if ce == nil {
			continue
		}
		current := e.SpecHash == plan.SpecHash(ce)
		for _, id := range sortedKeys(e.Trials) {
			t := e.Trials[id]
			err := plan.CheckTrialParams(ce, t.Params)
			if err == nil {
				continue
			}
			if current && t.Generation == e.Generation {
				g.errorf("state push: %s: trial %q of experiment %q (generation %d, the experiment's definition in the configuration): %v; nothing was pushed: fix the parameter in the document", name, id, en, t.Generation, err)
				return false
			}
			if warned++; warned <= 3 {
				g.warnf("state push: %s: trial %q of experiment %q (generation %d; the experiment is at %d, and the configuration's definition is %s): %v", name, id, en, t.Generation, e.Generation, map[bool]string{true: "the state's", false: "another"}[current], err)
			}
		}
	}
	if warned > 3 {
		g.warnf("state push: %s: %d more trials hold parameters outside their experiment's search space in the configuration", name, warned-3)
	}
	return true
}

// sameSerialDiffers refuses a state whose serial is the one b holds, of
// the same lineage, but whose content differs: two versions must never
// share a serial.
func sameSerialDiffers(b state.Backend, st *state.State) error {
	ok, err := b.Exists()
	if err != nil || !ok {
		return err
	}
	cur, err := b.Load()
	if err != nil || cur.Lineage != st.Lineage || cur.Serial != st.Serial {
		return err
	}
	x, err1 := state.Encode(cur)
	y, err2 := state.Encode(st)
	if err1 != nil || err2 != nil || string(x) != string(y) {
		return fmt.Errorf("the %s backend (%s) holds another version of this state with the same serial %d: refusing to overwrite it, nothing was written", b.Name(), b.Location(), cur.Serial)
	}
	return nil
}

// backendView is b as init reports it.
func backendView(b state.Backend) views.Backend {
	return views.Backend{Name: b.Name(), Location: b.Location()}
}
