package testdeps

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how Require ended it.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestRequire(t *testing.T) {
	for _, tt := range []struct {
		env, missing       string
		wantSkip, wantFail bool
	}{
		{env: "", missing: ""},
		{env: "1", missing: ""},
		{env: "", missing: "no sshd", wantSkip: true},
		{env: "0", missing: "no sshd", wantSkip: true},
		{env: "1", missing: "no sshd", wantFail: true},
	} {
		t.Setenv(EnvRequireAll, tt.env)
		r := &recorder{}
		Require(r, "sshd", tt.missing)
		if (r.skipped != "") != tt.wantSkip || (r.failed != "") != tt.wantFail {
			t.Errorf("%s=%q, missing %q: skipped %q, failed %q", EnvRequireAll, tt.env, tt.missing, r.skipped, r.failed)
		}
		for _, msg := range []string{r.skipped, r.failed} {
			if msg != "" && !strings.Contains(msg, "sshd") || msg != "" && !strings.Contains(msg, tt.missing) {
				t.Errorf("message %q does not name the dependency and why", msg)
			}
		}

		ok, err := Condition("sshd", tt.missing)
		if ok != (tt.missing == "") || (err != nil) != tt.wantFail {
			t.Errorf("Condition with %s=%q, missing %q: %v, %v", EnvRequireAll, tt.env, tt.missing, ok, err)
		}
	}
}

func TestHardware(t *testing.T) {
	t.Setenv(EnvRequireAll, "1")
	t.Setenv(EnvRequireGPU, "")
	r := &recorder{}
	Hardware(r, "a GPU", "no CUDA driver")
	if r.skipped == "" || r.failed != "" {
		t.Errorf("without %s: skipped %q, failed %q", EnvRequireGPU, r.skipped, r.failed)
	}
	t.Setenv(EnvRequireGPU, "1")
	r = &recorder{}
	Hardware(r, "a GPU", "no CUDA driver")
	if r.failed == "" {
		t.Errorf("with %s=1 a missing GPU did not fail", EnvRequireGPU)
	}
}

func TestLookPath(t *testing.T) {
	t.Setenv(EnvRequireAll, "1")
	r := &recorder{}
	if p := LookPath(r, "sh"); p == "" || r.failed != "" {
		t.Fatalf("LookPath(sh) = %q, failed %q", p, r.failed)
	}
	LookPath(r, "no-such-program-trialform")
	if r.failed == "" {
		t.Fatal("a missing program did not fail under " + EnvRequireAll)
	}
}

func TestPythonModules(t *testing.T) {
	py := Python3(t)
	if why := PythonModules(py, "json, os"); why != "" {
		t.Fatalf("json, os: %s", why)
	}
	if why := PythonModules(py, "no_such_module_trialform"); !strings.Contains(why, "no_such_module_trialform") {
		t.Fatalf("a missing module: %q", why)
	}
}
