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
//
// Every open is also safe against what a trial may leave in a file's
// place: it never blocks and opens regular files only (see OpenFile).
// This is the one way trialform opens a file that a trial, a user or
// another process could have replaced; internal/fsread adds size limits
// on top for the files a user hands it.
package fsx

import (
	"errors"
	"fmt"
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
//
// Opening never blocks and only a regular file is opened (a directory
// too, when flag has O_DIRECTORY): the path is opened with O_NONBLOCK, so
// a FIFO that a trial (or anyone) left in a file's place opens at once
// instead of waiting for a writer for ever, and anything that fstat does
// not call a regular file is closed and refused with a *NotRegularError.
// A regular file's descriptor is then made blocking again, as it was.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, flag|syscall.O_CLOEXEC|syscall.O_NONBLOCK, uint32(perm.Perm()))
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.ENXIO && flag&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		// A FIFO opened for writing with no reader.
		return nil, &NotRegularError{Path: path, Mode: fs.ModeNamedPipe}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	for {
		err = syscall.Fstat(fd, &st)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	kind := st.Mode & syscall.S_IFMT
	if kind != syscall.S_IFREG && !(kind == syscall.S_IFDIR && flag&syscall.O_DIRECTORY != 0) {
		syscall.Close(fd)
		return nil, &NotRegularError{Path: path, Mode: modeOf(st.Mode)}
	}
	if flag&syscall.O_NONBLOCK == 0 {
		// Blocking again, so that os.NewFile leaves the poller alone.
		if err := syscall.SetNonblock(fd, false); err != nil {
			syscall.Close(fd)
			return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
		}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// modeOf gives the fs.FileMode type bits of a stat mode.
func modeOf(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// NotRegularError says a path names a FIFO, a device, a socket or a
// directory, which trialform refuses to open as a file (a FIFO would block
// for ever, /dev/zero never ends).
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	kind := "not a regular file"
	switch {
	case e.Mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case e.Mode&fs.ModeCharDevice != 0:
		kind = "a character device"
	case e.Mode&fs.ModeDevice != 0:
		kind = "a device"
	case e.Mode&fs.ModeSocket != 0:
		kind = "a socket"
	case e.Mode.IsDir():
		kind = "a directory"
	case e.Mode&fs.ModeSymlink != 0:
		kind = "a symbolic link (not followed)"
	}
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, kind)
}

// IsNotRegular reports whether err says a path is not a regular file.
func IsNotRegular(err error) bool {
	var nr *NotRegularError
	return errors.As(err, &nr)
}

// Open opens path for reading (see OpenFile).
func Open(path string) (*os.File, error) { return OpenFile(path, os.O_RDONLY, 0) }

// OpenOwn opens for reading a file that trialform wrote into a directory
// something else can write too (a trial's output in its directory): a
// symbolic link put in its place is refused (NotRegularError), not
// followed to a file the trial could not read itself.
func OpenOwn(path string) (*os.File, error) {
	f, err := OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &NotRegularError{Path: path, Mode: fs.ModeSymlink}
	}
	return f, err
}

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
