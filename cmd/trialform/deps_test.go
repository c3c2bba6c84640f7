package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The binary compiles and links only the Kubernetes API groups it calls
// (issue 30): client-go's kubernetes clientset (and its scheme, and
// discovery, which imports that scheme) would bring all 57, compiled at
// the first build, linked into the binary and registered at every start.
func TestLinksOnlyUsedAPIGroups(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "../trialform-supervisor").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	allowed := map[string]bool{"k8s.io/api/core/v1": true, "k8s.io/api/batch/v1": true, "k8s.io/api/coordination/v1": true}
	groups := 0
	for _, p := range strings.Split(string(out), "\n") {
		switch {
		case p == "k8s.io/client-go/kubernetes" || strings.HasPrefix(p, "k8s.io/client-go/kubernetes/") || p == "k8s.io/client-go/discovery":
			t.Errorf("the binary imports %s", p)
		case strings.HasPrefix(p, "k8s.io/api/"):
			groups++
			if !allowed[p] {
				t.Errorf("the binary links the API group %s, which trialform does not call", p)
			}
		}
	}
	if groups == 0 {
		t.Errorf("no k8s.io/api package in the dependencies: the check proves nothing")
	}
}
