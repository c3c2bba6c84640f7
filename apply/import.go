package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner/space"
)

// Imported is what Import recorded.
type Imported struct {
	Experiment string
	Trial      *state.Trial // as recorded (a copy)
	// PreviousLineage is the lineage that owned the trial's objects
	// before ("" when they carried none).
	PreviousLineage string
}

// Import adopts trial id of experiment exp, which the experiment's
// platform holds but the state does not know (an orphan of this state, or
// a trial of another state), into the state: the platform's Importer
// reports its parameters, sequence number and handle and re-owns its
// objects to this state's lineage; the trial is recorded in the
// experiment's current generation as if this state had started it, then
// read once as refresh reads it (status, metrics). An experiment the state
// does not hold yet is recorded first, as apply would create it. The
// caller holds the state lock.
func (s *Session) Import(ctx context.Context, exp, id string) (*Imported, error) {
	cfg, cur, platform, prov, err := s.platformOf(exp)
	if err != nil {
		return nil, err
	}
	if e := cur.Experiment(exp); e != nil && e.Trials[id] != nil && !neverStarted(e.Trials[id]) {
		t := e.Trials[id]
		return nil, alreadyInState(exp, id, t.Status)
	}
	on := exp
	if e := cur.Experiment(exp); e != nil {
		on = e.OnPlatform()
	}
	im, ok := prov.(providers.Importer)
	if !ok {
		return nil, fmt.Errorf("platform %s cannot import trials (the %s platform does not support import); the next apply tears an orphan of this state down, and leaves another state's trials alone", platform, prov.Kind())
	}
	// The trial is re-owned to this state's lineage, and to the
	// experiment instance and generation it is recorded in, so that a
	// later Start (a resume) adopts it.
	expID, gen := plan.ExperimentID(cur.Lineage, exp, cur.Serial), 1
	if e := cur.Experiment(exp); e != nil {
		expID, gen = e.ID, e.Generation
	}
	got, err := im.Import(ctx, providers.ImportRequest{Experiment: on, TrialID: id, Lineage: cur.Lineage, ExperimentID: expID, Generation: gen})
	if errors.Is(err, providers.ErrNotFound) {
		return nil, fmt.Errorf("trial %s of experiment %s is not on platform %s (%v); `trialform plan` lists the orphans it finds", id, exp, platform, err)
	}
	if err != nil {
		return nil, fmt.Errorf("import %s/%s from %s: %w", exp, id, platform, err)
	}
	o := got.Observation
	giveBack := func() {
		// The state does not take the trial: its objects go back to
		// their owner.
		if prev := got.Previous; prev.Lineage != cur.Lineage || prev.ExperimentID != expID || prev.Generation != gen {
			_, _ = im.Import(context.WithoutCancel(ctx), providers.ImportRequest{Experiment: on, TrialID: id, Lineage: got.PreviousLineage, ExperimentID: prev.ExperimentID, Generation: prev.Generation})
		}
	}
	if !o.Exists {
		return nil, fmt.Errorf("trial %s of experiment %s is not on platform %s", id, exp, platform)
	}
	if !fits(cfg.SearchSpace.Space, got.Params) {
		giveBack()
		// What becomes of it, and how to import it after all.
		fate := "the next apply tears it down as an orphan; to keep it"
		if got.PreviousLineage != "" && got.PreviousLineage != cur.Lineage {
			fate = fmt.Sprintf("it stays with the state that started it (lineage %s); to import it", got.PreviousLineage)
		} else if o.Phase.Ended() {
			fate = "it stays out of the state and its result out of the tuner's history; to import it"
		}
		return nil, fmt.Errorf("trial %s/%s has parameters %s that do not fit search space %q of the configuration, so the tuner's history cannot hold it; it was left as it was: %s, give search space %q a range that holds these parameters, then import it again",
			exp, id, trialproto.ParamsJSON(got.Params), cfg.SearchSpace.Name, fate, cfg.SearchSpace.Name)
	}
	now := s.Now().UTC()
	var rec *state.Trial
	var conflict error
	err = s.change(func(st *state.State) {
		e := st.Experiments[exp]
		if e == nil {
			ep := &plan.ExperimentPlan{
				Name: exp, ID: expID, Platform: platform,
				Generation: 1, SpecHash: plan.SpecHash(cfg), Settings: plan.SettingsOf(cfg),
			}
			e = recordExperiment(st, ep, cfg, now)
		}
		// the imported trial's output is masked as an applied one's
		recordMasks(e, s.Config.Secrets())
		if t := e.Trials[id]; t != nil && !neverStarted(t) {
			conflict = alreadyInState(exp, id, t.Status)
			return
		}
		t := &state.Trial{
			ID: id, Seq: got.Seq, ParameterID: got.ParameterID, Generation: e.Generation, SpecHash: e.SpecHash,
			Params: got.Params, Status: state.Running, Handle: map[string]string(o.Handle), Attempts: 1, CreatedAt: now,
		}
		if o.StartedAt != nil {
			started := o.StartedAt.UTC()
			t.StartedAt = &started
		}
		if o.Phase == providers.PhaseLost {
			t.Status, t.Reason = state.Lost, nonEmpty(o.Reason, "lost on its platform when imported")
		}
		e.Trials[id] = t
		if got.Seq+1 > e.NextSeq {
			e.NextSeq = got.Seq + 1
		}
		rec = t.Clone()
	})
	if err == nil && conflict != nil {
		err = conflict
	}
	if err != nil {
		giveBack()
		return nil, err
	}
	// Read it once as refresh does: an ended trial gets its result now.
	if o2, err := prov.Read(ctx, providers.ReadRequest{Experiment: on, TrialID: id, Handle: o.Handle}); err == nil {
		obs := &plan.Observations{Trials: map[string]map[string]providers.Observation{exp: {id: o2}}}
		if _, err := s.observe(obs, now); err != nil {
			return nil, err
		}
		if _, t, _ := s.trialView(exp, id); t != nil {
			rec = t
		}
	}
	return &Imported{Experiment: exp, Trial: rec, PreviousLineage: got.PreviousLineage}, nil
}

// platformOf returns experiment exp's configuration, a copy of the state,
// and the platform (and its provider) where its trials are: the one in
// the state, else the configured one.
func (s *Session) platformOf(exp string) (*schema.Experiment, *state.State, string, providers.Provider, error) {
	cfg := s.Config.Experiments[exp]
	if cfg == nil {
		return nil, nil, "", nil, fmt.Errorf("experiment %q is not in the configuration (experiments: %s); import adopts trials into experiments the configuration defines", exp, strings.Join(slices.Sorted(maps.Keys(s.Config.Experiments)), ", "))
	}
	cur := s.State()
	platform := cfg.Platform.Key()
	if e := cur.Experiment(exp); e != nil {
		platform = e.Platform
	}
	prov, err := s.Providers.Provider(platform)
	return cfg, cur, platform, prov, err
}

// Orphans lists the trials exp's platform holds that the state does not
// know (or holds only as never started), running or ended: what
// `import -all` adopts.
func (s *Session) Orphans(ctx context.Context, exp string) ([]string, error) {
	_, cur, platform, prov, err := s.platformOf(exp)
	if err != nil {
		return nil, err
	}
	e := cur.Experiment(exp)
	l, ok := prov.(providers.Lister)
	if !ok {
		return nil, fmt.Errorf("platform %s cannot list its trials, so it has no orphans to import", platform)
	}
	on := exp
	if e != nil {
		on = e.OnPlatform()
	}
	list, err := l.List(ctx, on)
	if err != nil {
		return nil, fmt.Errorf("list trials of %s on %s: %w", exp, platform, err)
	}
	var ids []string
	for _, o := range list {
		if !o.Exists {
			continue
		}
		if e != nil && e.Trials[o.TrialID] != nil && !neverStarted(e.Trials[o.TrialID]) {
			continue
		}
		ids = append(ids, o.TrialID)
	}
	sort.Strings(ids)
	return ids, nil
}

// neverStarted reports whether a trial of the state was only proposed:
// waiting, no platform handle (its start failed or never came, e.g.
// because another state's trial holds the id). An import replaces it.
func neverStarted(t *state.Trial) bool {
	return t.Status == state.Waiting && len(t.Handle) == 0
}

// fits reports whether params hold a value in sp for every parameter of
// sp. Extra parameters a tuner adds (hyperband's TRIAL_BUDGET, PBT's
// checkpoint dirs) are allowed.
func fits(sp *space.Space, params map[string]any) bool {
	if sp == nil {
		return true
	}
	own := space.Params{}
	for _, p := range sp.Params {
		if v, ok := params[p.Name]; ok {
			own[p.Name] = v
		}
	}
	return sp.Contains(own)
}

func nonEmpty(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// alreadyInState is import's error for a trial the state holds. The
// platform's trial may still not be the state's (its record lost, or
// edited with state push: the platform then refuses it, naming import):
// the error says how to take it in the record's place.
func alreadyInState(exp, id, status string) error {
	return fmt.Errorf("trial %s/%s is already in the state (%s); there is nothing to import: to take the trial the platform holds in its place, run `trialform state rm experiment.%s.trial.%s`, then import it again",
		exp, id, status, exp, id)
}
