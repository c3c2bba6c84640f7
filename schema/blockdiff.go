package schema

import (
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
}

// Units splits files (as in Config.Files) into their top-level blocks and
// attributes, keyed by Key (prefixed with the file name for attributes,
// which are only unique per file). Files that do not parse are skipped.
func Units(files map[string][]byte) map[string]Unit {
	out := map[string]Unit{}
	for name, src := range files {
		f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
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
