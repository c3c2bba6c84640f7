// Package codedir scans a trial's code dir the one way every platform
// ships it (remote, kubernetes, the cloud job platforms): what the ignore
// files exclude, what never leaves the machine, NNI's limits and a
// content digest.
package codedir

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/trialform/trialform/providers"
)

// Limits on a shipped code dir, as NNI has them.
const (
	MaxFiles = 2000
	MaxBytes = 300 << 20
)

// IgnoreFiles are read from the code dir's root in this order, both when
// present; the last matching line wins, so .trialformignore has the last
// word over .nniignore.
var IgnoreFiles = []string{".nniignore", ".trialformignore"}

// alwaysIgnored never leave the user's machine, wherever they are.
var alwaysIgnored = map[string]bool{".git": true, ".trialform": true, "__pycache__": true}

// File is one entry of a code dir: a directory, a regular file or a
// symlink.
type File struct {
	Rel  string // slash-separated, relative to the root
	Mode fs.FileMode
	Size int64  // regular files
	Link string // symlink target
}

// Dir is a scanned code dir, its entries in lexical walk order (a
// directory before what it holds).
type Dir struct {
	Root  string
	Files []File
}

// Matcher holds a code dir's ignore rules.
type Matcher struct{ m gitignore.Matcher }

// ReadIgnore parses the ignore files of root (gitignore syntax).
func ReadIgnore(root string) (*Matcher, error) {
	var ps []gitignore.Pattern
	for _, name := range IgnoreFiles {
		f, err := os.Open(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSuffix(sc.Text(), "\r")
			if strings.HasPrefix(line, "#") || strings.Trim(line, " ") == "" {
				continue
			}
			ps = append(ps, gitignore.ParsePattern(trailingStars(line), nil))
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(root, name), err)
		}
	}
	return &Matcher{gitignore.NewMatcher(ps)}, nil
}

// trailingStars rewrites "x/**" as "x/*": git's "x/**" matches what is
// inside x but not x itself (so "!x/keep" re-includes), go-git's matches
// x too. Under an excluded x/sub both leave x/sub/... out, as git does.
func trailingStars(line string) string {
	t := strings.TrimRight(line, " ")
	if strings.HasSuffix(t, "/**") {
		return strings.TrimSuffix(t, "*")
	}
	return line
}

// Ignored reports whether rel (slash-separated) is left out. As in git, a
// file under an excluded directory stays out whatever a later "!" says;
// Scan never descends into one.
func (m *Matcher) Ignored(rel string, dir bool) bool {
	parts := strings.Split(rel, "/")
	if alwaysIgnored[parts[len(parts)-1]] {
		return true
	}
	return m.m.Match(parts, dir)
}

// IgnoreFile names the ignore file a user should edit: the one root has
// (.trialformignore first), else .trialformignore.
func IgnoreFile(root string) string {
	for i := len(IgnoreFiles) - 1; i >= 0; i-- {
		p := filepath.Join(root, IgnoreFiles[i])
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join(root, ".trialformignore")
}

// Scan walks root with its ignore rules, leaving out .git, .trialform,
// __pycache__ and the directories in skip (absolute: a state dir or the
// shared storage mounted inside the code dir). Entries that vanish during
// the walk are left out. More than MaxFiles files or MaxBytes is refused
// with an error (providers.Permanent) naming the ignore file.
func Scan(root string, skip ...string) (*Dir, error) {
	m, err := ReadIgnore(root)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("code dir %s: %w", root, err))
	}
	d := &Dir{Root: root}
	var files int
	var total int64
	err = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != root {
				return nil // vanished while we walk
			}
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if m.Ignored(rel, de.IsDir()) || (de.IsDir() && skipped(p, skip)) {
			if de.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		f := File{Rel: rel, Mode: info.Mode()}
		switch {
		case de.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			if f.Link, err = os.Readlink(p); err != nil {
				return nil
			}
			files++
		case info.Mode().IsRegular():
			f.Size = info.Size()
			total += f.Size
			files++
		default:
			return nil // sockets, fifos, devices
		}
		if files > MaxFiles {
			return providers.Permanent(fmt.Errorf("code dir %s has more than %d files; every trial gets a copy of it. List what trials do not need (data, outputs, virtualenvs) in %s (gitignore syntax, e.g. a line \"data/\"); .nniignore is read too", root, MaxFiles, IgnoreFile(root)))
		}
		if total > MaxBytes {
			return providers.Permanent(fmt.Errorf("code dir %s holds more than %d MB; every trial gets a copy of it. List large files trials do not need in %s (gitignore syntax, e.g. \"*.ckpt\" or \"data/\"); .nniignore is read too", root, MaxBytes>>20, IgnoreFile(root)))
		}
		d.Files = append(d.Files, f)
		return nil
	})
	if err != nil {
		if providers.IsPermanent(err) {
			return nil, err
		}
		return nil, fmt.Errorf("read code dir %s: %w", root, err)
	}
	return d, nil
}

func skipped(p string, skip []string) bool {
	for _, s := range skip {
		if s != "" && sameDir(p, s) {
			return true
		}
	}
	return false
}

// sameDir reports whether two paths name the same directory.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// Digest hashes the entries' names, modes, link targets and contents: 24
// hex digits that change whenever what a trial gets changes.
func (d *Dir) Digest() (string, error) {
	h := sha256.New()
	for _, f := range d.Files {
		fmt.Fprintf(h, "%s\x00%o\x00%s\x00", f.Rel, f.Mode, f.Link)
		if !f.Mode.IsRegular() {
			continue
		}
		src, err := os.Open(d.Path(f))
		if err != nil {
			return "", fmt.Errorf("read code dir %s: %w", d.Root, err)
		}
		n, err := io.Copy(h, src)
		src.Close()
		if err != nil {
			return "", fmt.Errorf("read code dir %s: %w", d.Root, err)
		}
		fmt.Fprintf(h, "\x00%d\x00", n)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// Path is f's path on this machine.
func (d *Dir) Path(f File) string { return filepath.Join(d.Root, filepath.FromSlash(f.Rel)) }
