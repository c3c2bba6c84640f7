package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner"
)

// Field mappings the corpus does not show, each checked in the HCL and by
// loading the result.
func TestMappings(t *testing.T) {
	space := `{"lr": {"_type": "uniform", "_value": [0.1, 1]}}`
	tests := []struct {
		name, tool, src string
		want            []string // substrings of the HCL
		notWant         []string
		warn            []string // substrings of the warnings
	}{
		{"nni v1 remote", "nni", `
trainingServicePlatform: remote
searchSpacePath: search_space.json
maxTrialNum: 5
trial: {command: python3 t.py, codeDir: ., gpuNum: 1}
machineList:
  - ip: 10.0.0.5
    port: 2222
    username: alice
    passwd: hunter2
    gpuIndices: "0,1"
    maxTrialNumPerGpu: 2
  - ip: 10.0.0.6
    username: bob
    sshKeyPath: ~/.ssh/id_rsa
    passphrase: x
`, []string{`host               = "10.0.0.5"`, `port               = 2222`, `password           = var.remote_password_1`,
			`gpu_indices        = [0, 1]`, `max_trials_per_gpu = 2`, `ssh_key_file = "~/.ssh/id_rsa"`, `gpus     = 1`,
			`# not converted: machineList[1].passphrase: keys with a passphrase go through the SSH agent`},
			[]string{"hunter2"}, []string{`config.yml:10: machineList[0].passwd: a secret`}},
		{"nni v1 advisor hyperband", "nni", `
trainingServicePlatform: local
searchSpacePath: search_space.json
maxTrialNum: 20
maxExecDuration: 3600
advisor:
  builtinAdvisorName: Hyperband
  classArgs: {optimize_mode: minimize, R: 27, eta: 3, exec_mode: parallelism}
trial: {command: python3 t.py --epochs 1, codeDir: .}
`, []string{`tuner "hyperband" {`, `max_budget = 27`, `eta        = 3`, `goal   = "minimize"`, `max_duration = "3600s"`,
			`# not converted: advisor.classArgs.exec_mode: the hyperband tuner has no such setting`}, nil, nil},
		{"nni v2 kubeflow", "nni", `
searchSpaceFile: search_space.json
maxTrialNumber: 3
maxTrialDuration: 30m
trainingService:
  platform: kubeflow
  operator: tf-operator
  apiVersion: v1
  storage: {storageType: nfs, server: 10.1.1.1, path: /exports}
  worker: {replicas: 2, command: python3 t.py, gpuNumber: 1, cpuNumber: 2, memorySize: 4g, dockerImage: tf:2}
  ps: {replicas: 1, command: python3 ps.py, gpuNumber: 0, cpuNumber: 1, memorySize: 1024, dockerImage: tf:2}
`, []string{`operator = "tfjob"`, `image    = "tf:2"`, `memory   = "4Gi"`, `memory   = "1024Mi"`, `command  = "python3 ps.py"`,
			`server     = "10.1.1.1"`, `command      = "python3 t.py"`, `max_duration = "30m"`}, nil, nil},
		{"nni tuners and classArgs", "nni", `
searchSpaceFile: search_space.json
trialCommand: python3 t.py
maxTrialNumber: 3
tuner: {name: GPTuner, classArgs: {optimize_mode: maximize, utility: ei, seed: 3}}
assessor: {name: Medianstop, classArgs: {optimize_mode: maximize, start_step: 4}}
trainingService: {platform: local, gpuIndices: [1, 2], maxTrialNumberPerGpu: 3}
`, []string{`tuner "gp" {`, `seed    = 3`, `utility = "ei"`, `assessor "medianstop" {`, `start_step = 4`,
			`gpu_indices        = [1, 2]`, `max_trials_per_gpu = 3`}, []string{"not converted: tuner"}, nil},
		{"nni GP, SMAC, Metis and DNGO classArgs", "nni", `
searchSpaceFile: search_space.json
trialCommand: python3 t.py
maxTrialNumber: 3
tuner: {name: GPTuner, classArgs: {optimize_mode: minimize, utility: ucb, kappa: 2, xi: 0.01, nu: 1.5, cold_start_num: 5}}
trainingService: {platform: local}
`, []string{`tuner "gp" {`, `utility        = "ucb"`, `kappa          = 2`, `xi             = 0.01`, `startup_trials = 5`,
			`# not converted: tuner.classArgs.nu: trialform's gp always uses the Matern 5/2 kernel (NNI's nu = 2.5)`}, nil,
			[]string{"tuner.classArgs.nu: not converted"}},
		{"nni Metis", "nni", `
searchSpaceFile: search_space.json
trialCommand: python3 t.py
maxTrialNumber: 3
tuner: {name: MetisTuner, classArgs: {optimize_mode: maximize, no_resampling: true, cold_start_num: 4}}
trainingService: {platform: local}
`, []string{`tuner "metis" {`, `resample       = false`, `startup_trials = 4`}, []string{"not converted: tuner"}, nil},
		{"nni SMAC", "nni", `
searchSpaceFile: search_space.json
trialCommand: python3 t.py
maxTrialNumber: 3
tuner: {name: SMAC, classArgs: {optimize_mode: maximize, config_dedup: true}}
trainingService: {platform: local}
`, []string{`tuner "smac" {`, `# not converted: tuner.classArgs.config_dedup: trialform's smac never proposes a point an earlier trial has`}, nil, nil},
		{"nni DNGO", "nni", `
searchSpaceFile: search_space.json
trialCommand: python3 t.py
maxTrialNumber: 3
tuner: {name: DNGOTuner, classArgs: {optimize_mode: maximize}}
trainingService: {platform: local}
`, []string{`tuner "gp" {`, `DNGO (Bayesian linear regression on neural-network features) is not available in trialform; gp`}, nil,
			[]string{"tuner.name: not converted: DNGOTuner"}},
		{"nni nested inline space", "nni", `
searchSpace:
  layer:
    _type: choice
    _value:
      - {_name: conv, k: {_type: choice, _value: [3, 5]}}
      - {_name: pool}
  lr: {_type: qloguniform, _value: [0.001, 1, 0.001]}
trialCommand: python3 t.py
maxTrialNumber: 2
`, []string{`option "conv" {`, `choice = [3, 5]`, `option "pool" {}`, `qloguniform = [0.001, 1, 0.001]`}, nil, nil},
		{"katib parameter kinds", "katib", `
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: kinds}
spec:
  objective: {type: maximize, objectiveMetricName: acc}
  algorithm: {algorithmName: tpe, algorithmSettings: [{name: n_startup_trials, value: "5"}, {name: random_state, value: "9"}]}
  maxTrialCount: 6
  parameters:
    - {name: units, parameterType: int, feasibleSpace: {min: "32", max: "256", step: "32"}}
    - {name: layers, parameterType: int, feasibleSpace: {min: "1", max: "4"}}
    - {name: opt, parameterType: categorical, feasibleSpace: {list: [sgd, adam]}}
    - {name: bs, parameterType: discrete, feasibleSpace: {list: ["16", "32"]}}
    - {name: lr, parameterType: double, feasibleSpace: {min: "0.001", max: "0.1", distribution: logUniform}}
  trialTemplate:
    primaryContainerName: main
    trialParameters: [{name: u, reference: units}, {name: o, reference: opt}]
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            containers:
              - name: main
                image: py:3
                command: [sh, -c]
                args: ["python3 t.py --units=${trialParameters.u} --opt=${trialParameters.o}"]
                env: [{name: A, value: "1"}]
                resources: {limits: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}}
              - name: sidecar
                image: busybox
`, []string{`quniform = [32, 256, 32]`, `randint = [1, 5]`, `choice = ["sgd", "adam"]`, `choice = [16, 32]`, `loguniform = [0.001, 0.1]`,
			`startup_trials = 5`, `seed           = 9`, `args         = ["sh", "-c", "python3 t.py --units=${param.units} --opt=${param.opt}"]`,
			`A = "1"`, `gpu    = 1`, `memory = "2Gi"`, `# not converted: spec.trialTemplate.trialSpec.spec.template.spec.containers[1]: trialform runs one container`},
			nil, nil},
		{"katib metricStrategies", "katib", `
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: strategies}
spec:
  objective:
    type: maximize
    objectiveMetricName: acc
    additionalMetricNames: [loss]
    metricStrategies:
      - {name: loss, value: min}
      - {name: acc, value: latest}
  algorithm: {algorithmName: random}
  maxTrialCount: 2
  parameters:
    - {name: lr, parameterType: double, feasibleSpace: {min: "0.01", max: "0.1"}}
  trialTemplate:
    primaryContainerName: main
    trialParameters: [{name: lr, reference: lr}]
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            containers:
              - {name: main, image: py:3, command: [python3, t.py, "--lr=${trialParameters.lr}"]}
`, []string{`strategy = "latest"`, `# not converted: spec.objective.metricStrategies[0]: strategy "min" of "loss": trialform takes a strategy for the objective only`},
			[]string{`strategy = "max"`}, []string{`config.yml:11: spec.objective.metricStrategies[0]: not converted`}},
		{"polyaxon v0 distributions", "polyaxon", `
version: 1
kind: group
hptuning:
  concurrency: 2
  seed: 4
  grid_search: {n_experiments: 100}
  matrix:
    a: {linspace: 0:1:3}
    b: {logspace: "0:2:3"}
    c: {range: [1, 7, 2]}
    d: {pvalues: [[x, 0.3], [y, 0.7]]}
declarations: {epochs: 3}
build: {image: py:3}
run:
  cmd:
    - pip install x
    - python t.py --a={{ a }} --b={{ b }} --c={{ c }} --d={{ d }} --e={{ epochs }}
`, []string{`choice = [0, 0.5, 1]`, `choice = [1, 10, 100]`, `choice = [1, 3, 5]`, `choice = ["x", "y"]`, `tuner "grid" { seed = 4 }`,
			`max_trials   = 54`, `command = "pip install x && python t.py --a=${param.a} --b=${param.b} --c=${param.c} --d=${param.d} --e=${var.epochs}"`,
			`variable "epochs" {`}, nil, []string{"the probabilities are dropped", "max_trials: 100 is more than the grid's 54 points"}},
		{"polyaxon v1.1 inline component", "polyaxon", `
version: 1.1
kind: operation
matrix:
  kind: hyperopt
  algorithm: anneal
  numRuns: 7
  metric: {name: loss, optimization: minimize}
  params:
    lr: {kind: loguniform, value: "-5:0"}
params:
  batch: {value: 64}
component:
  inputs:
    - {name: lr, type: float}
    - {name: batch, type: int, value: 32}
  run:
    kind: job
    environment: {nodeSelector: {pool: gpu}}
    container:
      image: py:3
      command: [python, t.py]
      args: ["--lr={{ lr }}", "--batch={{ batch }}", "--out={{ globals.artifacts_path }}"]
      resources: {requests: {cpu: 2}}
`, []string{`tuner "anneal" {`, `max_trials   = 7`, `metric = "loss"`, `goal   = "minimize"`, `default = 64`, `pool = "gpu"`, `cpu = 2`,
			`args = ["python", "t.py", "--lr=${param.lr}", "--batch=${var.batch}", "--out={{ globals.artifacts_path }}"]`,
			`loguniform = [0.00673794699909, 1]`}, nil, []string{"{{ globals.artifacts_path }}: not converted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "search_space.json"), []byte(space), 0o644)
			res, err := tools[tt.tool]([]byte(tt.src), Options{Filename: "config.yml", ReadFile: readerFor(dir)})
			if err != nil {
				t.Fatal(err)
			}
			hcl := string(res.HCL)
			flat := strings.Join(strings.Fields(hcl), " ") // alignment aside
			for _, w := range tt.want {
				if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("HCL lacks %q:\n%s", w, hcl)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(hcl, w) {
					t.Errorf("HCL holds %q", w)
				}
			}
			var warns []string
			for _, w := range res.Warnings {
				warns = append(warns, w.String())
			}
			for _, w := range tt.warn {
				if !strings.Contains(strings.Join(warns, "\n"), w) {
					t.Errorf("no warning with %q in\n%s", w, strings.Join(warns, "\n"))
				}
			}
			os.WriteFile(filepath.Join(dir, "main.hcl"), res.HCL, 0o644)
			cfg, diags := schema.Load(dir, schema.LoadOptions{Platforms: testPlatforms, Tuners: tuner.Builtin(), Vars: requiredVars(t, res.HCL)})
			if diags.HasErrors() {
				t.Fatalf("does not validate: %v\n%s", diags, hcl)
			}
			if len(cfg.Experiments) != 1 {
				t.Errorf("experiments: %v", cfg.Experiments)
			}
		})
	}
}
