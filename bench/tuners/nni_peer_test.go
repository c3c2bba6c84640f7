package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// needNNI returns $TRIALFORM_NNI_SRC, skipping the test when it is not set
// (failing under TRIALFORM_REQUIRE_ALL=1).
func needNNI(t *testing.T) string {
	t.Helper()
	needPython(t, "sklearn, scipy, schema")
	src := os.Getenv("TRIALFORM_NNI_SRC")
	if src == "" {
		// Opt-in, not a dependency CI can install: NNI's sources come
		// from no package registry these machines reach (PyPI is not one
		// of them), so `make test` cannot fetch them. bench-tuners fails
		// without them under TRIALFORM_REQUIRE_ALL=1 instead.
		t.Skip("TRIALFORM_NNI_SRC is not set: NNI's tuners are not tested (opt-in; see bench/tuners/RESULTS.md)") // not a dependency
	}
	return src
}

// TestNNIScipyShim: SciPy returns res.fun as a float for a scalar
// objective, so NNI's acq_max (`-res.fun[0]`) fails; fun_as_array makes it
// a 1-element array again. Checked with SciPy alone, no NNI needed.
func TestNNIScipyShim(t *testing.T) {
	needPython(t, "scipy, numpy")
	code := `
import runpy
from scipy.optimize import minimize
peer = runpy.run_path("nni_peer.py", run_name="check")
f = lambda x: (x[0] - 2.0) ** 2 + 1.0
raw = minimize(f, x0=[[0.5]], bounds=[(0, 5)], method="L-BFGS-B")
try:
    -raw.fun[0]
    print("raw-subscriptable")
except (TypeError, IndexError):
    print("raw-float")
res = peer["fun_as_array"](minimize)(f, x0=[[0.5]], bounds=[(0, 5)], method="L-BFGS-B")
print("shim %.6f" % -res.fun[0])
`
	out, err := exec.Command(python, "-c", code).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "shim -1.000000") {
		t.Fatalf("the shim did not give -res.fun[0] = -1: %s", s)
	}
	t.Logf("SciPy without the shim: %s", strings.Fields(s)[0])
}

// TestNNIPeerSmoke drives NNI's GPTuner through nni_peer.py for a short
// study on Branin: every answer lies in the space and the model phase runs
// (NNI's cold start is 10 trials).
func TestNNIPeerSmoke(t *testing.T) {
	needNNI(t)
	env := &runEnv{procs: procs{python: python, dir: "."}}
	defer env.procs.closeAll()
	pr := Problems()[0]
	o := env.Run(Sampler{"nni", "gp"}, pr, 1, 13, 1)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	if o.Regret < 0 || o.Regret > 300 {
		t.Fatalf("regret %v", o.Regret)
	}
}

// TestNNIMissingFails: asking for NNI's tuners without their sources fails
// the benchmark under TRIALFORM_REQUIRE_ALL=1, and skips them with a note
// otherwise.
func TestNNIMissingFails(t *testing.T) {
	t.Setenv("TRIALFORM_NNI_SRC", "")
	t.Setenv("TRIALFORM_REQUIRE_ALL", "1")
	args := []string{"-nni", "gp", "-go", "random", "-optuna", "", "-problems", "branin", "-trials", "3", "-seeds", "1", "-latency", "", "-dir", "."}
	err := mainErr(args)
	if err == nil || !strings.Contains(err.Error(), "TRIALFORM_NNI_SRC is not set") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv("TRIALFORM_REQUIRE_ALL", "")
	t.Setenv("TRIALFORM_NNI_SRC", t.TempDir())
	out := t.TempDir() + "/r.md"
	if err := mainErr(append(args, "-out", out)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), "NNI tuners skipped:") || !strings.Contains(string(b), "does not hold NNI's sources") {
		t.Fatalf("report:\n%s", b)
	}
}
