package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trialform/trialform/providers/remote"
)

// TestReadmeRemoteExample loads the HCL block of the remote platform's
// page (docs/platforms/remote.md), so that documentation cannot drift from the parser either.
func TestReadmeRemoteExample(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(readmeHCL(t, "Remote machines over SSH")), 0o644)
	cfg, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if diags.HasErrors() {
		t.Fatalf("README remote example does not load: %s", diags.Error())
	}
	p := cfg.Platforms["remote.lab"]
	if rs, ok := p.Config.(*remote.Settings); p == nil || !ok || len(rs.Machines) != 2 || rs.Machines[0].MaxTrials != 4 {
		t.Fatalf("README remote example loaded wrong: %+v", p)
	}
}
