package remote

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"

	"github.com/pkg/sftp"
	"github.com/trialform/trialform/providers/codedir"
)

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

// codeBundle is a code dir as every platform ships it (providers/codedir:
// ignore files, limits), content-hashed.
func codeBundle(root string) (*bundle, error) {
	code, err := codedir.Scan(root)
	if err != nil {
		return nil, err
	}
	b := &bundle{fsys: os.DirFS(root)}
	for _, f := range code.Files {
		b.entries = append(b.entries, entry{rel: f.Rel, mode: f.Mode, size: f.Size, link: f.Link})
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
	s, err := m.fs(ctx)
	if err != nil {
		return err
	}
	err = s.do("SFTP stat of "+dest, func(s *sftp.Client) error {
		_, err := s.Stat(dest)
		return err
	})
	if err == nil {
		r.markUploaded(m, dest)
		return nil
	} else if err = m.sftpErr(s.c, err); !errors.Is(err, fs.ErrNotExist) {
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
