package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// renamesAllowed are the renames outside internal/fsx that are not a
// write-then-rename (they move something that already exists, and write
// no content), keyed by file and function, with the reason. Every file
// written under a temporary name and renamed into place goes through
// internal/fsx (WriteFileAtomic, ReplaceFile, PendingFile): a unique
// temporary name, file and directory flushed, the temporary file removed
// on failure.
var renamesAllowed = map[string]string{
	"state/journal.go resetJournal":      "moves the journal of another lineage aside",
	"state/manager.go backup":            "renames a hard link of state.json over the backup (no content written)",
	"state/manager.go keepForeignBackup": "moves the backup of another lineage aside",
	"state/local.go keepAside":           "moves a journal with a damaged record aside (state push -force)",
	"state/metrics.go MoveMetrics":       "renames an experiment's metrics directory (state mv)",
	"providers/local/start.go prepare":   "archives the previous attempt's metrics file",
	"providers/cloudjob/record.go shipCode": "puts a complete copy of a code directory in place (a directory, which " +
		"fsx does not write)",
	"bench/watchlat/main.go main": "plays an editor that saves by renaming, to time watch",
}

// renameCalls returns, for the Go files under root (tests, testdata and
// internal/fsx aside), each call of a rename (os.Rename, and syscall's
// or x/sys/unix's Rename and Renameat*) as "file function".
func renameCalls(t *testing.T, root string) []string {
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
			if rel == "internal/fsx" || name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && rel != ".") {
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
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				name := sel.Sel.Name
				if (x.Name == "os" && name == "Rename") ||
					((x.Name == "syscall" || x.Name == "unix") && (name == "Rename" || strings.HasPrefix(name, "Renameat"))) {
					out = append(out, rel+" "+fn.Name.Name+" (line "+strconv.Itoa(fset.Position(call.Pos()).Line)+")")
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestOneAtomicWriter(t *testing.T) {
	var bad []string
	used := map[string]bool{}
	for _, c := range renameCalls(t, "../..") {
		key, _, _ := strings.Cut(c, " (")
		if _, ok := renamesAllowed[key]; ok {
			used[key] = true
			continue
		}
		bad = append(bad, c)
	}
	if len(bad) > 0 {
		t.Errorf("these rename files themselves; a file written and renamed into place goes through "+
			"internal/fsx (WriteFileAtomic, ReplaceFile or PendingFile), and a rename that moves something "+
			"aside is listed in renamesAllowed with its reason:\n  %s", strings.Join(bad, "\n  "))
	}
	for key := range renamesAllowed {
		if !used[key] {
			t.Errorf("renamesAllowed lists %q, which renames nothing any more: remove it", key)
		}
	}
}

// The check finds what it is meant to: a write under a fixed temporary
// name renamed into place, in a function or a closure, by os or unix.
func TestRenameCallsFindsWriteThenRename(t *testing.T) {
	root := t.TempDir()
	src := `package plan

import (
	"os"

	"golang.org/x/sys/unix"
)

func save(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func later(path string) func() error {
	return func() error { return unix.Renameat(0, path+".tmp", 0, path) }
}
`
	if err := writeFile(filepath.Join(root, "plan", "save.go"), src); err != nil {
		t.Fatal(err)
	}
	// fsx itself and tests may rename.
	if err := writeFile(filepath.Join(root, "internal", "fsx", "atomic.go"), "package fsx\n\nimport \"os\"\n\nfunc f() { os.Rename(\"a\", \"b\") }\n"); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(root, "plan", "save_test.go"), "package plan\n\nimport \"os\"\n\nfunc g() { os.Rename(\"a\", \"b\") }\n"); err != nil {
		t.Fatal(err)
	}
	got := renameCalls(t, root)
	want := []string{"plan/save.go later (line 18)", "plan/save.go save (line 14)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
