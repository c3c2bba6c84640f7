package schema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestDiagnosticsJSON(t *testing.T) {
	cfg, diags := Load("testdata/errors/undefined_param", LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if len(diags) != 1 {
		t.Fatalf("diags = %v", diags)
	}
	diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "No range", Detail: "d"})
	got := DiagnosticsJSON(cfg.HCLFiles(), diags)
	if got.Valid || got.ErrorCount != 1 || got.WarningCount != 1 || got.FormatVersion != "1.0" || len(got.Diagnostics) != 2 {
		t.Fatalf("DiagnosticsJSON = %+v", got)
	}
	d := got.Diagnostics[0]
	if d.Severity != "error" || d.Summary != "Undefined param" || d.Range == nil || d.Snippet == nil {
		t.Fatalf("diagnostic = %+v", d)
	}
	wantRange := JSONRange{Filename: "main.hcl",
		Start: JSONPos{Line: 10, Column: 57, Byte: d.Range.Start.Byte}, End: JSONPos{Line: 10, Column: 68, Byte: d.Range.Start.Byte + 11}}
	if *d.Range != wantRange {
		t.Errorf("range = %+v, want %+v", *d.Range, wantRange)
	}
	s := d.Snippet
	if s.StartLine != 10 || s.Code != `    command = "python3 main.py --C ${param.C} --gamma ${param.gamma}"` {
		t.Errorf("snippet = %+v", s)
	}
	if hl := s.Code[s.HighlightStartOffset:s.HighlightEndOffset]; hl != "param.gamma" {
		t.Errorf("highlight = %q", hl)
	}
	if s.Context == nil || *s.Context != `experiment "svm"` {
		t.Errorf("context = %v", s.Context)
	}
	if w := got.Diagnostics[1]; w.Severity != "warning" || w.Range != nil || w.Snippet != nil {
		t.Errorf("warning = %+v", w)
	}

	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"format_version":"1.0"`, `"valid":false`, `"error_count":1`, `"warning_count":1`,
		`"range":{"filename":`, `"start":{"line":10,"column":57,`, `"snippet":{"context":"experiment \"svm\"","code":`,
		`"start_line":10`, `"highlight_start_offset":`, `"values":[]`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s:\n%s", key, b)
		}
	}

	valid := DiagnosticsJSON(nil, nil)
	if b, _ := json.Marshal(valid); string(b) != `{"format_version":"1.0","valid":true,"error_count":0,"warning_count":0,"diagnostics":[]}` {
		t.Errorf("valid JSON = %s", b)
	}
}

func TestSnippetMultiLine(t *testing.T) {
	src := []byte("a {\n  b = [\n    1,\n  ]\n}\n")
	f := map[string]*hcl.File{"x.hcl": {Bytes: src}}
	// Subject spanning "[\n    1,\n  ]" (lines 2-4).
	start := strings.Index(string(src), "[")
	end := strings.Index(string(src), "]") + 1
	r := hcl.Range{Filename: "x.hcl", Start: hcl.Pos{Line: 2, Column: 7, Byte: start}, End: hcl.Pos{Line: 4, Column: 4, Byte: end}}
	got := DiagnosticsJSON(f, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "s", Subject: &r}})
	s := got.Diagnostics[0].Snippet
	if s == nil || s.StartLine != 2 || s.Code != "  b = [\n    1,\n  ]" || s.Code[s.HighlightStartOffset:s.HighlightEndOffset] != "[\n    1,\n  ]" {
		t.Errorf("snippet = %+v", s)
	}
	if s.Context == nil || *s.Context != "a" {
		t.Errorf("context = %v", s.Context)
	}
}

func TestWriteDiagnostics(t *testing.T) {
	cfg, diags := Load("testdata/errors/duplicate_block", LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	var b strings.Builder
	if err := WriteDiagnostics(&b, cfg.HCLFiles(), diags, 0, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Error: Duplicate experiment",
		"  on b.hcl:1, in experiment \"svm\":\n",
		`1: experiment "svm" {`,
		"first at a.hcl:5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// An HCL body's misspelt names are suggested by internal/didyoumean, the
// rule every message uses, not by HCL's own, which takes the first name
// within 2 edits in schema order: for n_max_duration it said
// "max_duration" (2 edits) where "on_max_duration" is 1.
func TestMisspeltNamesUseOneRule(t *testing.T) {
	dir := writeConfig(t, map[string]string{"main.hcl": `
search_space "s" {
  param "x" { uniform = [0, 1] }
}
experiment "e" {
  search_space = search_space.s
  max_trials     = 1
  n_max_duration = "stop"
  trial { command = "true" }
  Objective { metric = "acc" }
}
`})
	_, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	var got []string
	for _, d := range diags {
		got = append(got, d.Summary+": "+d.Detail)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`Unsupported argument: An argument named "n_max_duration" is not expected here. Did you mean "on_max_duration"?`,
		`Unsupported block type: Blocks of type "Objective" are not expected here. Did you mean "objective"?`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, all)
		}
	}
}

// TestWriteDiagnosticsLongLine: a source line of 600 KB (a generated list)
// is shown as a window around the error, not whole: validate printed the
// whole line under the error, 600 KB on the terminal (and in a
// controller's log), with or without colour.
func TestWriteDiagnosticsLongLine(t *testing.T) {
	dir := t.TempDir()
	ones := strings.Repeat("1, ", 200000)
	src := "search_space \"s\" {\n  param \"x\" { uniform = [0, 1] }\n}\nlocals {\n  a = [" + ones + "nope.x, " + ones + "2]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if !diags.HasErrors() {
		t.Fatal("no error for nope.x")
	}
	for _, color := range []bool{false, true} {
		var b strings.Builder
		if err := WriteDiagnostics(&b, cfg.HCLFiles(), diags, 0, color); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if len(out) > 2000 {
			t.Errorf("color %v: %d bytes of diagnostics; want a window of the line:\n%.600s", color, len(out), out)
		}
		for _, want := range []string{"on main.hcl:5", "nope", "…", `There is no variable named "nope"`} {
			if !strings.Contains(out, want) {
				t.Errorf("color %v: output lacks %q:\n%.2000s", color, want, out)
			}
		}
	}
}
