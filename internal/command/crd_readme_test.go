package command_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	k8s "github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/platforms"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner"
)

// TestReadmeCRDPlatformsDecode: the platform blocks of README.md's CRD
// section load and decode into provider configs (what plan builds).
func TestReadmeCRDPlatformsDecode(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rest := string(b)[strings.Index(string(b), "## CRD platforms"):]
	start := strings.Index(rest, "```hcl\n") + 7
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(rest[start:start+strings.Index(rest[start:], "```")]), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := schema.Load(dir, schema.LoadOptions{Platforms: platforms.Registry(), Tuners: tuner.Builtin()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for key, want := range map[string]int{"kubeflow.tf": 2, "adaptdl.adl": 0, "frameworkcontroller.fc": 1} {
		p := cfg.Platforms[key]
		if p == nil {
			t.Fatalf("no %s", key)
		}
		c, err := k8s.CRDConfigFrom(p.Config, dir)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		if len(c.Roles) != want {
			t.Errorf("%s: roles %+v", key, c.Roles)
		}
	}
}
