package schema

import (
	"strings"
	"testing"
)

const moSpace = `search_space "s" {
  param "x" { uniform = [0, 1] }
}
`

func moExperiment(body string) map[string]string {
	return map[string]string{"main.hcl": moSpace + `
experiment "e" {
  search_space = search_space.s
  max_trials   = 4
` + body + `
  trial { command = "true" }
}
`}
}

// TestSeveralObjectives: objective blocks in order, the first is
// Objective; one block (or none) keeps its single-objective meaning.
func TestSeveralObjectives(t *testing.T) {
	cfg := mustLoad(t, writeConfig(t, moExperiment(`
  objective {
    metric = "acc"
  }
  objective {
    metric = "latency"
    goal   = "minimize"
  }
  tuner "nsga2" {}
  assessor "medianstop" { objective = "acc" }
`)), LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	e := cfg.Experiments["e"]
	if !e.MultiObjective() || len(e.Objectives) != 2 || e.Objective.Metric != "acc" ||
		e.Objectives[1].Metric != "latency" || e.Objectives[1].Goal != "minimize" || e.Objectives[0].Goal != "maximize" {
		t.Fatalf("objectives = %+v (first %+v)", e.Objectives, e.Objective)
	}
	if e.Assessor.Objective != "acc" || e.Assessor.Settings["objective"] != nil || e.WatchedObjective().Metric != "acc" {
		t.Fatalf("assessor = %+v", e.Assessor)
	}
	for _, body := range []string{"", `objective {
  metric = "loss"
  goal   = "minimize"
}`} {
		e := mustLoad(t, writeConfig(t, moExperiment(body)), LoadOptions{Platforms: testPlatforms, Tuners: testTuners}).Experiments["e"]
		if e.MultiObjective() || len(e.Objectives) != 1 || e.Objectives[0] != e.Objective {
			t.Fatalf("one objective %q: %+v, %+v", body, e.Objectives, e.Objective)
		}
	}
}

func TestSeveralObjectivesErrors(t *testing.T) {
	two := `
  objective { metric = "acc" }
  objective {
    metric = "latency"
    goal   = "minimize"
  }
`
	tests := []struct {
		name, body, summary, detail, pos string
	}{
		{"same metric", `
  objective { metric = "acc" }
  objective { metric = "acc" }
  tuner "motpe" {}`, "Duplicate objective metric", `Two objective blocks name metric "acc" (the first at main.hcl:9)`, "main.hcl:10"},
		{"single-objective tuner", two + `  tuner "tpe" {}`, "Tuner cannot handle several objectives",
			`tuner "tpe" optimises one objective. Tuners for several objectives: auto, grid, mogp, motpe, nsga2, random (auto picks mogp, or motpe in a space with nested choices)`, "main.hcl:14"},
		{"assessor without objective", two + `  assessor "medianstop" {}`, "Assessor needs an objective",
			`name the objective it watches, e.g. objective = "acc" (one of "acc", "latency")`, "main.hcl:14"},
		{"assessor unknown objective", two + `  assessor "medianstop" { objective = "loss" }`, "Invalid assessor objective",
			`objective must name the metric of one of the experiment's objectives: "acc", "latency", got "loss"`, "main.hcl:14"},
		{"strategy", `
  objective {
    metric   = "acc"
    strategy = "max"
  }
  objective { metric = "latency" }`, "Strategy with several objectives", `Objective "acc" sets strategy = "max"`, "main.hcl:9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Load(writeConfig(t, moExperiment(tc.body)), LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
			var got []string
			found := false
			for _, d := range diags {
				got = append(got, describe(d))
				if d.Summary == tc.summary && strings.Contains(d.Detail, tc.detail) && d.Subject != nil && strings.Contains(d.Subject.String(), tc.pos) {
					found = true
				}
			}
			if !found {
				t.Fatalf("want %s: %s at %s; got:\n%s", tc.summary, tc.detail, tc.pos, strings.Join(got, "\n"))
			}
		})
	}
}

// TestReadmeSeveralObjectives loads the HCL of the "Several objectives"
// page (docs/objectives.md) (with a search space for it to refer to).
func TestReadmeSeveralObjectives(t *testing.T) {
	src := "search_space \"mnist\" {\n  param \"lr\" { loguniform = [0.0001, 0.1] }\n}\n" + readmeHCL(t, "Several objectives")
	cfg := mustLoad(t, writeConfig(t, map[string]string{"main.hcl": src}), LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	e := cfg.Experiments["mnist"]
	if e == nil || len(e.Objectives) != 2 || e.Objectives[1].Metric != "latency_ms" || e.Tuner.Name != "mogp" {
		t.Fatalf("README's experiment: %+v", e)
	}
}
