package plan

import (
	"strings"
	"testing"

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
		e.Tuner = schema.TunerSpec{Name: "grid", Settings: map[string]any{}}
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
