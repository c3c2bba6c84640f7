package schema

import (
	"strings"
	"testing"
)

// TestFilePrefixNamesFiles: with LoadOptions.FilePrefix (the controller's
// -path), files are named by their path in the repository wherever a file
// is named (diagnostics, their snippets, Files, DeclRange), and read from
// the directory as before; without it, by their name in the directory.
// Before, a controller with -path experiments said "main.hcl:15", which its
// repository does not hold.
func TestFilePrefixNamesFiles(t *testing.T) {
	const exp = `search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "w" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "python3 trial.py ${param.x}"
  }
}
`
	bad := writeConfig(t, map[string]string{"main.hcl": exp, "more.hcl": "\n\nlocals {\n  y = nope.x\n}\n"})
	good := writeConfig(t, map[string]string{"main.hcl": exp})
	for _, tt := range []struct{ prefix, want string }{
		{"", "more.hcl"},
		{"experiments", "experiments/more.hcl"},
		{"deep/experiments", "deep/experiments/more.hcl"},
	} {
		cfg, diags := Load(bad, LoadOptions{Platforms: testPlatforms, Tuners: testTuners, FilePrefix: tt.prefix})
		if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Filename != tt.want || diags[0].Subject.Start.Line != 4 {
			t.Fatalf("prefix %q: diags = %v, want an error at %s:4", tt.prefix, diags, tt.want)
		}
		if _, ok := cfg.Files[tt.want]; !ok {
			t.Errorf("prefix %q: Files has %v, want %s", tt.prefix, keys(cfg.Files), tt.want)
		}
		var b strings.Builder
		if err := WriteDiagnostics(&b, cfg.HCLFiles(), diags, 0, false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "on "+tt.want+":4,") || !strings.Contains(b.String(), "y = nope.x") {
			t.Errorf("prefix %q: diagnostics name the file or show the snippet wrong:\n%s", tt.prefix, b.String())
		}

		cfg = mustLoad(t, good, LoadOptions{Platforms: testPlatforms, Tuners: testTuners, FilePrefix: tt.prefix})
		wantMain := strings.TrimSuffix(tt.want, "more.hcl") + "main.hcl"
		if got := cfg.Experiments["w"].DeclRange.Filename; got != wantMain {
			t.Errorf("prefix %q: experiment declared in %q, want %q", tt.prefix, got, wantMain)
		}
		if got := cfg.Platforms["local.default"].DeclRange.Filename; got != wantMain {
			t.Errorf("prefix %q: implicit platform declared in %q, want %q", tt.prefix, got, wantMain)
		}

		_, files, _ := LoadBackend(bad, LoadOptions{FilePrefix: tt.prefix})
		if _, ok := files[tt.want]; !ok {
			t.Errorf("prefix %q: LoadBackend's files are %v, want %s", tt.prefix, keys(files), tt.want)
		}
	}
}
