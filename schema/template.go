package schema

import (
	"fmt"
	"strings"

	"github.com/trialform/trialform/tuner/space"
)

// Render substitutes params into the template. Each value is formatted
// with space.FormatValue. With shell set the template is a /bin/sh command
// line: it is parsed as shell (see ShellQuoting) and every value is quoted
// for the context it stands in (an unquoted word, "...", '...', a
// here-document), while the literal text is kept as written, so each value
// reaches the command as data, never as code. A param without a value, a
// param in a place that cannot be quoted, or a value that cannot be
// written there (a NUL byte; a line break in a here-document; a value that
// makes its line of a here-document read as the delimiter) is an error.
// A nil Template renders as "".
func (t *Template) Render(params map[string]any, shell bool) (string, error) {
	if t == nil {
		return "", nil
	}
	var quoting []Quoting
	var docs map[int]heredoc
	if shell && !t.IsLiteral() {
		q, d, err := t.shellQuoting()
		if err != nil {
			return "", err
		}
		quoting, docs = q, d
	}
	type span struct{ seg, start, end int }
	var inDocs []span
	var b strings.Builder
	for i, s := range t.Segments {
		if s.Param == "" {
			b.WriteString(s.Literal)
			continue
		}
		v, ok := params[s.Param]
		if !ok {
			return "", fmt.Errorf("no value for param %q", s.Param)
		}
		txt := space.FormatValue(v)
		if shell {
			q, err := quoting[i].quote(txt)
			if err != nil {
				return "", fmt.Errorf("param %q: %w", s.Param, err)
			}
			txt = q
			if _, ok := docs[i]; ok {
				inDocs = append(inDocs, span{i, b.Len(), b.Len() + len(txt)})
			}
		} else if strings.IndexByte(txt, 0) >= 0 {
			return "", fmt.Errorf("param %q: a value with a NUL byte cannot be passed to a command", s.Param)
		}
		b.WriteString(txt)
	}
	out := b.String()
	if len(out) > MaxArgLen {
		return "", argTooLong(t, params, len(out), shell)
	}
	for _, sp := range inDocs {
		line := lineAround(out, sp.start, sp.end)
		if d := docs[sp.seg]; d.ends(line) {
			return "", fmt.Errorf("param %q: %w", t.Segments[sp.seg].Param, &DelimiterError{Line: line, Delim: d.delim})
		}
	}
	return out, nil
}

// ShellQuote quotes s for /bin/sh: always in single quotes, each single
// quote written as '\” so nothing inside is expanded ("" gives ”).
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Params lists the param names the template references, in order of first
// use, each once.
func (t *Template) Params() []string {
	if t == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range t.Segments {
		if s.Param != "" && !seen[s.Param] {
			seen[s.Param] = true
			out = append(out, s.Param)
		}
	}
	return out
}

// String gives the template in source form, literal text with
// ${param.NAME} placeholders ("python3 main.py --C ${param.C}"), for
// display and hashing. Literal "${" and "%{" are escaped as HCL does.
func (t *Template) String() string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	for _, s := range t.Segments {
		if s.Param != "" {
			b.WriteString("${param." + s.Param + "}")
			continue
		}
		lit := strings.ReplaceAll(s.Literal, "${", "$${")
		lit = strings.ReplaceAll(lit, "%{", "%%{")
		b.WriteString(lit)
	}
	return b.String()
}

// IsLiteral reports whether the template has no param placeholders.
func (t *Template) IsLiteral() bool {
	return t != nil && len(t.Params()) == 0
}

// MaxArgLen is the longest string one argument of a program may be on
// Linux (MAX_ARG_STRLEN, 32 pages, less its NUL): a trial's command line
// (sh -c's one argument) or one item of args. Past it the trial fails
// to start with "argument list too long".
const MaxArgLen = 32*4096 - 1

// argTooLong says which param made a command line or argument too long:
// the one with the longest value.
func argTooLong(t *Template, params map[string]any, n int, shell bool) error {
	long, size := "", -1
	for _, seg := range t.Segments {
		if seg.Param == "" {
			continue
		}
		if l := len(space.FormatValue(params[seg.Param])); l > size {
			long, size = seg.Param, l
		}
	}
	what := "an argument of the trial's args"
	if shell {
		what = "the trial's command line"
	}
	return fmt.Errorf("param %q: its value (%d bytes) makes %s %d bytes, over the %d a Linux program accepts in one argument; "+
		"pass it another way (the trial reads every parameter from nni.get_next_parameter())", long, size, what, n, MaxArgLen)
}
