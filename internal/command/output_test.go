package command

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// stillFormatting are the command files that still write text for people
// themselves instead of calling internal/views. They are to move there
// (issue 28 item 1); the test fails on any other file that writes, and on
// a file listed here that no longer does (drop it from the list).
var stillFormatting = map[string]bool{
	"help.go": true, "main.go": true,
}

// directWrites returns, for the non-test Go files in dir, each place that
// writes output itself, as "file:line: what": os.Stdout and os.Stderr
// (outside main.go's Main, which hands them to the commands as IO), the
// fmt.Print functions and the print builtins everywhere, and, in files not
// in allowed, fmt.Fprint*, io.WriteString and Write calls that do not
// write into a local buffer (&b).
func directWrites(t *testing.T, dir string, allowed map[string]bool) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		at := func(n ast.Node, what string) {
			out = append(out, name+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+what)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "os" && (n.Sel.Name == "Stdout" || n.Sel.Name == "Stderr") {
						if name != "main.go" || fn.Name.Name != "Main" {
							at(n, "os."+n.Sel.Name)
						}
					}
				case *ast.CallExpr:
					if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "print" || id.Name == "println") {
						at(n, id.Name)
						return true
					}
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					pkg := ""
					if x, ok := sel.X.(*ast.Ident); ok {
						pkg = x.Name
					}
					switch {
					case pkg == "fmt" && strings.HasPrefix(sel.Sel.Name, "Print"):
						at(n, "fmt."+sel.Sel.Name)
					case allowed[name]:
					case (pkg == "fmt" && strings.HasPrefix(sel.Sel.Name, "Fprint")) || (pkg == "io" && sel.Sel.Name == "WriteString"):
						if len(n.Args) > 0 && !isLocalBuffer(n.Args[0]) {
							at(n, pkg+"."+sel.Sel.Name)
						}
					case sel.Sel.Name == "Write" && len(n.Args) == 1 && isOutput(sel.X):
						at(n, "Write")
					}
				}
				return true
			})
		}
	}
	sort.Strings(out)
	return out
}

// isLocalBuffer: &b, a strings.Builder or bytes.Buffer being built.
func isLocalBuffer(e ast.Expr) bool {
	u, ok := e.(*ast.UnaryExpr)
	return ok && u.Op == token.AND
}

// isOutput: g.IO.Out or g.IO.Err (and the like).
func isOutput(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "Out" || sel.Sel.Name == "Err")
}

// internal/command formats nothing itself: its output for people goes
// through internal/views (apply's and watch's progress, human and JSON).
func TestCommandsWriteThroughViews(t *testing.T) {
	if got := directWrites(t, ".", stillFormatting); len(got) > 0 {
		t.Errorf("internal/command writes output itself; call internal/views (a view for the command's output) instead:\n  %s", strings.Join(got, "\n  "))
	}
	all := directWrites(t, ".", map[string]bool{})
	for name := range stillFormatting {
		if !writesIn(all, name) {
			t.Errorf("%s is listed in stillFormatting but writes nothing itself any more: drop it from the list", name)
		}
	}
}

func writesIn(lines []string, file string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, file+":") {
			return true
		}
	}
	return false
}

// The check finds what it is meant to.
func TestDirectWritesFinds(t *testing.T) {
	dir := t.TempDir()
	src := `package command

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func run(g *Globals) {
	fmt.Println("hello")
	fmt.Fprintf(g.IO.Out, "%d trials\n", 3)
	io.WriteString(g.IO.Err, "oops")
	os.Stdout.Write(nil)
	g.IO.Out.Write([]byte("x"))
	var b strings.Builder
	fmt.Fprintf(&b, "fine: a buffer")
}
`
	if err := os.WriteFile(filepath.Join(dir, "run.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run_test.go"), []byte("package command\n\nimport \"fmt\"\n\nfunc f() { fmt.Println() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := directWrites(t, dir, nil)
	want := []string{"run.go:11: fmt.Println", "run.go:12: fmt.Fprintf", "run.go:13: io.WriteString", "run.go:14: os.Stdout", "run.go:15: Write"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A file allowed to format still may not print to stdout directly.
	got = directWrites(t, dir, map[string]bool{"run.go": true})
	want = []string{"run.go:11: fmt.Println", "run.go:14: os.Stdout"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("allowed file, found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
