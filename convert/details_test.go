package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
