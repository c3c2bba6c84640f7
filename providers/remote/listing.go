package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// maxListing bounds what the directory listings of one call (an
// experiment's trials dir; the dirs of a trial's TensorBoard logs) may
// read from the machine: 16 MiB of SFTP answers, some 100,000 entries, as
// a remote command's output is bounded (maxShellOutput). pkg/sftp's
// ReadDir keeps every entry of a directory, and a trial (or a hostile
// host) can make millions.
var maxListing int64 = 16 << 20

// errListingCut: a listing read maxListing bytes and stopped.
var errListingCut = errors.New("listing cut")

// lister reads directories of m over an SFTP session of its own, whose
// answers it counts: past maxListing bytes the listing in flight stops
// and returns the entries read so far (readDir), and so does every later
// one. Its session is one of m's exec sessions (m.sem).
type lister struct {
	m      *machine
	c      *ssh.Client
	ctx    context.Context // the caller's
	cut    context.Context // done when maxListing is read
	cancel context.CancelCauseFunc
	sess   *ssh.Session
	s      *sftp.Client
	read   atomic.Int64
}

// countReader counts the bytes of the session's answers, and cuts the
// listing past maxListing.
type countReader struct {
	r io.Reader
	l *lister
}

func (c countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.l.read.Add(int64(n)) > maxListing {
		c.l.cancel(errListingCut)
	}
	return n, err
}

// lister opens a lister of m for a call (close it).
func (m *machine) lister(ctx context.Context) (*lister, error) {
	c, _, err := m.connected(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l := &lister{m: m, c: c, ctx: ctx}
	l.cut, l.cancel = context.WithCancelCause(context.Background())
	err = m.bound(ctx, c, "start of an SFTP session for a listing", sftpTimeout, func() error {
		sess, err := c.NewSession()
		if err != nil {
			return err
		}
		l.sess = sess
		if err := sess.RequestSubsystem("sftp"); err != nil {
			return err
		}
		w, err := sess.StdinPipe()
		if err != nil {
			return err
		}
		r, err := sess.StdoutPipe()
		if err != nil {
			return err
		}
		l.s, err = sftp.NewClientPipe(countReader{r, l}, w)
		return err
	})
	if err != nil {
		l.close()
		return nil, m.sftpErr(c, err)
	}
	return l, nil
}

func (l *lister) close() {
	if l.s != nil {
		l.s.Close()
	}
	if l.sess != nil {
		l.sess.Close()
	}
	l.cancel(nil)
	<-l.m.sem
}

// readDir lists dir. Past maxListing it returns what it read, with a
// *listingCutError.
func (l *lister) readDir(dir string) ([]os.FileInfo, error) {
	if l.cut.Err() != nil {
		return nil, &listingCutError{l.m.key, dir}
	}
	var ents []os.FileInfo
	err := l.m.bound(l.ctx, l.c, "SFTP listing of "+dir, sftpTimeout, func() (err error) {
		ents, err = l.s.ReadDirContext(l.cut, dir)
		if context.Cause(l.cut) == errListingCut {
			return nil // (what it read; said below)
		}
		return err
	})
	if err != nil {
		return nil, l.m.sftpErr(l.c, err)
	}
	if context.Cause(l.cut) == errListingCut {
		return ents, &listingCutError{l.m.key, dir}
	}
	return ents, nil
}

// listingCutError is a listing that read maxListing bytes and stopped.
type listingCutError struct{ machine, dir string }

func (e *listingCutError) Error() string {
	return fmt.Sprintf("machine %s: the listing of %s stopped after %s of entries, more than trialform reads from a machine in one call "+
		"(a trial or something else made far more files there than trialform or TensorBoard do); the rest was not read: check that directory",
		e.machine, e.dir, size(maxListing))
}
