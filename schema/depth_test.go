package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRefusesDeepExpressions: an expression nested or chained past
// MaxNesting or MaxChain is refused before it is parsed, naming the file
// and line. HCL's parser and evaluator recurse once per level: a 3 MB
// file of "((((…))))" or "1+1+…" (within MaxConfig) took 1.9 GB and
// ended trialform with a fatal stack overflow (no recover catches it);
// under the controller a commit holding one crashed it at every restart.
// What people write (a few levels, a few operators, long lists) loads.
func TestLoadRefusesDeepExpressions(t *testing.T) {
	const n = 5000
	for name, expr := range map[string]string{
		"parentheses":  strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"lists":        strings.Repeat("[", n) + strings.Repeat("]", n),
		"templates":    strings.Repeat(`"${`, n) + `"x"` + strings.Repeat(`}"`, n),
		"sum":          "1" + strings.Repeat("+1", n),
		"sum on lines": "(1" + strings.Repeat("\n+1", n) + ")",
		"negations":    strings.Repeat("!", n) + "true",
		"conditions":   strings.Repeat("true ? 1 : ", n) + "2",
		"indexes":      "[[1]]" + strings.Repeat("[0]", n),
	} {
		dir := t.TempDir()
		src := "search_space \"s\" {\n  param \"x\" { uniform = [0, 1] }\n}\nlocals {\n  deep = " + expr + "\n}\n"
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "main.hcl:") || !strings.Contains(diags.Error(), "Expression too complex") {
			t.Errorf("%s: %v", name, diags)
			continue
		}
		cfg.HCLFiles() // the snippets' sources are not parsed either
	}
	dir := t.TempDir()
	var items []string
	for i := 0; i < 5000; i++ {
		items = append(items, "-1")
	}
	ok := `search_space "s" {
  param "x" { uniform = [0, 1] }
}
locals {
  list  = [` + strings.Join(items, ", ") + `]
  mixed = {a = [{b = "${upper("x")}-${(1 + 2) * 3}"}], c = !(1 < 2) ? -1 : 2}
  heredoc = <<EOT
  ${jsonencode({x = [1, [2, [3]]]})}
EOT
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(ok), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners}); diags.HasErrors() {
		t.Errorf("a configuration as people write it: %v", diags)
	}
}
