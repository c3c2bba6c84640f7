package convert

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
// auto does, as the tuner (its settings) and the README's tuner table
// say; it said "auto (TPE, then CMA-ES)", which left out the Gaussian
// process phase.
func TestAutoTunerDescribedAsItRuns(t *testing.T) {
	info, ok := tuner.Lookup("auto")
	if !ok {
		t.Fatal("no auto tuner")
	}
	for setting, phase := range map[string]string{"gp_trials": "Gaussian process", "tpe_trials": "TPE"} {
		if !strings.Contains(info.Settings[setting], phase) || !strings.Contains(autoWhat, phase) {
			t.Errorf("auto's %s setting is the %s phase: %q; the converters say %q", setting, phase, info.Settings[setting], autoWhat)
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "| `auto` (default) |") {
			row = l
		}
	}
	for _, phase := range []string{"10 random trials", "the `gp` tuner", "otherwise TPE", "then CMA-ES"} {
		if !strings.Contains(row, phase) {
			t.Errorf("the README's auto row lacks %q: %s", phase, row)
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
