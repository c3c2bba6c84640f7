package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/providers/remote"
)

// TestReadmeRemoteExample loads the HCL block of README.md's remote
// section, so that documentation cannot drift from the parser either.
func TestReadmeRemoteExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "## Remote machines over SSH")
	if i < 0 {
		t.Fatal("README has no remote section")
	}
	rest := readme[i:]
	start := strings.Index(rest, "```hcl\n")
	end := strings.Index(rest[start+7:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no hcl block in the remote section")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(rest[start+7:start+7+end]), 0o644)
	cfg, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if diags.HasErrors() {
		t.Fatalf("README remote example does not load: %s", diags.Error())
	}
	p := cfg.Platforms["remote.lab"]
	if rs, ok := p.Config.(*remote.Settings); p == nil || !ok || len(rs.Machines) != 2 || rs.Machines[0].MaxTrials != 4 {
		t.Fatalf("README remote example loaded wrong: %+v", p)
	}
}
