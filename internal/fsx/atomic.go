package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// This file holds trialform's one way to replace a file: write a new file
// under a unique temporary name in the same directory, flush it, rename it
// over the old one and flush the directory. Readers see the old content or
// the new one, never a torn file; two writers never share a temporary
// file; a failed write leaves no temporary file behind. Every
// write-then-rename in the module goes through it (internal/layout's
// TestOneAtomicWriter holds it to that).

// Options loosens WriteFileAtomic's guarantees where a caller has a
// reason to; the zero value is the durable default.
type Options struct {
	// TempPrefix starts the temporary file's name (a random number
	// follows); the default is "." + the file's name + ".tmp-". A caller
	// that sweeps the temporary files a crash left behind names them.
	TempPrefix string
	// NoSync skips flushing the content: after a crash the new file may
	// be read back empty. Only for files that are rewritten before use.
	NoSync bool
	// NoSyncDir leaves flushing the directory to the caller (SyncDir), so
	// that several files of one directory share a single flush. Until then
	// the rename may be lost in a crash.
	NoSyncDir bool
}

// WriteFileAtomic replaces path with data, durably: the content and the
// new name survive a crash once it returns (see the comment above).
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return ReplaceFile(path, data, perm, Options{})
}

// ReplaceFile is WriteFileAtomic with options.
func ReplaceFile(path string, data []byte, perm fs.FileMode, o Options) error {
	p, err := NewPendingFile(path, perm, o)
	if err != nil {
		return err
	}
	defer p.Cleanup()
	if _, err := p.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return p.Commit()
}

// PendingFile is a file being written under a temporary name; Commit
// puts it in place, Cleanup (deferred) removes it if Commit was never
// reached or failed. Its *os.File is the temporary file: write to it,
// Stat it; do not close or rename it.
type PendingFile struct {
	*os.File
	path string
	o    Options
	done bool
}

// NewPendingFile starts replacing path: a new file, mode perm, under a
// unique temporary name in path's directory.
func NewPendingFile(path string, perm fs.FileMode, o Options) (*PendingFile, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	prefix := o.TempPrefix
	if prefix == "" {
		prefix = "." + base + ".tmp-"
	}
	f, err := CreateTemp(dir, prefix)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	// CreateTemp makes it 0600; fchmod is not narrowed by the umask.
	if err := f.Chmod(perm.Perm()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &PendingFile{File: f, path: path, o: o}, nil
}

// Commit flushes the temporary file (unless NoSync), closes it, renames
// it over the path and flushes the directory (unless NoSyncDir). On
// failure the temporary file is removed and the old file, if any, is
// left as it was (or, when only the directory flush failed, replaced but
// maybe not durably).
func (p *PendingFile) Commit() (err error) {
	if p.done {
		return fmt.Errorf("write %s: already committed", p.path)
	}
	p.done = true
	tmp := p.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if !p.o.NoSync {
		if err := p.Sync(); err != nil {
			p.File.Close()
			return fmt.Errorf("write %s: sync: %w", p.path, err)
		}
	}
	if err := p.File.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if err := os.Rename(tmp, p.path); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if !p.o.NoSyncDir {
		if err := SyncDir(filepath.Dir(p.path)); err != nil {
			return fmt.Errorf("write %s: %w", p.path, err)
		}
	}
	return nil
}

// Cleanup closes and removes the temporary file unless Commit was
// called; it is safe to defer right after NewPendingFile.
func (p *PendingFile) Cleanup() {
	if p.done {
		return
	}
	p.done = true
	p.File.Close()
	os.Remove(p.Name())
}

// SyncDir flushes a directory's entries (the names created, renamed or
// removed in it) to disk. A file system that cannot flush a directory
// (EINVAL, ENOTSUP) is taken as having nothing to flush.
func SyncDir(dir string) error {
	d, err := OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
