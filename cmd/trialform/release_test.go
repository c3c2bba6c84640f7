package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The binaries `make build` makes (the ones released) carry no local paths
// (-trimpath) and no symbol table or DWARF (-ldflags "-s -w"; panics still
// print their stack traces): every go build command of the build target
// has both (issue 28 item 8).
func TestReleaseBuildFlags(t *testing.T) {
	out, err := exec.Command("make", "-C", "../..", "-n", "build").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v: %s", err, out)
	}
	builds := 0
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, "go build") {
			continue
		}
		builds++
		if !strings.Contains(line, " -trimpath") || !strings.Contains(line, `-ldflags "-s -w"`) {
			t.Errorf("make build runs %q: want -trimpath and -ldflags \"-s -w\"", line)
		}
	}
	if builds < 2 {
		t.Errorf("make build runs %d go build commands, want trialform and trialform-supervisor:\n%s", builds, out)
	}
}

// make fuzz (part of make test) gives each fuzzer a number of executions,
// not a duration: with a duration, Go's fuzz coordinator before Go 1.27
// can report its own deadline as the fuzz target failing ("context
// deadline exceeded", go.dev/issue/75804) when a loaded machine keeps a
// worker busy past it, as it did in a clean CI run (FuzzJournal at load 25).
func TestFuzzRunsByCount(t *testing.T) {
	out, err := exec.Command("make", "-C", "../..", "-n", "fuzz").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n fuzz: %v: %s", err, out)
	}
	runs := 0
	for _, line := range strings.Split(string(out), "\n") {
		i := strings.Index(line, "-fuzztime ")
		if i < 0 {
			continue
		}
		runs++
		v := strings.Fields(line[i+len("-fuzztime "):])[0]
		if !strings.HasSuffix(v, "x") {
			t.Errorf("make fuzz runs -fuzztime %s: want a count of executions (Nx)", v)
		}
	}
	if runs == 0 {
		t.Errorf("make -n fuzz shows no -fuzztime:\n%s", out)
	}
}
