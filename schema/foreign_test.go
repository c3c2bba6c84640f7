package schema

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// NNI's names in HCL get a diagnostic that names trialform's equivalent.
func TestNNINames(t *testing.T) {
	tests := []struct {
		block, want string
	}{
		{`tuner "TPE" {}`, `Unknown tuner "TPE"; known: `},
		{`tuner "TPE" {}`, `NNI's "TPE" tuner is trialform's "tpe": tuner "tpe" { }.`},
		{`tuner "GridSearch" {}`, `NNI's "GridSearch" tuner is trialform's "grid"`},
		{`tuner "Random" {}`, `NNI's "Random" tuner is trialform's "random"`},
		{`tuner "Anneal" {}`, `trialform's "anneal"`},
		{`tuner "Evolution" {}`, `trialform's "evolution"`},
		{`tuner "BatchTuner" {}`, `trialform's "batch"`},
		{`tuner "Hyperband" {}`, `trialform's "hyperband"`},
		{`tuner "BOHB" {}`, `trialform's "bohb"`},
		{`tuner "PBTTuner" {}`, `trialform's "pbt"`},
		{`tuner "SMAC" {}`, `NNI's "SMAC" tuner is trialform's "smac": tuner "smac" { }.`},
		{`tuner "GP" {}`, `NNI's "GP" tuner is trialform's "gp"`},
		{`tuner "GPTuner" {}`, `NNI's "GPTuner" tuner is trialform's "gp"`},
		{`tuner "Metis" {}`, `NNI's "Metis" tuner is trialform's "metis"`},
		{`tuner "MetisTuner" {}`, `trialform's "metis"`},
		{`tuner "DNGO" {}`, `NNI's "DNGO" tuner is not available in trialform; "gp" (Bayesian optimisation with a Gaussian process) is the nearest it has: tuner "gp" { }.`},
		{`tuner "DNGOTuner" {}`, `NNI's "DNGOTuner" tuner is not available in trialform`},
		{"tuner \"random\" {}\n  assessor \"MedianStop\" {}", `NNI's "MedianStop" assessor is trialform's "medianstop"`},
		{"tuner \"random\" {}\n  assessor \"Curvefitting\" { epoch_num = 10 }", `NNI's "Curvefitting" assessor is trialform's "curvefitting"`},
		{"tuner \"tpe\" {\n    optimize_mode = \"minimize\"\n  }", `optimize_mode is NNI's classArgs setting; in trialform the direction belongs to the experiment: objective { goal = "minimize" }`},
		{"tuner \"random\" {}\n  assessor \"medianstop\" {\n    optimize_mode = \"maximize\"\n  }", `objective { goal = "maximize" }`},
	}
	for _, tt := range tests {
		src := strings.Replace(minimalExperiment, `tuner "random" {}`, tt.block, 1)
		src = strings.Replace(src, "    env     = local.env\n", "", 1)
		dir := writeConfig(t, map[string]string{"main.hcl": src})
		_, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
		var all []string
		found := false
		for _, d := range diags {
			all = append(all, d.Summary+": "+d.Detail)
			if d.Severity == hcl.DiagError && strings.Contains(d.Detail, tt.want) && d.Subject != nil && d.Subject.Start.Line > 1 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want an error containing %q, got %q", tt.block, tt.want, all)
		}
	}
}

// A platform trialform declares but does not run validates with a
// warning that says so.
func TestNotYetPlatformWarns(t *testing.T) {
	for _, kind := range notYetKinds() {
		src := "platform \"" + kind + "\" \"x\" {\n  region = \"r\"\n}\n" +
			strings.Replace(strings.Replace(minimalExperiment, "max_trials   = 1", "max_trials = 1\n  platform = platform."+kind+".x", 1),
				"    env     = local.env\n", "", 1)
		dir := writeConfig(t, map[string]string{"main.hcl": src})
		cfg, diags := Load(dir, LoadOptions{Platforms: notYetPlatforms, Tuners: testTuners})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", kind, diags)
		}
		if len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "Platform not supported yet" ||
			!strings.Contains(diags[0].Detail, `trialform does not run "`+kind+`" platforms yet`) || diags[0].Subject.Start.Line != 1 {
			t.Errorf("%s: diags = %v", kind, diags)
		}
		if cfg.Experiments["e"].Platform.Kind != kind {
			t.Errorf("%s: experiment platform %v", kind, cfg.Experiments["e"].Platform)
		}
	}
}
