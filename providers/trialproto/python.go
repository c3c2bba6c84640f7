package trialproto

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/trialform/trialform/internal/fsx"
)

// python holds the helpers trials import (stdlib only):
//   - trialform.py: get_params(), report(), report_intermediate(), printing
//     trialform's stdout metric lines;
//   - nni/: a stand-in for NNI's trial API, used when NNI is not installed
//     (it hands over to a real installed nni when there is one).
//
//go:embed all:python
var python embed.FS

// InstallPython writes the embedded Python helpers into libDir, rewriting
// only files whose content differs (atomically, so running trials never
// see a torn file).
func InstallPython(libDir string) error {
	return fs.WalkDir(python, "python", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return fs.SkipDir
		}
		rel, _ := filepath.Rel("python", filepath.FromSlash(p))
		dst := filepath.Join(libDir, rel)
		if d.IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return fmt.Errorf("install python helpers: %w", err)
			}
			return nil
		}
		want, err := python.ReadFile(p)
		if err != nil {
			return err
		}
		// fsx: a FIFO left in its place is refused (and replaced), never waited on.
		if have, err := fsx.ReadFile(dst); err == nil && bytes.Equal(have, want) {
			return nil
		}
		if err := fsx.WriteFileAtomic(dst, want, 0o644); err != nil {
			return fmt.Errorf("install python helpers: %w", err)
		}
		return nil
	})
}

// PythonFS returns the embedded Python helpers (trialform.py and nni/) as
// a file system, for platforms that copy them to other machines.
func PythonFS() fs.FS {
	sub, err := fs.Sub(python, "python")
	if err != nil {
		panic(err) // the embedded tree always has it
	}
	return sub
}

// PythonFiles returns the embedded Python helpers by slash-separated path
// relative to the lib dir ("trialform.py", "nni/__init__.py", ...), for
// platforms that ship them to trials another way (a ConfigMap).
func PythonFiles() map[string][]byte {
	out := map[string][]byte{}
	_ = fs.WalkDir(python, "python", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && d.Name() == "__pycache__" {
				return fs.SkipDir
			}
			return err
		}
		b, err := python.ReadFile(p)
		if err != nil {
			return err
		}
		out[p[len("python/"):]] = b
		return nil
	})
	return out
}
