package decl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Checker is implemented by configuration structs with rules beyond types
// (values that go together, names given twice). Check runs after every
// attribute was decoded without error.
type Checker interface {
	Check(w *Where) hcl.Diagnostics
}

// Where gives a Checker the source ranges of what it checks. Paths name
// attributes and blocks with dots; a block has its index among the blocks
// of its type: "worker.0.replicas", "task_role.1".
type Where struct {
	Name   string    // the block's name
	Def    hcl.Range // the block's header
	ranges map[string]hcl.Range
}

// NewWhere is used by schema while it decodes.
func NewWhere(name string, def hcl.Range) *Where {
	return &Where{Name: name, Def: def, ranges: map[string]hcl.Range{}}
}

// Set records the range of path (an attribute's value or a block's header).
func (w *Where) Set(path string, r hcl.Range) { w.ranges[path] = r }

// Range returns the range of path, or of the closest enclosing block that
// is written, or the block's header.
func (w *Where) Range(path string) *hcl.Range {
	for {
		if r, ok := w.ranges[path]; ok {
			return &r
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			r := w.Def
			return &r
		}
		path = path[:i]
	}
}

// Has reports whether path is written in the block.
func (w *Where) Has(path string) bool {
	_, ok := w.ranges[path]
	return ok
}

// Error is a diagnostic at path.
func (w *Where) Error(path, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: w.Range(path)}
}

// Paths lists the recorded paths, sorted (tests).
func (w *Where) Paths() []string {
	out := make([]string, 0, len(w.ranges))
	for p := range w.ranges {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
