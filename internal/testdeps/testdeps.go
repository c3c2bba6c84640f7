// Package testdeps decides what a test does when something it needs from
// the machine is missing (sshd, python3, the test Kubernetes control plane,
// Debian's scikit-learn or Optuna): on a developer's machine it skips, with
// the reason and how to install it; under TRIALFORM_REQUIRE_ALL=1 (CI,
// .ci/run) it fails, so a CI run can never pass by skipping.
//
// Every test that skips for a missing dependency goes through Require (Go
// tests) or Condition (testscript conditions). Skips that are not about
// dependencies stay plain t.Skip: -short, opt-in benchmarks
// (TRIALFORM_K8S_BENCH, TUNER_COMPARE), and capabilities a provider does not
// have. Hardware that no CI machine is expected to have (a GPU) goes
// through Hardware, which fails only under TRIALFORM_REQUIRE_GPU=1.
//
// The package is test-only: it must not be imported by non-test code.
package testdeps

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Names of the environment variables that turn a missing dependency into
// a failure.
const (
	EnvRequireAll = "TRIALFORM_REQUIRE_ALL"
	EnvRequireGPU = "TRIALFORM_REQUIRE_GPU"
)

// RequireAll reports whether a missing dependency fails the test
// (TRIALFORM_REQUIRE_ALL set to anything but "" or "0").
func RequireAll() bool { return set(EnvRequireAll) }

func set(name string) bool {
	v := os.Getenv(name)
	return v != "" && v != "0"
}

// Require ends t when dep is missing, that is when missing (why, and how
// to get it) is not empty: Skip normally, Fatal under
// TRIALFORM_REQUIRE_ALL=1.
func Require(t testing.TB, dep, missing string) {
	t.Helper()
	if missing == "" {
		return
	}
	if RequireAll() {
		t.Fatalf("%s is missing: %s (%s=1: a missing dependency fails the run; `make deps` installs what it can)", dep, missing, EnvRequireAll)
		return
	}
	t.Skipf("needs %s: %s", dep, missing)
}

// LookPath returns the path of the executable file on PATH, or ends t as
// Require does.
func LookPath(t testing.TB, file string) string {
	t.Helper()
	p, err := exec.LookPath(file)
	if err != nil {
		Require(t, file, err.Error())
	}
	return p
}

// Python3 returns the path of python3 on PATH (real trial processes), or
// ends t as Require does.
func Python3(t testing.TB) string {
	t.Helper()
	return LookPath(t, "python3")
}

// Hardware is Require for hardware a CI machine need not have: it skips
// unless TRIALFORM_REQUIRE_GPU=1 (set it on a machine with a GPU).
func Hardware(t testing.TB, dep, missing string) {
	t.Helper()
	if missing == "" {
		return
	}
	if set(EnvRequireGPU) {
		t.Fatalf("%s is missing: %s (%s=1)", dep, missing, EnvRequireGPU)
		return
	}
	t.Skipf("needs %s: %s", dep, missing)
}

// Condition is Require for a testscript condition such as [sshd]: it
// reports whether dep is there, and under TRIALFORM_REQUIRE_ALL=1 turns a
// missing one into an error, which fails the script that asked.
func Condition(dep, missing string) (bool, error) {
	if missing == "" {
		return true, nil
	}
	if RequireAll() {
		return false, fmt.Errorf("%s is missing: %s (%s=1: a missing dependency fails the run)", dep, missing, EnvRequireAll)
	}
	return false, nil
}

// PythonModules reports why python cannot import modules (a
// comma-separated import list), "" when it can.
func PythonModules(python, modules string) string {
	out, err := exec.Command(python, "-c", "import "+modules).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s cannot import %s (Debian's python3-* packages; `make deps` installs them): %v: %s", python, modules, err, lastLine(out))
	}
	return ""
}

func lastLine(b []byte) string {
	s := string(b)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
