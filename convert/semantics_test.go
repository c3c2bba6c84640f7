package convert

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner/space"
)

// convertLoad converts src and loads the HCL (as convertSrc does), and
// returns the one experiment.
func convertLoad(t *testing.T, tool, name, src string, extra map[string]string) (*Result, *schema.Experiment) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	os.WriteFile(p, []byte(src), 0o644)
	for k, v := range extra {
		os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644)
	}
	res, err := tools[tool]([]byte(src), Options{Filename: name, ReadFile: readerFor(dir)})
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	c := tcase{tool: tool, path: p}
	checkResult(t, c, res)
	cfg := validate(t, c, res)
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

// A stepped int or double range proposes min, min+step, ... <= max in
// Katib (Optuna's IntDistribution and FloatDistribution with a step):
// NNI's quniform, clipped to [min, max], gives other values when min or
// max is off the step's multiples.
func TestKatibSteppedRanges(t *testing.T) {
	for _, tc := range []struct {
		alg, typ, min, max, step string
		want                     []float64 // nil: quniform [min, max, step]
		comment                  string
	}{
		{"multivariate-tpe", "int", "1", "10", "3", []float64{1, 4, 7, 10}, ""},
		{"random", "int", "1", "10", "3", []float64{1, 4, 7, 10}, "draw 0, 3, 6, 9"},
		{"multivariate-tpe", "int", "0", "11", "3", []float64{0, 3, 6, 9}, ""},
		{"cmaes", "int", "0", "11", "3", nil, "approximately converted: Katib proposes 0, 3, ... <= 11"},
		{"tpe", "int", "0", "11", "3", []float64{0, 3, 6, 9}, "draw 0, 3, 6, 9, 12"},
		{"multivariate-tpe", "double", "0", "1.1", "0.3", []float64{0, 0.3, 0.6, 0.9}, ""},
		{"multivariate-tpe", "double", "0.1", "1", "0.3", []float64{0.1, 0.4, 0.7, 1}, ""},
		{"multivariate-tpe", "int", "32", "256", "32", nil, ""},
		{"random", "double", "0", "0.9", "0.3", nil, ""},
	} {
		p := fmt.Sprintf("    - {name: x, parameterType: %s, feasibleSpace: {min: %q, max: %q, step: %q}}\n", tc.typ, tc.min, tc.max, tc.step)
		res, e := convertLoad(t, "katib", "exp.yaml", katibExp(tc.alg, "  maxTrialCount: 5\n", p), nil)
		got := param(e, "x")
		if tc.want == nil {
			if got.Kind != space.Quniform {
				t.Errorf("%+v: %v %v, want quniform\n%s", tc, got.Kind, optionValues(got), res.HCL)
			}
			if tc.comment != "" {
				hclHas(t, res, tc.comment)
			}
			continue
		}
		if got.Kind != space.Choice || fmt.Sprint(optionValues(got)) != fmt.Sprint(tc.want) {
			t.Errorf("%+v: %v %v %v, want choice %v\n%s", tc, got.Kind, got.Args, optionValues(got), tc.want, res.HCL)
		}
		if tc.comment != "" {
			hclHas(t, res, tc.comment)
		}
	}
}

// NNI's trialGpuNumber: 0 on local and remote hides every GPU from the
// trial (an empty CUDA_VISIBLE_DEVICES); unset leaves it alone. On remote,
// NNI gives trials GPUs out of every GPU of a machine without gpuIndices;
// trialform's remote schedules only gpu_indices: a warning says so.
func TestNNIGPUNumberZero(t *testing.T) {
	base := "searchSpace: {x: {_type: choice, _value: [1, 2]}}\ntrialCommand: python3 t.py\nmaxTrialNumber: 2\n"
	for _, tc := range []struct {
		name, src string
		hide      bool
	}{
		{"v2 local 0", base + "trialGpuNumber: 0\ntrainingService: {platform: local}\n", true},
		{"v2 local unset", base + "trainingService: {platform: local}\n", false},
		{"v2 remote 0", base + "trialGpuNumber: 0\ntrainingService: {platform: remote, machineList: [{host: h, user: u, sshKeyFile: k}]}\n", true},
		{"v1 local 0", "searchSpacePath: s.json\ntrainingServicePlatform: local\nmaxTrialNum: 2\ntrial: {command: python3 t.py, codeDir: ., gpuNum: 0}\n", true},
	} {
		res, e := convertLoad(t, "nni", "config.yml", tc.src, map[string]string{"s.json": `{"x": {"_type": "choice", "_value": [1]}}`})
		v, ok := e.Trial.Env["CUDA_VISIBLE_DEVICES"]
		if ok != tc.hide || v != "" {
			t.Errorf("%s: CUDA_VISIBLE_DEVICES %q %v, want set empty: %v\n%s", tc.name, v, ok, tc.hide, res.HCL)
		}
	}
	src := base + "trialGpuNumber: 1\ntrainingService: {platform: remote, machineList: [{host: h, user: u, sshKeyFile: k}, {host: g, user: u, sshKeyFile: k, gpuIndices: [0]}]}\n"
	res, _ := convertLoad(t, "nni", "config.yml", src, nil)
	if !hasWarning(res, "trainingService.machineList[0].gpuIndices", "trialform's remote platform gives GPUs only out of gpu_indices") ||
		hasWarning(res, "trainingService.machineList[1].gpuIndices", "") {
		t.Errorf("warnings: %v", res.Warnings)
	}
	hclHas(t, res, "# NNI gave trials GPUs out of every GPU this machine has")
}

// pxOp is a v1.1 operation with the matrix m (indented two spaces) and the
// component inputs inputs.
func pxOp(m, inputs, args string) string {
	return "version: 1.1\nkind: operation\nmatrix:\n" + m + "component:\n  inputs:\n" + inputs +
		"  run:\n    kind: job\n    container:\n      image: py:3\n      command: [python3, train.py]\n      args: " + args + "\n"
}

// Polyaxon's hyperband gives the resource input its value: it is the
// tuner's TRIAL_BUDGET, not a variable without a default (plan failed),
// and every bracket runs once: max_trials is one round of them.
func TestPolyaxonHyperbandPlans(t *testing.T) {
	src := pxOp(`  kind: hyperband
  maxIterations: 81
  eta: 3
  resource: {name: num_steps, type: int}
  metric: {name: loss, optimization: minimize}
  params:
    lr: {kind: uniform, value: [0.01, 0.1]}
`, "    - {name: lr, type: float}\n    - {name: num_steps, type: int}\n", `["--lr={{ lr }}", "--steps={{ num_steps }}"]`)
	res, e := convertLoad(t, "polyaxon", "polyaxonfile.yml", src, nil)
	if strings.Contains(string(res.HCL), `variable "num_steps"`) {
		t.Errorf("the budget input is a variable:\n%s", res.HCL)
	}
	if e.MaxTrials != 206 {
		t.Errorf("max_trials = %d, want 206 (one round of brackets for max_budget 81, eta 3)\n%s", e.MaxTrials, res.HCL)
	}
	if hasWarning(res, "max_trials", "max_trials = 100") {
		t.Errorf("warnings: %v", res.Warnings)
	}
}

// logspace applies its base (numpy's logspace: base ** linspace), in the
// mapping, list and "start:stop:num:base" forms; a key of a distribution's
// mapping that is not converted is a comment in the HCL too.
func TestPolyaxonLogspaceBase(t *testing.T) {
	for _, v := range []string{"{start: 0, stop: 2, num: 3, base: 2}", "[0, 2, 3, 2]", `"0:2:3:2"`} {
		src := pxOp("  kind: random\n  numRuns: 2\n  params:\n    lr: {kind: logspace, value: "+v+"}\n", "    - {name: lr, type: float}\n", `["--lr={{ lr }}"]`)
		res, e := convertLoad(t, "polyaxon", "polyaxonfile.yml", src, nil)
		if got := fmt.Sprint(optionValues(param(e, "lr"))); got != "[1 2 4]" {
			t.Errorf("%s: %s, want [1 2 4]\n%s", v, got, res.HCL)
		}
		if hasWarning(res, "matrix.params.lr.logspace.base", "") {
			t.Errorf("%s: base warned: %v", v, res.Warnings)
		}
	}
}

// A key of a distribution's mapping that is not converted is a comment in
// the HCL (it was written into a throwaway block).
func TestPolyaxonDistKeyComment(t *testing.T) {
	src := pxOp("  kind: random\n  numRuns: 2\n  params:\n    lr: {kind: uniform, value: {low: 0, high: 1, size: 4}}\n", "    - {name: lr, type: float}\n", `["--lr={{ lr }}"]`)
	res, _ := convertLoad(t, "polyaxon", "polyaxonfile.yml", src, nil) // checkResult: every "not converted" warning has its comment
	hclHas(t, res, "# not converted: matrix.params.lr.uniform.size:")
}

// Polyaxon's q-distributions floor (np.round(x // q) * q); NNI's round.
// quniform and qnormal shift by q/2 where that is exact, else the floored
// values are listed or a warning says how they differ.
func TestPolyaxonQuantizedFloor(t *testing.T) {
	for _, tc := range []struct {
		kind, val string
		want      string // the param's kind and args, or choice options
		warn      string
	}{
		{"quniform", "[32, 256, 32]", "quniform [16 240 32]", ""},
		{"quniform", "[0, 11, 3]", "quniform [-1.5 9.5 3]", ""},
		{"quniform", "[1, 10, 3]", "choice [0 3 6 9]", "0 with probability 0.2222"},
		{"qnormal", "[0.5, 0.1, 0.1]", "qnormal [0.45 0.1 0.1]", ""},
		{"qlognormal", "[0, 1, 2]", "qlognormal [0 1 2]", "Polyaxon floors"},
		{"qloguniform", "[0, 2, 1]", "qloguniform [1 7.38905609893 1]", "Polyaxon floors"},
	} {
		src := pxOp("  kind: random\n  numRuns: 2\n  params:\n    x: {kind: "+tc.kind+", value: "+tc.val+"}\n", "    - {name: x, type: float}\n", `["--x={{ x }}"]`)
		res, e := convertLoad(t, "polyaxon", "polyaxonfile.yml", src, nil)
		p := param(e, "x")
		got := fmt.Sprint(p.Kind, " ", p.Args)
		if p.Kind == space.Choice {
			got = fmt.Sprint(p.Kind, " ", optionValues(p))
		}
		if got != tc.want {
			t.Errorf("%s %s: %s, want %s\n%s", tc.kind, tc.val, got, tc.want, res.HCL)
		}
		if tc.warn != "" && !hasWarning(res, "matrix.params.x."+tc.kind, tc.warn) {
			t.Errorf("%s %s: no warning with %q: %v", tc.kind, tc.val, tc.warn, res.Warnings)
		}
		if tc.warn == "" {
			hclHas(t, res, "floors")
		}
	}
}

// NNI's TPE takes its settings in classArgs.tpe_args; they map as Katib's
// do (n_startup_jobs, n_ei_candidates, prior_weight).
func TestNNITPEArgs(t *testing.T) {
	src := "searchSpace: {x: {_type: uniform, _value: [0, 1]}}\ntrialCommand: python3 t.py\nmaxTrialNumber: 2\n" +
		"tuner: {name: TPE, classArgs: {optimize_mode: maximize, tpe_args: {n_startup_jobs: 5, n_ei_candidates: 12, prior_weight: 2, gamma: 0.3}}}\n"
	res, e := convertLoad(t, "nni", "config.yml", src, nil)
	s := e.Tuner.Settings
	if s["startup_trials"] != 5.0 || s["candidates"] != 12.0 || s["prior_weight"] != 2.0 {
		t.Errorf("settings %v\n%s", s, res.HCL)
	}
	if !hasWarning(res, "tuner.classArgs.tpe_args.gamma", "not converted") || hasWarning(res, "tuner.classArgs.tpe_args", "no such setting") {
		t.Errorf("warnings: %v", res.Warnings)
	}
}

// NNI lower-cases a duration's unit: "1H" is an hour.
func TestNNIDurationUnitCase(t *testing.T) {
	src := "searchSpace: {x: {_type: uniform, _value: [0, 1]}}\ntrialCommand: python3 t.py\nmaxTrialNumber: 2\nmaxExperimentDuration: 1H\nmaxTrialDuration: 30M\n"
	res, e := convertLoad(t, "nni", "config.yml", src, nil)
	if e.MaxDuration.String() != "1h0m0s" || e.Trial.MaxDuration.String() != "30m0s" {
		t.Errorf("max_duration %v, trial %v\n%s", e.MaxDuration, e.Trial.MaxDuration, res.HCL)
	}
}

// A tuner and an assessor of opposite optimize_mode: the tuner's goal is
// kept, with a warning.
func TestNNIGoalMismatchWarns(t *testing.T) {
	src := "searchSpace: {x: {_type: uniform, _value: [0, 1]}}\ntrialCommand: python3 t.py\nmaxTrialNumber: 2\n" +
		"tuner: {name: TPE, classArgs: {optimize_mode: minimize}}\nassessor: {name: Medianstop, classArgs: {optimize_mode: maximize}}\n"
	res, e := convertLoad(t, "nni", "config.yml", src, nil)
	if e.Objective.Goal != "minimize" || !hasWarning(res, "assessor.classArgs.optimize_mode", "the tuner's minimize is kept") {
		t.Errorf("goal %s, warnings %v", e.Objective.Goal, res.Warnings)
	}
}

// Polyaxon's failure_early_stopping is a limit on failed runs, not a
// metric value: the message says so and names max_failed_trials.
func TestPolyaxonFailureEarlyStopping(t *testing.T) {
	src := pxOp("  kind: random\n  numRuns: 10\n  params:\n    x: {kind: uniform, value: [0, 1]}\n  earlyStopping:\n    - {kind: failure_early_stopping, percent: 30}\n",
		"    - {name: x, type: float}\n", `["--x={{ x }}"]`)
	res, _ := convertLoad(t, "polyaxon", "polyaxonfile.yml", src, nil)
	if !hasWarning(res, "matrix.earlyStopping[0]", "stops the sweep once 30% of its runs failed") || hasWarning(res, "matrix.earlyStopping[0]", "stop-at-a-metric-value") {
		t.Errorf("warnings: %v", res.Warnings)
	}
	hclHas(t, res, "max_failed_trials")
}
