package state

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// TestStatusesListsEveryConstant reads the status constants from state.go's
// source (the const block that declares Waiting) and checks that Statuses
// holds each of them exactly once, and nothing else: a status added to the
// block and forgotten in the list fails here, so nothing derived from
// Statuses (the query language, completion) can miss it.
func TestStatusesListsEveryConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "state.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		isStatuses := false
		for _, sp := range g.Specs {
			if slices.ContainsFunc(sp.(*ast.ValueSpec).Names, func(n *ast.Ident) bool { return n.Name == "Waiting" }) {
				isStatuses = true
			}
		}
		if !isStatuses {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i >= len(vs.Values) {
					t.Fatalf("state.go: status constant %s has no value of its own", n.Name)
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("state.go: status constant %s is not a string literal", n.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				consts = append(consts, v)
			}
		}
	}
	if len(consts) < 9 {
		t.Fatalf("found %d status constants in state.go (%v); the test no longer finds the block", len(consts), consts)
	}
	for _, c := range consts {
		if n := count(Statuses, c); n != 1 {
			t.Errorf("status %s is in Statuses %d times, want once", c, n)
		}
	}
	for _, s := range Statuses {
		if !slices.Contains(consts, s) {
			t.Errorf("Statuses holds %q, which is not a status constant", s)
		}
	}
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}
