package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/trialform/trialform/internal/fsx"
)

// sftpTimeout bounds one SFTP operation (a file read, a directory
// listing, a piece of a copy) of a caller whose context has no deadline
// (the controller's loop, watch, apply -wait).
var sftpTimeout = 2 * time.Minute

// runTimeout bounds a command session (an upload) of a caller whose
// context has no deadline.
var runTimeout = 10 * time.Minute

// bound runs fn, the work on m's connection c that what names ("SFTP
// read of PATH"), within ctx, or within limit when ctx has no deadline.
// Neither pkg/sftp nor an SSH session takes a context, and a server can
// hang after the login (an sftp-server stuck on a stalled network file
// system, a machine that stops answering while TCP and keepalives stay
// up): when the time is up before fn returns, c is closed, which fails
// every call on it at once, and dropped from the pool, so the next call
// dials again (and a machine whose dial fails is backed off). The error
// names the machine, what hung and what to check, and unwraps to
// context.DeadlineExceeded when it was ctx's deadline, to errNoAnswer
// when it was limit (so a caller can tell "the machine hung" from "my
// deadline passed").
func (m *machine) bound(ctx context.Context, c *ssh.Client, what string, limit time.Duration, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		// The machine hung, not the caller's deadline passed: the
		// error does not unwrap to context.DeadlineExceeded.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, limit, errNoAnswer)
		defer cancel()
	}
	start := time.Now()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	err := fn()
	if stop() {
		if answered(err) {
			m.r.answered(ctx, m)
		}
		return err // done in time
	}
	// The watchdog closed c (or is closing it): fn's result may be good,
	// the connection is not.
	m.drop(c)
	if errors.Is(ctx.Err(), context.Canceled) {
		if err == nil {
			return nil
		}
		return fmt.Errorf("machine %s: %s was cancelled: %w", m.key, what, ctx.Err())
	}
	took := time.Since(start).Round(100 * time.Millisecond)
	herr := &unreachableError{fmt.Sprintf("machine %s: %s did not answer in %s (a hung sftp-server, a home or work_dir on a stalled network file system, "+
		"or a machine that stopped answering); the connection was closed and is dialled again on the next call; check that sftp -P %d %s@%s works from here "+
		"and that its work_dir can be listed", m.key, what, took, m.cfg.Port, m.cfg.User, m.cfg.Host), context.Cause(ctx)}
	m.r.markDown(m, herr)
	if sc, ok := ctx.Value(upScopeKey{}).(*upScope); ok {
		sc.hang(m)
	}
	if err == nil {
		return nil
	}
	return herr
}

// answered says whether err, what an operation on a machine's connection
// returned in time, is the machine's answer: nil, or a failure it
// reported (no such file, an SFTP status, a command's exit status), not
// a broken connection.
func answered(err error) bool {
	var se *sftp.StatusError
	var ee *ssh.ExitError
	var nr *fsx.NotRegularError
	return err == nil || errors.As(err, &se) || errors.As(err, &ee) || errors.As(err, &nr) || errors.Is(err, fs.ErrNotExist)
}

// rfs is m's pooled SFTP client as one call uses it: each operation
// through do is bounded by the call's context (bound).
type rfs struct {
	ctx context.Context
	m   *machine
	c   *ssh.Client
	s   *sftp.Client
}

// fs returns the SFTP client for a call, dialling when needed.
func (m *machine) fs(ctx context.Context) (*rfs, error) {
	c, s, err := m.connected(ctx)
	if err != nil {
		return nil, err
	}
	return &rfs{ctx: ctx, m: m, c: c, s: s}, nil
}

// do runs fn, the SFTP operation what, bounded by the call's context
// or sftpTimeout (bound).
func (f *rfs) do(what string, fn func(s *sftp.Client) error) error {
	return f.m.bound(f.ctx, f.c, what, sftpTimeout, func() error { return fn(f.s) })
}

// upScopeKey is the context key of a call's upScope.
type upScopeKey struct{}

// upScope is what one call (a Read, a listing) found of each machine it
// used: a machine is up again (markUp) when the operations the call
// needed there answered, not when one of them did. A machine whose
// sftp-server answers for one file and hangs on the next (spec.json
// read, the status file stuck on a stalled network file system) was
// marked up by the first at each call, which started its "unreachable
// since" again, and its trials never went LOST.
type upScope struct {
	mu       sync.Mutex
	answered map[*machine]bool
	hung     map[*machine]bool
}

// withUpScope returns ctx carrying a new upScope, and the function that
// ends it: it marks up each machine that answered and did not hang.
func (r *Remote) withUpScope(ctx context.Context) (context.Context, func()) {
	sc := &upScope{answered: map[*machine]bool{}, hung: map[*machine]bool{}}
	return context.WithValue(ctx, upScopeKey{}, sc), func() {
		sc.mu.Lock()
		var up []*machine
		for m := range sc.answered {
			if !sc.hung[m] {
				up = append(up, m)
			}
		}
		sc.mu.Unlock()
		for _, m := range up {
			r.markUp(m)
		}
	}
}

func (sc *upScope) hang(m *machine) {
	sc.mu.Lock()
	sc.hung[m] = true
	sc.mu.Unlock()
}

// answered records that an operation on m answered: m is up at once, or,
// within an upScope, when the scope ends with no operation on m hung.
func (r *Remote) answered(ctx context.Context, m *machine) {
	sc, ok := ctx.Value(upScopeKey{}).(*upScope)
	if !ok {
		r.markUp(m)
		return
	}
	sc.mu.Lock()
	sc.answered[m] = true
	sc.mu.Unlock()
}
