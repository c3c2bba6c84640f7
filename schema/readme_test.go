package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeExample loads the HCL block of README.md's language section,
// so the documentation cannot drift from what the parser accepts.
func TestReadmeExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "## The HCL language")
	if i < 0 {
		t.Fatal("README has no language section")
	}
	rest := readme[i:]
	start := strings.Index(rest, "```hcl\n")
	end := strings.Index(rest[start+7:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no hcl block in the language section")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(rest[start+7:start+7+end]), 0o644)
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

// readmeHCL is the first hcl block of README.md's section with the given
// heading.
func readmeHCL(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), heading)
	if i < 0 {
		t.Fatalf("README has no section %q", heading)
	}
	rest := string(b)[i:]
	start := strings.Index(rest, "```hcl\n")
	end := strings.Index(rest[start+7:], "```")
	if start < 0 || end < 0 {
		t.Fatalf("no hcl block in README's %q", heading)
	}
	return rest[start+7 : start+7+end]
}
