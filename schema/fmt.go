package schema

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/trialform/trialform/internal/fsread"
)

// FormatSource returns src in canonical HCL layout (hclwrite.Format).
func FormatSource(src []byte) []byte {
	return hclwrite.Format(src)
}

// FormatResult is one file of FormatDir.
type FormatResult struct {
	Name    string // the file name within dir ("main.hcl"), as diagnostics name it
	Path    string // filepath.Join(dir, Name): where to write New
	Old     []byte
	New     []byte
	Changed bool
}

// FormatDir formats every *.hcl file of dir (sorted, not recursive) in
// memory; it writes nothing. Files with syntax errors are reported in diags
// and left out of the results.
func FormatDir(dir string) ([]FormatResult, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read configuration directory",
			Detail: fmt.Sprintf("Reading %s: %s.", dir, err)}}
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".hcl") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []FormatResult
	for _, n := range names {
		path := filepath.Join(dir, n)
		src, err := fsread.ReadFile(path, fsread.MaxConfig)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read configuration file",
				Detail: fmt.Sprintf("Reading %s: %s.", path, err)})
			continue
		}
		r, d := FormatBytes(n, src)
		if d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		r.Path = path
		out = append(out, r)
	}
	return out, diags
}

// FormatBytes formats src, the content of the file name (which names it
// in diagnostics); it refuses src with syntax errors.
func FormatBytes(name string, src []byte) (FormatResult, hcl.Diagnostics) {
	if _, d := parseConfig(src, name); d.HasErrors() {
		return FormatResult{}, d
	}
	formatted := FormatSource(src)
	return FormatResult{Name: name, Old: src, New: formatted, Changed: !bytes.Equal(src, formatted)}, nil
}

// UnifiedDiff returns a unified diff ("--- old/NAME", "+++ new/NAME", @@
// hunks with 3 lines of context) from old to new, computed line by line
// with go-diff; "" when they are equal.
func UnifiedDiff(name string, old, new []byte) string {
	return UnifiedDiffLabeled("old/"+name, "new/"+name, old, new)
}

// UnifiedDiffLabeled is UnifiedDiff with the "---" and "+++" labels given.
func UnifiedDiffLabeled(oldLabel, newLabel string, old, new []byte) string {
	if bytes.Equal(old, new) {
		return ""
	}
	dmp := diffmatchpatch.New()
	a, b, lines := dmp.DiffLinesToRunes(string(old), string(new))
	diffs := dmp.DiffCharsToLines(dmp.DiffMainRunes(a, b, false), lines)

	type line struct {
		op   diffmatchpatch.Operation
		text string // with its "\n" unless it is the last line without one
	}
	var all []line
	for _, d := range diffs {
		for _, l := range splitLines(d.Text) {
			all = append(all, line{d.Type, l})
		}
	}

	const context = 3
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", oldLabel, newLabel)
	// Line numbers (1-based) of all[i] in old and new.
	oldNo, newNo := make([]int, len(all)+1), make([]int, len(all)+1)
	o, n := 1, 1
	for i, l := range all {
		oldNo[i], newNo[i] = o, n
		if l.op != diffmatchpatch.DiffInsert {
			o++
		}
		if l.op != diffmatchpatch.DiffDelete {
			n++
		}
	}
	oldNo[len(all)], newNo[len(all)] = o, n

	for i := 0; i < len(all); {
		if all[i].op == diffmatchpatch.DiffEqual {
			i++
			continue
		}
		// A hunk: from context lines before this change up to context
		// lines after the last change that is within 2*context of the next.
		start := max(i-context, 0)
		end := i
		for j := i; j < len(all); j++ {
			if all[j].op != diffmatchpatch.DiffEqual {
				end = j + 1
				continue
			}
			if j-end >= 2*context {
				break
			}
		}
		stop := min(end+context, len(all))
		var oldCount, newCount int
		for _, l := range all[start:stop] {
			if l.op != diffmatchpatch.DiffInsert {
				oldCount++
			}
			if l.op != diffmatchpatch.DiffDelete {
				newCount++
			}
		}
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(oldNo[start], oldCount), hunkRange(newNo[start], newCount))
		for _, l := range all[start:stop] {
			prefix := " "
			switch l.op {
			case diffmatchpatch.DiffDelete:
				prefix = "-"
			case diffmatchpatch.DiffInsert:
				prefix = "+"
			}
			sb.WriteString(prefix + l.text)
			if !strings.HasSuffix(l.text, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return sb.String()
}

// hunkRange is "start,count" as diff -u writes it: ",1" is left out, and an
// empty range starts at the line before.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprintf("%d", start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}

func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
