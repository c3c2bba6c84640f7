package convert

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/docs"

	"github.com/trialform/trialform/tuner"
)

// convertSrc converts src (a file named name, beside the files in extra)
// with tool, and validates the HCL as the corpus tests do.
func convertSrc(t *testing.T, tool, name, src string, opt Options, extra map[string]string) *Result {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	os.WriteFile(p, []byte(src), 0o644)
	for k, v := range extra {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, k)), 0o755)
		os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644)
	}
	opt.Filename = name
	opt.ReadFile = readerFor(dir)
	res, err := tools[tool]([]byte(src), opt)
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	c := tcase{tool: tool, path: p}
	checkResult(t, c, res)
	validate(t, c, res)
	return res
}

func hasWarning(res *Result, field, msg string) bool {
	for _, w := range res.Warnings {
		if w.Field == field && strings.Contains(w.Msg, msg) {
			return true
		}
	}
	return false
}

func mustContain(t *testing.T, res *Result, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !bytes.Contains(res.HCL, []byte(s)) {
			t.Errorf("the HCL lacks %q:\n%s", s, res.HCL)
		}
	}
}

func mustNotContain(t *testing.T, res *Result, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if bytes.Contains(res.HCL, []byte(s)) {
			t.Errorf("the HCL holds %q:\n%s", s, res.HCL)
		}
	}
}

// An NFS storage that names no server or path gets variables for them
// (the nfs block needs both); it was written as nfs {} and failed
// validate. (An empty template is not converted: the mnist-tfv2
// config_hybrid.yml corpus case.)
func TestNNINFSWithoutServer(t *testing.T) {
	src := `authorName: x
experimentName: k
trialConcurrency: 1
maxTrialNum: 2
trainingServicePlatform: kubeflow
searchSpacePath: search_space.json
trial:
  codeDir: .
  worker:
    replicas: 1
    command: python3 mnist.py
    gpuNum: 0
    cpuNum: 1
    memoryMB: 8192
    image: msranni/nni
kubeflowConfig:
  operator: tf-operator
  apiVersion: v1
  storage: nfs
  nfs:
    path: /exports
`
	res := convertSrc(t, "nni", "config.yml", src, Options{}, map[string]string{"search_space.json": `{"lr": {"_type": "uniform", "_value": [0, 1]}}`})
	mustContain(t, res, `server     = var.nfs_server`, `path       = "/exports"`)
	if !hasWarning(res, "kubeflowConfig.nfs.server", "written as variable \"nfs_server\"") {
		t.Errorf("no warning for the server: %v", res.Warnings)
	}
}

// Placeholders inside a trial command become variables (validate asks
// for them); they were kept as text without a warning. Braces and angle
// brackets of the shell are left alone.
func TestNNIPlaceholdersInCommand(t *testing.T) {
	src := "searchSpaceFile: search_space.json\n" +
		"trialCommand: python mnist.py --data_dir /root/data/{your_data_dir} --out {your_data_dir}/o --model <your_model> < in.txt > ${HOME}/log\n" +
		"maxTrialNumber: 2\n"
	res := convertSrc(t, "nni", "config.yml", src, Options{}, map[string]string{"search_space.json": `{"lr": {"_type": "uniform", "_value": [0, 1]}}`})
	mustContain(t, res,
		`variable "data_dir" {`, `variable "model" {`,
		`command = "python mnist.py --data_dir /root/data/${var.data_dir} --out ${var.data_dir}/o --model ${var.model} < in.txt > $${HOME}/log"`)
	if !hasWarning(res, "trialCommand", "placeholder {your_data_dir}: written as ${var.data_dir}") {
		t.Errorf("no warning: %v", res.Warnings)
	}
}

// NNI's "searchSpacePath: <the_generated_search_space_path>" becomes a
// variable, as <...> placeholders do elsewhere; it was written literally.
func TestNNISearchSpacePathPlaceholder(t *testing.T) {
	src := `trialConcurrency: 1
maxTrialNum: 10
trainingServicePlatform: local
searchSpacePath: <the_generated_search_space_path>
useAnnotation: False
tuner:
  builtinTunerName: TPE
trial:
  command: python3 mnist.py
  codeDir: .
`
	// validate gives the variable the value "x": a file of that name
	res := convertSrc(t, "nni", "config.yml", src, Options{Inline: true}, map[string]string{"x": `{"lr": {"_type": "uniform", "_value": [0, 1]}}`})
	mustContain(t, res, `variable "search_space_file" {`, `nni_file = var.search_space_file`)
	mustNotContain(t, res, `"<the_generated_search_space_path>"`)
	if !hasWarning(res, "searchSpacePath", "placeholder <the_generated_search_space_path>") {
		t.Errorf("no warning: %v", res.Warnings)
	}
}

// useAnnotation: true without a search space file (kaggle-tgs-salt) says
// why: the space is in the trial code's annotations. It said only "no
// search space".
func TestNNIUseAnnotationWithoutSpace(t *testing.T) {
	src := "experimentName: tgs\nmaxTrialNumber: 10\ntrialCommand: python3 train.py\ntrialConcurrency: 2\nuseAnnotation: true\n"
	_, err := NNI([]byte(src), Options{Filename: "config.yml"})
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 5 || !strings.Contains(ce.Msg, "NNI annotations") || !strings.Contains(ce.Msg, "searchSpaceFile") {
		t.Errorf("err = %v, want config.yml:5 about annotations", err)
	}
}

// The dlc platform's optional fields, given as placeholders, are left out
// (with a comment) instead of becoming required variables: the access
// keys default to ALIBABA_CLOUD_* in the environment, ossDataSourceId and
// workspaceId are optional in NNI too. nasDataSourceId is required.
func TestDLCOptionalPlaceholders(t *testing.T) {
	data, err := os.ReadFile("testdata/seeds/003_dlc/config.yml")
	if err != nil {
		t.Fatal(err)
	}
	res := convertSrc(t, "nni", "config.yml", string(data), Options{}, map[string]string{"search_space.json": `{"lr": {"_type": "uniform", "_value": [0, 1]}}`})
	mustNotContain(t, res, `variable "dlc_access_key_id"`, `variable "dlc_access_key_secret"`, `variable "dlc_oss_data_source_id"`, "access_key_id ", "oss_data_source_id ")
	mustContain(t, res, `nas_data_source_id            = var.dlc_nas_data_source_id`,
		"# access_key_id: left out, NNI's config held the placeholder ${your_ak_id}; without it the platform reads ALIBABA_CLOUD_ACCESS_KEY_ID")
	if !hasWarning(res, "trainingService.ossDataSourceId", "oss_data_source_id left out: optional") {
		t.Errorf("no warning: %v", res.Warnings)
	}
}

// Where a conversion falls back on the auto tuner, the comment says what
// auto does, as the tuner (its settings) and docs/tuners.md's tuner list
// say; it said "auto (TPE, then CMA-ES)", which left out the Gaussian
// process phase.
func TestAutoTunerDescribedAsItRuns(t *testing.T) {
	auto := tuner.Builtin().Lookup("auto")
	if auto == nil {
		t.Fatal("no auto tuner")
	}
	for setting, phase := range map[string]string{"gp_trials": "Gaussian process", "tpe_trials": "TPE"} {
		doc := auto.Schema().AttrNamed(setting).Doc
		if !strings.Contains(doc, phase) || !strings.Contains(autoWhat, phase) {
			t.Errorf("auto's %s setting is the %s phase: %q; the converters say %q", setting, phase, doc, autoWhat)
		}
	}
	_, sec, err := docs.Section("..", "Tuners and assessors")
	if err != nil {
		t.Fatal(err)
	}
	// the auto item of the tuner list: its first line to the next item
	var row string
	if i := strings.Index(sec, "- **`auto`** (default)"); i >= 0 {
		row = sec[i:]
		if j := strings.Index(row, "\n- "); j >= 0 {
			row = row[:j]
		}
		row = strings.Join(strings.Fields(row), " ")
	}
	for _, phase := range []string{"10 random trials", "the `gp` tuner", "otherwise TPE", "then CMA-ES"} {
		if !strings.Contains(row, phase) {
			t.Errorf("docs/tuners.md's auto item lacks %q: %s", phase, row)
		}
	}
	for _, src := range []string{
		"searchSpaceFile: s.json\ntrialCommand: x\ntuner:\n  className: MyTuner\n  codeDir: .\n  classFileName: my.py\n",
		"searchSpaceFile: s.json\ntrialCommand: x\ntuner:\n  name: FancyTuner\n",
	} {
		res, err := NNI([]byte(src), Options{Filename: "config.yml"})
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, res, "auto is used: "+autoWhat)
		mustNotContain(t, res, "TPE, then CMA-ES")
	}
}

// A template Polyaxon fills in at run time ("{{ context }}") is not
// written as a variable's default (of a number variable, an invalid one):
// the variable has none, and a warning says so.
func TestPolyaxonRuntimeTemplateNotADefault(t *testing.T) {
	src := `version: 1.1
kind: operation
params:
  epochs:
    value: "{{ globals.epochs }}"
matrix:
  kind: random
  numRuns: 4
  params:
    lr: {kind: uniform, value: "0.01:0.1"}
component:
  inputs:
    - {name: epochs, type: int, value: 3}
    - {name: batch, type: int, value: "{{ context }}"}
  run:
    kind: job
    container:
      image: python:3.11
      command: [python3, train.py, "--lr={{ lr }}", "--epochs={{ epochs }}", "--batch={{ batch }}"]
`
	res := convertSrc(t, "polyaxon", "op.yml", src, Options{}, nil)
	mustNotContain(t, res, `default = "{{`, "default     = 3")
	mustContain(t, res, "variable \"batch\" {\n  type        = number\n  description = \"component.inputs[1].value, a Polyaxon template there ({{ context }})")
	for _, f := range []string{"params.epochs.value", "component.inputs[1].value"} {
		if !hasWarning(res, f, "is a template Polyaxon fills in when the run starts") {
			t.Errorf("no warning for %s: %v", f, res.Warnings)
		}
	}
}

// Where the polyaxonfile names no metric or goal (random, grid and
// mapping need none), the objective written says it is assumed; it was
// invented silently.
func TestPolyaxonAssumedObjectiveSaysSo(t *testing.T) {
	src := "version: 1.1\nkind: operation\nmatrix:\n  kind: grid\n  params:\n    lr: {kind: choice, value: [0.1, 0.2]}\ncomponent:\n  run:\n    kind: job\n    container: {image: python:3.11, command: [python3, t.py, \"{{ lr }}\"]}\n"
	res := convertSrc(t, "polyaxon", "op.yml", src, Options{}, nil)
	mustContain(t, res, "# the polyaxonfile names no metric or goal to optimize: metric \"default\" (NNI's final result) and goal \"maximize\" assumed; set what the trials report")
	if !hasWarning(res, "objective", "assumed") {
		t.Errorf("no warning: %v", res.Warnings)
	}
	// a named metric and goal: nothing assumed
	src = strings.Replace(src, "  kind: grid\n", "  kind: hyperopt\n  algorithm: tpe\n  numRuns: 2\n  metric: {name: loss, optimization: minimize}\n", 1)
	res = convertSrc(t, "polyaxon", "op.yml", src, Options{}, nil)
	mustNotContain(t, res, "assumed")
}

// Warnings about what a pathRef component holds name the component's
// file, beside the operation as the user named it, and its lines; they
// named the operation's file with the component's lines, or the
// component's path relative to the operation.
func TestPolyaxonPathRefWarningsNameTheComponent(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "px"), 0o755)
	op := "version: 1.1\nkind: operation\nmatrix:\n  kind: random\n  numRuns: 2\n  params:\n    lr: {kind: uniform, value: \"0.1:1\"}\npathRef: ./comp.yml\ndescription: x\n"
	comp := "version: 1.1\nkind: component\ntags: [a]\ninputs:\n  - {name: data, type: path, value: /data}\nrun:\n  kind: job\n  container:\n    image: python:3.11\n    workingDir: /code\n    command: [python3, t.py, \"{{ lr }}\", \"{{ nope }}\"]\n"
	os.WriteFile(filepath.Join(dir, "px/comp.yml"), []byte(comp), 0o644)
	res, err := Polyaxon([]byte(op), Options{Filename: "px/op.yml", ReadFile: readerFor(filepath.Join(dir, "px"))})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"tags": 3, "inputs[0].type": 5, "run.container.workingDir": 10, "{{ nope }}": 9}
	for _, w := range res.Warnings {
		line, ok := want[w.Field]
		if !ok {
			continue
		}
		delete(want, w.Field)
		if w.File != "px/comp.yml" || w.Line != line {
			t.Errorf("%s: at %s:%d, want px/comp.yml:%d", w.Field, w.File, w.Line, line)
		}
	}
	if len(want) > 0 {
		t.Errorf("warnings missing: %v in %v", want, res.Warnings)
	}
	// The operation's warnings come first, then the component's, each by line.
	seenComp := false
	for i, w := range res.Warnings {
		if w.File == "px/comp.yml" {
			seenComp = true
		} else if seenComp {
			t.Errorf("warning %d (%s) of px/op.yml after the component's: %v", i, w, res.Warnings)
		}
		if i > 0 && res.Warnings[i-1].File == w.File && res.Warnings[i-1].Line > w.Line {
			t.Errorf("warnings out of line order: %v", res.Warnings)
		}
	}
}
