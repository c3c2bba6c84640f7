package schema

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"abc", "'abc'"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$HOME `id` $(id)", "'$HOME `id` $(id)'"},
	}
	for _, tt := range tests {
		if got := ShellQuote(tt.in); got != tt.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestRenderShellIsSafe runs the rendered command with /bin/sh: every value
// must reach printf as exactly one argument, unchanged, and nothing in it
// may run.
func TestRenderShellIsSafe(t *testing.T) {
	home := t.TempDir() // ~ points here, in case quoting ever breaks
	marker := filepath.Join(home, "keep")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tpl := &Template{Segments: []Segment{{Literal: "printf '%s|' "}, {Param: "x"}, {Literal: " end"}}}
	values := []string{
		`"; rm -rf ~"`,
		`; rm -rf ~`,
		`'; rm -rf ~; echo '`,
		`$(touch pwned) ` + "`touch pwned2`",
		"two words\nand a newline",
		`back\slash "double" 'single' $HOME *`,
		"",
	}
	for _, v := range values {
		cmd, err := tpl.Render(map[string]any{"x": v}, true)
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command("/bin/sh", "-c", cmd)
		c.Dir = home
		c.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("sh -c %q: %v\n%s", cmd, err, out)
		}
		if want := v + "|end|"; string(out) != want {
			t.Errorf("sh -c %q printed %q, want %q", cmd, out, want)
		}
	}
	ents, _ := os.ReadDir(home)
	if len(ents) != 1 {
		t.Errorf("the commands changed %s: %v", home, ents)
	}
}

func TestRender(t *testing.T) {
	tpl := &Template{Segments: []Segment{{Literal: "run --a "}, {Param: "a"}, {Literal: " --b="}, {Param: "b"}, {Literal: " --a2 "}, {Param: "a"}}}
	params := map[string]any{
		"a": 64.0,
		"b": map[string]any{"_name": "conv", "kernel": 3.0},
	}
	got, err := tpl.Render(params, false)
	if err != nil || got != `run --a 64 --b={"_name":"conv","kernel":3} --a2 64` {
		t.Errorf("Render(shell=false) = %q, %v", got, err)
	}
	got, err = tpl.Render(params, true)
	if err != nil || got != `run --a '64' --b='{"_name":"conv","kernel":3}' --a2 '64'` {
		t.Errorf("Render(shell=true) = %q, %v", got, err)
	}
	got, err = tpl.Render(map[string]any{"a": 0.001, "b": "x y"}, false)
	if err != nil || got != "run --a 0.001 --b=x y --a2 0.001" {
		t.Errorf("Render = %q, %v", got, err)
	}
	if _, err := tpl.Render(map[string]any{"a": 1.0}, true); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("Render with a missing param: err = %v", err)
	}
	if got := tpl.Params(); strings.Join(got, ",") != "a,b" {
		t.Errorf("Params() = %v", got)
	}
	if got := tpl.String(); got != "run --a ${param.a} --b=${param.b} --a2 ${param.a}" {
		t.Errorf("String() = %q", got)
	}
	var nilTpl *Template
	if s, err := nilTpl.Render(nil, true); s != "" || err != nil || nilTpl.String() != "" || nilTpl.Params() != nil {
		t.Errorf("nil template misbehaves")
	}
	lit := &Template{Segments: []Segment{{Literal: "100% ${not a param} %{x}"}}}
	if got := lit.String(); got != "100% $${not a param} %%{x}" {
		t.Errorf("String() of literal = %q", got)
	}
	if s, _ := lit.Render(nil, true); s != "100% ${not a param} %{x}" {
		t.Errorf("literal text must be kept as is, got %q", s)
	}
}
