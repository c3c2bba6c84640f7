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

// directWrites returns, for the non-test Go files in dir, each place that
// writes output itself, as "file:line: what". It looks at every function,
// method and function literal (package-level ones too), and finds:
//   - os.Stdout, os.Stderr, os.NewFile and syscall's Stdout, Stderr and
//     Write (outside main.go's Main, which hands the streams to the
//     commands as IO), the fmt.Print functions, the print builtins and
//     the log package's Print, Fatal and Panic functions;
//   - fmt.Fprint*, io.WriteString and io.Copy*, and the encoders and
//     writers that wrap a writer (json.NewEncoder, tabwriter.NewWriter,
//     bufio.NewWriter, io.MultiWriter), on anything but a local buffer (&b);
//   - Write, WriteString, WriteByte and WriteRune called on a function's
//     io.Writer parameter;
//   - IO.Out and IO.Err used other than as an argument of a call to
//     internal/views, to a function of this package (checked in turn) or to
//     one of passThrough, as a field of a composite literal passed on
//     (views.ApplyOptions{Out: ...}), as a child process's Stdout or
//     Stderr, or set aside and put back (saved := g.IO.Err ...
//     g.IO.Err = saved): g.IO.Out.Write, w := g.IO.Out and the like.
func directWrites(t *testing.T, dir string) []string {
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
			fnName := ""
			if fn, ok := decl.(*ast.FuncDecl); ok {
				fnName = fn.Name.Name
			}
			checkWrites(decl, name == "main.go" && fnName == "Main", at)
		}
	}
	sort.Strings(out)
	return out
}

// passThrough are the calls outside internal/views that may be handed the
// command's output: what they write is not formatted here.
var passThrough = map[string]string{
	".Writer": "a trial's own output (logs), masked on its way through",
}

func checkWrites(decl ast.Decl, isMain bool, at func(ast.Node, string)) {
	// parents of the node being looked at
	var stack []ast.Node
	// writerParams: the io.Writer parameters of the enclosing functions
	writerParams := map[string]bool{}
	// httpParams: the http.ResponseWriter parameters (an API's answer, not
	// output for people)
	httpParams := map[string]bool{}
	// setAside: variables holding IO.Out or IO.Err only to put them back
	setAside := map[string]bool{}
	ast.Inspect(decl, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		parent := ast.Node(nil)
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.FuncType:
			if n.Params != nil {
				for _, p := range n.Params.List {
					for _, id := range p.Names {
						switch typeName(p.Type) {
						case "io.Writer":
							writerParams[id.Name] = true
						case "http.ResponseWriter":
							httpParams[id.Name] = true
						}
					}
				}
			}
		case *ast.SelectorExpr:
			x, _ := n.X.(*ast.Ident)
			switch {
			case x != nil && x.Name == "os" && (n.Sel.Name == "Stdout" || n.Sel.Name == "Stderr" || n.Sel.Name == "NewFile"):
				if !isMain {
					at(n, "os."+n.Sel.Name)
				}
			case x != nil && x.Name == "syscall" && (n.Sel.Name == "Stdout" || n.Sel.Name == "Stderr" || n.Sel.Name == "Write"):
				at(n, "syscall."+n.Sel.Name)
			case isOutput(n) && !isMain:
				if !outputUseAllowed(n, parent, stack, setAside) {
					at(n, "IO."+n.Sel.Name+" used directly")
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
			fn := sel.Sel.Name
			switch {
			case pkg == "fmt" && strings.HasPrefix(fn, "Print"):
				at(n, "fmt."+fn)
			case pkg == "log" && (strings.HasPrefix(fn, "Print") || strings.HasPrefix(fn, "Fatal") || strings.HasPrefix(fn, "Panic")):
				at(n, "log."+fn)
			case (pkg == "fmt" && strings.HasPrefix(fn, "Fprint")) || (pkg == "io" && (fn == "WriteString" || strings.HasPrefix(fn, "Copy"))) ||
				(pkg == "json" && fn == "NewEncoder") || (pkg == "tabwriter" && fn == "NewWriter") || (pkg == "bufio" && fn == "NewWriter"):
				if len(n.Args) > 0 && !isLocalBuffer(n.Args[0]) && !isParam(n.Args[0], httpParams) {
					at(n, pkg+"."+fn)
				}
			case pkg == "io" && fn == "MultiWriter":
				at(n, "io.MultiWriter")
			case pkg != "" && writerParams[pkg] && (fn == "Write" || fn == "WriteString" || fn == "WriteByte" || fn == "WriteRune"):
				at(n, pkg+"."+fn)
			}
		}
		return true
	})
}

// outputUseAllowed: the use of IO.Out or IO.Err sel, whose parent is
// parent, hands the writer on without writing to it (see directWrites).
func outputUseAllowed(sel *ast.SelectorExpr, parent ast.Node, stack []ast.Node, setAside map[string]bool) bool {
	switch p := parent.(type) {
	case *ast.CallExpr:
		for _, a := range p.Args {
			if a == sel {
				return calleeAllowed(p.Fun)
			}
		}
	case *ast.KeyValueExpr:
		// a field of a composite literal that is itself an argument of an
		// allowed call
		for i := len(stack) - 2; i >= 1; i-- {
			if c, ok := stack[i].(*ast.CallExpr); ok {
				return calleeAllowed(c.Fun)
			}
			if _, ok := stack[i].(*ast.CompositeLit); !ok {
				if _, ok := stack[i].(*ast.KeyValueExpr); !ok {
					if _, ok := stack[i].(*ast.UnaryExpr); !ok {
						return false
					}
				}
			}
		}
	case *ast.AssignStmt:
		for i, l := range p.Lhs {
			if l == sel {
				return true // set, not read
			}
			if i < len(p.Rhs) && p.Rhs[i] == sel {
				if ls, ok := l.(*ast.SelectorExpr); ok && (ls.Sel.Name == "Stdout" || ls.Sel.Name == "Stderr") {
					return true // a child process's output
				}
				if id, ok := l.(*ast.Ident); ok && onlyPutBack(id.Name, stack[0]) {
					setAside[id.Name] = true
					return true
				}
			}
		}
	}
	return false
}

// onlyPutBack: every use of the variable name in decl is its binding or
// the value of an assignment to IO.Out or IO.Err.
func onlyPutBack(name string, decl ast.Node) bool {
	ok := true
	ast.Inspect(decl, func(n ast.Node) bool {
		as, isAssign := n.(*ast.AssignStmt)
		if isAssign {
			for i, r := range as.Rhs {
				if id, isID := r.(*ast.Ident); isID && id.Name == name {
					if i >= len(as.Lhs) {
						ok = false
						continue
					}
					if s, isSel := as.Lhs[i].(*ast.SelectorExpr); !isSel || !isOutput(s) {
						ok = false
					}
				}
			}
			for i, l := range as.Lhs {
				if id, isID := l.(*ast.Ident); isID && id.Name == name {
					if i >= len(as.Rhs) {
						ok = false
					} else if s, isSel := as.Rhs[i].(*ast.SelectorExpr); !isSel || !isOutput(s) {
						ok = false
					}
				}
			}
			return false
		}
		if id, isID := n.(*ast.Ident); isID && id.Name == name {
			ok = false
		}
		return true
	})
	return ok
}

// calleeAllowed: a function of internal/views, of this package, or one
// of passThrough.
func calleeAllowed(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.Ident:
		return true // this package's: its body is checked too
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			if x.Name == "views" {
				return true
			}
			if _, ok := passThrough[x.Name+"."+f.Sel.Name]; ok {
				return true
			}
			// a method of this package's (g.parse, c.g.openBackendWith)
			return x.Name == "g" || x.Name == "c"
		}
		_, ok := passThrough["."+f.Sel.Name]
		return ok
	}
	return false
}

// typeName is a qualified type's name ("io.Writer"), else "".
func typeName(e ast.Expr) string {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := s.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return x.Name + "." + s.Sel.Name
}

// isParam: e is one of params.
func isParam(e ast.Expr, params map[string]bool) bool {
	id, ok := e.(*ast.Ident)
	return ok && params[id.Name]
}

// isLocalBuffer: &b, a strings.Builder or bytes.Buffer being built.
func isLocalBuffer(e ast.Expr) bool {
	u, ok := e.(*ast.UnaryExpr)
	return ok && u.Op == token.AND
}

// isOutput: g.IO.Out or g.IO.Err (and io.Out, io.Err in Run).
func isOutput(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || (sel.Sel.Name != "Out" && sel.Sel.Name != "Err") {
		return false
	}
	switch x := sel.X.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "IO"
	case *ast.Ident:
		return x.Name == "io" || x.Name == "IO"
	}
	return false
}

// internal/command formats nothing itself: its output for people goes
// through internal/views (issue 28 item 1).
func TestCommandsWriteThroughViews(t *testing.T) {
	if got := directWrites(t, "."); len(got) > 0 {
		t.Errorf("internal/command writes output itself; call internal/views (a view for the command's output) instead:\n  %s", strings.Join(got, "\n  "))
	}
}

// The check finds what it is meant to, including the ways around it.
func TestDirectWritesFinds(t *testing.T) {
	dir := t.TempDir()
	src := `package command

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"text/tabwriter"
)

var hook = func() { fmt.Println("package-level") }

func run(g *Globals) {
	fmt.Println("hello")
	fmt.Fprintf(g.IO.Out, "%d trials\n", 3)
	io.WriteString(g.IO.Err, "oops")
	os.Stdout.Write(nil)
	g.IO.Out.Write([]byte("x"))
	var b strings.Builder
	fmt.Fprintf(&b, "fine: a buffer")
	views.Text(g.IO.Out, b.String())
	w := g.IO.Out
	w.Write(nil)
	json.NewEncoder(g.IO.Out).Encode(1)
	tw := tabwriter.NewWriter(g.IO.Err, 0, 8, 1, ' ', 0)
	log.Printf("x")
	io.Copy(g.IO.Out, nil)
	helper(g.IO.Out)
	saved := g.IO.Err
	g.IO.Err = &b
	g.IO.Err = saved
	_ = views.NewApply(views.ApplyOptions{Out: g.IO.Out})
	strings.NewReader("").WriteTo(g.IO.Out)
}

func helper(w io.Writer) {
	w.Write([]byte("through a parameter"))
}

func serve(w http.ResponseWriter) {
	json.NewEncoder(w).Encode("an API's answer, not output for people")
}
`
	if err := os.WriteFile(filepath.Join(dir, "run.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run_test.go"), []byte("package command\n\nimport \"fmt\"\n\nfunc f() { fmt.Println() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := directWrites(t, dir)
	want := []string{
		"run.go:13: fmt.Println",
		"run.go:16: fmt.Println",
		"run.go:17: IO.Out used directly",
		"run.go:17: fmt.Fprintf",
		"run.go:18: IO.Err used directly",
		"run.go:18: io.WriteString",
		"run.go:19: os.Stdout",
		"run.go:20: IO.Out used directly",
		"run.go:24: IO.Out used directly",
		"run.go:26: IO.Out used directly",
		"run.go:26: json.NewEncoder",
		"run.go:27: IO.Err used directly",
		"run.go:27: tabwriter.NewWriter",
		"run.go:28: log.Printf",
		"run.go:29: IO.Out used directly",
		"run.go:29: io.Copy",
		"run.go:35: IO.Out used directly",
		"run.go:39: w.Write",
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
