package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Unit is one top-level block or attribute of a configuration file, the
// granularity at which BlockDiff reports changes.
type Unit struct {
	Key  string // `experiment "svm"`, or `max_trials =` for an attribute (var files)
	File string // file name as in Config.Files
	Line int    // first line in File
	Text []byte // source text
	// Hidden is set by HideSensitive when Text had a sensitive value taken
	// out: a hash of the text as it was, so BlockDiff can say the value
	// changed without showing it.
	Hidden string
}

// Units splits files (as in Config.Files) into their top-level blocks and
// attributes, keyed by Key (prefixed with the file name for attributes,
// which are only unique per file). Files that do not parse are skipped.
func Units(files map[string][]byte) map[string]Unit {
	out := map[string]Unit{}
	for name, src := range files {
		f, diags := parseConfig(src, name)
		if diags.HasErrors() {
			continue
		}
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		for _, b := range body.Blocks {
			key := b.Type
			for _, l := range b.Labels {
				key += " " + strconv.Quote(l)
			}
			out[key] = unit(key, name, src, b.Range())
		}
		for _, a := range body.Attributes {
			key := a.Name + " ="
			out[name+": "+key] = unit(key, name, src, a.SrcRange)
		}
	}
	return out
}

func unit(key, file string, src []byte, r hcl.Range) Unit {
	end := min(r.End.Byte, len(src))
	text := append([]byte(nil), src[r.Start.Byte:end]...)
	if len(text) > 0 && text[len(text)-1] != '\n' {
		text = append(text, '\n')
	}
	return Unit{Key: key, File: file, Line: r.Start.Line, Text: text}
}

// BlockDiff describes what changed between two sets of units: a unified
// diff (github.com/sergi/go-diff, via UnifiedDiff) per added, removed or
// changed block, in key order. Moving a block between files, or
// re-indenting elsewhere in a file, is not a change. "" when nothing
// changed.
func BlockDiff(old, new map[string]Unit) string {
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range new {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var sb strings.Builder
	for _, k := range sorted {
		o, hasOld := old[k]
		n, hasNew := new[k]
		if hasOld && hasNew && string(o.Text) == string(n.Text) {
			if o.Hidden != n.Hidden {
				fmt.Fprintf(&sb, "# %s changed (%s:%d): its sensitive value, not shown\n", n.Key, n.File, n.Line)
			}
			continue
		}
		where := n
		verb := "changed"
		switch {
		case !hasOld:
			verb = "added"
		case !hasNew:
			verb, where = "removed", o
		}
		fmt.Fprintf(&sb, "# %s %s (%s:%d)\n", where.Key, verb, where.File, where.Line)
		sb.WriteString(UnifiedDiff(where.File, o.Text, n.Text))
	}
	return sb.String()
}

// HideSensitive returns units with the values of the sensitive variables
// named in sensitive taken out: the default of a `variable "NAME"` block
// and a variable file's `NAME = ...` read `(sensitive value)`, so that
// BlockDiff never shows them (watch prints it). Pass the names sensitive in
// either configuration compared.
func HideSensitive(units map[string]Unit, sensitive map[string]bool) map[string]Unit {
	if len(sensitive) == 0 {
		return units
	}
	out := make(map[string]Unit, len(units))
	for k, u := range units {
		out[k] = u
		f, diags := parseConfig(u.Text, u.File)
		if diags.HasErrors() {
			continue
		}
		body := f.Body.(*hclsyntax.Body)
		var expr hclsyntax.Expression
		switch {
		case len(body.Blocks) == 1 && body.Blocks[0].Type == "variable" && len(body.Blocks[0].Labels) == 1 && sensitive[body.Blocks[0].Labels[0]]:
			if a := body.Blocks[0].Body.Attributes["default"]; a != nil {
				expr = a.Expr
			}
		case len(body.Blocks) == 0 && len(body.Attributes) == 1:
			for name, a := range body.Attributes {
				if sensitive[name] {
					expr = a.Expr
				}
			}
		}
		if expr == nil {
			continue
		}
		r := expr.Range()
		text := append(append(append([]byte(nil), u.Text[:r.Start.Byte]...), SensitiveText...), u.Text[r.End.Byte:]...)
		sum := sha256.Sum256(u.Text)
		u.Text, u.Hidden = text, hex.EncodeToString(sum[:])
		out[k] = u
	}
	return out
}
