package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const movedBase = `
search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "b" {
  search_space = search_space.s
  max_trials   = 2
  paused       = true
  trial {
    command = "python3 t.py"
  }
}
`

func loadSrc(t *testing.T, src string) (*Config, []string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	var out []string
	for _, d := range diags {
		pos := ""
		if d.Subject != nil {
			pos = posString(*d.Subject)
		}
		out = append(out, pos+": "+d.Summary+": "+d.Detail)
	}
	return cfg, out
}

func TestMovedAndPaused(t *testing.T) {
	cfg, diags := loadSrc(t, movedBase+`
moved {
  from = experiment.a
  to   = experiment.b
}
moved {
  from = experiment.z
  to   = experiment.a
}
`)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if !cfg.Experiments["b"].Paused {
		t.Error("paused = true not decoded")
	}
	var got []string
	for _, m := range cfg.Moved {
		got = append(got, m.From+">"+m.To+"@"+m.Pos())
	}
	// the chain z -> a -> b resolves to b
	if strings.Join(got, " ") != "a>b@main.hcl:15 z>b@main.hcl:19" {
		t.Errorf("moves = %v", got)
	}
}

func TestMovedErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"target undeclared", `moved {
  from = experiment.a
  to   = experiment.c
}`, "main.hcl:14: Moved to an undeclared experiment: experiment.a is moved to experiment.c, which is not declared"},
		{"source declared", `moved {
  from = experiment.b
  to   = experiment.a
}
moved {
  from = experiment.a
  to   = experiment.b
}`, "Cycle in moved blocks: The moved blocks form a cycle: experiment.b → experiment.a → experiment.b"},
		{"still declared", `experiment "a" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "true"
  }
}
moved {
  from = experiment.a
  to   = experiment.b
}`, "main.hcl:21: Moved from a declared experiment: experiment.a is moved to experiment.b, but experiment \"a\" is still declared at main.hcl:14"},
		{"still declared, chain", `experiment "a" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "true"
  }
}
moved {
  from = experiment.a
  to   = experiment.c
}
moved {
  from = experiment.c
  to   = experiment.d
}`, "main.hcl:21: Moved from a declared experiment: experiment.a is moved to experiment.c, and on to experiment.d, but experiment \"a\" is still declared at main.hcl:14. A moved block renames an experiment: rename its block to \"d\", where the chain of moved blocks ends, or remove the moved block."},
		{"still declared, chain to a declared one", `experiment "a" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "true"
  }
}
moved {
  from = experiment.a
  to   = experiment.c
}
moved {
  from = experiment.c
  to   = experiment.b
}`, "main.hcl:21: Moved from a declared experiment: experiment.a is moved to experiment.c, and on to experiment.b, but experiment \"a\" is still declared at main.hcl:14, and experiment \"b\", where the chain of moved blocks ends, at main.hcl:6. Remove the block of \"a\" (its trials and results are experiment.b's), give it another name for a new experiment, or remove the moved block."},
		{"not an address", `moved {
  from = "a"
  to   = experiment.b
}`, "main.hcl:15: Invalid experiment address: from must be an experiment address"},
		{"twice", `moved {
  from = experiment.a
  to   = experiment.b
}
moved {
  from = experiment.a
  to   = experiment.b
}`, "main.hcl:18: Ambiguous move: experiment.a is moved twice"},
		{"two to one", `moved {
  from = experiment.a
  to   = experiment.b
}
moved {
  from = experiment.c
  to   = experiment.b
}`, "main.hcl:18: Ambiguous move: experiment.a and experiment.c are both moved to experiment.b"},
		{"paused not bool", `experiment "p" {
  search_space = search_space.s
  max_trials   = 1
  paused       = "yes please"
  trial {
    command = "true"
  }
}`, "main.hcl:17: Incorrect attribute value type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := loadSrc(t, movedBase+tt.src)
			for _, d := range diags {
				if strings.Contains(d, tt.want) {
					return
				}
			}
			t.Errorf("diagnostics %q lack %q", diags, tt.want)
		})
	}
}
