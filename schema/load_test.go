package schema

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/providers/local"
	"github.com/trialform/trialform/providers/registry"
	"github.com/trialform/trialform/providers/remote"
	"github.com/trialform/trialform/tuner/space"
)

// writeConfig writes files into a new temporary directory.
func writeConfig(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustLoad(t *testing.T, dir string, opts LoadOptions) *Config {
	t.Helper()
	cfg, diags := Load(dir, opts)
	if diags.HasErrors() {
		var b strings.Builder
		_ = WriteDiagnostics(&b, cfg.HCLFiles(), diags, 0, false)
		t.Fatalf("Load(%s) failed:\n%s", dir, b.String())
	}
	return cfg
}

func TestLoadOK(t *testing.T) {
	cfg := mustLoad(t, "testdata/ok", LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	abs, _ := filepath.Abs("testdata/ok")
	if cfg.Dir != abs {
		t.Errorf("Dir = %q, want %q", cfg.Dir, abs)
	}
	if _, ok := cfg.Files["main.hcl"]; !ok || len(cfg.Files) != 2 {
		t.Errorf("Files has %v", keys(cfg.Files))
	}

	plat := cfg.Platforms["local.default"]
	if plat == nil || len(cfg.Platforms) != 1 {
		t.Fatalf("Platforms = %v", cfg.Platforms)
	}
	if ls, ok := plat.Config.(*local.Settings); !ok || !reflect.DeepEqual(ls.GPUIndices, []int{0, 1}) || ls.MaxTrialsPerGPU != 1 {
		t.Errorf("local platform = %+v", plat)
	}
	if want := map[string]any{"gpu_indices": []any{0.0, 1.0}, "max_trials_per_gpu": 1.0}; !reflect.DeepEqual(plat.Attrs, want) {
		t.Errorf("Attrs = %#v, want %#v", plat.Attrs, want)
	}
	if plat.DeclRange.Start.Line != 20 {
		t.Errorf("platform DeclRange = %v", plat.DeclRange)
	}

	svm := cfg.Spaces["svm"]
	wantSVM := &space.Space{Params: []space.Param{
		{Name: "C", Kind: space.Uniform, Args: []float64{0.1, 1}},
		{Name: "kernel", Kind: space.Choice, Options: []space.Option{{Value: "linear"}, {Value: "rbf"}, {Value: "poly"}, {Value: "sigmoid"}}},
		{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-4, 1e-1}},
		{Name: "units", Kind: space.Quniform, Args: []float64{32, 256, 32}},
		{Name: "layers", Kind: space.Randint, Args: []float64{1, 5}},
		{Name: "layer", Kind: space.Choice, Options: []space.Option{
			{Name: "conv", Nested: &space.Space{Params: []space.Param{
				{Name: "kernel", Kind: space.Choice, Options: []space.Option{{Value: 3.0}, {Value: 5.0}}}}}},
			{Name: "pool", Nested: &space.Space{}},
		}},
	}}
	if svm == nil || !reflect.DeepEqual(svm.Space, wantSVM) {
		t.Fatalf("search space svm =\n%#v\nwant\n%#v", svm, wantSVM)
	}
	if svm.NNIFile != "" || svm.DeclRange.Start.Line != 25 {
		t.Errorf("svm NNIFile %q, DeclRange %v", svm.NNIFile, svm.DeclRange)
	}
	nni := cfg.Spaces["from_nni"]
	if nni == nil || nni.NNIFile != filepath.Join(abs, "search_space.json") {
		t.Fatalf("from_nni = %+v", nni)
	}
	if got := nni.Space.Params; len(got) != 2 || got[0].Name != "lr" || got[1].Options[0].Name != "conv" ||
		got[1].Options[0].Nested.Params[0].Name != "kernel" {
		t.Errorf("from_nni params = %#v", got)
	}

	e := cfg.Experiments["svm"]
	if e == nil {
		t.Fatal("no experiment svm")
	}
	if e.Platform != plat || e.SearchSpace != svm {
		t.Errorf("experiment refs: platform %p (want %p), space %p (want %p)", e.Platform, plat, e.SearchSpace, svm)
	}
	if e.Objective != (Objective{Metric: "default", Goal: "maximize"}) {
		t.Errorf("Objective = %+v", e.Objective)
	}
	if e.Tuner.Name != "tpe" || e.Tuner.Seed != 1 || !reflect.DeepEqual(e.Tuner.Settings, map[string]any{"seed": 1.0}) || e.Tuner.Range.Start.Line != 50 {
		t.Errorf("Tuner = %+v", e.Tuner)
	}
	if e.Assessor == nil || e.Assessor.Name != "medianstop" || !reflect.DeepEqual(e.Assessor.Settings, map[string]any{"start_step": 5.0}) {
		t.Errorf("Assessor = %+v", e.Assessor)
	}
	if e.MaxTrials != 20 || e.Concurrency != 2 || e.MaxFailedTrials != 5 || e.MaxDuration != 2*time.Hour {
		t.Errorf("limits = %d %d %d %v", e.MaxTrials, e.Concurrency, e.MaxFailedTrials, e.MaxDuration)
	}
	tr := e.Trial
	if tr.CodeDir != filepath.Join(abs, "src") || tr.Args != nil || tr.MaxDuration != 10*time.Minute || tr.GPUs != 0 {
		t.Errorf("Trial = %+v", tr)
	}
	wantSegs := []Segment{{Literal: "python3 main.py --C "}, {Param: "C"}, {Literal: " --kernel "}, {Param: "kernel"}}
	if tr.Command == nil || !reflect.DeepEqual(tr.Command.Segments, wantSegs) {
		t.Fatalf("Command = %#v", tr.Command)
	}
	if got := tr.Command.String(); got != "python3 main.py --C ${param.C} --kernel ${param.kernel}" {
		t.Errorf("Command.String() = %q", got)
	}
	if tr.Command.Range.Start.Line != 62 {
		t.Errorf("Command.Range = %v", tr.Command.Range)
	}
	if !reflect.DeepEqual(tr.Env, map[string]string{"PYTHONHASHSEED": "0"}) {
		t.Errorf("Env = %v", tr.Env)
	}
	if tr.MetricRegex != `(?P<name>\w+)=(?P<value>[-+]?[0-9.]+(?:[eE][-+]?\d+)?)` {
		t.Errorf("MetricRegex = %q", tr.MetricRegex)
	}

	// The second experiment (another file) copies values from the first.
	n := cfg.Experiments["nni"]
	if n == nil {
		t.Fatal("no experiment nni")
	}
	if n.Platform != plat || n.SearchSpace != nni || n.Assessor != nil {
		t.Errorf("nni refs = %+v", n)
	}
	if n.Tuner.Name != "random" || n.Tuner.Seed != 2 || n.MaxTrials != 40 || n.Concurrency != 1 || n.MaxDuration != 24*time.Hour {
		t.Errorf("nni = tuner %+v, max_trials %d, concurrency %d, max_duration %v", n.Tuner, n.MaxTrials, n.Concurrency, n.MaxDuration)
	}
	if n.Objective != (Objective{Metric: "default", Goal: "maximize"}) || n.Trial.CodeDir != abs || n.Trial.Command != nil {
		t.Errorf("nni defaults: %+v %+v", n.Objective, n.Trial)
	}
	var args []string
	for _, a := range n.Trial.Args {
		args = append(args, a.String())
	}
	if want := []string{"python3", "train.py", "--lr=${param.lr}", "${param.layer}", "X"}; !reflect.DeepEqual(args, want) {
		t.Errorf("Args = %q, want %q", args, want)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

const minimalExperiment = `
search_space "s" {
  param "x" { uniform = [0, 1] }
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  tuner "random" {}
  trial {
    command = "echo ${param.x}"
    env     = local.env
  }
}
`

func TestImplicitDefaultPlatform(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"b.hcl": minimalExperiment,
		"a.hcl": `locals { env = {} }`,
	})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	p := cfg.Platforms["local.default"]
	if p == nil || p.Kind != "local" || p.Name != "default" || p.Config != nil {
		t.Fatalf("implicit platform = %+v", p)
	}
	if p.DeclRange.Filename != "a.hcl" || p.DeclRange.Start.Line != 1 {
		t.Errorf("implicit DeclRange = %v, want the first file", p.DeclRange)
	}
	if cfg.Experiments["e"].Platform != p {
		t.Errorf("experiment platform is not the implicit one")
	}
	// A plain command has one literal and one param segment.
	if got := cfg.Experiments["e"].Trial.Command.Segments; !reflect.DeepEqual(got, []Segment{{Literal: "echo "}, {Param: "x"}}) {
		t.Errorf("segments = %#v", got)
	}
}

func TestOtherPlatformKindsArePermissive(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"main.hcl": `
locals { env = { HOST = platform.futurecloud.lab.machine[1].host } }
platform "futurecloud" "lab" {
  reuse = true
  machine {
    host = "10.0.0.1"
    port = 22
  }
  machine {
    host = "10.0.0.2"
    gpus = [0, 1]
  }
  storage "nfs" { server = "nas" }
}
` + strings.Replace(minimalExperiment, "max_trials   = 1", "max_trials = 1\n  platform = platform.futurecloud.lab", 1),
	})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: notYetPlatforms, Tuners: testTuners})
	p := cfg.Platforms["futurecloud.lab"]
	want := map[string]any{
		"reuse": true,
		"machine": []any{
			map[string]any{"host": "10.0.0.1", "port": 22.0},
			map[string]any{"host": "10.0.0.2", "gpus": []any{0.0, 1.0}},
		},
		"storage": []any{map[string]any{"server": "nas", "_labels": []any{"nfs"}}},
	}
	if p == nil || !reflect.DeepEqual(p.Attrs, want) {
		t.Fatalf("futurecloud Attrs = %#v\nwant %#v", p, want)
	}
	e := cfg.Experiments["e"]
	if e.Platform != p || e.Trial.Env["HOST"] != "10.0.0.2" {
		t.Errorf("experiment platform %v, env %v", e.Platform, e.Trial.Env)
	}
	if len(cfg.Platforms) != 2 {
		t.Errorf("want kubernetes.lab and the implicit local.default, got %v", keys(cfg.Platforms))
	}
}

func TestRemotePlatform(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"main.hcl": `
locals { env = {} }
platform "remote" "lab" {
  known_hosts = "keys/known_hosts"
  work_dir    = "~/tf"
  lost_grace  = "30s"
  machine {
    host               = "10.0.0.5"
    user               = "alice"
    ssh_key_file       = "~/.ssh/id_ed25519"
    gpu_indices        = [0, 1]
    max_trials_per_gpu = 2
    python_path        = "/opt/conda/bin"
  }
  machine {
    host       = "10.0.0.6"
    port       = 2222
    password   = "s3cret"
    max_trials = 3
  }
}
` + strings.Replace(minimalExperiment, "max_trials   = 1", "max_trials = 1\n  platform = platform.remote.lab", 1),
	})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	p := cfg.Platforms["remote.lab"]
	rs, ok := p.Config.(*remote.Settings)
	if p == nil || !ok {
		t.Fatalf("remote.lab = %+v", p)
	}
	home, _ := os.UserHomeDir()
	r := remote.ConfigFrom(rs, registry.Env{Name: "lab", Dir: dir})
	if r.KnownHosts != filepath.Join(dir, "keys/known_hosts") || r.WorkDir != "~/tf" || r.LostGrace != 30*time.Second || len(r.Machines) != 2 || r.Name != "lab" {
		t.Errorf("remote = %+v", r)
	}
	m0, m1 := r.Machines[0], r.Machines[1]
	if m0.Host != "10.0.0.5" || m0.Port != 22 || m0.User != "alice" || m0.KeyFile != filepath.Join(home, ".ssh/id_ed25519") ||
		!reflect.DeepEqual(m0.GPUIndices, []int{0, 1}) || m0.MaxTrialsPerGPU != 2 || m0.PythonPath != "/opt/conda/bin" {
		t.Errorf("machine 0 = %+v", m0)
	}
	if m1.Host != "10.0.0.6" || m1.Port != 2222 || m1.Password != "s3cret" || m1.MaxTrials != 3 || m1.MaxTrialsPerGPU != 1 || m1.GPUIndices != nil {
		t.Errorf("machine 1 = %+v", m1)
	}
}

func TestVariablePrecedence(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"main.hcl": `
variable "a" { default = "default" }
variable "b" { default = "default" }
variable "c" { default = "default" }
variable "d" { default = "default" }
variable "e" {
  type    = string
  default = "default"
}
variable "n" { type = number }
variable "l" { type = list(string) }
variable "y" { type = any }
variable "g" {}
variable "u" {}
variable "k" {}
variable "p" {}
variable "s" { type = string }
locals {
  env = {
    A = var.a, B = var.b, C = var.c, D = var.d, E = var.e
    N = var.n + 1
    L = join(",", var.l)
    Y = join(",", var.y)
    G = var.g
    U = join(",", var.u)
    K = var.k * 2
    P = var.p
    S = var.s
  }
}
` + minimalExperiment,
		"one.tfvars": "c = \"file1\"\nd = \"file1\"\ne = \"file1\"\n",
		"two.tfvars": "d = \"file2\"\ne = \"file2\"\n",
	})
	opts := LoadOptions{Platforms: testPlatforms, Tuners: testTuners,
		Environ: []string{
			"HOME=/x", "TRIALFORM_VAR_b=env", "TRIALFORM_VAR_c=env", "TRIALFORM_VAR_d=env", "TRIALFORM_VAR_e=env",
			"TRIALFORM_VAR_undeclared=ignored", "TRIALFORM_VAR_n=41",
			// an untyped variable takes the text as it is (a subscription
			// id read as an expression would be a subtraction)
			"TRIALFORM_VAR_g=00000000-1111-2222-3333-444444444444",
		},
		VarFiles: []string{filepath.Join(dir, "one.tfvars"), filepath.Join(dir, "two.tfvars")},
		Vars:     []string{"e=first", "e=cli", `l=["x","y"]`, `y=["u","v"]`, `u=["w", -1, true]`, "k=-2.5", "p=/usr/bin/python3", "s=[1]"},
	}
	cfg := mustLoad(t, dir, opts)
	want := map[string]string{
		"A": "default", "B": "env", "C": "file1", "D": "file2", "E": "cli",
		"N": "42", "L": "x,y", "Y": "u,v", "G": "00000000-1111-2222-3333-444444444444", "U": "w,-1,true", "K": "-5", "P": "/usr/bin/python3", "S": "[1]",
	}
	if got := cfg.Experiments["e"].Trial.Env; !reflect.DeepEqual(got, want) {
		t.Errorf("env = %v\nwant  %v", got, want)
	}
	if _, ok := cfg.Files[filepath.Join(dir, "two.tfvars")]; !ok {
		t.Errorf("var files are not in Files: %v", keys(cfg.Files))
	}
}

func TestVariableErrors(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"main.hcl": `
variable "n" { type = number }
variable "d" {
  type    = number
  default = "many"
}
locals { env = {} }
` + minimalExperiment,
		"bad.tfvars": "n = 3\nnope = 1\n",
	})
	tests := []struct {
		name string
		opts LoadOptions
		want []string // summary: detail fragment
	}{
		{"unknown -var", LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Vars: []string{"n=1", "m=2"}},
			[]string{`Value for undeclared variable: A variable named "m" was given with -var`}},
		{"-var without =", LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Vars: []string{"n"}},
			[]string{`Invalid -var option: The given -var option "n" is not correctly specified`,
				`No value for required variable: The variable "n" has no default`}},
		{"wrong type", LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Vars: []string{"n=abc"}},
			[]string{`Invalid value for variable: The value given for variable "n" by -var n is not suitable: number is required`}},
		{"wrong type from env", LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Environ: []string{"TRIALFORM_VAR_n=x"}},
			[]string{`Invalid value for variable: The value given for variable "n" by environment variable TRIALFORM_VAR_n is not suitable`}},
		{"unknown in var file", LoadOptions{Platforms: testPlatforms, Tuners: testTuners, VarFiles: []string{filepath.Join(dir, "bad.tfvars")}},
			[]string{`Value for undeclared variable: The variable file sets "nope"`}},
		{"missing var file", LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Vars: []string{"n=1"}, VarFiles: []string{filepath.Join(dir, "none.tfvars")}},
			[]string{`Cannot read variables file: Reading -var-file`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := Load(dir, tt.opts)
			var got []string
			for _, d := range diags {
				if strings.Contains(d.Summary, "default value") {
					continue // the broken default, reported in every case
				}
				got = append(got, d.Summary+": "+d.Detail)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d diagnostics, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("diag %d = %q\nwant prefix %q", i, got[i], tt.want[i])
				}
			}
		})
	}
	// The broken default itself.
	_, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Vars: []string{"n=1"}})
	if len(diags) != 1 || diags[0].Summary != "Invalid default value for variable" || diags[0].Subject.Start.Line != 5 {
		t.Errorf("default diagnostics = %v", diags)
	}
}

func TestLocalsAndFunctions(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"a.hcl": `
variable "base" { default = 10 }
locals {
  doubled = local.base2 * 2
  words   = split(",", "a,b,c")
}
`,
		"b.hcl": `
locals {
  base2 = var.base + 1
  env = {
    DOUBLED = local.doubled
    UPPER   = upper(join("-", local.words))
    FMT     = format("%03d", max(3, 7, 5))
    LEN     = length(concat(local.words, ["d"]))
    JSON    = jsonencode({ k = range(3) })
    COAL    = coalesce(null, "fallback")
    TRY     = try(local.words[9], "none")
    FLOOR   = floor(7.9)
    REPL    = replace("a.b.c", ".", "/")
  }
}
` + minimalExperiment,
	})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	want := map[string]string{
		"DOUBLED": "22", "UPPER": "A-B-C", "FMT": "007", "LEN": "4", "JSON": `{"k":[0,1,2]}`,
		"COAL": "fallback", "TRY": "none", "FLOOR": "7", "REPL": "a/b/c",
	}
	if got := cfg.Experiments["e"].Trial.Env; !reflect.DeepEqual(got, want) {
		t.Errorf("env = %v\nwant  %v", got, want)
	}
}

func TestTemplateParts(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"main.hcl": `
locals {
  py  = "python3"
  env = {}
}
search_space "s" {
  param "x" { uniform = [0, 1] }
  param "k" { choice = ["a", "b"] }
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  tuner "random" {}
  trial {
    command = "${local.py} -c 'print(1)' --x=${param.x}${param.k} $${HOME} ${1 + 2}"
  }
}
experiment "f" {
  search_space = search_space.s
  max_trials   = 1
  tuner "random" {}
  trial {
    args = local.argv
  }
}
locals { argv = ["a", "b c"] }
`,
	})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	cmd := cfg.Experiments["e"].Trial.Command
	want := []Segment{{Literal: "python3 -c 'print(1)' --x="}, {Param: "x"}, {Param: "k"}, {Literal: " ${HOME} 3"}}
	if !reflect.DeepEqual(cmd.Segments, want) {
		t.Errorf("segments = %#v\nwant %#v", cmd.Segments, want)
	}
	if got := cmd.String(); got != "python3 -c 'print(1)' --x=${param.x}${param.k} $${HOME} 3" {
		t.Errorf("String() = %q", got)
	}
	if got := cmd.Params(); !reflect.DeepEqual(got, []string{"x", "k"}) {
		t.Errorf("Params() = %v", got)
	}
	args := cfg.Experiments["f"].Trial.Args
	if len(args) != 2 || args[1].String() != "b c" || !args[1].IsLiteral() {
		t.Errorf("args from a local = %#v", args)
	}
}

// wantDiag is one expected error: summary, a fragment of the detail and
// "file:line" of the subject.
type wantDiag struct{ summary, detail, pos string }

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		dir  string
		want []wantDiag
	}{
		{"malformed", []wantDiag{{"Invalid expression", "Expected the start of an expression", "main.hcl:7"}}},
		{"unknown_platform_kind", []wantDiag{{"Unknown platform kind",
			`Unknown platform kind "slurm"; known kinds: local, remote, kubernetes, kubeflow, adaptdl, frameworkcontroller, openpai, dlc, aml, dlts.`, "main.hcl:1"}}},
		{"unknown_tuner", []wantDiag{{"Unknown tuner", `. Did you mean "tpe"?`, "main.hcl:7"}}},
		{"tuner_settings", []wantDiag{{"Unsupported argument", `An argument named "colour" is not expected in tuner "random"; it takes "seed".`, "main.hcl:9"}}},
		{"tuner_setting_typo", []wantDiag{
			{"Unsupported argument", `An argument named "startup_trails" is not expected in tuner "tpe"; it takes "candidates", "multivariate", "prior_weight", "seed", "startup_trials". Did you mean "startup_trials"?`, "main.hcl:8"},
			{"Invalid value", `candidates must be at least 1, got 0.`, "main.hcl:9"},
			{"Incorrect attribute value type", `Inappropriate value for multivariate: true or false is required.`, "main.hcl:10"},
		}},
		{"tuner_setting_checks", []wantDiag{
			{"Invalid value", `sample_size (30) must not exceed population_size (20).`, "main.hcl:9"},
		}},
		{"grid_too_small", []wantDiag{{"Grid smaller than max_trials", `The grid of search_space "s" has 4 points but max_trials is 5; lower max_trials to 4`, "main.hcl:8"}}},
		{"hyperband_round_too_large", []wantDiag{{"Hyperband round too large",
			`max_budget 1e+12 over min_budget 1e-09 with eta 2 makes 70 brackets, and one round of them 2.4e+21 trials (the first rung alone 5.9e+20 trials at budget 1.69e-09): more than any experiment runs, and more than the 9.01e+15 a round may have. Raise min_budget to 0.0008882 or more, raise eta, or lower max_budget.`, "main.hcl:8"}}},
		{"batch_too_small", []wantDiag{{"Params list smaller than max_trials", `The params list of tuner "batch" has 3 parameter sets but max_trials is 5; lower max_trials to 3, or list more parameter sets in params (a set listed twice runs twice).`, "main.hcl:7"}}},
		{"duplicate_choice", []wantDiag{
			{"Duplicate choice value", `choice of param "k" lists "a" twice: options 1 and 2. Each value may be listed once (the grid tuner would run it twice, and the others draw it twice as often); remove one.`, "main.hcl:2"},
			{"Duplicate choice value", `choice of param "n" lists 1 twice: options 1 and 3 (1 and 1.0 are the same number; 1 and "1" differ).`, "main.hcl:7"},
		}},
		{"unknown_assessor", []wantDiag{{"Unknown assessor", `Unknown assessor "medianstp"; known: curvefitting, medianstop. Did you mean "medianstop"?`, "main.hcl:8"}}},
		{"assessor_settings", []wantDiag{{"Missing required argument", `assessor "curvefitting" needs "epoch_num".`, "main.hcl:8"}}},
		{"assessor_setting_checks", []wantDiag{
			{"Invalid value", `percentile must be greater than 0, got 0.`, "main.hcl:9"},
		}},
		{"undefined_refs", []wantDiag{
			{"Reference to undeclared platform", `No platform "local" "defualt" is declared. Did you mean platform.local.default?`, "main.hcl:9"},
			{"Reference to undeclared search space", `No search space named "svn" is declared. Did you mean search_space.svm?`, "main.hcl:10"},
			{"Reference to undeclared input variable", `No input variable named "m" is declared. Did you mean var.n?`, "main.hcl:11"},
			{"Reference to undeclared local value", `No local value named "cmdd" is declared. Did you mean local.cmd?`, "main.hcl:12"},
		}},
		{"low_high", []wantDiag{{"Invalid param", `param "C": uniform needs low < high, got low 1 and high 0.1; swap them or widen the range`, "main.hcl:3"}}},
		{"loguniform_low", []wantDiag{{"Invalid param", `param "lr": loguniform needs low > 0`, "main.hcl:3"}}},
		{"q_zero", []wantDiag{{"Invalid param", `param "units": quniform needs q > 0`, "main.hcl:2"}}},
		{"empty_choice", []wantDiag{{"Invalid param", `param "kernel": choice needs at least one option`, "main.hcl:2"}}},
		{"missing_distribution", []wantDiag{
			{"Missing distribution", `param "x" needs exactly one of choice, randint, uniform`, "main.hcl:2"},
			{"Conflicting distributions", `param "y" sets both uniform and normal`, "main.hcl:5"},
		}},
		{"undefined_param", []wantDiag{{"Undefined param", `undefined param "gamma"; the search space "svm" has: C, kernel.`, "main.hcl:10"}}},
		{"param_misuse", []wantDiag{
			{"Invalid use of param", "param values can only be used as ${param.NAME} in trial.command or trial.args", "main.hcl:9"},
			{"Invalid use of param", "param values can only be used as ${param.NAME} in trial.command or trial.args", "main.hcl:10"},
		}},
		{"missing_code_dir", []wantDiag{{"Missing code directory", `code_dir "./nope" does not exist`, "main.hcl:9"}}},
		{"cycle_locals", []wantDiag{{"Reference cycle", "local.a -> local.b -> local.c -> local.a", "main.hcl:4"}}},
		{"cycle_experiments", []wantDiag{{"Reference cycle", "experiment.a -> experiment.b -> experiment.a", "main.hcl:13"}}},
		{"duplicate_block", []wantDiag{{"Duplicate experiment",
			`experiment "svm" is declared twice; first at a.hcl:5.`, "b.hcl:1"}}},
		{"missing_variable", []wantDiag{{"No value for required variable",
			`The variable "max_trials" has no default, so it needs a value: use -var 'max_trials=...', a -var-file that sets max_trials, or the environment variable TRIALFORM_VAR_max_trials.`, "main.hcl:1"}}},
		{"bad_nni_file", []wantDiag{{"Invalid NNI search space file", `space.json: param "lr": loguniform needs low > 0`, "main.hcl:2"}}},
		{"bad_values", []wantDiag{
			{"Invalid value", "max_trials must be at least 1, got 0.", "main.hcl:7"},
			{"Invalid value", "concurrency must be a whole number, got 1.5.", "main.hcl:8"},
			{"Invalid duration", `max_duration "2 hours"`, "main.hcl:9"},
			{"Invalid goal", `goal must be "maximize" or "minimize", got "max".`, "main.hcl:11"},
			{"Invalid metric_regex", "metric_regex needs the named groups", "main.hcl:15"},
		}},
		{"objective_and_deadline", []wantDiag{
			{"Invalid on_max_duration", `on_max_duration must be "stop" (tear the running trials down at the deadline) or "finish" (start no new trials and let the running ones finish, as NNI does), got "drain".`, "main.hcl:9"},
			{"Invalid strategy", `strategy must be "final" (the trial's final result, the default), "min", "max" or "latest" (the least, greatest or last value of the metric the trial reported, intermediate results included, as Katib's metricStrategies), got "lastest". Did you mean "latest"?`, "main.hcl:13"},
		}},
		{"misspelled_names", []wantDiag{
			{"Unsupported argument", `An argument named "max_failed_trail" is not expected here. Did you mean "max_failed_trials"?`, "main.hcl:8"},
			{"Unsupported block type", `Blocks of type "objectiv" are not expected here. Did you mean "objective"?`, "main.hcl:12"},
		}},
		{"local_platform_attr", []wantDiag{{"Unsupported argument", `Did you mean "gpu_indices"?`, "main.hcl:2"}}},
		{"wrong_arg_count", []wantDiag{
			{"Invalid param", `param "a": uniform needs 2 values [low, high], got 1`, "main.hcl:2"},
			{"Invalid param", `param "b": randint bounds must be integers`, "main.hcl:3"},
			{"Invalid param", `param "c": normal needs sigma > 0`, "main.hcl:4"},
			{"Invalid param value", `uniform of param "d" must be a list of numbers, like [0, 1]; item 1 is not a number.`, "main.hcl:5"},
		}},
		{"command_and_args", []wantDiag{{"Conflicting trial command", "either command", "main.hcl:10"}}},
		{"vars_file_in_dir", []wantDiag{
			{"Unsupported argument", `prod.hcl holds only NAME = value lines, as a variables file does, but every *.hcl file of the directory is read as configuration: give it another extension (prod.tfvars) and pass it with -var-file.`, "prod.hcl:2"},
			{"No value for required variable", `The variable "n" has no default`, "main.hcl:1"},
		}},
		{"remote_platform", []wantDiag{
			{"Invalid duration", `lost_grace "soon"`, "main.hcl:3"},
			{"Unsupported argument", `Did you mean "port"?`, "main.hcl:6"},
			{"Invalid value", "max_trials must be at least 1, got 0.", "main.hcl:11"},
			{"Duplicate machine", `machine 10.0.0.5:22 is listed twice in platform "remote" "lab"; first at`, "main.hcl:8"},
			{"Missing machine block", `platform "remote" "empty" needs at least one machine block`, "main.hcl:14"},
		}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.dir] = true
		t.Run(tt.dir, func(t *testing.T) {
			dir := filepath.Join("testdata/errors", tt.dir)
			cfg, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
			if !diags.HasErrors() {
				t.Fatal("Load succeeded")
			}
			if cfg == nil || len(cfg.Files) == 0 || cfg.Experiments != nil || cfg.Spaces != nil || cfg.Platforms != nil {
				t.Errorf("on error Load must return a Config with only Dir and Files, got %+v", cfg)
			}
			var got []string
			for _, d := range diags {
				got = append(got, describe(d))
			}
			if len(diags) != len(tt.want) {
				t.Fatalf("got %d diagnostics, want %d:\n%s", len(diags), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				d := diags[i]
				pos := ""
				if d.Subject != nil {
					pos = fmt.Sprintf("%s:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line)
				}
				if d.Severity != hcl.DiagError || d.Summary != w.summary || !strings.Contains(d.Detail, w.detail) || pos != w.pos {
					t.Errorf("diagnostic %d = %s\nwant %s at %s: ...%s...", i, got[i], w.summary, w.pos, w.detail)
				}
			}
		})
	}
	// Every testdata/errors dir has a case.
	ents, err := os.ReadDir("testdata/errors")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !seen[e.Name()] {
			t.Errorf("testdata/errors/%s has no test case", e.Name())
		}
	}
}

func describe(d *hcl.Diagnostic) string {
	pos := "-"
	if d.Subject != nil {
		pos = d.Subject.String()
	}
	return fmt.Sprintf("%s: %s: %s", pos, d.Summary, d.Detail)
}

func TestLoadDirErrors(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		dir, summary string
	}{
		{filepath.Join(empty, "missing"), "Cannot read configuration directory"},
		{empty, "No configuration files"},
	}
	for _, tt := range tests {
		cfg, diags := Load(tt.dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
		if len(diags) != 1 || diags[0].Summary != tt.summary || cfg == nil {
			t.Errorf("Load(%s) = %v", tt.dir, diags)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2h", 2 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"1d", 24 * time.Hour, true},
		{"2d", 48 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"0s", 0, true},
		{"", 0, false},
		{"2 hours", 0, false},
		{"-1h", 0, false},
		{"xd", 0, false},
		{"1dd", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestExperimentReferencesThroughAnother(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"main.hcl": `
platform "local" "gpu" {
  gpu_indices = [3]
}
search_space "s" {
  param "x" { uniform = [0, 1] }
  param "n" { randint = [1, 4] }
}
experiment "base" {
  platform     = platform.local.gpu
  search_space = search_space.s
  max_trials   = 7
  concurrency  = length(search_space.s.params)
  tuner "grid" { grid_points = 3 }
  objective { goal = "minimize" }
  trial {
    command = <<-EOT
      python3 train.py \
        --x ${param.x} %{ for f in ["a", "b"] }--flag-${f} %{ endfor }--n=${param.n}
    EOT
    env = { GPUS = join(",", platform.local.gpu.gpu_indices) }
  }
}
experiment "copy" {
  platform     = experiment.base.platform
  search_space = experiment.base.search_space
  max_trials   = experiment.base.max_trials + experiment.base.concurrency
  tuner "random" {}
  objective { goal = experiment.base.objective.goal }
  trial {
    args = ["echo", "${param.n}"]
    env  = experiment.base.trial.env
  }
}
`,
	})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	base, cp := cfg.Experiments["base"], cfg.Experiments["copy"]
	gpu := cfg.Platforms["local.gpu"]
	if base.Platform != gpu || cp.Platform != gpu || cp.SearchSpace != base.SearchSpace {
		t.Errorf("references: base %v/%v copy %v/%v", base.Platform, base.SearchSpace, cp.Platform, cp.SearchSpace)
	}
	if base.Concurrency != 2 || cp.MaxTrials != 9 || cp.Objective.Goal != "minimize" || cp.Trial.Env["GPUS"] != "3" {
		t.Errorf("copy = %+v", cp)
	}
	if got, want := base.Trial.Command.String(), "python3 train.py \\\n  --x ${param.x} --flag-a --flag-b --n=${param.n}\n"; got != want {
		t.Errorf("heredoc command = %q, want %q", got, want)
	}
	// Both platforms exist: the declared one and the implicit default.
	if len(cfg.Platforms) != 2 || cfg.Platforms["local.default"] == nil {
		t.Errorf("platforms = %v", keys(cfg.Platforms))
	}
}

// Issue 11, bug 15: a code_dir that is a symlink loop says so (it was
// "does not exist").
func TestCodeDirSymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/errors/missing_code_dir/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nope", filepath.Join(dir, "nope")); err != nil {
		t.Fatal(err)
	}
	_, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if len(diags) != 1 || !strings.Contains(describe(diags[0]), `main.hcl:9,16-24: Invalid code directory: code_dir "./nope"`) || !strings.Contains(diags[0].Detail, "symbolic link loop") {
		t.Fatalf("diags = %v", diags)
	}
}

// on_max_duration is read, "stop" by default, and warned about without a
// max_duration (it would do nothing).
func TestOnMaxDuration(t *testing.T) {
	src := func(attrs string) map[string]string {
		return map[string]string{"main.hcl": `
search_space "s" {
  param "x" { uniform = [0, 1] }
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 2
` + attrs + `
  trial {
    command = "echo ${param.x}"
  }
}
`}
	}
	cfg := mustLoad(t, writeConfig(t, src(`max_duration = "1h"`)), LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if got := cfg.Experiments["e"].OnMaxDuration; got != OnMaxDurationStop {
		t.Errorf("default on_max_duration = %q, want stop", got)
	}
	cfg = mustLoad(t, writeConfig(t, src("max_duration = \"1h\"\n  on_max_duration = \"finish\"")), LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if got := cfg.Experiments["e"].OnMaxDuration; got != OnMaxDurationFinish {
		t.Errorf("on_max_duration = %q, want finish", got)
	}
	_, diags := Load(writeConfig(t, src(`on_max_duration = "finish"`)), LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "on_max_duration without max_duration" ||
		diags[0].Subject == nil || diags[0].Subject.Start.Line != 8 {
		t.Errorf("diags = %v", diags)
	}
}

// Issue 25, 12: with UnknownVariables (validate) a required variable
// without a value is unknown instead of an error, as Terraform validates
// "regardless of any provided variables"; what does not depend on it is
// still checked (a misspelt argument beside an unknown value, a bad
// max_trials), and without the option the values are required.
func TestLoadUnknownVariables(t *testing.T) {
	dir := filepath.Join("testdata", "unknown_vars")
	_, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners, UnknownVariables: true})
	var got []string
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			got = append(got, fmt.Sprintf("%s:%d %s: %s", d.Subject.Filename, d.Subject.Start.Line, d.Summary, d.Detail))
		}
	}
	want := []string{
		`main.hcl:13 Unsupported argument: An argument named "prot" is not expected in machine`,
		`main.hcl:37 Invalid value: max_trials must be at least 1, got 0.`,
	}
	if len(got) != len(want) {
		t.Fatalf("errors:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %s\nwant %s...", i, got[i], want[i])
		}
	}

	// Fixed, it validates with every variable unknown.
	fixed := t.TempDir()
	src, err := os.ReadFile(filepath.Join(dir, "main.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	src = []byte(strings.NewReplacer("    prot = 22\n", "", "max_trials   = 0", "max_trials   = 1").Replace(string(src)))
	if err := os.WriteFile(filepath.Join(fixed, "main.hcl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(fixed, LoadOptions{Platforms: testPlatforms, Tuners: testTuners, UnknownVariables: true})
	if diags.HasErrors() {
		t.Fatalf("validate with unknown variables: %v", diags)
	}
	if want := []string{"n", "host", "lrs", "tok"}; !slices.Equal(cfg.UnknownVars, want) {
		t.Errorf("UnknownVars = %q, want %q", cfg.UnknownVars, want)
	}
	if d := cfg.Declared; d.Experiments != 2 || d.Spaces != 1 || d.Platforms != 1 || !d.ImplicitLocal {
		t.Errorf("Declared = %+v, want 2 experiments, 1 space, 1 platform block and the built-in local.default", d)
	}
	// plan and apply: each missing value is an error.
	_, diags = Load(fixed, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	n := 0
	for _, d := range diags {
		if d.Summary == "No value for required variable" {
			n++
		}
	}
	if n != 4 {
		t.Errorf("without UnknownVariables: %d missing-value errors, want 4: %v", n, diags)
	}
}

// LoadOptions.Within (the controller's checkout): a *.hcl file or an
// nni_file that is a symbolic link to a file outside it is refused, and
// nothing of that file is read into the diagnostics; a link inside it is
// followed.
func TestLoadWithinRefusesLinksOut(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "environ")
	if err := os.WriteFile(secret, []byte("TOKEN=hunter2-outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "exps")
	if err := os.MkdirAll(filepath.Join(root, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	space := `{"x": {"_type": "uniform", "_value": [0, 1]}}`
	if err := os.WriteFile(filepath.Join(root, "shared", "space.json"), []byte(space), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(`search_space "s" {
  nni_file = "space.json"
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "true"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "shared", "space.json"), filepath.Join(dir, "space.json")); err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Within: root}
	if _, diags := Load(dir, opts); diags.HasErrors() {
		t.Fatalf("a link inside the repository: %v", diags)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "e.hcl")); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(dir, opts)
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "outside the repository the controller reads") {
		t.Fatalf("a *.hcl link out of the repository: %v", diags)
	}
	if strings.Contains(diags.Error(), "hunter2") || strings.Contains(string(cfg.Files["e.hcl"]), "hunter2") {
		t.Errorf("the file outside was read: %v", diags)
	}
	os.Remove(filepath.Join(dir, "e.hcl"))
	os.Remove(filepath.Join(dir, "space.json"))
	if err := os.Symlink(secret, filepath.Join(dir, "space.json")); err != nil {
		t.Fatal(err)
	}
	if _, diags := Load(dir, opts); !diags.HasErrors() || !strings.Contains(diags.Error(), "outside the repository") || strings.Contains(diags.Error(), "hunter2") {
		t.Errorf("an nni_file link out of the repository: %v", diags)
	}
	// Without Within (the CLI in a working copy) links are followed.
	if _, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners}); !diags.HasErrors() || strings.Contains(diags.Error(), "outside the repository") {
		t.Errorf("without Within: %v", diags)
	}
}

// TestLoadWithinRefusesCodeDirOut: under the controller a commit cannot
// make trials ship the controller's own files (its service account token,
// its git credentials) as code: a code_dir outside the checkout, by path
// or by a link, is refused; one inside is fine.
func TestLoadWithinRefusesCodeDirOut(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "token"), []byte("SA-TOKEN-hunter2"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "exps")
	for _, d := range []string{filepath.Join(dir, "code"), filepath.Join(root, "shared")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "shared"), filepath.Join(dir, "sharedlink")); err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Within: root}
	for _, c := range []struct {
		codeDir string
		ok      bool
	}{
		{"code", true}, {"../shared", true}, {"sharedlink", true}, {".", true},
		{outside, false}, {"linked", false}, {"../..", false}, {"/", false},
	} {
		hcl := fmt.Sprintf(`search_space "s" {
  param "x" { uniform = [0, 1] }
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    code_dir = %q
    command  = "cat token"
  }
}
`, c.codeDir)
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, diags := Load(dir, opts)
		if c.ok {
			if diags.HasErrors() {
				t.Errorf("code_dir %q inside the repository: %v", c.codeDir, diags)
			}
			continue
		}
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "outside the repository the controller reads") || !strings.Contains(diags.Error(), "main.hcl:8") {
			t.Errorf("code_dir %q out of the repository: %v", c.codeDir, diags)
		}
		if e := cfg.Experiments["e"]; e != nil && !strings.HasPrefix(e.Trial.CodeDir, root) {
			t.Errorf("code_dir %q: the experiment kept %s", c.codeDir, e.Trial.CodeDir)
		}
		// Without Within (the CLI in a working copy) it is the user's own machine.
		if _, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners}); diags.HasErrors() {
			t.Errorf("code_dir %q without Within: %v", c.codeDir, diags)
		}
	}
}

// TestGivenValuesNeverShown: a value given by the environment or -var is
// never quoted in an error, sensitive or not: under the controller the
// operator gives it and a commit decides whether it is declared sensitive
// (a commit re-typing a secret printed it in the log and the dashboard).
// Under the controller (Within), a variable file's snippet hides every
// value, not only the sensitive ones.
func TestGivenValuesNeverShown(t *testing.T) {
	root := t.TempDir()
	const secret = "postgres://u:pw123secret@db/exps"
	if err := os.WriteFile(filepath.Join(root, "main.hcl"), []byte(`variable "pg_conn" {
  type = number
}
search_space "s" {
  param "x" { uniform = [0, 1] }
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "true"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	varFile := filepath.Join(t.TempDir(), "ops.tfvars")
	if err := os.WriteFile(varFile, []byte("pg_conn = \""+secret+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []LoadOptions{
		{Environ: []string{"TRIALFORM_VAR_pg_conn=" + secret}},
		{Vars: []string{"pg_conn=" + secret}},
		{VarFiles: []string{varFile}, Within: root},
	} {
		opts.Platforms, opts.Tuners = testPlatforms, testTuners
		cfg, diags := Load(root, opts)
		if !diags.HasErrors() {
			t.Fatalf("%+v: no error", opts)
		}
		var out bytes.Buffer
		if cfg != nil {
			WriteDiagnostics(&out, cfg.HCLFiles(), diags, 100, false)
		}
		out.WriteString(diags.Error())
		if strings.Contains(out.String(), "pw123secret") {
			t.Errorf("%+v: the value is shown:\n%s", opts, out.String())
		}
	}
}

// TestLoadWithinRefusesGitDir: under the controller the checkout's .git
// directory is not what a commit may read or ship: a code_dir of
// "../.git" (or a link to it) gave every trial the checkout's config,
// which held the token of a -repo URL (the controller no longer writes it
// there); an nni_file or a *.hcl link into it is refused the same way.
func TestLoadWithinRefusesGitDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "exps")
	if err := os.MkdirAll(filepath.Join(root, ".git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[remote \"origin\"]\n\turl = https://oauth2:hunter2@host/r.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.git", filepath.Join(dir, "g")); err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Within: root}
	for _, codeDir := range []string{"../.git", "../.git/objects", "g"} {
		hcl := fmt.Sprintf(`search_space "s" {
  param "x" { uniform = [0, 1] }
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    code_dir = %q
    command  = "cat config"
  }
}
`, codeDir)
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
			t.Fatal(err)
		}
		_, diags := Load(dir, opts)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "is in the git directory of the repository the controller reads") || !strings.Contains(diags.Error(), "main.hcl:8") {
			t.Errorf("code_dir %q: %v", codeDir, diags)
		}
		if _, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners}); diags.HasErrors() {
			t.Errorf("code_dir %q without Within: %v", codeDir, diags)
		}
	}
	os.Remove(filepath.Join(dir, "main.hcl"))
	if err := os.Symlink("../.git/config", filepath.Join(dir, "main.hcl")); err != nil {
		t.Fatal(err)
	}
	if _, diags := Load(dir, opts); !diags.HasErrors() || !strings.Contains(diags.Error(), "is in the git directory") || strings.Contains(diags.Error(), "hunter2") {
		t.Errorf("a *.hcl link into .git: %v", diags)
	}
}
