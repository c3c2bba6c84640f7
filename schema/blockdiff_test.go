package schema

import (
	"strings"
	"testing"
)

func TestBlockDiff(t *testing.T) {
	old := Units(map[string][]byte{
		"main.hcl": []byte(`search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "a" {
  search_space = search_space.s
  max_trials   = 10
  concurrency  = 2
}

experiment "gone" {
  max_trials = 1
}
`),
		"vars.tfvars": []byte("lr = 0.1\n"),
	})
	// Same search space moved to another file: no change. Concurrency
	// raised, one experiment removed, one added, a var changed.
	new := Units(map[string][]byte{
		"main.hcl": []byte(`experiment "a" {
  search_space = search_space.s
  max_trials   = 10
  concurrency  = 4
}

experiment "b" {
  max_trials = 3
}
`),
		"space.hcl":   []byte("search_space \"s\" {\n  param \"x\" { uniform = [0, 1] }\n}\n"),
		"vars.tfvars": []byte("lr = 0.2\n"),
	})
	got := BlockDiff(old, new)
	for _, want := range []string{
		"# experiment \"a\" changed (main.hcl:1)\n",
		"-  concurrency  = 2\n+  concurrency  = 4\n",
		"# experiment \"b\" added (main.hcl:7)\n",
		"+  max_trials = 3\n",
		"# experiment \"gone\" removed (main.hcl:11)\n",
		"-  max_trials = 1\n",
		"# lr = changed (vars.tfvars:1)\n",
		"-lr = 0.1\n+lr = 0.2\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "# search_space") {
		t.Errorf("a block moved between files shows as changed:\n%s", got)
	}
	if i, j := strings.Index(got, `experiment "a"`), strings.Index(got, `experiment "b"`); i > j {
		t.Errorf("not in key order:\n%s", got)
	}
	if d := BlockDiff(new, new); d != "" {
		t.Errorf("diff of equal configs = %q", d)
	}
	// A file with a syntax error contributes nothing (callers diff only
	// configurations that loaded).
	if u := Units(map[string][]byte{"bad.hcl": []byte("experiment {")}); len(u) != 0 {
		t.Errorf("units of a broken file: %v", u)
	}
}
