package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trialform/trialform/internal/docs"
)

// TestReadmeExample loads the first HCL block of the language page
// (docs/language.md), so the documentation cannot drift from what the
// parser accepts.
func TestReadmeExample(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(readmeHCL(t, "The HCL language")), 0o644)
	os.WriteFile(filepath.Join(dir, "search_space.json"), []byte(`{"lr": {"_type": "loguniform", "_value": [0.0001, 0.1]},
 "layer": {"_type": "choice", "_value": [{"_name": "conv", "k": {"_type": "choice", "_value": [3, 5]}}, {"_name": "pool"}]}}`), 0o644)
	cfg, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Environ: []string{"TRIALFORM_VAR_hf_token=hf_secret"}})
	if diags.HasErrors() {
		t.Fatalf("README example does not load: %s", diags.Error())
	}
	e := cfg.Experiments["svm"]
	if e != nil && (e.Trial.Env["HF_TOKEN"] != "hf_secret" || !e.Trial.SensitiveEnv["HF_TOKEN"]) {
		t.Errorf("README's sensitive env: %v %v", e.Trial.Env, e.Trial.SensitiveEnv)
	}
	if e == nil || e.MaxTrials != 20 || e.Concurrency != 2 || len(e.SearchSpace.Space.Params) != 11 {
		t.Fatalf("README example loaded wrong: %+v", e)
	}
	if cfg.Spaces["from_nni"] == nil || len(cfg.Spaces["from_nni"].Space.Params) != 2 {
		t.Fatal("nni_file space not loaded")
	}
}

// readmeHCL is the first hcl block of the docs' section with the given
// heading (README.md, CONTRIBUTING.md or a page under docs/).
func readmeHCL(t *testing.T, heading string) string {
	t.Helper()
	file, sec, err := docs.Section("..", heading)
	if err != nil {
		t.Fatal(err)
	}
	blocks := docs.Blocks(sec, "hcl")
	if len(blocks) == 0 {
		t.Fatalf("no hcl block in %s's section %q", file, heading)
	}
	return blocks[0]
}
