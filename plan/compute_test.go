package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/mask"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner"
	"github.com/trialform/trialform/tuner/space"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func testConfig(mutate ...func(e *schema.Experiment)) *schema.Config {
	pl := &schema.Platform{Kind: "local", Name: "default"}
	sp := &schema.SearchSpace{Name: "s", Space: &space.Space{Params: []space.Param{
		{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}},
		{Name: "k", Kind: space.Choice, Options: []space.Option{{Value: "a"}, {Value: "b"}}},
	}}}
	e := &schema.Experiment{
		Name: "exp", Platform: pl, SearchSpace: sp,
		Objective: schema.Objective{Metric: "default", Goal: "maximize"},
		Tuner:     tunerSpec("random", 1, map[string]any{"seed": float64(1)}),
		MaxTrials: 5, Concurrency: 2,
		Trial: schema.TrialSpec{CodeDir: "/code", Command: &schema.Template{Segments: []schema.Segment{
			{Literal: "python3 main.py --x "}, {Param: "x"}, {Literal: " --k "}, {Param: "k"},
		}}},
	}
	for _, m := range mutate {
		m(e)
	}
	return &schema.Config{
		Platforms:   map[string]*schema.Platform{"local.default": pl},
		Spaces:      map[string]*schema.SearchSpace{"s": sp},
		Experiments: map[string]*schema.Experiment{"exp": e},
	}
}

// applied returns a state as apply would leave it after creating exp from
// cfg, with the given trials.
func applied(cfg *schema.Config, trials ...*state.Trial) *state.State {
	e := cfg.Experiments["exp"]
	se := &state.Experiment{
		Name: "exp", ID: "abcdefgh", Platform: "local.default", Generation: 1,
		SpecHash: SpecHash(e), PartHashes: PartHashes(e),
		MaxTrials: e.MaxTrials, Concurrency: e.Concurrency, Goal: "maximize", Metric: "default",
		CreatedAt: t0, Trials: map[string]*state.Trial{},
	}
	for _, t := range trials {
		if t.Generation == 0 {
			t.Generation = 1
		}
		se.Trials[t.ID] = t
		if t.Seq+1 > se.NextSeq {
			se.NextSeq = t.Seq + 1
		}
	}
	return &state.State{Version: state.FormatVersion, Lineage: "L", Serial: 3, Experiments: map[string]*state.Experiment{"exp": se}}
}

func trial(seq int, status string, value ...float64) *state.Trial {
	t := &state.Trial{ID: TrialID(seq), Seq: seq, ParameterID: seq, Status: status,
		Params: map[string]any{"x": float64(seq) / 10, "k": "a"}, CreatedAt: t0}
	if len(value) > 0 {
		v := value[0]
		t.Value = &v
	}
	if status == state.Running {
		s := t0
		t.StartedAt = &s
	}
	return t
}

func compute(t *testing.T, cfg *schema.Config, st *state.State, now time.Time, opts Options, listed ...providers.Observation) *Plan {
	t.Helper()
	in := Input{Config: cfg, State: st, Now: now, Options: opts}
	if len(listed) > 0 {
		in.Listed = map[string][]providers.Observation{"exp": listed}
	}
	p, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func actions(p *Plan) string {
	var out []string
	for _, ep := range p.Experiments {
		for _, a := range ep.Trials {
			out = append(out, a.Action.Symbol()+a.TrialID)
		}
	}
	return strings.Join(out, " ")
}

func TestCreateNewExperiment(t *testing.T) {
	cfg := testConfig()
	st := &state.State{Version: state.FormatVersion, Lineage: "L", Experiments: map[string]*state.Experiment{}}
	p := compute(t, cfg, st, t0, Options{})
	if got := actions(p); got != "+t0000 +t0001" {
		t.Fatalf("actions = %q", got)
	}
	ep := p.Experiments[0]
	if ep.Action != Create || ep.ID == "" || ep.Generation != 1 {
		t.Fatalf("experiment plan = %+v", ep)
	}
	for _, a := range ep.Trials {
		x, ok := a.Params["x"].(float64)
		if !ok || x < 0 || x > 1 {
			t.Fatalf("param x = %v", a.Params["x"])
		}
		if !strings.HasPrefix(a.Command, "python3 main.py --x ") || !strings.Contains(a.Command, "--k '") {
			t.Fatalf("command = %q", a.Command)
		}
	}
	if p.Summary != (Summary{Create: 2, Update: 1}) || !p.HasChanges() {
		t.Fatalf("summary = %+v", p.Summary)
	}
	// Same inputs, same plan.
	p2 := compute(t, cfg, st, t0, Options{})
	if !reflect.DeepEqual(p, p2) {
		t.Fatal("two computations of the same input differ")
	}
}

func TestBudgetAndConcurrency(t *testing.T) {
	cfg := testConfig()
	cases := []struct {
		name   string
		trials []*state.Trial
		want   string
		done   bool
	}{
		{"one running, one slot", []*state.Trial{trial(0, state.Running)}, "+t0001", false},
		{"full", []*state.Trial{trial(0, state.Running), trial(1, state.Running)}, "", false},
		{"budget nearly used", []*state.Trial{trial(0, state.Succeeded, 1), trial(1, state.Succeeded, 1), trial(2, state.Failed), trial(3, state.Succeeded, 1)}, "+t0004", false},
		{"budget used", []*state.Trial{trial(0, state.Succeeded, 1), trial(1, state.Succeeded, 1), trial(2, state.Failed), trial(3, state.Succeeded, 1), trial(4, state.Succeeded, 2)}, "", true},
		{"canceled trials do not count", []*state.Trial{trial(0, state.Canceled), trial(1, state.Canceled), trial(2, state.Canceled), trial(3, state.Canceled), trial(4, state.Succeeded, 2)}, "+t0005 +t0006", false},
		{"lost resumes first", []*state.Trial{trial(0, state.Lost), trial(1, state.Running)}, "~t0000", false},
		{"recorded intent starts", []*state.Trial{trial(0, state.Waiting)}, "+t0000 +t0001", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := compute(t, cfg, applied(cfg, c.trials...), t0.Add(time.Minute), Options{})
			if got := actions(p); got != c.want {
				t.Fatalf("actions = %q, want %q", got, c.want)
			}
			if p.Experiments[0].Done != c.done {
				t.Fatalf("done = %v (%s)", p.Experiments[0].Done, p.Experiments[0].DoneReason)
			}
		})
	}
}

func TestRecordedCreateKeepsParams(t *testing.T) {
	cfg := testConfig()
	w := trial(0, state.Waiting)
	p := compute(t, cfg, applied(cfg, w), t0, Options{})
	a := p.Experiments[0].Trials[0]
	if !a.Recorded || !reflect.DeepEqual(a.Params, w.Params) {
		t.Fatalf("recorded create = %+v", a)
	}
}

func TestConcurrencyLoweredDrains(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) { e.Concurrency = 1 })
	st := applied(testConfig(), trial(0, state.Running), trial(1, state.Running))
	p := compute(t, cfg, st, t0, Options{})
	ep := p.Experiments[0]
	if got := actions(p); got != "" {
		t.Fatalf("lowering concurrency must not tear down: %q", got)
	}
	if ep.Action != Update || len(ep.Changes) != 1 || ep.Changes[0].Path != "concurrency" || !ep.Changes[0].InPlace {
		t.Fatalf("changes = %+v", ep.Changes)
	}
	if len(ep.Notes) == 0 || !strings.Contains(ep.Notes[0], "drain") {
		t.Fatalf("notes = %v", ep.Notes)
	}
}

func TestNewGeneration(t *testing.T) {
	old := testConfig()
	cfg := testConfig(func(e *schema.Experiment) {
		e.Tuner = tunerSpec("random", 2, map[string]any{"seed": float64(2)})
	})
	st := applied(old, trial(0, state.Running), trial(1, state.Succeeded, 0.5))
	p := compute(t, cfg, st, t0, Options{})
	ep := p.Experiments[0]
	if !ep.NewGeneration || ep.Generation != 2 || !reflect.DeepEqual(ep.GenerationReason, []string{"tuner"}) {
		t.Fatalf("generation: %+v", ep)
	}
	if got := actions(p); got != "-t0000 +t0002 +t0003" {
		t.Fatalf("actions = %q", got)
	}
	for _, a := range ep.Trials {
		if a.Action == Create && a.Generation != 2 {
			t.Fatalf("new trial in generation %d", a.Generation)
		}
	}
}

func TestRemovedExperimentAndDestroy(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running), trial(1, state.Succeeded, 1))
	empty := &schema.Config{Experiments: map[string]*schema.Experiment{}}
	p := compute(t, empty, st, t0, Options{})
	if got := actions(p); got != "-t0000" || p.Experiments[0].Action != Delete {
		t.Fatalf("removed: %q %v", got, p.Experiments[0].Action)
	}
	p = compute(t, cfg, st, t0, Options{Destroy: true})
	if got := actions(p); got != "-t0000" || !p.Experiments[0].Trials[0].Purge {
		t.Fatalf("destroy: %q", got)
	}
}

func TestOrphansAndForeign(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running))
	p := compute(t, cfg, st, t0, Options{},
		providers.Observation{TrialID: "t0009", Exists: true, Phase: providers.PhaseRunning, Lineage: "L"},
		providers.Observation{TrialID: "t0010", Exists: true, Phase: providers.PhaseRunning, Lineage: "OTHER"},
		providers.Observation{TrialID: "t0011", Exists: true, Phase: providers.PhaseSucceeded, Lineage: "L"},
	)
	if got := actions(p); got != "-t0009" {
		t.Fatalf("actions = %q", got)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "t0010") || !strings.Contains(p.Warnings[0], "trialform import exp t0010") {
		t.Fatalf("warnings = %v", p.Warnings)
	}
	if n := p.Experiments[0].Notes; len(n) != 1 || !strings.Contains(n[0], "trial t0009 is an orphan") || !strings.Contains(n[0], "`trialform import exp t0009`") {
		t.Fatalf("notes = %v", n)
	}

	// An experiment the state does not hold yet: the platform's unfinished
	// trials are named in a warning (new trials would take them over).
	p = compute(t, cfg, state.New(), t0, Options{},
		providers.Observation{TrialID: "t0000", Exists: true, Phase: providers.PhaseRunning, Lineage: "OTHER"},
		providers.Observation{TrialID: "t0001", Exists: true, Phase: providers.PhaseFailed, Lineage: "OTHER"},
	)
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "holds 1 unfinished trial(s) of it (t0000)") || !strings.Contains(p.Warnings[0], "trialform import -all exp") {
		t.Fatalf("warnings for a new experiment = %v", p.Warnings)
	}
}

func TestLimits(t *testing.T) {
	t.Run("max_failed_trials", func(t *testing.T) {
		cfg := testConfig(func(e *schema.Experiment) { e.MaxFailedTrials = 2 })
		p := compute(t, cfg, applied(cfg, trial(0, state.Failed), trial(1, state.Failed)), t0, Options{})
		if !p.Experiments[0].Done || actions(p) != "" || !strings.Contains(p.Experiments[0].DoneReason, "max_failed_trials") {
			t.Fatalf("%+v", p.Experiments[0])
		}
	})
	t.Run("experiment max_duration", func(t *testing.T) {
		cfg := testConfig(func(e *schema.Experiment) { e.MaxDuration = time.Hour })
		p := compute(t, cfg, applied(cfg, trial(0, state.Running)), t0.Add(2*time.Hour), Options{})
		if !p.Experiments[0].Done || actions(p) != "-t0000" {
			t.Fatalf("%q %+v", actions(p), p.Experiments[0])
		}
	})
	t.Run("experiment max_duration, on_max_duration = finish", func(t *testing.T) {
		// NNI's maxExperimentDuration: no new trials, the running ones
		// finish; the plan says so.
		cfg := testConfig(func(e *schema.Experiment) {
			e.MaxDuration, e.OnMaxDuration, e.Concurrency = time.Hour, schema.OnMaxDurationFinish, 3
		})
		p := compute(t, cfg, applied(cfg, trial(0, state.Running), trial(1, state.Succeeded, 1)), t0.Add(2*time.Hour), Options{})
		ep := p.Experiments[0]
		if !ep.Done || actions(p) != "" || ep.DoneReason != "max_duration (1h) reached" {
			t.Fatalf("%q %+v", actions(p), ep)
		}
		// Trials that are not running do not start again, in either
		// mode: they end, so apply -wait can return.
		for _, c := range []*schema.Config{cfg, testConfig(func(e *schema.Experiment) { e.MaxDuration, e.Concurrency = time.Hour, 3 })} {
			p := compute(t, c, applied(c, trial(0, state.Lost), trial(1, state.Waiting), trial(2, state.Paused)), t0.Add(2*time.Hour), Options{})
			if got := actions(p); got != "-t0000 -t0001 -t0002" || !strings.Contains(p.Experiments[0].Trials[0].Reason, "while the trial was lost: it does not start again") {
				t.Fatalf("on_max_duration = %s: %q %+v", c.Experiments["exp"].OnMaxDuration, got, p.Experiments[0].Trials)
			}
		}
		if len(ep.Notes) != 1 || !strings.Contains(ep.Notes[0], `no new trials are proposed (on_max_duration = "finish"); 1 running trial(s) are left to finish`) {
			t.Fatalf("notes = %q", ep.Notes)
		}
		if ep.Settings.OnMaxDuration != "finish" {
			t.Fatalf("settings %+v", ep.Settings)
		}
		// Before the deadline it plans as usual.
		if got := actions(compute(t, cfg, applied(cfg, trial(0, state.Running)), t0.Add(time.Minute), Options{})); got != "+t0001 +t0002" {
			t.Fatalf("before the deadline: %q", got)
		}
		// The stop default says what it does and what finish would do.
		stop := testConfig(func(e *schema.Experiment) { e.MaxDuration = time.Hour })
		ep = compute(t, stop, applied(stop, trial(0, state.Running)), t0.Add(2*time.Hour), Options{}).Experiments[0]
		if len(ep.Notes) != 1 || !strings.Contains(ep.Notes[0], `running trials are torn down (on_max_duration = "stop"`) ||
			!strings.Contains(ep.Trials[0].Reason, `on_max_duration = "stop"`) {
			t.Fatalf("stop: notes %q, reason %q", ep.Notes, ep.Trials[0].Reason)
		}
		// Changing it is an in-place change (a state from before the
		// attribute reads as "stop").
		old := applied(stop, trial(0, state.Running))
		old.Experiments["exp"].MaxDuration, old.Experiments["exp"].Concurrency = "1h", 3
		ch := compute(t, cfg, old, t0, Options{}).Experiments[0].Changes
		if len(ch) != 1 || ch[0].Path != "on_max_duration" || ch[0].Before != "stop" || ch[0].After != "finish" || !ch[0].InPlace {
			t.Fatalf("changes %+v", ch)
		}
	})
	t.Run("trial max_duration", func(t *testing.T) {
		cfg := testConfig(func(e *schema.Experiment) { e.Trial.MaxDuration = time.Minute })
		p := compute(t, cfg, applied(cfg, trial(0, state.Running)), t0.Add(time.Hour), Options{})
		if got := actions(p); got != "-t0000 +t0001 +t0002" {
			t.Fatalf("actions = %q", got)
		}
	})
	t.Run("raising max_trials reopens", func(t *testing.T) {
		old := testConfig(func(e *schema.Experiment) { e.MaxTrials = 1 })
		cfg := testConfig(func(e *schema.Experiment) { e.MaxTrials = 2 })
		p := compute(t, cfg, applied(old, trial(0, state.Succeeded, 1)), t0, Options{})
		if got := actions(p); got != "+t0001" || p.Experiments[0].Changes[0].Path != "max_trials" {
			t.Fatalf("actions = %q changes %+v", got, p.Experiments[0].Changes)
		}
	})
}

func TestTargets(t *testing.T) {
	cfg := testConfig()
	st := &state.State{Version: state.FormatVersion, Lineage: "L", Experiments: map[string]*state.Experiment{}}
	if _, err := Compute(Input{Config: cfg, State: st, Now: t0, Options: Options{Targets: []string{"experiment.nope"}}}); err == nil {
		t.Fatal("unknown target accepted")
	}
	p := compute(t, cfg, st, t0, Options{Targets: []string{"experiment.exp"}})
	if len(p.Experiments) != 1 {
		t.Fatal("target filtered everything")
	}
}

// The refresh records which objective a trial's Value is for (metric and
// strategy). A trial of an earlier generation whose last reports are read
// after the objective changed (acc under max -> loss under min; it was torn
// down) keeps its own objective's value: the new objective's reports are
// not folded into it.
func TestObserveRecordsValueFor(t *testing.T) {
	cfg := testConfig()
	zero := 0
	old := trial(1, state.Running, 0.9)
	old.ValueFor = &state.ValueFor{Metric: "acc", Strategy: "max"}
	st := applied(cfg, trial(0, state.Running), old)
	e := st.Experiments["exp"]
	e.Generation, e.Metric, e.Goal, e.Strategy = 2, "loss", "minimize", "min"
	e.Trials["t0000"].Generation = 2
	obs := &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, Metrics: []providers.Metric{
			{Type: "PERIODICAL", Value: `{"loss": 0.3, "acc": 0.6}`}, {Type: "FINAL", Value: `{"loss": 0.4, "acc": 0.8}`}}},
		"t0001": {Exists: true, Phase: providers.PhaseKilled, Metrics: []providers.Metric{
			{Type: "PERIODICAL", Value: `{"loss": 0.05, "acc": 0.7}`}}},
	}}}
	Observe(st, obs, t0)
	if tr := e.Trials["t0000"]; tr.Value == nil || *tr.Value != 0.3 || tr.ValueFor == nil || *tr.ValueFor != (state.ValueFor{Metric: "loss", Strategy: "min"}) {
		t.Errorf("t0000: value %v for %+v, want 0.3 for loss under min", tr.Value, tr.ValueFor)
	}
	if tr := e.Trials["t0001"]; tr.Value == nil || *tr.Value != 0.9 || tr.ValueFor == nil || *tr.ValueFor != (state.ValueFor{Metric: "acc", Strategy: "max"}) {
		t.Errorf("t0001: value %v for %+v, want its own 0.9 for acc under max", tr.Value, tr.ValueFor)
	}
}

func TestObserve(t *testing.T) {
	cfg := testConfig()
	zero, three := 0, 3
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running), trial(2, state.Running), trial(3, state.Running), trial(4, state.Waiting))
	obs := &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, Metrics: []providers.Metric{
			{Type: "PERIODICAL", Value: "0.1"}, {Type: "FINAL", Value: `{"default": 0.75, "loss": 0.2}`}}},
		"t0001": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero},
		"t0002": {Exists: false},
		"t0003": {Exists: true, Phase: providers.PhaseFailed, ExitCode: &three, Reason: "exit status 3"},
		"t0004": {Exists: true, Phase: providers.PhaseRunning, Handle: providers.Handle{"pid": "1"}},
	}}}
	changes, batches := Observe(st, obs, t0)
	tr := st.Experiments["exp"].Trials
	if tr["t0000"].Status != state.Succeeded || *tr["t0000"].Value != 0.75 || tr["t0000"].Final["loss"] != 0.2 || tr["t0000"].Intermediate != 1 {
		t.Fatalf("t0000 = %+v", tr["t0000"])
	}
	if tr["t0001"].Status != state.Failed || !strings.Contains(tr["t0001"].Reason, "metrics unavailable") {
		t.Fatalf("t0001 = %+v", tr["t0001"])
	}
	if tr["t0002"].Status != state.Lost {
		t.Fatalf("t0002 = %+v", tr["t0002"])
	}
	if tr["t0003"].Status != state.Failed || *tr["t0003"].ExitCode != 3 {
		t.Fatalf("t0003 = %+v", tr["t0003"])
	}
	if tr["t0004"].Status != state.Running || tr["t0004"].Handle["pid"] != "1" {
		t.Fatalf("t0004 = %+v", tr["t0004"])
	}
	if len(changes) != 5 || len(batches) != 1 || len(batches[0].Points) != 2 {
		t.Fatalf("changes %d batches %+v", len(changes), batches)
	}
}

func TestDestructive(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running), trial(1, state.Succeeded, 1))
	empty := &schema.Config{Experiments: map[string]*schema.Experiment{}}
	retuned := testConfig(func(e *schema.Experiment) {
		e.Tuner = tunerSpec("random", 2, map[string]any{"seed": float64(2)})
	})
	timed := testConfig(func(e *schema.Experiment) { e.Trial.MaxDuration = time.Minute })
	for _, tc := range []struct {
		name string
		p    *Plan
		want int // lines
	}{
		{"removed experiment", compute(t, empty, st, t0, Options{}), 2},
		{"destroy", compute(t, cfg, st, t0, Options{Destroy: true}), 2},
		{"new generation", compute(t, retuned, st, t0, Options{}), 1},
		{"orphan", compute(t, cfg, st, t0, Options{},
			providers.Observation{TrialID: "t0009", Exists: true, Phase: providers.PhaseRunning, Lineage: "L"}), 1},
		{"trial max_duration", compute(t, timed, applied(timed, trial(0, state.Running)), t0.Add(time.Hour), Options{}), 0},
		{"growth", compute(t, cfg, st, t0, Options{}), 0},
	} {
		got := tc.p.Destructive()
		if len(got) != tc.want {
			t.Errorf("%s: Destructive() = %q, want %d line(s)", tc.name, got, tc.want)
		}
		for _, ep := range tc.p.Experiments {
			for _, a := range ep.Trials {
				if a.Action == Teardown && a.Cause == "" {
					t.Errorf("%s: teardown of %s has no cause", tc.name, a.TrialID)
				}
			}
		}
	}
}

func TestAssessorEarlyStop(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) {
		e.MaxTrials = 6
		e.Concurrency = 2
		e.Assessor = assessorSpec("medianstop", map[string]any{"start_step": 2.0})
	})
	st := applied(cfg,
		trial(0, state.Succeeded, 0.9), trial(1, state.Succeeded, 0.8),
		trial(2, state.Running), trial(3, state.Running))
	curves := map[string][]float64{
		"t0000": {0.5, 0.7, 0.9}, "t0001": {0.4, 0.6, 0.8}, // running averages at step 2: 0.6, 0.5
		"t0002": {0.1, 0.2}, // best 0.2 < median 0.55: stopped
		"t0003": {0.5, 0.6}, // best 0.6: kept
	}
	in := Input{Config: cfg, State: st, Now: t0, Curves: map[string]map[string][]float64{"exp": curves}}
	p, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); got != "-t0002" {
		t.Fatalf("actions = %q, want the early stop of t0002 only (its slot frees on the next pass)", got)
	}
	a := p.Experiments[0].Trials[0]
	if a.Cause != CauseEarlyStop || !strings.Contains(a.Reason, "medianstop") {
		t.Fatalf("teardown %+v", a)
	}
	if d := p.Destructive(); len(d) != 0 {
		t.Fatalf("an early stop is not destructive: %q", d)
	}

	// Once stopped, it counts toward the budget, frees its slot, and the
	// tuner is told its best intermediate value.
	st.Experiments["exp"].Trials["t0002"].Status = state.EarlyStopped
	p, err = Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); got != "+t0004" {
		t.Fatalf("after the stop: actions = %q", got)
	}
	if bs := p.Experiments[0].Progress.ByStatus; bs[state.EarlyStopped] != 1 {
		t.Fatalf("progress %v", bs)
	}

	// Without curves (no intermediate results) nothing is stopped.
	st.Experiments["exp"].Trials["t0002"].Status = state.Running
	in.Curves = nil
	p, _ = Compute(in)
	if got := actions(p); got != "" {
		t.Fatalf("without curves: actions = %q", got)
	}
}

func TestCurveOf(t *testing.T) {
	pts := []state.MetricPoint{
		{Type: "PERIODICAL", Value: []byte(`0.5`)},
		{Type: "PERIODICAL", Value: []byte(`{"default": 0.6, "loss": 1}`)},
		{Type: "PERIODICAL", Value: []byte(`{"loss": 2}`)}, // no objective: skipped
		{Type: "FINAL", Value: []byte(`0.9`)},
	}
	if got := CurveOf(pts, "default"); !reflect.DeepEqual(got, []float64{0.5, 0.6}) {
		t.Fatalf("CurveOf = %v", got)
	}
	if got := CurveOf(pts, "loss"); !reflect.DeepEqual(got, []float64{1, 2}) {
		t.Fatalf("CurveOf loss = %v", got)
	}
}

// A resumed trial's curve is its last attempt's: medianstop compared a
// running attempt 2 at its step 1 as if it were at step 4 (attempt 1's
// three reports before it), and judged it on attempt 1's values.
func TestCurveOfLastAttempt(t *testing.T) {
	pts := []state.MetricPoint{
		{Type: "PERIODICAL", Sequence: 0, Attempt: 1, Value: []byte(`0.5`)},
		{Type: "PERIODICAL", Sequence: 1, Attempt: 1, Value: []byte(`0.6`)},
		{Type: "PERIODICAL", Sequence: 2, Attempt: 1, Value: []byte(`0.7`)},
		{Type: "PERIODICAL", Sequence: 0, Attempt: 2, Value: []byte(`0.1`)},
		{Type: "PERIODICAL", Sequence: 1, Attempt: 2, Value: []byte(`0.2`)},
	}
	if got := CurveOf(pts, "default"); !reflect.DeepEqual(got, []float64{0.1, 0.2}) {
		t.Fatalf("CurveOf = %v, want attempt 2's [0.1 0.2]", got)
	}
	// A series written before attempts were recorded (all 0) is one curve.
	for i := range pts {
		pts[i].Attempt = 0
	}
	if got := CurveOf(pts, "default"); len(got) != 5 {
		t.Fatalf("CurveOf without attempts = %v, want all 5 values", got)
	}
}

func TestTunerWaits(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) {
		e.MaxTrials, e.Concurrency = 20, 4
		e.Tuner = tunerSpec("hyperband", 0, map[string]any{"max_budget": 9.0})
	})
	var trials []*state.Trial
	for i := 0; i < 9; i++ {
		tr := trial(i, state.Succeeded, float64(i))
		tr.Params["TRIAL_BUDGET"] = int64(1)
		trials = append(trials, tr)
	}
	trials[8].Status, trials[8].Value = state.Running, nil
	p := compute(t, cfg, applied(cfg, trials...), t0, Options{})
	ep := p.Experiments[0]
	if got := actions(p); got != "" {
		t.Fatalf("actions = %q, want none while rung 0 runs", got)
	}
	if len(ep.Notes) != 1 || !strings.Contains(ep.Notes[0], "3 trial slot(s) wait: hyperband waits for rung 0 of bracket 2") {
		t.Fatalf("notes = %q", ep.Notes)
	}
	if ep.Done {
		t.Fatal("a waiting experiment is not done")
	}
	// Rung 0 finished: the best three configurations get budget 3.
	trials[8].Status = state.Succeeded
	v := 8.0
	trials[8].Value = &v
	p = compute(t, cfg, applied(cfg, trials...), t0, Options{})
	if got := actions(p); got != "+t0009 +t0010 +t0011" {
		t.Fatalf("actions = %q", got)
	}
	a := p.Experiments[0].Trials[0]
	if a.Params["TRIAL_BUDGET"] != int64(3) || a.Params["x"] != 0.8 {
		t.Fatalf("promoted trial params %v, want trial 8's x with budget 3", a.Params)
	}
}

// Issue 11, bug 15: start and end come from the platform's clock; apply's
// own later stamp of the start never makes a duration negative.
func TestObserveOneClock(t *testing.T) {
	cfg := testConfig()
	zero := 0
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running))
	cliStart := t0.Add(2 * time.Second) // stamped after Start returned
	for _, tr := range st.Experiments["exp"].Trials {
		s := cliStart
		tr.StartedAt = &s
	}
	pStart, pEnd := t0, t0.Add(time.Second)
	obs := &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, StartedAt: &pStart, EndedAt: &pEnd},
		"t0001": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, EndedAt: &pEnd}, // no start known
	}}}
	Observe(st, obs, t0.Add(3*time.Second))
	tr := st.Experiments["exp"].Trials
	if a := tr["t0000"]; !a.StartedAt.Equal(pStart) || !a.EndedAt.Equal(pEnd) {
		t.Errorf("t0000 started %v ended %v, want the platform's %v %v", a.StartedAt, a.EndedAt, pStart, pEnd)
	}
	if b := tr["t0001"]; b.EndedAt.Before(*b.StartedAt) {
		t.Errorf("t0001 ended %v before it started %v", b.EndedAt, b.StartedAt)
	}
}

// Issue 25, wrong numbers 3: a result is dated when the platform says the
// trial reported it, not when refresh read it; a result without a date
// gets the read's; none is dated after the trial's end or in the future.
func TestObserveDatesResults(t *testing.T) {
	cfg := testConfig()
	zero := 0
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running))
	start, end, now := t0, t0.Add(10*time.Second), t0.Add(60*time.Second)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	obs := &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, StartedAt: &start, EndedAt: &end, Metrics: []providers.Metric{
			{Type: "PERIODICAL", Value: "0.3", Time: at(1 * time.Second)},
			{Type: "PERIODICAL", Value: "0.2", Time: at(1700 * time.Millisecond)},
			{Type: "PERIODICAL", Value: "0.1", Time: at(12 * time.Second)}, // past the end
			{Type: "PERIODICAL", Value: "0.1"},                             // undated: read now, after the end
			{Type: "FINAL", Value: "0.1", Time: at(9 * time.Second)}}},
		"t0001": {Exists: true, Phase: providers.PhaseRunning, StartedAt: &start, Metrics: []providers.Metric{
			{Type: "PERIODICAL", Value: "0.5", Time: at(2 * time.Second)},
			{Type: "PERIODICAL", Value: "0.4", Time: now.Add(time.Hour)}, // a clock ahead
			{Type: "PERIODICAL", Value: "0.3"}}},
	}}}
	_, batches := Observe(st, obs, now)
	got := map[string][]time.Time{}
	for _, b := range batches {
		for _, p := range b.Points {
			got[b.TrialID] = append(got[b.TrialID], p.Time)
		}
	}
	want := map[string][]time.Time{
		"t0000": {at(1 * time.Second), at(1700 * time.Millisecond), end, end, at(9 * time.Second)},
		"t0001": {at(2 * time.Second), now, now},
	}
	for id, w := range want {
		g := got[id]
		if len(g) != len(w) {
			t.Fatalf("%s: %d points, want %d", id, len(g), len(w))
		}
		for i := range w {
			if !g[i].Equal(w[i]) {
				t.Errorf("%s point %d dated %v, want %v", id, i, g[i].Sub(t0), w[i].Sub(t0))
			}
		}
	}
}

// Refresh keeps at most providers.MaxIntermediate intermediate results per
// trial, on every platform; final results are always kept.
func TestObserveCapsIntermediate(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running))
	st.Experiments["exp"].Trials["t0000"].Intermediate = providers.MaxIntermediate - 1
	obs := &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": {Exists: true, Phase: providers.PhaseRunning, Metrics: []providers.Metric{
			{Type: "PERIODICAL", Sequence: 1, Value: "0.1"}, {Type: "PERIODICAL", Sequence: 2, Value: "0.2"}, {Type: "FINAL", Value: "0.3"}}},
	}}}
	_, batches := Observe(st, obs, t0)
	tr := st.Experiments["exp"].Trials["t0000"]
	if tr.Intermediate != providers.MaxIntermediate || len(batches) != 1 || len(batches[0].Points) != 2 || *tr.Value != 0.3 {
		t.Fatalf("intermediate %d, batches %+v", tr.Intermediate, batches)
	}
}

// TestMetisRepeatOf: a metis experiment whose history has a result out of
// line with the others plans a new trial with that trial's parameters and
// a repeat_of note; the human view shows the note.
func TestMetisRepeatOf(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) {
		e.MaxTrials, e.Concurrency = 30, 2
		e.Tuner = tunerSpec("metis", 1, nil)
	})
	var trials []*state.Trial
	for i := 0; i < 16; i++ {
		x := float64(i) / 15
		tr := trial(i, state.Succeeded, -(x-0.3)*(x-0.3))
		tr.Params["x"] = x
		trials = append(trials, tr)
	}
	*trials[9].Value += 0.5 // maximize: trial 9 looks far too good
	p := compute(t, cfg, applied(cfg, trials...), t0, Options{})
	ep := p.Experiments[0]
	if len(ep.Trials) != 2 {
		t.Fatalf("actions = %q", actions(p))
	}
	rep, other := ep.Trials[0], ep.Trials[1]
	if rep.RepeatOf != 9 || !reflect.DeepEqual(rep.Params, trials[9].Params) || !strings.Contains(rep.Reason, "repeat_of "+TrialID(9)) {
		t.Fatalf("first create %+v, want a repeat of trial 9 (%v)", rep, trials[9].Params)
	}
	if other.RepeatOf != 0 || other.Reason != "" {
		t.Fatalf("second create %+v is not a repeat", other)
	}
}

// Issue 25, item 2: a trial whose process is gone while it is not over
// (LOST) stops ageing: refresh records when it stopped (the platform's end
// when known, else when it was first seen gone), and clears it when the
// trial is seen running again.
func TestLostTrialClockStops(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running), trial(2, state.Running))
	pEnd := t0.Add(5 * time.Second)
	seen := t0.Add(9 * time.Second)
	obs := &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": {Exists: false},
		"t0001": {Exists: true, Phase: providers.PhaseLost, EndedAt: &pEnd},
		"t0002": {Exists: true, Phase: providers.PhaseLost},
	}}}
	Observe(st, obs, seen)
	tr := st.Experiments["exp"].Trials
	for id, want := range map[string]time.Time{"t0000": seen, "t0001": pEnd, "t0002": seen} {
		if tr[id].Status != state.Lost || tr[id].EndedAt == nil || !tr[id].EndedAt.Equal(want) {
			t.Errorf("%s: status %s ended %v, want LOST ended %v", id, tr[id].Status, tr[id].EndedAt, want)
		}
	}
	// Seen again later: the stop time stays the first one.
	Observe(st, obs, seen.Add(time.Hour))
	if !tr["t0000"].EndedAt.Equal(seen) {
		t.Errorf("t0000 ended %v after a second refresh, want %v", tr["t0000"].EndedAt, seen)
	}
	// Running again (a supervisor that came back): its clock runs.
	Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0002": {Exists: true, Phase: providers.PhaseRunning},
	}}}, seen.Add(2*time.Hour))
	if tr["t0002"].Status != state.Running || tr["t0002"].EndedAt != nil {
		t.Errorf("t0002 running again: status %s ended %v", tr["t0002"].Status, tr["t0002"].EndedAt)
	}
}

// The objective's strategy (Katib's metricStrategies) takes the value from
// every value of the metric a trial reported, intermediate and final, over
// several refreshes; without one the final result is the value (NNI's
// report_final_result), whatever came before it.
func TestObserveStrategy(t *testing.T) {
	zero := 0
	first := []providers.Metric{
		{Type: "PERIODICAL", Value: `{"loss": 0.5, "acc": 0.1}`},
		{Type: "PERIODICAL", Value: `{"loss": 0.2}`},
		{Type: "PERIODICAL", Value: `{"acc": 0.3}`}, // no loss: not a value of it
	}
	second := []providers.Metric{
		{Type: "PERIODICAL", Value: `{"loss": 0.9}`},
		{Type: "PERIODICAL", Value: `{"loss": null}`}, // NaN: not a value
		{Type: "FINAL", Value: `{"loss": 0.4, "acc": 0.8}`},
	}
	for _, tc := range []struct {
		strategy string
		want     float64
	}{{"", 0.4}, {"min", 0.2}, {"max", 0.9}, {"latest", 0.4}} {
		t.Run("strategy="+tc.strategy, func(t *testing.T) {
			cfg := testConfig(func(e *schema.Experiment) {
				e.Objective = schema.Objective{Metric: "loss", Goal: "minimize", Strategy: tc.strategy}
			})
			st := applied(cfg, trial(0, state.Running))
			e := st.Experiments["exp"]
			e.Metric, e.Goal, e.Strategy = "loss", "minimize", tc.strategy
			Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
				"t0000": {Exists: true, Phase: providers.PhaseRunning, Metrics: first}}}}, t0)
			Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
				"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, Metrics: second}}}}, t0)
			tr := e.Trials["t0000"]
			if tr.Status != state.Succeeded || tr.Value == nil || *tr.Value != tc.want || tr.Final["acc"] != 0.8 {
				t.Fatalf("t0000 = %s %v, want SUCCEEDED %v", tr.Status, ptrString(tr.Value), tc.want)
			}
		})
	}

	// Intermediate results only: under a strategy the trial succeeded (as
	// in Katib, where every reported value counts); without one it has no
	// final result. A final result without the metric is no error there.
	for _, strategy := range []string{"", "max"} {
		cfg := testConfig(func(e *schema.Experiment) {
			e.Objective = schema.Objective{Metric: "acc", Goal: "maximize", Strategy: strategy}
		})
		st := applied(cfg, trial(0, state.Running))
		e := st.Experiments["exp"]
		e.Metric, e.Strategy = "acc", strategy
		Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
			"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, Metrics: []providers.Metric{
				{Type: "PERIODICAL", Value: `{"acc": 0.7}`}, {Type: "PERIODICAL", Value: `{"acc": 0.6}`},
				{Type: "FINAL", Value: `{"loss": 0.1}`}}}}}}, t0)
		tr := e.Trials["t0000"]
		switch strategy {
		case "":
			if tr.Status != state.Failed || !strings.Contains(tr.Reason, `no key "acc"`) {
				t.Errorf("final: %s %q", tr.Status, tr.Reason)
			}
		default:
			if tr.Status != state.Succeeded || tr.Value == nil || *tr.Value != 0.7 || tr.Reason != "" {
				t.Errorf("max: %s %v %q", tr.Status, ptrString(tr.Value), tr.Reason)
			}
		}
	}
}

func ptrString(v *float64) string {
	if v == nil {
		return "<nil>"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// The tuner is told a trial's value as the objective's strategy takes it:
// an early-stopped trial under "latest" is its last value, not its best
// intermediate one (as without a strategy).
func TestHistoryUsesTheStrategy(t *testing.T) {
	curves := map[string][]float64{"t0000": {0.5, 0.9, 0.7}}
	for _, tc := range []struct {
		strategy string
		want     float64
	}{{"", 0.9}, {"latest", 0.7}, {"max", 0.9}} {
		cfg := testConfig(func(e *schema.Experiment) { e.Objective.Strategy = tc.strategy })
		st := applied(cfg, trial(0, state.EarlyStopped), trial(1, state.Succeeded, 0.6))
		if tc.strategy != "" {
			st.Experiments["exp"].Trials["t0000"].Value = foldObjective(tc.strategy, foldObjective(tc.strategy, foldObjective(tc.strategy, nil, 0.5), 0.9), 0.7)
		}
		h := history(cfg.Experiments["exp"], st.Experiments["exp"], 1, series{curves: curves})
		if len(h) != 2 || h[0].Value != tc.want || h[1].Value != 0.6 {
			t.Errorf("strategy %q: history %+v, want t0000 = %v", tc.strategy, h, tc.want)
		}
	}
}

// Issue 25 J: a trial whose start was recorded as intent only (the CLI
// was killed between the start and the save) and that the platform holds
// is adopted by the next refresh with its attempt counted: 27 of 1,000
// trials read attempts: 0 after 28 kills though they ran.
func TestObserveAdoptedTrialCountsItsAttempt(t *testing.T) {
	cfg := testConfig()
	zero := 0
	st := applied(cfg, trial(0, state.Waiting), trial(1, state.Waiting), trial(2, state.Waiting))
	for _, tr := range st.Experiments["exp"].Trials {
		tr.Attempts = 0
	}
	obs := &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero},
		"t0001": {Exists: true, Phase: providers.PhaseRunning},
		"t0002": {Exists: false}, // never started: nothing to count
	}}}
	Observe(st, obs, t0)
	tr := st.Experiments["exp"].Trials
	for id, want := range map[string]int{"t0000": 1, "t0001": 1, "t0002": 0} {
		if got := tr[id].Attempts; got != want {
			t.Errorf("%s (%s): attempts %d, want %d", id, tr[id].Status, got, want)
		}
	}
}

// TestAssessorWatchesNamedObjective: with several objectives the
// assessor judges the objective it names, in that objective's direction
// (loss, minimised, while the first objective is maximised).
func TestAssessorWatchesNamedObjective(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) {
		e.MaxTrials = 6
		e.Concurrency = 2
		e.Objectives = []schema.Objective{{Metric: "default", Goal: "maximize"}, {Metric: "loss", Goal: "minimize"}}
		e.Objective = e.Objectives[0]
		e.Tuner = schema.TunerSpec{Name: "random"}
		e.Assessor = assessorSpec("medianstop", map[string]any{"start_step": 2.0})
		e.Assessor.Objective = "loss"
	})
	st := applied(cfg,
		trial(0, state.Succeeded, 0.9), trial(1, state.Succeeded, 0.8),
		trial(2, state.Running), trial(3, state.Running))
	for _, id := range []string{"t0000", "t0001"} {
		st.Experiments["exp"].Trials[id].Final = map[string]float64{"default": 0.9, "loss": 0.1}
	}
	curves := map[string][]float64{
		"t0000": {0.5, 0.3, 0.1}, "t0001": {0.6, 0.4, 0.2}, // running averages at step 2: 0.4, 0.5
		"t0002": {0.9, 0.8}, // best 0.8 is worse than the median 0.45 when minimising: stopped
		"t0003": {0.3, 0.2}, // kept
	}
	p, err := Compute(Input{Config: cfg, State: st, Now: t0, Curves: map[string]map[string][]float64{"exp": curves}})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); got != "-t0002" {
		t.Fatalf("actions = %q, want the early stop of t0002 (loss is minimised)", got)
	}
}

// A teardown apply began (the trial's Stopping intent) and did not record,
// because it was killed between the platform's stop and the state write,
// ends as the teardown meant: destroy's CANCELED, -stop's USER_CANCELED,
// pause's PAUSED, not FAILED (which counts toward max_failed_trials) or
// LOST (which the next apply would resume). A trial that ended on its own
// first keeps its end, and a platform's own max_duration stop is still
// EARLY_STOPPED.
func TestObserveFinishesAnInterruptedTeardown(t *testing.T) {
	cfg := testConfig()
	one := 1
	end := t0.Add(time.Minute)
	cases := []struct {
		name     string
		stopping state.Stopping
		o        providers.Observation
		want     string
		reason   string
	}{
		{"killed by destroy", state.Stopping{Status: state.Canceled, Reason: "destroy"},
			providers.Observation{Exists: true, Phase: providers.PhaseKilled, Reason: "destroy", EndedAt: &end}, state.Canceled, "destroy"},
		{"purged by destroy", state.Stopping{Status: state.Canceled, Reason: "destroy"},
			providers.Observation{}, state.Canceled, "destroy"},
		{"lost while stopping", state.Stopping{Status: state.UserCanceled, Reason: "stopped by the user (-stop)"},
			providers.Observation{Exists: true, Phase: providers.PhaseLost, Reason: "the supervisor never started the trial"}, state.UserCanceled, "stopped by the user (-stop)"},
		{"signalled by the stop", state.Stopping{Status: state.Paused, Reason: "paused"},
			providers.Observation{Exists: true, Phase: providers.PhaseFailed, ExitCode: &one, EndedAt: &end}, state.Paused, "paused"},
		{"succeeded first", state.Stopping{Status: state.Canceled, Reason: "destroy"},
			providers.Observation{Exists: true, Phase: providers.PhaseSucceeded, ExitCode: new(int), EndedAt: &end,
				Metrics: []providers.Metric{{Type: "FINAL", Value: "0.5"}}}, state.Succeeded, ""},
		{"past max_duration", state.Stopping{Status: state.Canceled, Reason: "destroy"},
			providers.Observation{Exists: true, Phase: providers.PhaseKilled, PastMaxDuration: true, Reason: "max_duration exceeded (1s)", EndedAt: &end},
			state.EarlyStopped, "max_duration exceeded (1s)"},
		{"still running", state.Stopping{Status: state.Canceled, Reason: "destroy"},
			providers.Observation{Exists: true, Phase: providers.PhaseRunning}, state.Running, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := applied(cfg, trial(0, state.Running))
			tr := st.Experiments["exp"].Trials["t0000"]
			start := t0
			tr.StartedAt = &start
			s := c.stopping
			tr.Stopping = &s
			Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {"t0000": c.o}}}, t0.Add(2*time.Minute))
			if tr.Status != c.want || tr.Reason != c.reason {
				t.Errorf("%s %q, want %s %q", tr.Status, tr.Reason, c.want, c.reason)
			}
			if (tr.Stopping != nil) != (c.want == state.Running) {
				t.Errorf("Stopping %+v after %s", tr.Stopping, tr.Status)
			}
			if c.want != state.Running && tr.EndedAt == nil {
				t.Errorf("%s without an end", tr.Status)
			}
		})
	}
}

// A start or an end the platform dates in the future (a clock ahead, or a
// status file the trial itself rewrote) is dated now: a duration never
// runs past the refresh that read it.
func TestObserveNeverDatesTheFuture(t *testing.T) {
	cfg := testConfig()
	now := t0.Add(time.Hour)
	future := now.Add(24 * 365 * time.Hour)
	zero := 0
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running))
	Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, StartedAt: &t0, EndedAt: &future, Metrics: []providers.Metric{{Type: "FINAL", Value: "1"}}},
		"t0001": {Exists: true, Phase: providers.PhaseRunning, StartedAt: &future},
	}}}, now)
	tr := st.Experiments["exp"].Trials
	if e := tr["t0000"].EndedAt; e == nil || e.After(now) {
		t.Errorf("t0000 ended %v, after the refresh at %v", e, now)
	}
	if s := tr["t0001"].StartedAt; s == nil || s.After(now) {
		t.Errorf("t0001 started %v, after the refresh at %v", s, now)
	}
}

// TestObserveLastFinalWinsWhole: a later final result replaces an
// earlier one whole, in one refresh or across two: its objective value
// never stays beside the later one's other metrics (a trial reporting
// {default 0.9, latency 10} then {latency 1} was SUCCEEDED 0.9/1, a pair
// no report held, and went on the Pareto front), and a last final that is
// NaN fails the trial as the docs say.
func TestObserveLastFinalWinsWhole(t *testing.T) {
	zero := 0
	fin := func(v string) providers.Metric { return providers.Metric{Type: "FINAL", Value: v} }
	for _, c := range []struct {
		name   string
		multi  bool
		first  []providers.Metric // a refresh while it runs
		last   []providers.Metric // the refresh that finds it ended
		status string
		value  *float64
		reason string
	}{
		{"single: a NaN after a number", false, nil, []providers.Metric{fin("0.9"), fin("NaN")}, state.Failed, nil, "NaN"},
		{"single: a NaN in a later refresh", false, []providers.Metric{fin("0.9")}, []providers.Metric{fin("NaN")}, state.Failed, nil, "NaN"},
		{"single: a number after a NaN", false, nil, []providers.Metric{fin("NaN"), fin("0.7")}, state.Succeeded, fptr(0.7), ""},
		{"multi: the objective dropped", true, nil, []providers.Metric{fin(`{"default": 0.9, "latency": 10}`), fin(`{"latency": 1}`)}, state.Failed, nil, `no key "default"`},
		{"multi: the objective NaN", true, nil, []providers.Metric{fin(`{"default": 0.9, "latency": 10}`), fin(`{"default": NaN, "latency": 1}`)}, state.Failed, nil, `"default" is NaN`},
		{"multi: the objective text", true, []providers.Metric{fin(`{"default": 0.9, "latency": 10}`)}, []providers.Metric{fin(`{"default": "oops", "latency": 1}`)}, state.Failed, nil, `"default" is "oops"`},
		{"multi: the second objective dropped", true, nil, []providers.Metric{fin(`{"default": 0.9, "latency": 10}`), fin(`{"default": 0.5}`)}, state.Failed, fptr(0.5), `lacks objective "latency" (got: default)`},
		{"multi: the second objective infinite", true, nil, []providers.Metric{fin(`{"default": 0.99, "latency": -Infinity}`)}, state.Failed, fptr(0.99), `"latency" is NaN, Infinity or null`},
		{"multi: a whole later result", true, nil, []providers.Metric{fin(`{"default": 0.9, "latency": 10}`), fin(`{"default": 0.5, "latency": 1}`)}, state.Succeeded, fptr(0.5), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			st := applied(cfg, trial(0, state.Running))
			if c.multi {
				st.Experiments["exp"].Objectives = []state.Objective{{Metric: "default", Goal: "maximize"}, {Metric: "latency", Goal: "minimize"}}
			}
			if c.first != nil {
				Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
					"t0000": {Exists: true, Phase: providers.PhaseRunning, Metrics: c.first}}}}, t0)
			}
			Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
				"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, Metrics: c.last}}}}, t0.Add(time.Second))
			tr := st.Experiments["exp"].Trials["t0000"]
			if tr.Status != c.status || !strings.Contains(tr.Reason, c.reason) {
				t.Fatalf("status %s (%q), want %s (%q)", tr.Status, tr.Reason, c.status, c.reason)
			}
			if (tr.Value == nil) != (c.value == nil) || tr.Value != nil && *tr.Value != *c.value {
				t.Fatalf("value %s, want %s", ptrString(tr.Value), ptrString(c.value))
			}
			if c.multi && tr.Status == state.Succeeded && tr.Final["latency"] != 1 {
				t.Fatalf("final %v: not the last result's", tr.Final)
			}
		})
	}
}

func fptr(f float64) *float64 { return &f }

// TestObserveNoteClearsWhenItNoLongerHolds: a running trial's note from the
// platform (its pod waiting to be scheduled) goes once a refresh finds it
// running without one; a note of unreadable results stays.
func TestObserveNoteClearsWhenItNoLongerHolds(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running))
	obs := func(note string, m ...providers.Metric) providers.Observation {
		return providers.Observation{Exists: true, Phase: providers.PhaseRunning, Note: note, Metrics: m}
	}
	Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": obs("its pod cannot be scheduled: 0/1 nodes are available"),
		"t0001": obs("", providers.Metric{Type: "PERIODICAL", Garbage: "unreadable metric line"}),
	}}}, t0)
	tr := st.Experiments["exp"].Trials
	if !strings.Contains(tr["t0000"].Reason, "cannot be scheduled") || !strings.Contains(tr["t0001"].Reason, "unreadable") {
		t.Fatalf("reasons %q, %q", tr["t0000"].Reason, tr["t0001"].Reason)
	}
	Observe(st, &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": obs(""), "t0001": obs(""),
	}}}, t0.Add(time.Second))
	if tr["t0000"].Reason != "" {
		t.Errorf("the scheduling note stayed: %q", tr["t0000"].Reason)
	}
	if !strings.Contains(tr["t0001"].Reason, "unreadable") {
		t.Errorf("the unreadable results' note went: %q", tr["t0001"].Reason)
	}
}

// A secret of the experiment (its masks, as apply records them) that a
// trial reports in a metric — in a string value, as a key, as a number,
// or in a record that cannot be read (its note quotes the line) — is
// never kept in the state's series, results or reasons.
func TestObserveMasksSecretsInMetrics(t *testing.T) {
	const secret = "hf_s3cr3tT0kenValue42"
	const digits = "98765432109876"
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running))
	rec, err := mask.Record{}.With(secret, digits)
	if err != nil {
		t.Fatal(err)
	}
	e := st.Experiments["exp"]
	e.Masks = &state.Masks{Salt: rec.Salt, Hashes: rec.Hashes}
	zero := 0
	metrics := []providers.Metric{
		{Type: "PERIODICAL", Sequence: 0, Value: `{"default": 0.1, "args": "--lr 0.1 --token ` + secret + `"}`},
		{Type: "PERIODICAL", Sequence: 1, Value: `{"default": 0.2, "` + secret + `": 1}`},
		{Type: "PERIODICAL", Sequence: 2, Value: `{"default": 0.3, "id": ` + digits + `}`},
		{Type: "PERIODICAL", ParameterID: -1, Garbage: `corrupt metric record: not JSON ("{token: ` + secret + `")`},
		{Type: "FINAL", Value: `{"default": 0.5, "note": "` + secret + `"}`},
	}
	obs := &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": {Exists: true, Phase: providers.PhaseSucceeded, ExitCode: &zero, Metrics: metrics},
		"t0001": {Exists: true, Phase: providers.PhaseFailed, Reason: "exit 1: bad token " + secret, Metrics: metrics[3:4]},
	}}}
	_, batches := Observe(st, obs, t0)
	b, err := json.Marshal(struct {
		B any
		S any
	}{batches, st})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, digits} {
		if strings.Contains(string(b), s) {
			t.Errorf("the state or its series keep %q:\n%s", s, b)
		}
	}
	if !strings.Contains(string(b), "(sensitive value)") {
		t.Errorf("nothing says a value was hidden:\n%s", b)
	}
	tr := e.Trials["t0000"]
	if tr.Value == nil || *tr.Value != 0.5 || tr.Status != state.Succeeded {
		t.Errorf("the final result's objective: %v %v, want 0.5 SUCCEEDED", tr.Value, tr.Status)
	}
	if n := len(batches[0].Points); n != 4 {
		t.Errorf("%d points kept, want 4 (3 intermediate, 1 final)", n)
	}
	for _, p := range batches[0].Points {
		if !json.Valid(p.Value) {
			t.Errorf("point %d is not JSON after masking: %s", p.Sequence, p.Value)
		}
	}
	if metrics[0].Value == "" || !strings.Contains(metrics[0].Value, secret) {
		t.Errorf("the observation the caller passed was changed: %q", metrics[0].Value)
	}
}

// The tuner is told every objective from a trial's final result, in the
// configuration's order: a trial of an earlier generation, when the
// objectives were [acc, latency], is told as (latency, acc) once they
// are reordered, not with its old first objective (acc) as latency.
func TestHistoryMultiObjectiveReordered(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) {
		e.Objectives = []schema.Objective{{Metric: "latency", Goal: "minimize"}, {Metric: "acc", Goal: "maximize"}}
		e.Objective = e.Objectives[0]
		e.Tuner = schema.TunerSpec{Name: "random"}
	})
	old := trial(0, state.Succeeded, 0.9) // generation 1: Value is acc's
	old.Final = map[string]float64{"acc": 0.9, "latency": 12}
	cur := trial(1, state.Succeeded, 20)
	cur.Generation = 2
	cur.Final = map[string]float64{"acc": 0.7, "latency": 20}
	st := applied(cfg, old, cur)
	st.Experiments["exp"].Generation = 2
	h := history(cfg.Experiments["exp"], st.Experiments["exp"], 2, series{})
	if len(h) != 2 {
		t.Fatalf("history %+v, want 2 trials", h)
	}
	for i, want := range [][]float64{{12, 0.9}, {20, 0.7}} {
		o := h[i]
		if o.State != tuner.Completed || len(o.Values) != 2 || o.Values[0] != want[0] || o.Values[1] != want[1] || o.Value != want[0] {
			t.Errorf("%s: told %s value %v values %v, want completed %v", TrialID(o.Seq), o.State, o.Value, o.Values, want)
		}
	}
}

// One objective renamed (loss, minimised, -> acc, maximised) starts a
// generation: an earlier generation's trial is told its acc from its final
// result, not its loss (its Value); one that succeeded without an acc is
// left out (told as failed, TPE and gp would count the region of every
// good trial so far as bad), one that failed stays failed, and one of a
// state without final results (nor the objective its Value is for) is told
// its value from its series (Input.Values), left out without one.
func TestHistoryObjectiveRenamed(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) { e.Objective = schema.Objective{Metric: "acc", Goal: "maximize"} })
	old := trial(0, state.Succeeded, 0.3) // generation 1's objective: loss
	old.Final = map[string]float64{"loss": 0.3, "acc": 0.8}
	noAcc := trial(1, state.Succeeded, 0.2)
	noAcc.Final = map[string]float64{"loss": 0.2}
	legacy := trial(2, state.Succeeded, 0.7)
	cur := trial(3, state.Succeeded, 0.9)
	cur.Generation = 2
	cur.Final = map[string]float64{"acc": 0.9}
	failed := trial(4, state.Failed, 0)
	failed.Value, failed.Final = nil, map[string]float64{}
	st := applied(cfg, old, noAcc, legacy, cur, failed)
	st.Experiments["exp"].Generation = 2
	type told struct {
		seq   int
		state tuner.TrialState
		value float64
	}
	acc := 0.75
	for _, tc := range []struct {
		values map[string]*float64
		want   []told
	}{
		{nil, []told{{0, tuner.Completed, 0.8}, {3, tuner.Completed, 0.9}, {4, tuner.Failed, 0}}},
		{map[string]*float64{"t0002": &acc}, []told{{0, tuner.Completed, 0.8}, {2, tuner.Completed, 0.75}, {3, tuner.Completed, 0.9}, {4, tuner.Failed, 0}}},
	} {
		h := history(cfg.Experiments["exp"], st.Experiments["exp"], 2, series{values: tc.values})
		if len(h) != len(tc.want) {
			t.Fatalf("values %v: history %+v", tc.values, h)
		}
		for i, w := range tc.want {
			if h[i].Seq != w.seq || h[i].State != w.state || h[i].Value != w.value {
				t.Errorf("%s: told %s %v, want %s %s %v", TrialID(h[i].Seq), h[i].State, h[i].Value, TrialID(w.seq), w.state, w.value)
			}
		}
	}
}

// An objective's strategy and metric changed (loss under strategy min ->
// acc under strategy max) start a generation. An earlier generation's
// Value is its least loss: the tuner is told its greatest acc from its
// series, never that loss as an acc; without a series value it is left
// out. A trial whose recorded ValueFor is the current objective (the
// search space changed since) keeps its Value without a series.
func TestHistoryStrategyChanged(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) {
		e.Objective = schema.Objective{Metric: "acc", Goal: "maximize", Strategy: "max"}
	})
	old := trial(0, state.Succeeded, 0.1) // its least loss
	old.ValueFor = &state.ValueFor{Metric: "loss", Strategy: "min"}
	old.Final = map[string]float64{"loss": 0.4, "acc": 0.8}
	legacy := trial(1, state.Succeeded, 0.2) // no ValueFor: a state written before it
	legacy.Final = map[string]float64{"loss": 0.4, "acc": 0.8}
	same := trial(2, state.Succeeded, 0.95)
	same.ValueFor = &state.ValueFor{Metric: "acc", Strategy: "max"}
	cur := trial(3, state.Succeeded, 0.9)
	cur.Generation = 2
	st := applied(cfg, old, legacy, same, cur)
	e := st.Experiments["exp"]
	e.Generation, e.Metric, e.Goal, e.Strategy = 2, "acc", "maximize", "max"

	pts := []state.MetricPoint{
		{Type: "PERIODICAL", Value: json.RawMessage(`{"loss": 0.5, "acc": 0.6}`)},
		{Type: "PERIODICAL", Value: json.RawMessage(`{"loss": 0.1, "acc": 0.9}`)},
		{Type: "FINAL", Value: json.RawMessage(`{"loss": 0.4, "acc": 0.8}`)},
	}
	values := map[string]*float64{}
	for _, id := range []string{"t0000", "t0001", "t0002", "t0003"} {
		if NeedsSeriesValue(cfg.Experiments["exp"], e, e.Trials[id]) {
			values[id] = SeriesValue(e.Trials[id], pts, "acc", "max")
		}
	}
	if len(values) != 2 || values["t0000"] == nil || *values["t0000"] != 0.9 || values["t0001"] == nil {
		t.Fatalf("series values %v, want t0000 and t0001 (0.9)", values)
	}
	for _, tc := range []struct {
		values map[string]*float64
		want   map[int]float64
	}{
		{values, map[int]float64{0: 0.9, 1: 0.9, 2: 0.95, 3: 0.9}},
		{nil, map[int]float64{2: 0.95, 3: 0.9}},
	} {
		h := history(cfg.Experiments["exp"], e, 2, series{values: tc.values})
		got := map[int]float64{}
		for _, o := range h {
			if o.State != tuner.Completed {
				t.Errorf("%s told %s", TrialID(o.Seq), o.State)
			}
			got[o.Seq] = o.Value
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("series values %v: told %v, want %v", tc.values, got, tc.want)
		}
	}
}

// SeriesValue takes a trial's value from its series as the refresh takes
// it: the last final result's key without a strategy, the strategy over
// every report (NaN left out) under one; nil past the series' cap.
func TestSeriesValue(t *testing.T) {
	pts := []state.MetricPoint{
		{Type: "PERIODICAL", Value: json.RawMessage(`{"acc": 0.6}`)},
		{Type: "PERIODICAL", Value: json.RawMessage(`{"acc": NaN}`)},
		{Type: "FINAL", Value: json.RawMessage(`{"acc": 0.7}`)},
		{Type: "PERIODICAL", Value: json.RawMessage(`{"acc": 0.9}`)},
		{Type: "PERIODICAL", Value: json.RawMessage(`{"acc": 0.5, "loss": 0.1}`)},
		{Type: "FINAL", Value: json.RawMessage(`{"acc": 0.8}`)},
	}
	tr := trial(0, state.Succeeded, 0)
	for strategy, want := range map[string]float64{"": 0.8, "min": 0.5, "max": 0.9, "latest": 0.8} {
		if v := SeriesValue(tr, pts, "acc", strategy); v == nil || *v != want {
			t.Errorf("strategy %q: %v, want %v", strategy, v, want)
		}
	}
	if v := SeriesValue(tr, pts, "loss", ""); v != nil {
		t.Errorf("loss without a strategy: %v, want none (the last final result has none)", *v)
	}
	tr.Intermediate = providers.MaxIntermediate
	if v := SeriesValue(tr, pts, "acc", "max"); v != nil {
		t.Errorf("past the cap: %v, want none", *v)
	}
}

// With several objectives, one renamed (lat -> latency): an earlier
// generation's trial that succeeded without a latency is left out of the
// history, not told as failed (mogp, motpe and nsga2 rank failures last and
// would steer away from every good region found so far); one with every
// current key is told its values.
func TestHistoryMultiObjectiveRenamed(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) {
		e.Objectives = []schema.Objective{{Metric: "acc", Goal: "maximize"}, {Metric: "latency", Goal: "minimize"}}
		e.Objective = e.Objectives[0]
		e.Tuner = schema.TunerSpec{Name: "random"}
	})
	noLatency := trial(0, state.Succeeded, 0.9)
	noLatency.Final = map[string]float64{"acc": 0.9, "lat": 12}
	both := trial(1, state.Succeeded, 0.8)
	both.Final = map[string]float64{"acc": 0.8, "lat": 10, "latency": 10}
	failed := trial(2, state.Failed)
	st := applied(cfg, noLatency, both, failed)
	st.Experiments["exp"].Generation = 2
	h := history(cfg.Experiments["exp"], st.Experiments["exp"], 2, series{})
	if len(h) != 2 || h[0].Seq != 1 || h[0].State != tuner.Completed || len(h[0].Values) != 2 || h[0].Values[1] != 10 || h[1].Seq != 2 || h[1].State != tuner.Failed {
		t.Fatalf("history %+v, want t0001 completed (0.8, 10) and t0002 failed", h)
	}
}

// An earlier generation's trial that an assessor stopped, whose value of
// the objective as it is now neither its series (Input.Values) nor its
// curve of the objective's metric (Input.Curves) tells, is left out of the
// history, as one that succeeded so is: it was judged poor by another
// objective, and told as failed it would mark its region as the worst
// there is. With a curve it is told its best value there, and one of the
// current generation stopped without a curve stays failed.
func TestHistoryEarlyStoppedUnderOldObjective(t *testing.T) {
	for _, strategy := range []string{"", "max"} {
		cfg := testConfig(func(e *schema.Experiment) {
			e.Objective = schema.Objective{Metric: "acc", Goal: "maximize", Strategy: strategy}
		})
		old := trial(0, state.EarlyStopped, 0.1) // its least loss
		old.ValueFor = &state.ValueFor{Metric: "loss", Strategy: "min"}
		withCurve := trial(1, state.EarlyStopped, 0.2)
		withCurve.ValueFor = &state.ValueFor{Metric: "loss", Strategy: "min"}
		cur := trial(2, state.EarlyStopped, 0)
		cur.Value, cur.Generation = nil, 2
		st := applied(cfg, old, withCurve, cur)
		e := st.Experiments["exp"]
		e.Generation, e.Metric, e.Goal, e.Strategy = 2, "acc", "maximize", strategy
		h := history(cfg.Experiments["exp"], e, 2, series{curves: map[string][]float64{"t0001": {0.5, 0.7, 0.6}}})
		got := map[int]string{}
		for _, o := range h {
			got[o.Seq] = fmt.Sprintf("%s %v", o.State, o.Value)
		}
		want := map[int]string{1: fmt.Sprintf("%s %v", tuner.Completed, 0.7), 2: fmt.Sprintf("%s %v", tuner.Failed, 0.0)}
		if !maps.Equal(got, want) {
			t.Errorf("strategy %q: told %v, want %v", strategy, got, want)
		}
	}
}

// A trial whose value of the objective apply took again from its series
// (state.Retaken) needs its series no more, and is told that value; a
// Retaken of another objective is not taken, and one that found no value
// leaves the trial out as its series would.
func TestHistoryRetaken(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) {
		e.Objective = schema.Objective{Metric: "acc", Goal: "maximize", Strategy: "max"}
	})
	now := state.ValueFor{Metric: "acc", Strategy: "max"}
	other := state.ValueFor{Metric: "acc", Strategy: "min"}
	v := 0.7
	old := func(seq int, r *state.Retaken) *state.Trial {
		tr := trial(seq, state.Succeeded, 0.1) // its least loss
		tr.ValueFor = &state.ValueFor{Metric: "loss", Strategy: "min"}
		tr.Retaken = r
		return tr
	}
	taken, none, stale := old(0, &state.Retaken{ValueFor: now, Value: &v}), old(1, &state.Retaken{ValueFor: now}), old(2, &state.Retaken{ValueFor: other, Value: &v})
	st := applied(cfg, taken, none, stale)
	e := st.Experiments["exp"]
	e.Generation, e.Metric, e.Goal, e.Strategy = 2, "acc", "maximize", "max"
	ce := cfg.Experiments["exp"]
	if NeedsSeriesValue(ce, e, taken) || NeedsSeriesValue(ce, e, none) || !NeedsSeriesValue(ce, e, stale) {
		t.Fatalf("NeedsSeriesValue: taken %v, none %v, stale %v; want false, false, true",
			NeedsSeriesValue(ce, e, taken), NeedsSeriesValue(ce, e, none), NeedsSeriesValue(ce, e, stale))
	}
	nine := 0.9
	h := history(ce, e, 2, series{values: map[string]*float64{"t0002": &nine}})
	got := map[int]string{}
	for _, o := range h {
		got[o.Seq] = fmt.Sprintf("%s %v", o.State, o.Value)
	}
	want := map[int]string{0: fmt.Sprintf("%s %v", tuner.Completed, 0.7), 2: fmt.Sprintf("%s %v", tuner.Completed, 0.9)}
	if !maps.Equal(got, want) {
		t.Errorf("told %v, want %v", got, want)
	}
}
