package kubernetes

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/trialform/trialform/providers"
)

// Limits on a code dir shipped to trials (NNI's limits).
const (
	maxCodeFiles = 2000
	maxCodeBytes = 300 << 20
)

type codeFile struct {
	rel  string // slash-separated
	mode fs.FileMode
	data []byte
}

// ignoreFileFor names the ignore file a user should edit: the one the code
// dir has, else .trialformignore.
func ignoreFileFor(dir string) string {
	for _, n := range []string{".trialformignore", ".nniignore"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return filepath.Join(dir, n)
		}
	}
	return filepath.Join(dir, ".trialformignore")
}

// scanCode reads the code dir's files, skipping what .trialformignore and
// .nniignore (gitignore syntax) exclude plus .git, .trialform and
// __pycache__; more than 2000 files or 300 MB is refused.
func scanCode(dir string) ([]codeFile, error) {
	ig := loadIgnore(dir)
	var files []codeFile
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".trialform", "__pycache__":
				return fs.SkipDir
			}
			if ig.match(rel, true) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || ig.match(rel, false) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		if len(files)+1 > maxCodeFiles || total > maxCodeBytes {
			return providers.Permanent(fmt.Errorf("code dir %s has more than %d files or %d MB; list what trials do not need (data, checkpoints, virtualenvs) in %s (gitignore syntax)",
				dir, maxCodeFiles, maxCodeBytes>>20, ignoreFileFor(dir)))
		}
		files = append(files, codeFile{rel: rel, mode: info.Mode()})
		return nil
	})
	if err != nil {
		if providers.IsPermanent(err) {
			return nil, err
		}
		return nil, fmt.Errorf("read code dir: %w", err)
	}
	for i := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(files[i].rel)))
		if err != nil {
			return nil, fmt.Errorf("read code dir: %w", err)
		}
		files[i].data = b
	}
	return files, nil
}

// ignore is a gitignore-style pattern list: "name" matches in any
// directory, "/name" or "a/b" only from the code dir, "dir/" only
// directories, "**" any number of directories, "!pattern" re-includes; the
// last matching pattern wins.
type ignore []ignorePattern

type ignorePattern struct {
	pat      string
	negate   bool
	dirOnly  bool
	anchored bool
}

func loadIgnore(dir string) ignore {
	var ig ignore
	for _, n := range []string{".trialformignore", ".nniignore"} {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), " \r")
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			var p ignorePattern
			if strings.HasPrefix(line, "!") {
				p.negate, line = true, line[1:]
			}
			if strings.HasSuffix(line, "/") {
				p.dirOnly, line = true, strings.TrimSuffix(line, "/")
			}
			if strings.HasPrefix(line, "/") {
				p.anchored, line = true, line[1:]
			} else if strings.Contains(line, "/") && !strings.HasPrefix(line, "**/") {
				p.anchored = true
			}
			p.pat = strings.TrimPrefix(line, "**/")
			if p.pat != "" {
				ig = append(ig, p)
			}
		}
		f.Close()
	}
	return ig
}

func (ig ignore) match(rel string, isDir bool) bool {
	out := false
	for _, p := range ig {
		if p.dirOnly && !isDir {
			continue
		}
		if p.matches(rel) {
			out = !p.negate
		}
	}
	return out
}

func (p ignorePattern) matches(rel string) bool {
	if p.anchored {
		return globMatch(p.pat, rel)
	}
	// Unanchored: match the name, or any trailing run of path elements.
	parts := strings.Split(rel, "/")
	for i := range parts {
		if globMatch(p.pat, strings.Join(parts[i:], "/")) {
			return true
		}
	}
	return false
}

// globMatch is path.Match with "**" matching any number of elements.
func globMatch(pat, name string) bool {
	if !strings.Contains(pat, "**") {
		ok, _ := path.Match(pat, name)
		return ok
	}
	pp := strings.Split(pat, "/")
	np := strings.Split(name, "/")
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		if i == len(pp) {
			return j == len(np)
		}
		if pp[i] == "**" {
			for k := j; k <= len(np); k++ {
				if rec(i+1, k) {
					return true
				}
			}
			return false
		}
		if j == len(np) {
			return false
		}
		ok, _ := path.Match(pp[i], np[j])
		return ok && rec(i+1, j+1)
	}
	return rec(0, 0)
}
