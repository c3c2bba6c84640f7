// Package fsx opens and reads regular files without registering them with
// Go's network poller. os.OpenFile tries every descriptor it opens with
// the poller: four fcntl calls and an epoll_ctl that fails for a regular
// file (or a /proc file), five system calls for nothing. A trial's launch
// opens about thirty files between the CLI and the supervisor host (perf
// and strace on the 2-core VM: a tenth of their system calls), so the hot
// paths of the local platform and of the state use these instead.
//
// The files are blocking descriptors wrapped by os.NewFile: Read, Write,
// Seek, Stat, Sync and Close work as usual; deadlines do not (nothing here
// needs them).
package fsx

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// OpenFile is os.OpenFile for a regular file (see the package comment).
// The descriptor is close-on-exec.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Open opens path for reading (see OpenFile).
func Open(path string) (*os.File, error) { return OpenFile(path, os.O_RDONLY, 0) }

// ReadFile is os.ReadFile over Open.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < 1<<30 {
		size = int(fi.Size()) + 1 // one more byte to see EOF in one read
	}
	b := make([]byte, 0, size)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// WriteFile is os.WriteFile over OpenFile.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// CreateTemp is os.CreateTemp over OpenFile: a new file in dir named
// prefix followed by a random number, mode 0600.
func CreateTemp(dir, prefix string) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		return f, err
	}
}
