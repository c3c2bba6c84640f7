package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// maxShells bounds the persistent shells per machine, idle or busy: with
// the SFTP session and maxExec exec sessions that is OpenSSH's default
// MaxSessions (10) on the one connection. A command waits for a free shell
// rather than opening more sessions (which the server refuses) and paying
// another login.
const maxShells = 4

// errNoAnswer: a machine did not answer within trialform's own bound
// (a command, a shell's login, an SFTP operation of a caller without a
// deadline), as opposed to the caller's deadline (context.DeadlineExceeded).
// A shell that did not answer is closed, the connection is not (it may
// only be a slow login on a busy machine).
var errNoAnswer = errors.New("no answer")

// errTooMuchOutput: a command printed more than maxShellOutput. Its
// shell is closed, the connection is not.
var errTooMuchOutput = fmt.Errorf("a remote command printed more than %d MiB, far more than trialform's commands print; "+
	"the machine's /bin/sh or trialform's scripts in its work_dir may have been altered: check the machine", maxShellOutput>>20)

// shellTimeout bounds a command through a shell of a caller whose context
// has no deadline.
var shellTimeout = 2 * time.Minute

// shellStartTimeout bounds a new shell's login (the user's shell
// startup files run first).
var shellStartTimeout = 30 * time.Second

// shell is a long-lived /bin/sh on the machine that runs one command at a
// time from its stdin. Every exec session goes through the user's login
// shell, which may source a heavy ~/.bashrc (conda, pyenv: 100 ms and
// more); a persistent shell pays that once per connection, so launching a
// trial costs one round trip and the supervisor's start.
type shell struct {
	conn   *ssh.Client
	sess   *ssh.Session
	in     io.WriteCloser
	out    *bufio.Reader
	marker string
}

func newShell(ctx context.Context, c *ssh.Client) (*shell, error) {
	sess, err := c.NewSession()
	if err != nil {
		return nil, err
	}
	in, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	pr, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	sess.Stderr = io.Discard
	if err := sess.Start("exec /bin/sh"); err != nil {
		sess.Close()
		return nil, err
	}
	var rb [12]byte
	_, _ = rand.Read(rb[:])
	sh := &shell{conn: c, sess: sess, in: in, out: bufio.NewReaderSize(pr, 64<<10), marker: "\x1etrialform-" + hex.EncodeToString(rb[:])}
	// Skip whatever the login shell printed before sh took over.
	if _, _, err := sh.do(ctx, "true", shellStartTimeout); err != nil {
		sh.close()
		return nil, err
	}
	return sh, nil
}

func (s *shell) close() { s.sess.Close() }

// do runs cmd (stdin /dev/null, stderr merged into stdout) and returns its
// output and exit status. When timeout passes or ctx is done first, the
// shell is closed (the command's output would come later, out of turn)
// and the error is errNoAnswer or ctx's.
func (s *shell) do(ctx context.Context, cmd string, timeout time.Duration) ([]byte, int, error) {
	script := "(\n" + cmd + "\n) </dev/null 2>&1; printf '\\n%s %d\\n' " + shq(s.marker) + " $?\n"
	type result struct {
		out  []byte
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		if _, err := io.WriteString(s.in, script); err != nil {
			done <- result{err: err}
			return
		}
		var buf bytes.Buffer
		lineStart := true
		for {
			// A piece of a line at most the reader's buffer: a line
			// without end is not gathered whole.
			line, err := s.out.ReadSlice('\n')
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				done <- result{err: err}
				return
			}
			if lineStart {
				if rest, ok := bytes.CutPrefix(line, []byte(s.marker+" ")); ok && err == nil {
					code, _ := strconv.Atoi(strings.TrimSpace(string(rest)))
					out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
					done <- result{out: out, code: code}
					return
				}
			}
			if buf.Len()+len(line) > maxShellOutput {
				done <- result{err: errTooMuchOutput}
				return
			}
			buf.Write(line)
			lineStart = err == nil
		}
	}()
	// Bounded by timeout (errNoAnswer), or by ctx's deadline when that
	// comes first (its error then is ctx's).
	var expired <-chan time.Time
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > timeout {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case r := <-done:
		return r.out, r.code, r.err
	case <-ctx.Done():
		s.close()
		return nil, -1, ctx.Err()
	case <-expired:
		s.close()
		return nil, -1, fmt.Errorf("%w within %s", errNoAnswer, timeout)
	}
}

// sh runs a command line through one of m's persistent shells and returns
// its output; a non-zero exit is an error holding the output.
func (m *machine) sh(ctx context.Context, cmd string) ([]byte, error) {
	select {
	case m.shellSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.shellSem }()
	c, _, err := m.connected(ctx)
	if err != nil {
		return nil, err
	}
	var s *shell
	select {
	case s = <-m.shells:
	default:
	}
	if s != nil && s.conn != c {
		s.close()
		s = nil
	}
	if s == nil {
		if s, err = newShell(ctx, c); err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				m.drop(c) // as for a command (below)
				return nil, fmt.Errorf("machine %s: the start of a shell was cancelled: %w", m.key, ctx.Err())
			}
			if ctx.Err() == nil && !errors.Is(err, errNoAnswer) {
				m.drop(c)
				m.r.markDown(m, err)
			}
			return nil, fmt.Errorf("machine %s: start a shell: %w", m.key, err)
		}
	}
	out, code, err := s.do(ctx, cmd, shellTimeout)
	if err != nil {
		s.close()
		if errors.Is(ctx.Err(), context.Canceled) {
			// Cancelled (Ctrl-C, a controller stopping): the command
			// may be hanging on a machine that stopped answering, so
			// the connection goes too (as bound's), and the next call
			// dials again.
			m.drop(c)
			return nil, fmt.Errorf("machine %s: a remote command was cancelled: %w", m.key, ctx.Err())
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("machine %s: a remote command did not end before the caller's deadline: %w", m.key, ctx.Err())
		}
		if errors.Is(err, io.EOF) {
			m.drop(c)
			m.r.markDown(m, err)
			if sc, ok := ctx.Value(upScopeKey{}).(*upScope); ok {
				sc.hang(m)
			}
			return nil, fmt.Errorf("machine %s: connection lost: %w", m.key, err)
		}
		if errors.Is(err, errNoAnswer) {
			return nil, fmt.Errorf("machine %s: a remote command through its shell: %w; check that the machine answers (ssh -p %d %s@%s true)", m.key, err, m.cfg.Port, m.cfg.User, m.cfg.Host)
		}
		return nil, fmt.Errorf("machine %s: %w", m.key, err)
	}
	m.r.answered(ctx, m) // it answered
	select {
	case m.shells <- s:
	default:
		s.close()
	}
	if code != 0 {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return out, fmt.Errorf("machine %s: %s (exit status %d)", m.key, msg, code)
	}
	return out, nil
}

// maxShellOutput bounds what one command through a shell may print:
// trialform's commands print little (scan.sh a line per live trial), and
// a compromised machine must not fill this one's memory.
const maxShellOutput = 16 << 20
