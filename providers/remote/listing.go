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
// answers it counts: past maxListing bytes in one call the listing in
// flight stops and returns the entries read so far (readDir), and so does
// every later one of that call. The session is one of m's exec sessions
// (m.sem), kept open between calls (m.lst) so that a refresh pays no new
// session and sftp-server start; a call that was cut or failed closes it.
// One call at a time per machine (m.listMu, held from lister to close).
type lister struct {
	m      *machine
	c      *ssh.Client
	ctx    context.Context // the current call's
	cut    context.Context // done when maxListing is read in a call
	cancel context.CancelCauseFunc
	sess   *ssh.Session
	s      *sftp.Client
	read   atomic.Int64
	failed bool // an operation of this call failed: close the session
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

// lister returns m's lister for a call (close it), opening its session
// when there is none on the current connection.
func (m *machine) lister(ctx context.Context) (*lister, error) {
	m.listMu.Lock()
	c, _, err := m.connected(ctx)
	if err != nil {
		m.listMu.Unlock()
		return nil, err
	}
	if l := m.lst; l != nil {
		if l.c == c && l.cut.Err() == nil {
			l.ctx = ctx
			l.read.Store(0)
			return l, nil
		}
		l.shut() // of a dropped connection
	}
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		m.listMu.Unlock()
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
		l.shut()
		m.listMu.Unlock()
		return nil, m.sftpErr(c, err)
	}
	m.lst = l
	return l, nil
}

// close ends a call: the session stays for the next one unless this call
// was cut (answers may still be in flight) or an operation failed.
func (l *lister) close() {
	if l.failed || l.cut.Err() != nil {
		l.shut()
	}
	l.m.listMu.Unlock()
}

// shut closes the session and gives back its exec slot (m.listMu held).
func (l *lister) shut() {
	if l.s != nil {
		l.s.Close()
	}
	if l.sess != nil {
		l.sess.Close()
	}
	l.cancel(nil)
	<-l.m.sem
	if l.m.lst == l {
		l.m.lst = nil
	}
}

// closeLister closes m's kept listing session (Remote.Close).
func (m *machine) closeLister() {
	m.listMu.Lock()
	defer m.listMu.Unlock()
	if m.lst != nil {
		m.lst.shut()
	}
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
		if !errors.Is(err, os.ErrNotExist) {
			l.failed = true
		}
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
