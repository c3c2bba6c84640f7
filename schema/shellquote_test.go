package schema

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostilePayloads are parameter values that try to break out of their
// quoting in some context.
var hostilePayloads = []string{
	"plain",
	"",
	"$(touch pwned1)",
	"`touch pwned2`",
	`"; touch pwned3; echo "`,
	`'; touch pwned4; echo '`,
	"x\ntouch pwned5",
	`back\slash \" \' \\`,
	`\`,
	"*",
	"~",
	"~root",
	"-rf",
	"--help",
	"$HOME ${HOME} $1 $@",
	"a b\tc",
	`it's "quoted"`,
	"EOF",
	"!!",
}

// tplFrom builds a command template from text in which @ stands for
// ${param.v}.
func tplFrom(s string) *Template {
	t := &Template{}
	parts := strings.Split(s, "@")
	for i, p := range parts {
		if p != "" {
			t.Segments = append(t.Segments, Segment{Literal: p})
		}
		if i < len(parts)-1 {
			t.Segments = append(t.Segments, Segment{Param: "v"})
		}
	}
	return t
}

// TestRenderEveryPosition renders each hostile payload in every quoting
// context and runs the result with /bin/sh: printargs writes the argv it got,
// which must be exactly the expected words, and no file may appear.
func TestRenderEveryPosition(t *testing.T) {
	dir := t.TempDir()
	printer := filepath.Join(dir, "printargs")
	if err := os.WriteFile(printer, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\000' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	positions := []struct {
		cmd  string
		want func(v string) []string
		nl   bool // the position refuses a line break
	}{
		{"P @", func(v string) []string { return []string{v} }, false},
		{"P --x=@ end", func(v string) []string { return []string{"--x=" + v, "end"} }, false},
		{`P "dq @ dq"`, func(v string) []string { return []string{"dq " + v + " dq"} }, false},
		{`P "@"`, func(v string) []string { return []string{v} }, false},
		{`P 'sq @ sq'`, func(v string) []string { return []string{"sq " + v + " sq"} }, false},
		{`P a'@'b"@"c@`, func(v string) []string { return []string{"a" + v + "b" + v + "c" + v} }, false},
		{"X=@ && P \"$X\"", func(v string) []string { return []string{v} }, false},
		{"X=@ P2", nil, false},
		{`P "$(printf '%s' @)"`, func(v string) []string { return []string{v} }, false},
		{`P "$(printf '%s' "@")"`, func(v string) []string { return []string{v} }, false},
		{"cat > f <<EOF\nline @ %\nEOF\nP \"$(cat f)\"", func(v string) []string { return []string{"line " + v + " %"} }, true},
		{"cat > f <<'EOF'\nline @ %\nEOF\nP \"$(cat f)\"", func(v string) []string { return []string{"line " + v + " %"} }, true},
		{"case @ in *) P @;; esac", func(v string) []string { return []string{v} }, false},
		{"for i in @ @; do P \"$i\"; done", func(v string) []string { return []string{v, v} }, false},
		{"P @ 2> out.@.txt", func(v string) []string { return []string{v} }, false},
	}
	for _, pos := range positions {
		for _, v := range hostilePayloads {
			work := filepath.Join(dir, "w")
			os.RemoveAll(work)
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			cmdText := strings.ReplaceAll(pos.cmd, "P2", `/bin/sh -c 'printf "%s\000" "$X"'`)
			cmdText = strings.ReplaceAll(cmdText, "P ", printer+" ")
			tpl := tplFrom(cmdText)
			got, err := tpl.Render(map[string]any{"v": v}, true)
			if pos.nl && strings.Contains(v, "\n") {
				if err == nil || !strings.Contains(err.Error(), "line break") {
					t.Errorf("%q with %q: want a line-break error, got %q, %v", pos.cmd, v, got, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%q with %q: %v", pos.cmd, v, err)
				continue
			}
			c := exec.Command("/bin/sh", "-c", got)
			c.Dir = work
			c.Env = []string{"HOME=" + work, "PATH=/usr/bin:/bin"}
			out, err := c.Output()
			if err != nil {
				t.Errorf("sh -c %q: %v", got, err)
				continue
			}
			want := []string{v}
			if pos.want != nil {
				want = pos.want(v)
			}
			args := strings.Split(string(out), "\x00")
			args = args[:len(args)-1]
			if strings.Join(args, "\x00") != strings.Join(want, "\x00") || len(args) != len(want) {
				t.Errorf("%q with %q: sh -c %q gave argv %q, want %q", pos.cmd, v, got, args, want)
			}
			ents, _ := os.ReadDir(work)
			for _, e := range ents {
				if e.Name() != "f" && !strings.HasPrefix(e.Name(), "out.") {
					t.Errorf("%q with %q: sh -c %q created %s", pos.cmd, v, got, e.Name())
				}
			}
		}
	}
}

// TestRenderRefusesUnsafePlaces: a param where no quoting is safe is an
// UnsafePlaceError, found without any value.
func TestRenderRefusesUnsafePlaces(t *testing.T) {
	for _, cmd := range []string{
		"echo `echo @`",
		"echo $((1 + @))",
		"echo ${X:-@}",
		"echo hi # @",
		"@=1 echo",
		"echo \\@",
		`echo "\@"`,
		"echo $'@'",
		"f@() { :; }",
		"for @ in a; do :; done",
		"a[@]=1",
		"(( @ > 1 ))",
	} {
		_, err := tplFrom(cmd).ShellQuoting()
		var up *UnsafePlaceError
		if !errors.As(err, &up) || up.Param != "v" {
			t.Errorf("%q: want an UnsafePlaceError, got %v", cmd, err)
		}
	}
	if _, err := tplFrom(`echo "@`).ShellQuoting(); err == nil || !strings.Contains(err.Error(), "not a valid shell command") {
		t.Errorf("unterminated quote: %v", err)
	}
	if _, err := tplFrom("echo @").Render(map[string]any{"v": "a\x00b"}, true); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("NUL value: %v", err)
	}
}

// A value that makes its line of a here-document read as the delimiter
// would end the document early and run the author's following lines as
// commands (issue 25, item I): Render refuses it, and the same values in
// other lines or positions still render and run as data.
func TestRenderRefusesHeredocDelimiterValue(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		cmd, v  string
		refused bool
	}{
		{"cat > f <<EOF\n@\nEOF\ntouch pwned", "EOF", true},
		{"cat > f <<'EOF'\n@\nEOF\ntouch pwned", "EOF", true},
		{"cat > f <<\"EOF\"\n@\nEOF\ntouch pwned", "EOF", true},
		{"cat > f <<\\EOF\n@\nEOF\ntouch pwned", "EOF", true},
		{"cat > f <<EOF\nE@\nEOF\ntouch pwned", "OF", true},
		{"cat > f <<-EOF\n\t@\n\tEOF\ntouch pwned", "EOF", true},
		{"cat > f <<-EOF\n@\nEOF\ntouch pwned", "\tEOF", true},
		{"cat > f <<EOF\n@ @\nEOF\ntouch pwned", "EOF", false},
		{"cat > f <<EOF\n<@>\nEOF\ntouch pwned", "EOF", false},
		{"cat > f <<EOF\n@\nEOF\ntouch pwned", "EOF ", false},
		{"cat > f <<EOF\n@\nEOF\ntouch pwned", "\tEOF", false},
		{"cat > f <<EOF\n@\nEOF\ntouch pwned", "$X", false},
		{"cat > f <<END\n@\nEND\ntouch pwned", "EOF", false},
	}
	for _, c := range cases {
		work := filepath.Join(dir, "w")
		os.RemoveAll(work)
		if err := os.Mkdir(work, 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := tplFrom(c.cmd).Render(map[string]any{"v": c.v}, true)
		if c.refused {
			var de *DelimiterError
			if !errors.As(err, &de) {
				t.Errorf("%q with %q: want a *DelimiterError, got %q, %v", c.cmd, c.v, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q with %q: %v", c.cmd, c.v, err)
			continue
		}
		// Rendered, the command writes the line as data and then runs
		// the touch (the author's own command).
		cmd := exec.Command("/bin/sh", "-c", got)
		cmd.Dir = work
		cmd.Env = []string{"X=x", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sh -c %q: %v\n%s", got, err, out)
			continue
		}
		b, err := os.ReadFile(filepath.Join(work, "f"))
		if err != nil || !strings.Contains(string(b), strings.TrimLeft(c.v, "\t")) {
			t.Errorf("sh -c %q wrote %q, %v; want the value in it", got, b, err)
		}
	}
}
