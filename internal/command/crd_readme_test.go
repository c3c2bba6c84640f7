package command_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trialform/trialform/internal/docs"
	k8s "github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/platforms"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner"
)

// TestReadmeCRDPlatformsDecode: the platform blocks of the CRD
// platforms' page (docs/platforms/crd.md) load and decode into provider
// configs (what plan builds).
func TestReadmeCRDPlatformsDecode(t *testing.T) {
	file, sec, err := docs.Section(filepath.Join("..", ".."), "CRD platforms")
	if err != nil {
		t.Fatal(err)
	}
	blocks := docs.Blocks(sec, "hcl")
	if len(blocks) == 0 {
		t.Fatalf("%s: no hcl block in the CRD platforms section", file)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(blocks[0]), 0o644); err != nil {
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
