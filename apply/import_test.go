package apply

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner/space"
)

// platformTrials is a Lister and Importer double: trials the platform
// holds, by id, with their lineage.
type platformTrials struct {
	*recorder
	mu2     sync.Mutex
	held    map[string]providers.Observation
	params  map[string]map[string]any // by trial id; default {"x": 0.25}
	imports []providers.ImportRequest
}

func (p *platformTrials) List(_ context.Context, exp string) ([]providers.Observation, error) {
	p.mu2.Lock()
	defer p.mu2.Unlock()
	var out []providers.Observation
	for _, o := range p.held {
		out = append(out, o)
	}
	return out, nil
}

func (p *platformTrials) Read(_ context.Context, req providers.ReadRequest) (providers.Observation, error) {
	p.mu2.Lock()
	defer p.mu2.Unlock()
	if o, ok := p.held[req.TrialID]; ok {
		if o.Phase.Ended() && req.MetricsOffset["n"] == 0 {
			o.Metrics = []providers.Metric{{Type: "FINAL", Value: "0.75"}}
			o.MetricsOffset = map[string]int64{"n": 1}
		}
		return o, nil
	}
	return providers.Observation{TrialID: req.TrialID}, nil
}

func (p *platformTrials) Import(_ context.Context, req providers.ImportRequest) (providers.Imported, error) {
	p.mu2.Lock()
	defer p.mu2.Unlock()
	p.imports = append(p.imports, req)
	o, ok := p.held[req.TrialID]
	if !ok {
		return providers.Imported{}, fmt.Errorf("no such job: %w", providers.ErrNotFound)
	}
	prev := o.Lineage
	o.Lineage = req.Lineage
	p.held[req.TrialID] = o
	var seq int
	fmt.Sscanf(req.TrialID, "t%d", &seq)
	params := p.params[req.TrialID]
	if params == nil {
		params = map[string]any{"x": 0.25}
	}
	return providers.Imported{Seq: seq, ParameterID: seq, Params: params, PreviousLineage: prev, Observation: o}, nil
}

func running(id, lineage string) providers.Observation {
	return providers.Observation{TrialID: id, Experiment: "exp", Exists: true, Phase: providers.PhaseRunning, Lineage: lineage, Handle: providers.Handle{"id": id}}
}

func TestImportAdoptsOrphan(t *testing.T) {
	store := &memStore{}
	s, rec := newSession(config(2, 10), store)
	ctx := context.Background()
	p, err := s.Plan(ctx, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	pt := &platformTrials{recorder: rec, held: map[string]providers.Observation{
		"t0000": running("t0000", "L"), "t0001": running("t0001", "L"),
		"t0007": running("t0007", "L"), // an orphan of this state
		"t0009": running("t0009", "other"),
	}}
	pt.held["t0008"] = providers.Observation{TrialID: "t0008", Experiment: "exp", Exists: true, Phase: providers.PhaseSucceeded, Lineage: "other", Handle: providers.Handle{"id": "t0008"}}
	s.Providers = oneProvider{pt}

	p, err = s.Plan(ctx, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := actionsOf(p); !strings.Contains(got, "teardown t0007") {
		t.Fatalf("before import: %s", got)
	}
	ids, err := s.Orphans(ctx, "exp")
	// Running and ended ones (a lost state's finished trials are history
	// worth having back).
	if err != nil || fmt.Sprint(ids) != "[t0007 t0008 t0009]" {
		t.Fatalf("Orphans = %v, %v", ids, err)
	}

	for _, id := range []string{"t0007", "t0009", "t0008"} {
		imp, err := s.Import(ctx, "exp", id)
		if err != nil {
			t.Fatalf("import %s: %v", id, err)
		}
		if imp.Trial.Params["x"] != 0.25 || imp.Trial.Handle["id"] != id {
			t.Fatalf("imported %+v", imp.Trial)
		}
	}
	saved := store.last().Experiments["exp"]
	if saved.NextSeq != 10 {
		t.Errorf("NextSeq = %d, want 10", saved.NextSeq)
	}
	if tr := saved.Trials["t0007"]; tr.Status != state.Running || tr.Seq != 7 || tr.Generation != saved.Generation || tr.SpecHash != saved.SpecHash {
		t.Errorf("t0007 = %+v", tr)
	}
	if tr := saved.Trials["t0008"]; tr.Status != state.Succeeded || tr.Value == nil || *tr.Value != 0.75 {
		t.Errorf("ended t0008 = %+v", tr)
	}
	if pt.held["t0009"].Lineage != "L" {
		t.Errorf("t0009 not re-owned: %+v", pt.held["t0009"])
	}

	// The next plan counts them: no orphan, no foreign warning, and with
	// 4 running of concurrency 2 nothing new.
	p, err = s.Plan(ctx, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := actionsOf(p); got != "" || len(p.Warnings) > 0 {
		t.Fatalf("after import: actions %q warnings %v", got, p.Warnings)
	}
}

func TestImportErrors(t *testing.T) {
	store := &memStore{}
	s, rec := newSession(config(1, 1), store)
	ctx := context.Background()
	p, _ := s.Plan(ctx, plan.Options{})
	if err := s.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ exp, id, want string }{
		{"nope", "t0000", `experiment "nope" is not in the configuration`},
		// the platform's own trial (the owner error's advice) is taken by
		// removing the state's record first: the error says so
		{"exp", "t0000", "already in the state (RUNNING); there is nothing to import: to take the trial the platform holds in its place, run `trialform state rm experiment.exp.trial.t0000`, then import it again"},
		{"exp", "t0005", "platform local.default cannot import"},
	}
	for _, c := range cases {
		if _, err := s.Import(ctx, c.exp, c.id); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("import %s %s = %v, want %q", c.exp, c.id, err, c.want)
		}
	}
	pt := &platformTrials{recorder: rec, held: map[string]providers.Observation{"t0006": running("t0006", "other")},
		params: map[string]map[string]any{"t0006": {"x": 7.0, "TRIAL_BUDGET": 3.0}}}
	s.Providers = oneProvider{pt}
	if _, err := s.Import(ctx, "exp", "t0005"); err == nil || !strings.Contains(err.Error(), "trial t0005 of experiment exp is not on platform local.default") {
		t.Errorf("import of a missing trial = %v", err)
	}
	// Parameters outside the search space are refused, and the trial goes
	// back to its owner.
	if _, err := s.Import(ctx, "exp", "t0006"); err == nil || !strings.Contains(err.Error(), `trial exp/t0006 has parameters {"TRIAL_BUDGET":3,"x":7} that do not fit search space "s"`) ||
		!strings.Contains(err.Error(), "it stays with the state that started it (lineage other); to import it, give search space \"s\" a range that holds these parameters, then import it again") {
		t.Errorf("import of a trial outside the space = %v", err)
	}
	// An orphan of this state (state rm, then the space narrowed): the
	// error says the next apply tears it down, and how to keep it.
	pt.held["t0007"] = running("t0007", store.last().Lineage)
	pt.params["t0007"] = map[string]any{"x": 7.0}
	if _, err := s.Import(ctx, "exp", "t0007"); err == nil || !strings.Contains(err.Error(), `trial exp/t0007 has parameters {"x":7} that do not fit search space "s"`) ||
		!strings.Contains(err.Error(), "the next apply tears it down as an orphan; to keep it, give search space \"s\" a range that holds these parameters, then import it again") {
		t.Errorf("import of this state's orphan outside the space = %v", err)
	}
	if l := pt.held["t0006"].Lineage; l != "other" || store.last().Experiments["exp"].Trials["t0006"] != nil {
		t.Errorf("refused trial: lineage %q, in state %v", l, store.last().Experiments["exp"].Trials["t0006"] != nil)
	}
	// A tuner's extra parameters are fine.
	pt.params["t0006"]["x"] = 0.5
	if _, err := s.Import(ctx, "exp", "t0006"); err != nil {
		t.Errorf("import with TRIAL_BUDGET: %v", err)
	}
}

// An experiment the state does not hold yet is recorded as apply would
// create it.
func TestImportIntoNewExperiment(t *testing.T) {
	store := &memStore{}
	s, rec := newSession(config(1, 5), store)
	pt := &platformTrials{recorder: rec, held: map[string]providers.Observation{"t0003": running("t0003", "other")}}
	s.Providers = oneProvider{pt}
	imp, err := s.Import(context.Background(), "exp", "t0003")
	if err != nil {
		t.Fatal(err)
	}
	e := store.last().Experiments["exp"]
	if e == nil || e.Platform != "local.default" || e.Generation != 1 || e.MaxTrials != 5 || e.NextSeq != 4 || e.Trials["t0003"] == nil || imp.PreviousLineage != "other" {
		t.Fatalf("experiment %+v, imported %+v", e, imp)
	}
}

func actionsOf(p *plan.Plan) string {
	var out []string
	for _, ep := range p.Experiments {
		for _, a := range ep.Trials {
			out = append(out, string(a.Action)+" "+a.TrialID)
		}
	}
	return strings.Join(out, ", ")
}

// An imported trial's parameters are in the tuner's history: the grid
// goes on with the next point instead of proposing them again.
func TestImportCountsInTunerHistory(t *testing.T) {
	cfg := config(2, 3)
	e := cfg.Experiments["exp"]
	e.Tuner = tunerSpec("grid", 0, nil)
	e.SearchSpace.Space = &space.Space{Params: []space.Param{{Name: "x", Kind: space.Choice, Options: []space.Option{{Value: 0.25}, {Value: 0.5}, {Value: 0.75}}}}}
	store := &memStore{}
	s, rec := newSession(cfg, store)
	s.Providers = oneProvider{&platformTrials{recorder: rec, held: map[string]providers.Observation{"t0000": running("t0000", "other")}}}
	if _, err := s.Import(context.Background(), "exp", "t0000"); err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(context.Background(), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ep := p.Experiments[0]
	if len(ep.Trials) != 1 || ep.Trials[0].TrialID != "t0001" || ep.Trials[0].Params["x"] != 0.5 {
		t.Fatalf("plan after import: %s %+v", actionsOf(p), ep.Trials)
	}
}

// TestImportReplacesNeverStarted: a trial this state only proposed (its
// start was refused: another state's trial holds the id) is replaced by
// the imported one, whose parameters are what really ran.
func TestImportReplacesNeverStarted(t *testing.T) {
	store := &memStore{}
	s, rec := newSession(config(1, 1), store)
	ctx := context.Background()
	s.Providers = oneProvider{&platformTrials{recorder: rec, held: map[string]providers.Observation{}}}
	p, err := s.Plan(ctx, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Record the proposed trial without starting it, as a refused start
	// leaves it.
	if err := s.change(func(st *state.State) {
		e := recordExperiment(st, p.Experiments[0], s.Config.Experiments["exp"], s.Now())
		e.Trials["t0000"] = &state.Trial{ID: "t0000", Status: state.Waiting, Params: map[string]any{"x": 0.9}}
	}); err != nil {
		t.Fatal(err)
	}
	pt := &platformTrials{recorder: rec, held: map[string]providers.Observation{"t0000": running("t0000", "other")}}
	s.Providers = oneProvider{pt}
	ids, err := s.Orphans(ctx, "exp")
	if err != nil || fmt.Sprint(ids) != "[t0000]" {
		t.Fatalf("Orphans = %v, %v", ids, err)
	}
	imp, err := s.Import(ctx, "exp", "t0000")
	if err != nil {
		t.Fatal(err)
	}
	if imp.Trial.Status != state.Running || imp.Trial.Params["x"] != 0.25 || imp.PreviousLineage != "other" {
		t.Fatalf("imported %+v from %q", imp.Trial, imp.PreviousLineage)
	}
	// A trial that did start is not replaced.
	if _, err := s.Import(ctx, "exp", "t0000"); err == nil || !strings.Contains(err.Error(), "already in the state") {
		t.Fatalf("second import: %v", err)
	}
}
