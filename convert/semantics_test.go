package convert

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner/space"
)

// convertLoad converts src and loads the HCL (as convertSrc does), and
// returns the one experiment.
func convertLoad(t *testing.T, tool, name, src string, extra map[string]string) (*Result, *schema.Experiment) {
	t.Helper()
	res := convertSrc(t, tool, name, src, Options{}, extra)
	cfg := validate(t, tcase{tool: tool, path: t.TempDir() + "/" + name}, res)
	if len(cfg.Experiments) != 1 {
		t.Fatalf("experiments: %v", cfg.Experiments)
	}
	for _, e := range cfg.Experiments {
		return res, e
	}
	return res, nil
}

// katibExp is a Katib Experiment with spec fields extra (indented two
// spaces) and the parameters params (list items, indented four).
func katibExp(algorithm, extra, params string) string {
	return fmt.Sprintf(`apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: sem}
spec:
  objective: {type: maximize, objectiveMetricName: acc}
  algorithm: {algorithmName: %s}
%s  parameters:
%s  trialTemplate:
    primaryContainerName: main
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            containers:
              - name: main
                image: py:3
                command: [python3, t.py]
`, algorithm, extra, params)
}

func param(e *schema.Experiment, name string) space.Param {
	for _, p := range e.SearchSpace.Space.Params {
		if p.Name == name {
			return p
		}
	}
	return space.Param{}
}

func optionValues(p space.Param) []float64 {
	var out []float64
	for _, o := range p.Options {
		f, _ := o.Value.(float64)
		out = append(out, f)
	}
	return out
}

func hclHas(t *testing.T, res *Result, subs ...string) {
	t.Helper()
	flat := strings.Join(strings.Fields(string(res.HCL)), " ")
	for _, s := range subs {
		if !strings.Contains(flat, strings.Join(strings.Fields(s), " ")) {
			t.Errorf("the HCL lacks %q:\n%s", s, res.HCL)
		}
	}
}

// Katib (v0.14 on, status_util.go) fails an Experiment once failed trials
// are >= maxFailedTrialCount and at least one failed, so 0 fails it at the
// first failure; trialform's max_failed_trials = 0 is no limit.
func TestKatibMaxFailedTrialCount(t *testing.T) {
	p := `    - {name: lr, parameterType: double, feasibleSpace: {min: "0.01", max: "0.1"}}
`
	for n, want := range map[int]int{0: 1, 1: 1, 3: 3} {
		res, e := convertLoad(t, "katib", "exp.yaml", katibExp("random", fmt.Sprintf("  maxTrialCount: 5\n  maxFailedTrialCount: %d\n", n), p), nil)
		if e.MaxFailedTrials != want {
			t.Errorf("maxFailedTrialCount %d: max_failed_trials = %d, want %d\n%s", n, e.MaxFailedTrials, want, res.HCL)
		}
	}
	res, _ := convertLoad(t, "katib", "exp.yaml", katibExp("random", "  maxTrialCount: 5\n  maxFailedTrialCount: 0\n", p), nil)
	hclHas(t, res, "fails the experiment at the first failed trial")
}

// Katib's webhook sets parallelTrialCount 3 when absent; trialform's
// default concurrency is 1.
func TestKatibDefaultConcurrency(t *testing.T) {
	p := `    - {name: lr, parameterType: double, feasibleSpace: {min: "0.01", max: "0.1"}}
`
	res, e := convertLoad(t, "katib", "exp.yaml", katibExp("random", "  maxTrialCount: 5\n", p), nil)
	if e.Concurrency != 3 {
		t.Errorf("concurrency = %d, want Katib's default 3\n%s", e.Concurrency, res.HCL)
	}
}

// Katib's medianstop service defaults min_trials_required to 3 and
// start_step to 4; trialform's medianstop defaults both to 1.
func TestKatibMedianstopDefaults(t *testing.T) {
	p := `    - {name: lr, parameterType: double, feasibleSpace: {min: "0.01", max: "0.1"}}
`
	for _, tc := range []struct {
		settings           string
		minTrials, startSt float64
	}{
		{"", 3, 4},
		{"    algorithmSettings: [{name: start_step, value: \"2\"}]\n", 3, 2},
		{"    algorithmSettings: [{name: min_trials_required, value: \"5\"}]\n", 5, 4},
	} {
		extra := "  maxTrialCount: 5\n  parallelTrialCount: 2\n  earlyStopping:\n    algorithmName: medianstop\n" + tc.settings
		res, e := convertLoad(t, "katib", "exp.yaml", katibExp("random", extra, p), nil)
		if e.Assessor == nil {
			t.Fatalf("no assessor\n%s", res.HCL)
		}
		got := e.Assessor.Settings
		if got["min_trials"] != tc.minTrials || got["start_step"] != tc.startSt {
			t.Errorf("settings %q: assessor %v, want min_trials %v, start_step %v\n%s", tc.settings, got, tc.minTrials, tc.startSt, res.HCL)
		}
	}
}
