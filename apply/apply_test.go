package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner/space"
)

// memStore records every saved state (deep copies).
type memStore struct {
	mu     sync.Mutex
	saves  []*state.State
	failAt int // Save number that fails (1-based), 0 = never
	points int
}

func (m *memStore) Save(s *state.State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAt > 0 && len(m.saves)+1 == m.failAt {
		return errors.New("disk full")
	}
	s.Serial++
	m.saves = append(m.saves, s.Clone())
	return nil
}
func (m *memStore) AppendMetrics(_, _ string, pts []state.MetricPoint) error {
	m.mu.Lock()
	m.points += len(pts)
	m.mu.Unlock()
	return nil
}
func (m *memStore) RemoveMetrics(string) error { return nil }
func (m *memStore) last() *state.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.saves) == 0 {
		return nil
	}
	return m.saves[len(m.saves)-1]
}

// recorder is a provider double that checks apply's ordering: a trial must
// be recorded in saved state before Start is called for it.
type recorder struct {
	store   *memStore
	mu      sync.Mutex
	started map[string]int
	stopped map[string]int
	errs    []string
}

func (r *recorder) Kind() string                   { return "test" }
func (r *recorder) Validate(context.Context) error { return nil }
func (r *recorder) Close() error                   { return nil }
func (r *recorder) Read(_ context.Context, req providers.ReadRequest) (providers.Observation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started[req.TrialID] > 0 {
		return providers.Observation{TrialID: req.TrialID, Exists: true, Phase: providers.PhaseRunning}, nil
	}
	return providers.Observation{TrialID: req.TrialID}, nil
}
func (r *recorder) Start(_ context.Context, req providers.StartRequest) (providers.Handle, error) {
	st := r.store.last()
	r.mu.Lock()
	defer r.mu.Unlock()
	if st == nil || st.Experiments[req.Experiment] == nil || st.Experiments[req.Experiment].Trials[req.TrialID] == nil {
		r.errs = append(r.errs, req.TrialID+" started before its intent was saved")
	}
	if req.Shell == "" || !strings.Contains(req.Shell, "--x ") {
		r.errs = append(r.errs, "bad shell line "+req.Shell)
	}
	r.started[req.TrialID]++
	return providers.Handle{"id": req.TrialID}, nil
}
func (r *recorder) Stop(_ context.Context, req providers.StopRequest) error {
	st := r.store.last()
	r.mu.Lock()
	if e := st.Experiments[req.Experiment]; e != nil && e.Trials[req.TrialID] != nil && e.Trials[req.TrialID].Stopping == nil {
		r.errs = append(r.errs, req.TrialID+" stopped before its teardown was saved")
	}
	r.stopped[req.TrialID]++
	r.mu.Unlock()
	return nil
}

type oneProvider struct{ p providers.Provider }

func (o oneProvider) Provider(string) (providers.Provider, error) { return o.p, nil }

func config(concurrency, maxTrials int) *schema.Config {
	pl := &schema.Platform{Kind: "local", Name: "default"}
	sp := &schema.SearchSpace{Name: "s", Space: &space.Space{Params: []space.Param{{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}}}}}
	e := &schema.Experiment{
		Name: "exp", Platform: pl, SearchSpace: sp, Objective: schema.Objective{Metric: "default", Goal: "maximize"},
		Tuner: tunerSpec("random", 1, nil), MaxTrials: maxTrials, Concurrency: concurrency,
		Trial: schema.TrialSpec{CodeDir: "/tmp", Command: &schema.Template{Segments: []schema.Segment{{Literal: "run --x "}, {Param: "x"}}}},
	}
	return &schema.Config{Platforms: map[string]*schema.Platform{"local.default": pl}, Experiments: map[string]*schema.Experiment{"exp": e}}
}

func newSession(cfg *schema.Config, store *memStore) (*Session, *recorder) {
	rec := &recorder{store: store, started: map[string]int{}, stopped: map[string]int{}}
	st := &state.State{Version: state.FormatVersion, Lineage: "L", Experiments: map[string]*state.Experiment{}}
	s := NewSession(cfg, st, store, oneProvider{rec})
	s.Now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	return s, rec
}

func TestApplyRecordsIntentBeforeStart(t *testing.T) {
	store := &memStore{}
	s, rec := newSession(config(8, 8), store)
	p, err := s.Plan(context.Background(), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(rec.errs) > 0 {
		t.Fatal(rec.errs)
	}
	if len(rec.started) != 8 {
		t.Fatalf("started %d trials", len(rec.started))
	}
	final := store.last().Experiments["exp"]
	for id, tr := range final.Trials {
		if tr.Status != state.Running || tr.Handle["id"] != id || tr.Attempts != 1 {
			t.Fatalf("trial %s = %+v", id, tr)
		}
	}
	if final.NextSeq != 8 {
		t.Fatalf("NextSeq = %d", final.NextSeq)
	}
	// Applying the same plan again starts nothing twice.
	if err := s.Apply(context.Background(), p); err == nil || !onlySkipped(err) {
		t.Fatalf("re-apply: %v", err)
	}
	for id, n := range rec.started {
		if n != 1 {
			t.Fatalf("trial %s started %d times", id, n)
		}
	}
}

func TestApplyStopsWhenStateCannotBeSaved(t *testing.T) {
	store := &memStore{failAt: 2} // the refresh save works, the experiment record fails
	s, rec := newSession(config(4, 4), store)
	p, err := s.Plan(context.Background(), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Apply(context.Background(), p)
	if !IsFatal(err) {
		t.Fatalf("err = %v, want fatal", err)
	}
	if len(rec.started) != 0 {
		t.Fatalf("%d trials started without their intent saved", len(rec.started))
	}
}

func TestRunReachesBudget(t *testing.T) {
	store := &memStore{}
	s, rec := newSession(config(3, 7), store)
	// Trials "finish" as soon as they were seen running once.
	done := &finisher{recorder: rec}
	s.Providers = oneProvider{done}
	passes := 0
	last, err := s.Run(context.Background(), RunOptions{Interval: time.Millisecond, OnPass: func(*plan.Plan, error) { passes++ }})
	if err != nil {
		t.Fatal(err)
	}
	if !Finished(last) {
		t.Fatal("Run returned before the experiment finished")
	}
	e := store.last().Experiments["exp"]
	if len(e.Trials) != 7 {
		t.Fatalf("%d trials, want 7", len(e.Trials))
	}
	for id, tr := range e.Trials {
		if tr.Status != state.Succeeded || rec.started[id] != 1 {
			t.Fatalf("trial %s: %s, started %d times", id, tr.Status, rec.started[id])
		}
	}
	if store.points != 7 {
		t.Fatalf("%d metric points recorded", store.points)
	}
	if e.DoneReason == "" {
		t.Fatal("done reason not recorded")
	}
	_ = passes
}

// finisher reports every started trial as succeeded with a final metric.
type finisher struct{ *recorder }

func (f *finisher) Read(_ context.Context, req providers.ReadRequest) (providers.Observation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started[req.TrialID] == 0 {
		return providers.Observation{TrialID: req.TrialID}, nil
	}
	zero := 0
	o := providers.Observation{TrialID: req.TrialID, Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero}
	if req.MetricsOffset["n"] == 0 {
		o.Metrics = []providers.Metric{{Type: "FINAL", Value: fmt.Sprint(len(req.TrialID))}}
		o.MetricsOffset = map[string]int64{"n": 1}
	}
	return o, nil
}

// A teardown is recorded (the trial's Stopping) before the platform is
// asked to stop the trial, and cleared with the trial's end: killed in
// between, the next refresh ends the trial as the teardown meant.
func TestApplyRecordsTeardownIntentBeforeStop(t *testing.T) {
	store := &memStore{}
	cfg := config(2, 2)
	s, rec := newSession(cfg, store)
	for pass := 0; pass < 2; pass++ {
		if pass == 1 {
			cfg.Experiments["exp"].Paused = true
		}
		p, err := s.Plan(context.Background(), plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.stopped) != 2 {
		t.Fatalf("stopped %v, want both trials", rec.stopped)
	}
	for _, e := range rec.errs {
		t.Error(e)
	}
	for _, tr := range store.last().Experiments["exp"].Trials {
		if tr.Status != state.Paused || tr.Stopping != nil {
			t.Errorf("%s: %s, stopping %+v; want PAUSED with no teardown pending", tr.ID, tr.Status, tr.Stopping)
		}
	}
}
