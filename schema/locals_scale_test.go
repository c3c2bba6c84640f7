package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manyLocals writes a configuration of n locals, each computed from the
// one before it, and an experiment that uses the last.
func manyLocals(t testing.TB, n int) string {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("search_space \"s\" {\n  param \"x\" { uniform = [0, 1] }\n}\nlocals {\n  l0 = 1\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  l%d = local.l%d + 1\n", i, i-1)
	}
	fmt.Fprintf(&b, "}\nexperiment \"e\" {\n  search_space = search_space.s\n  tuner \"random\" {}\n  max_trials = local.l%d\n  trial { command = \"echo\" }\n}\n", n-1)
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestManyLocalsCostLinear: the values put into evaluation contexts grow
// with the number of locals, not its square. Each node was evaluated in a
// context of every value, rebuilt after each: 2,000 locals took 1.25 s,
// 8,000 34 s, and a 8 MB file of 15,800 (within MaxConfig) 1,333 s and
// 3.4 GB, so one commit stalled a controller's pass for 20 minutes.
func TestManyLocalsCostLinear(t *testing.T) {
	const n = 2000
	l := newLoader(manyLocals(t, n))
	l.platforms, l.tuners = testPlatforms, testTuners
	l.load(LoadOptions{})
	if l.diags.HasErrors() {
		t.Fatal(l.diags)
	}
	if got := l.ctxValues; got > 20*n {
		t.Errorf("%d values put into evaluation contexts for %d locals; want at most %d (linear)", got, n, 20*n)
	}
	if e := l.cfg.Experiments["e"]; e == nil || e.MaxTrials != n {
		t.Fatalf("experiment e: %+v; want max_trials %d (the chain of locals)", e, n)
	}
}

// TestScopedContextKeepsWholeNamespaces: an expression that uses a whole
// namespace (a for over local, keys(experiment)) still sees every name.
func TestScopedContextKeepsWholeNamespaces(t *testing.T) {
	dir := t.TempDir()
	src := `search_space "s" {
  param "x" { uniform = [0, 1] }
}
locals {
  a   = 2
  b   = 3
  sum = local.a + local.b
}
experiment "e" {
  search_space = search_space.s
  tuner "random" {}
  max_trials = local.sum
  trial { command = "echo ${join(",", [for k, v in local : k])}" }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	e := cfg.Experiments["e"]
	var cmd strings.Builder
	for _, s := range e.Trial.Command.Segments {
		cmd.WriteString(s.Literal)
	}
	if e.MaxTrials != 5 || cmd.String() != "echo a,b,sum" {
		t.Errorf("max_trials %d, command %q; want 5, \"echo a,b,sum\"", e.MaxTrials, cmd.String())
	}
}

// BenchmarkLoadManyLocals: loading 8,000 chained locals.
func BenchmarkLoadManyLocals(b *testing.B) {
	dir := manyLocals(b, 8000)
	for b.Loop() {
		if _, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners}); diags.HasErrors() {
			b.Fatal(diags)
		}
	}
}
