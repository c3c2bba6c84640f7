package schema

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcled"
)

// WriteDiagnostics writes diags as text with source snippets (HCL's
// diagnostic text writer), except that the location line reads
// "on main.hcl:12, in experiment "svm":" rather than "on main.hcl line 12"
// so terminals and editors can jump to it. files maps the file names used
// in ranges to their parsed files (see Config.HCLFiles); width 0 means no
// wrapping.
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, width uint, color bool) error {
	for _, d := range diags {
		var buf bytes.Buffer
		if err := hcl.NewDiagnosticTextWriter(&buf, files, width, color).WriteDiagnostic(d); err != nil {
			return err
		}
		out := buf.Bytes()
		if d.Subject != nil {
			from := fmt.Sprintf("\n  on %s line %d", d.Subject.Filename, d.Subject.Start.Line)
			to := fmt.Sprintf("\n  on %s:%d", d.Subject.Filename, d.Subject.Start.Line)
			out = bytes.Replace(out, []byte(from), []byte(to), 1)
			out = windowLongLines(out, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

// JSONDiagnostics is the machine-readable form of a validation result, in
// the shape of `terraform validate -json`.
type JSONDiagnostics struct {
	FormatVersion string           `json:"format_version"`
	Valid         bool             `json:"valid"`
	ErrorCount    int              `json:"error_count"`
	WarningCount  int              `json:"warning_count"`
	Diagnostics   []JSONDiagnostic `json:"diagnostics"`
}

// JSONDiagnostic is one diagnostic.
type JSONDiagnostic struct {
	Severity string       `json:"severity"` // "error" | "warning"
	Summary  string       `json:"summary"`
	Detail   string       `json:"detail"`
	Range    *JSONRange   `json:"range,omitempty"`
	Snippet  *JSONSnippet `json:"snippet,omitempty"`
}

// JSONRange is a source range; lines and columns start at 1, bytes at 0.
type JSONRange struct {
	Filename string  `json:"filename"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONPos is a position in a source file.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// JSONSnippet is the source around a diagnostic: Code holds whole lines
// starting at StartLine; the highlight offsets are byte offsets into Code.
type JSONSnippet struct {
	Context              *string `json:"context"` // the enclosing block, e.g. `experiment "svm"`, or null
	Code                 string  `json:"code"`
	StartLine            int     `json:"start_line"`
	HighlightStartOffset int     `json:"highlight_start_offset"`
	HighlightEndOffset   int     `json:"highlight_end_offset"`
	Values               []any   `json:"values"` // always empty; kept for Terraform's shape
}

// DiagnosticsJSON converts diags, with snippets from files where the file
// is known.
func DiagnosticsJSON(files map[string]*hcl.File, diags hcl.Diagnostics) JSONDiagnostics {
	out := JSONDiagnostics{FormatVersion: "1.0", Diagnostics: []JSONDiagnostic{}}
	for _, d := range diags {
		jd := JSONDiagnostic{Summary: d.Summary, Detail: d.Detail}
		switch d.Severity {
		case hcl.DiagWarning:
			jd.Severity = "warning"
			out.WarningCount++
		default:
			jd.Severity = "error"
			out.ErrorCount++
		}
		if d.Subject != nil {
			r := *d.Subject
			jd.Range = &JSONRange{
				Filename: r.Filename,
				Start:    JSONPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:      JSONPos{r.End.Line, r.End.Column, r.End.Byte},
			}
			if f := files[r.Filename]; f != nil && f.Bytes != nil {
				jd.Snippet = snippet(f, r, d.Context)
			}
		}
		out.Diagnostics = append(out.Diagnostics, jd)
	}
	out.Valid = out.ErrorCount == 0
	return out
}

func snippet(f *hcl.File, highlight hcl.Range, context *hcl.Range) *JSONSnippet {
	src := f.Bytes
	if highlight.Start.Byte > len(src) || highlight.End.Byte > len(src) || highlight.Start.Byte > highlight.End.Byte {
		return nil
	}
	if highlight.Empty() && highlight.End.Byte < len(src) {
		highlight.End.Byte++
		highlight.End.Column++
	}
	span := highlight
	if context != nil && context.Filename == highlight.Filename && context.End.Byte <= len(src) {
		span = hcl.RangeOver(span, *context)
	}
	start := bytes.LastIndexByte(src[:span.Start.Byte], '\n') + 1
	end := len(src)
	endFrom := span.End.Byte
	if endFrom > span.Start.Byte && endFrom > 0 && src[endFrom-1] == '\n' {
		endFrom-- // a range ending just after a newline ends on the line before
	}
	if i := bytes.IndexByte(src[endFrom:], '\n'); i >= 0 {
		end = endFrom + i
	}
	startLine := 1 + bytes.Count(src[:start], []byte{'\n'})
	s := &JSONSnippet{
		Code:                 string(src[start:end]),
		StartLine:            startLine,
		HighlightStartOffset: highlight.Start.Byte - start,
		HighlightEndOffset:   min(highlight.End.Byte, end) - start,
		Values:               []any{},
	}
	nav := f
	if nav.Nav == nil {
		// Sources from Config.HCLFiles carry bytes only; parse them for
		// the block context.
		if pf, diags := parseConfig(src, highlight.Filename); pf != nil && !diags.HasErrors() {
			nav = pf
		}
	}
	if c := hcled.ContextString(nav, highlight.Start.Byte-1); c != "" {
		s.Context = &c
	}
	return s
}

// maxSnippetLine bounds a source line shown under a diagnostic, in
// characters: a longer one (a generated list on one line) is shown as a
// window of it around the error's column (its line: line, column col),
// with "…" where it was cut; a whole 600 KB line reached the terminal.
const maxSnippetLine = 160

var (
	snippetLine = regexp.MustCompile(`^( *)([0-9]+): `)
	ansiCode    = regexp.MustCompile("^\x1b\\[[0-9;]*m")
)

// windowLongLines cuts the snippet lines ("  12: source") of a rendered
// diagnostic longer than maxSnippetLine. Colour codes are kept (they are
// zero-width), so a highlight cut in two still ends.
func windowLongLines(out []byte, line, col int) []byte {
	lines := bytes.Split(out, []byte{'\n'})
	changed := false
	for i, l := range lines {
		if len(l) <= maxSnippetLine {
			continue
		}
		m := snippetLine.FindSubmatch(l)
		if m == nil {
			continue
		}
		code := l[len(m[0]):]
		lo := 0 // the first character kept
		if n, _ := strconv.Atoi(string(m[2])); n == line && col > maxSnippetLine/2 {
			lo = col - 1 - maxSnippetLine/2
		}
		hi := lo + maxSnippetLine
		var b bytes.Buffer
		b.Write(m[0])
		if lo > 0 {
			b.WriteString("…")
		}
		c := 0 // characters seen
		for k := 0; k < len(code); c++ {
			if a := ansiCode.Find(code[k:]); a != nil {
				b.Write(a)
				k += len(a)
				c--
				continue
			}
			_, size := utf8.DecodeRune(code[k:])
			if c >= lo && c < hi {
				b.Write(code[k : k+size])
			}
			k += size
		}
		if c > hi {
			b.WriteString("…")
		}
		lines[i] = b.Bytes()
		changed = true
	}
	if !changed {
		return out
	}
	return bytes.Join(lines, []byte{'\n'})
}
