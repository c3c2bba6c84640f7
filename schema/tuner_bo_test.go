package schema

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// The Bayesian-optimisation tuners' settings are checked at load time,
// each at its attribute's file and line.
func TestBOTunerSettings(t *testing.T) {
	tests := []struct {
		block, want string // want "" for no error
	}{
		{"tuner \"gp\" {\n    utility = \"ucb\"\n    kappa = 2\n  }", ""},
		{"tuner \"gp\" {\n    utility = \"lcb\"\n  }", `utility must be "ei", "ucb" or "poi", got "lcb". Did you mean "ucb"?`},
		{"tuner \"metis\" {\n    no_resampling = true\n  }", `trialform calls "resample", negated: resample = false where NNI has no_resampling = true.`},
		{"tuner \"gp\" {\n    cold_start_num = 3\n  }", `An argument named "cold_start_num" is not expected in tuner "gp": it is NNI's or Katib's name of the setting trialform calls "startup_trials".`},
	}
	for _, tt := range tests {
		src := strings.Replace(minimalExperiment, `tuner "random" {}`, tt.block, 1)
		src = strings.Replace(src, "    env     = local.env\n", "", 1)
		dir := writeConfig(t, map[string]string{"main.hcl": src})
		_, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
		var errs []*hcl.Diagnostic
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				errs = append(errs, d)
			}
		}
		if tt.want == "" {
			if len(errs) > 0 {
				t.Errorf("%s: %v", tt.block, errs)
			}
			continue
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Detail, tt.want) || errs[0].Subject == nil ||
			!strings.HasSuffix(errs[0].Subject.Filename, "main.hcl") || errs[0].Subject.Start.Line != 9 {
			t.Errorf("%s: want one error at main.hcl:N containing %q, got %v", tt.block, tt.want, errs)
		}
	}
}
