package plan

import (
	"context"
	"strings"
	"testing"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// specPlatform is a SpecDiffer double: the spec of a trial is its command
// line under an image setting.
type specPlatform struct {
	image string
}

func (specPlatform) Kind() string                   { return "test" }
func (specPlatform) Validate(context.Context) error { return nil }
func (specPlatform) Close() error                   { return nil }
func (specPlatform) Start(context.Context, providers.StartRequest) (providers.Handle, error) {
	return nil, nil
}
func (specPlatform) Read(context.Context, providers.ReadRequest) (providers.Observation, error) {
	return providers.Observation{}, nil
}
func (specPlatform) Stop(context.Context, providers.StopRequest) error { return nil }
func (p specPlatform) Spec(req providers.StartRequest) (string, error) {
	return "image: " + p.image + "\ncommand: " + req.Shell + "\n", nil
}

type onePlatform struct{ p providers.Provider }

func (o onePlatform) Provider(string) (providers.Provider, error) { return o.p, nil }

func TestDetectDrift(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running), trial(2, state.Succeeded, 1))
	running := func(id, spec string) providers.Observation {
		return providers.Observation{TrialID: id, Exists: true, Phase: providers.PhaseRunning, Spec: spec}
	}
	obs := &Observations{Trials: map[string]map[string]providers.Observation{"exp": {
		"t0000": running("t0000", "image: py:3.11\ncommand: python3 main.py --x '0' --k 'a'\n"),
		"t0001": running("t0001", "image: py:3.12\ncommand: python3 main.py --x '0.1' --k 'a'\n"),
		"t0002": {TrialID: "t0002", Exists: true, Phase: providers.PhaseSucceeded, Spec: "old"},
	}}}
	DetectDrift(cfg, st, obs, onePlatform{specPlatform{image: "py:3.12"}})
	if len(obs.Warnings) > 0 {
		t.Fatal(obs.Warnings)
	}
	d := obs.Drift["exp"]
	if len(d) != 1 || d[0].TrialID != "t0000" {
		t.Fatalf("drift = %+v", obs.Drift)
	}
	want := "--- running/exp/t0000\n+++ configured/exp/t0000\n@@ -1,2 +1,2 @@\n-image: py:3.11\n+image: py:3.12\n command: python3 main.py --x '0' --k 'a'\n"
	if d[0].Diff != want {
		t.Errorf("diff =\n%s\nwant\n%s", d[0].Diff, want)
	}

	// The plan carries it; a trial the plan tears down (new generation)
	// does not show drift.
	p, err := Compute(Input{Config: cfg, State: st, Now: t0, Drift: obs.Drift})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Experiments[0].Drift; len(got) != 1 || got[0].Diff != want || p.HasChanges() != (p.Summary.Create > 0) {
		t.Errorf("plan drift %+v", got)
	}
	cfg2 := testConfig(func(e *schema.Experiment) { e.Trial.Env = map[string]string{"A": "1"} })
	p, err = Compute(Input{Config: cfg2, State: st, Now: t0, Drift: obs.Drift})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Experiments[0].Drift; len(got) != 0 || !strings.Contains(actions(p), "-t0000") {
		t.Errorf("new generation: drift %+v, actions %s", got, actions(p))
	}
}
