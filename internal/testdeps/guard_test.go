package testdeps

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	goSkip = regexp.MustCompile(`\.Skip(f|Now)?\(`)
	// allowed reasons for a plain skip, found in the few lines above it;
	// a comment "not a dependency" marks any other
	notDependency = regexp.MustCompile(`testing\.Short\(\)|os\.Getenv\(|Capabilit|Implements|\(providers\.\w+\)|\.\(interface|opts\.\w+ == nil|not a dependency`)
	scriptSkip    = regexp.MustCompile(`^\s*\[(!?)([^\]]+)\]\s+skip\b`)
)

// TestNoDependencySkipsOutsideTestdeps keeps the rule of the package: a
// Go test or a testscript skips for a missing dependency only through
// Require or Condition, so TRIALFORM_REQUIRE_ALL=1 can turn it into a
// failure. Plain skips may stay for -short, opt-in environment variables
// and provider capabilities (the conformance suite); any other skip that
// is not about a dependency says so in a comment: "not a dependency".
func TestNoDependencySkipsOutsideTestdeps(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n != "." && (strings.HasPrefix(n, ".") || n == "bin" || n == "node_modules") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if filepath.Dir(rel) == filepath.Join("internal", "testdeps") {
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".go"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			lines := strings.Split(string(b), "\n")
			for i, l := range lines {
				if !goSkip.MatchString(l) || strings.HasPrefix(strings.TrimSpace(l), "//") {
					continue
				}
				checked++
				ctx := strings.Join(lines[max(0, i-3):i+1], "\n")
				if !notDependency.MatchString(ctx) {
					t.Errorf("%s:%d: a skip that is not for -short, an opt-in variable or a capability: use testdeps.Require so CI fails instead\n%s", rel, i+1, ctx)
				}
			}
		case strings.HasSuffix(path, ".txtar"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "-- ") {
					break // the script ends where its files begin
				}
				m := scriptSkip.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				checked++
				if cond := m[2]; cond != "short" && strings.Contains(cond, ":") {
					t.Errorf("%s:%d: built-in condition [%s] skips without testdeps: add a condition to scriptCondition that calls testdeps.Condition", rel, i+1, cond)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("found no skips at all: the scan looks in the wrong place")
	}
}
