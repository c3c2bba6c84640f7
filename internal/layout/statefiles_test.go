package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// stateFileNames are the names of the local state backend's files. Only
// package state (and its subpackages) may know them: everything else
// reads and writes the state through the backend contract (state.Backend),
// so that a state kept elsewhere (a database, a cluster) is read the same.
var stateFileNames = []string{
	"state.json", "state.journal", "state.lock", "refreshed.json", ".jsonl",
}

// stateFileMentions returns, for the Go files under root (tests and the
// state packages aside), each string literal that names a state file, or
// a path joined with the "metrics" directory, or state.FileName or
// state.JournalName, as "file:line: what".
func stateFileMentions(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel == "state" || strings.HasPrefix(rel, "state/") || name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ImportSpec:
				return false
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				for _, name := range stateFileNames {
					if strings.Contains(s, name) {
						out = append(out, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+n.Value)
						break
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "state" && (n.Sel.Name == "FileName" || n.Sel.Name == "JournalName") {
					out = append(out, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": state."+n.Sel.Name)
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Join" {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || (x.Name != "filepath" && x.Name != "path") {
					return true
				}
				for _, a := range n.Args {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Value == `"metrics"` {
						out = append(out, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": a path joined with "+lit.Value)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestNoStateFileNamesOutsideState(t *testing.T) {
	if got := stateFileMentions(t, "../.."); len(got) > 0 {
		t.Errorf("outside package state, only the backend contract (state.Backend) may reach the state's files; these name them:\n  %s", strings.Join(got, "\n  "))
	}
}

// The check finds what it is meant to: a reader that builds a state
// file's path itself.
func TestStateFileMentionsFindsPaths(t *testing.T) {
	root := t.TempDir()
	src := `package ui

import "path/filepath"

func paths(dir, e, id string) []string {
	return []string{
		filepath.Join(dir, "state.json"),
		filepath.Join(dir, "metrics", e, id+".jsonl"),
		filepath.Join(dir, "refreshed.json"),
		filepath.Join(dir, state.JournalName),
	}
}
`
	if err := writeFile(filepath.Join(root, "internal", "ui", "data.go"), src); err != nil {
		t.Fatal(err)
	}
	// The state package itself and tests may name them.
	if err := writeFile(filepath.Join(root, "state", "manager.go"), "package state\n\nconst FileName = \"state.json\"\n"); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(root, "internal", "ui", "data_test.go"), "package ui\n\nconst f = \"state.json\"\n"); err != nil {
		t.Fatal(err)
	}
	got := stateFileMentions(t, root)
	want := []string{
		`internal/ui/data.go:7: "state.json"`,
		`internal/ui/data.go:8: ".jsonl"`,
		`internal/ui/data.go:8: a path joined with "metrics"`,
		`internal/ui/data.go:9: "refreshed.json"`,
		`internal/ui/data.go:10: state.JournalName`,
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
