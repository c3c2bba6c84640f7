package remote

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/trialform/trialform/providers"
)

// Limits on an uploaded code dir, as NNI has them.
const (
	maxCodeFiles = 2000
	maxCodeBytes = 300 << 20
)

// ignoreFiles are read from the code dir's root, in this order.
var ignoreFiles = []string{".trialformignore", ".nniignore"}

// alwaysIgnored never leave the user's machine.
var alwaysIgnored = map[string]bool{".trialform": true, ".git": true, "__pycache__": true}

// bundle is a set of files to upload, content-hashed.
type bundle struct {
	hash    string
	entries []entry
	fsys    fs.FS // read the entries from here
}

type entry struct {
	src  fs.FS  // read the file from here (nil: bundle.fsys)
	path string // its name in src
	rel  string // slash-separated name in the bundle
	mode fs.FileMode
	size int64
	link string // symlink target
}

type ignoreRule struct {
	pat      string
	neg      bool
	dirOnly  bool
	anchored bool
}

// readIgnore parses the gitignore-style rules of the ignore files in root.
func readIgnore(root string) ([]ignoreRule, error) {
	var rules []ignoreRule
	for _, name := range ignoreFiles {
		f, err := os.Open(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), " \t\r")
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			r := ignoreRule{}
			if strings.HasPrefix(line, "!") {
				r.neg, line = true, line[1:]
			}
			if strings.HasSuffix(line, "/") {
				r.dirOnly, line = true, strings.TrimRight(line, "/")
			}
			line = strings.TrimPrefix(line, "**/")
			line = strings.TrimSuffix(line, "/**")
			if strings.HasPrefix(line, "/") {
				r.anchored, line = true, strings.TrimLeft(line, "/")
			} else if strings.Contains(line, "/") {
				r.anchored = true
			}
			if line == "" {
				continue
			}
			r.pat = line
			rules = append(rules, r)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	return rules, nil
}

// ignored applies the rules to rel (last match wins).
func ignored(rules []ignoreRule, rel string, dir bool) bool {
	if alwaysIgnored[path.Base(rel)] {
		return true
	}
	out := false
	for _, r := range rules {
		if r.dirOnly && !dir {
			continue
		}
		target := path.Base(rel)
		if r.anchored {
			target = rel
		}
		if ok, _ := path.Match(r.pat, target); ok {
			out = !r.neg
		}
	}
	return out
}

// codeBundle walks a code dir with its ignore rules, enforces the limits
// and hashes the content.
func codeBundle(root string) (*bundle, error) {
	rules, err := readIgnore(root)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("code dir %s: %w", root, err))
	}
	b := &bundle{fsys: os.DirFS(root)}
	var total int64
	err = fs.WalkDir(b.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != "." {
				return nil // vanished while we walk
			}
			return err
		}
		if p == "." {
			return nil
		}
		if ignored(rules, p, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		e := entry{rel: p, mode: info.Mode()}
		switch {
		case d.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			e.link, err = os.Readlink(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				return nil
			}
		case info.Mode().IsRegular():
			e.size = info.Size()
			total += e.size
		default:
			return nil // sockets, fifos
		}
		b.entries = append(b.entries, e)
		if n := len(b.entries); n > maxCodeFiles {
			return providers.Permanent(fmt.Errorf("code dir %s has more than %d files and directories; trials upload it to every machine. List what trials do not need (data, outputs, virtualenvs) in %s (gitignore syntax, e.g. a line \"data/\"); .nniignore is read too", root, maxCodeFiles, filepath.Join(root, ".trialformignore")))
		}
		if total > maxCodeBytes {
			return providers.Permanent(fmt.Errorf("code dir %s holds more than %d MB; trials upload it to every machine. List large files trials do not need in %s (gitignore syntax, e.g. \"*.ckpt\" or \"data/\"); .nniignore is read too", root, maxCodeBytes>>20, filepath.Join(root, ".trialformignore")))
		}
		return nil
	})
	if err != nil {
		if providers.IsPermanent(err) {
			return nil, err
		}
		return nil, fmt.Errorf("read code dir %s: %w", root, err)
	}
	if err := b.computeHash(); err != nil {
		return nil, fmt.Errorf("read code dir %s: %w", root, err)
	}
	return b, nil
}

// fsBundle bundles every file of the file systems, each under its prefix
// ("" = the top).
func fsBundle(parts ...fsPart) (*bundle, error) {
	b := &bundle{}
	for _, part := range parts {
		if part.prefix != "" {
			b.entries = append(b.entries, entry{rel: part.prefix, mode: fs.ModeDir | 0o755})
		}
		err := fs.WalkDir(part.fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == "." {
				return err
			}
			if d.Name() == "__pycache__" {
				return fs.SkipDir
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			mode := fs.FileMode(0o644)
			if d.IsDir() {
				mode = fs.ModeDir | 0o755
			}
			b.entries = append(b.entries, entry{src: part.fsys, path: p, rel: path.Join(part.prefix, p), mode: mode, size: info.Size()})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return b, b.computeHash()
}

type fsPart struct {
	prefix string
	fsys   fs.FS
}

func (b *bundle) open(e entry) (fs.File, error) {
	if e.src != nil {
		return e.src.Open(e.path)
	}
	return b.fsys.Open(e.rel)
}

func (b *bundle) computeHash() error {
	h := sha256.New()
	kept := b.entries[:0]
	for _, e := range b.entries {
		var f fs.File
		if e.mode.IsRegular() {
			var err error
			f, err = b.open(e)
			if errors.Is(err, fs.ErrNotExist) && e.src == nil {
				continue // vanished since the walk: not part of the bundle
			}
			if err != nil {
				return err
			}
		}
		kept = append(kept, e)
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00%s\x00", e.rel, e.mode, e.size, e.link)
		if f != nil {
			_, err := io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	b.entries = kept
	b.hash = hex.EncodeToString(h.Sum(nil))[:24]
	return nil
}

// writeTar streams the bundle as a tar archive.
func (b *bundle) writeTar(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, e := range b.entries {
		hdr := &tar.Header{Name: e.rel, Mode: int64(e.mode.Perm()), Format: tar.FormatPAX}
		switch {
		case e.mode.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, e.rel+"/"
		case e.mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.link
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, e.size
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			f, err := b.open(e)
			if err != nil {
				return err
			}
			// Exactly the size hashed, even if the file changed since.
			n, err := io.Copy(tw, io.LimitReader(f, e.size))
			f.Close()
			if err != nil {
				return err
			}
			if n < e.size {
				if _, err := tw.Write(make([]byte, e.size-n)); err != nil {
					return err
				}
			}
		}
	}
	return tw.Close()
}

// upload puts the bundle at dest on m (once: an existing dest is the same
// content, by its hashed name). The archive is unpacked into a temporary
// dir that is renamed into place, so a half upload is never used.
func (r *Remote) upload(ctx context.Context, m *machine, b *bundle, dest string) error {
	r.schedMu.Lock()
	done := m.uploaded[dest]
	r.schedMu.Unlock()
	if done {
		return nil
	}
	mu := r.uploadLock(m.key + dest)
	mu.Lock()
	defer mu.Unlock()
	c, s, err := m.fs(ctx)
	if err != nil {
		return err
	}
	if _, err := s.Stat(dest); err == nil {
		r.markUploaded(m, dest)
		return nil
	} else if err = m.sftpErr(c, err); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := path.Dir(dest)
	script := "set -e; mkdir -p " + shq(parent) + "; t=$(mktemp -d " + shq(parent+"/.upload-XXXXXX") + "); " +
		"if tar -xf - -C \"$t\" 2>\"$t.err\"; then rm -f \"$t.err\"; else cat \"$t.err\" >&2; rm -rf \"$t\" \"$t.err\"; exit 1; fi; " +
		"chmod 755 \"$t\"; if [ -e " + shq(dest) + " ]; then rm -rf \"$t\"; else mv \"$t\" " + shq(dest) + "; fi"
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(b.writeTar(pw)) }()
	_, err = m.run(ctx, script, pr)
	pr.Close()
	if err != nil {
		return fmt.Errorf("upload to %s:%s: %w", m.key, dest, err)
	}
	r.markUploaded(m, dest)
	return nil
}

func (r *Remote) markUploaded(m *machine, dest string) {
	r.schedMu.Lock()
	m.uploaded[dest] = true
	r.schedMu.Unlock()
}

func (r *Remote) uploadLock(key string) *sync.Mutex {
	r.locksMu.Lock()
	defer r.locksMu.Unlock()
	mu, ok := r.locks[key]
	if !ok {
		mu = &sync.Mutex{}
		r.locks[key] = mu
	}
	return mu
}

// codeFor returns the bundle of a code dir, hashed once per experiment
// and code dir for the life of the provider.
func (r *Remote) codeFor(exp, dir string) (*bundle, error) {
	key := exp + "\x00" + dir
	mu := r.uploadLock("code\x00" + key)
	mu.Lock()
	defer mu.Unlock()
	r.locksMu.Lock()
	b, ok := r.code[key]
	r.locksMu.Unlock()
	if ok {
		return b, nil
	}
	b, err := codeBundle(dir)
	if err != nil {
		return nil, err
	}
	r.locksMu.Lock()
	r.code[key] = b
	r.locksMu.Unlock()
	return b, nil
}
