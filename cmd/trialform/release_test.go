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
