// Package fsread reads the files a user hands trialform (configuration,
// variable files, NNI search spaces, state, saved plans) without ever
// blocking or exhausting memory: only regular files are read, and only up to
// a size limit. It does nothing else.
package fsread

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/trialform/trialform/internal/fsx"
)

// Size limits for what trialform reads from the user.
const (
	// MaxConfig bounds an HCL file, a -var-file and an nni_file.
	MaxConfig = 8 << 20
	// MaxState bounds state.json, its backup and a saved plan file.
	MaxState = 512 << 20
)

// TooLargeError says a file is over its limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s, the most trialform reads from such a file", e.Path, human(e.Limit))
}

func human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// NotRegularError says a path names a FIFO, a device, a socket or a
// directory, which trialform refuses to read (a FIFO would block for ever,
// /dev/zero never ends).
type NotRegularError = fsx.NotRegularError

// Open opens path for reading if it is a regular file (following
// symlinks), with fsx.Open: opening never blocks, a FIFO is refused. A
// missing file gives an error satisfying errors.Is(err, fs.ErrNotExist).
func Open(path string) (*os.File, error) { return fsx.Open(path) }

// ReadFile reads a whole regular file of at most limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads r to its end, failing with a *TooLargeError past limit
// bytes (path names it in the error).
func ReadAll(r io.Reader, path string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return b, nil
}

// IsRefused reports whether err is a refusal by this package (too large, not
// a regular file) rather than an I/O error.
func IsRefused(err error) bool {
	var tl *TooLargeError
	var nr *NotRegularError
	return errors.As(err, &tl) || errors.As(err, &nr)
}
