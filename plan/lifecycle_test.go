package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner/space"
)

// gridConfig: a 2-point grid with max_trials = 2.
func gridConfig(command string) *schema.Config {
	return testConfig(func(e *schema.Experiment) {
		e.SearchSpace.Space = &space.Space{Params: []space.Param{
			{Name: "k", Kind: space.Choice, Options: []space.Option{{Value: "a"}, {Value: "b"}}},
		}}
		e.Tuner = tunerSpec("grid", 0, map[string]any{})
		e.MaxTrials, e.Concurrency = 2, 2
		e.Trial.Command = &schema.Template{Segments: []schema.Segment{{Literal: command + " --k "}, {Param: "k"}}}
	})
}

// After a trial-spec change, a grid whose points all ran in the previous
// generation must not advise "lower max_trials to 2" when max_trials is
// already 2 (issue 11, item 15).
func TestGridExhaustedByEarlierGenerationMessage(t *testing.T) {
	old := gridConfig("python3 a.py")
	a, b := trial(0, state.Succeeded, 1), trial(1, state.Succeeded, 2)
	a.Params, b.Params = map[string]any{"k": "a"}, map[string]any{"k": "b"}
	a.ValueFor = &state.ValueFor{Metric: "default"} // the objective is unchanged
	b.ValueFor = a.ValueFor
	st := applied(old, a, b)
	_, err := Compute(Input{Config: gridConfig("python3 b.py"), State: st, Now: t0})
	if err == nil {
		t.Fatal("Compute succeeded; want an error: the grid has no untried point for generation 2")
	}
	msg := err.Error()
	if strings.Contains(msg, "lower max_trials to 2") {
		t.Errorf("message advises lowering max_trials to its own value:\n%s", msg)
	}
	for _, want := range []string{"earlier generation", "repeat = true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func byTrial(p *Plan) map[string][]*TrialAction {
	out := map[string][]*TrialAction{}
	for _, ep := range p.Experiments {
		for _, a := range ep.Trials {
			out[a.TrialID] = append(out[a.TrialID], a)
		}
	}
	return out
}

// paused = true: running trials are torn down with cause "paused" (they
// become PAUSED, kept), nothing is created or resumed; unpausing resumes
// the PAUSED trials first.
func TestPaused(t *testing.T) {
	cfg := testConfig(func(e *schema.Experiment) { e.Paused = true })
	st := applied(testConfig(), trial(0, state.Succeeded, 1), trial(1, state.Running), trial(2, state.Running), trial(3, state.Lost))
	p := compute(t, cfg, st, t0, Options{})
	if got := actions(p); got != "-t0001 -t0002" {
		t.Fatalf("paused: actions = %q, want the running trials torn down only", got)
	}
	ep := p.Experiments[0]
	for _, a := range ep.Trials {
		if a.Cause != CausePaused || !strings.Contains(a.Reason, "paused") {
			t.Errorf("teardown %s: cause %q reason %q", a.TrialID, a.Cause, a.Reason)
		}
	}
	if !ep.Paused || ep.Action != Update || len(ep.Changes) != 1 || ep.Changes[0].Path != "paused" || ep.Changes[0].After != "true" {
		t.Errorf("experiment plan: paused=%v action=%s changes=%+v", ep.Paused, ep.Action, ep.Changes)
	}
	if len(p.Destructive()) != 0 {
		t.Errorf("pausing counts as destructive: %v", p.Destructive())
	}

	// Still paused once the trials are PAUSED: nothing to do.
	st.Experiments["exp"].Paused = true
	for _, id := range []string{"t0001", "t0002"} {
		st.Experiments["exp"].Trials[id].Status = state.Paused
	}
	p = compute(t, cfg, st, t0, Options{})
	if p.HasChanges() {
		t.Fatalf("paused again: plan has changes: %q", actions(p))
	}

	// Unpaused: PAUSED and LOST trials resume (concurrency 2), no new trial yet.
	p = compute(t, testConfig(), st, t0, Options{})
	if got := actions(p); got != "~t0001 ~t0002" {
		t.Fatalf("unpaused: actions = %q", got)
	}
}

func TestStopAndReplace(t *testing.T) {
	cfg := testConfig()
	mk := func() *state.State {
		return applied(cfg, trial(0, state.Succeeded, 1), trial(1, state.Running), trial(2, state.Running), trial(3, state.Waiting))
	}
	p := compute(t, cfg, mk(), t0, Options{Stop: []string{"experiment.exp.trial.t0001"}, Replace: []string{"experiment.exp.trial.t0002", "experiment.exp.trial.t0000"}})
	got := byTrial(p)
	if a := got["t0001"]; len(a) != 1 || a[0].Action != Teardown || a[0].Cause != CauseStop {
		t.Errorf("-stop t0001: %+v", a)
	}
	if a := got["t0002"]; len(a) != 2 || a[0].Action != Teardown || a[0].Cause != CauseReplace || a[1].Action != Resume || a[1].Cause != CauseReplace {
		t.Errorf("-replace running t0002: %+v", a)
	}
	if a := got["t0000"]; len(a) != 1 || a[0].Action != Resume || a[0].Status != state.Succeeded || a[0].Command == "" {
		t.Errorf("-replace succeeded t0000: %+v", a)
	}
	// stopped and replaced trials keep their budget slots: 4 trials of 5
	// counted, t0003 waits to start, so one new trial at most.
	for id := range got {
		if id > "t0004" {
			t.Errorf("unexpected new trial %s", id)
		}
	}

	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{Stop: []string{"experiment.exp.trial.t0000"}}, "has ended already (SUCCEEDED)"},
		{Options{Stop: []string{"exp/t0001"}}, "is not a trial address"},
		{Options{Replace: []string{"experiment.exp.trial.t0042"}}, "no trial t0042"},
		{Options{Replace: []string{"experiment.exp.trial.t0003"}}, "has not started yet"},
		{Options{Replace: []string{"experiment.exp.trial.t0001"}, Stop: []string{"experiment.exp.trial.t0001"}}, "named by -stop too"},
		{Options{Destroy: true, Stop: []string{"experiment.exp.trial.t0001"}}, "destroy tears every trial down"},
	} {
		_, err := Compute(Input{Config: cfg, State: mk(), Now: t0, Options: tt.opts})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

// A new experiment may not take the name a renamed experiment's trials
// still carry on the platform.
func TestNameStillUsedOnPlatform(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running))
	if err := st.Move("exp", "renamed"); err != nil {
		t.Fatal(err)
	}
	cfg.Experiments["renamed"] = cfg.Experiments["exp"]
	_, err := Compute(Input{Config: cfg, State: st, Now: t0})
	if err == nil || !strings.Contains(err.Error(), `still carry the name "exp"`) {
		t.Fatalf("err = %v", err)
	}
}

// max_duration keeps counting while paused (docs/language.md): once it is
// reached the experiment is done even while paused, its PAUSED and LOST
// trials end CANCELED (cause max_duration) and a running one is torn down
// the same way. The plan said "paused: ... 1 trial(s) stay PAUSED and
// resume when paused is removed", "Nothing to run ... they resume", though
// removing paused then only cancelled them.
func TestMaxDurationReachedWhilePaused(t *testing.T) {
	for _, onMax := range []string{"", schema.OnMaxDurationFinish} {
		cfg := testConfig(func(e *schema.Experiment) { e.Paused, e.MaxDuration, e.OnMaxDuration = true, time.Hour, onMax })
		st := applied(testConfig(), trial(0, state.Succeeded, 1), trial(1, state.Running), trial(2, state.Paused), trial(3, state.Lost))
		st.Experiments["exp"].Paused = true
		p := compute(t, cfg, st, t0.Add(30*time.Minute), Options{})
		if ep := p.Experiments[0]; ep.Done {
			t.Fatalf("%q: done before max_duration", onMax)
		}
		p = compute(t, cfg, st, t0.Add(2*time.Hour), Options{})
		ep := p.Experiments[0]
		if !ep.Done || ep.Paused || !strings.Contains(ep.DoneReason, "max_duration (1h) reached") {
			t.Errorf("%q: done %v paused %v reason %q, want done by max_duration", onMax, ep.Done, ep.Paused, ep.DoneReason)
		}
		if got := actions(p); got != "-t0001 -t0002 -t0003" {
			t.Errorf("%q: actions %q, want every unfinished trial torn down", onMax, got)
		}
		for _, a := range ep.Trials {
			if a.Cause != CauseMaxDuration {
				t.Errorf("%q: %s cause %q (%s), want max_duration", onMax, a.TrialID, a.Cause, a.Reason)
			}
		}
		for _, n := range ep.Notes {
			if strings.Contains(n, "resume") {
				t.Errorf("%q: note %q", onMax, n)
			}
		}
	}
}
