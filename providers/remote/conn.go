package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/trialform/trialform/providers"
)

// maxExec bounds the concurrent exec sessions on one connection (OpenSSH's
// MaxSessions defaults to 10; the SFTP session takes one, the persistent
// shells maxShells).
const maxExec = 5

// dialTimeout bounds a dial: the TCP connection and the SSH handshake.
const dialTimeout = 10 * time.Second

// machine is one configured host with its pooled connection.
type machine struct {
	cfg Machine
	r   *Remote
	key string // "host:port", the handle's "machine"
	sem chan struct{}
	// shells are idle persistent shells (see shell); shellSem counts the
	// live ones, idle or busy (maxShells at most).
	shells   chan *shell
	shellSem chan struct{}
	mu       sync.Mutex
	conn     *ssh.Client
	sftp     *sftp.Client
	probing  bool // a background dial runs (probe)
	// dialSince is when the dial that connected runs began (UnixNano; 0:
	// none runs), for eachMachine, which cannot take mu meanwhile.
	dialSince atomic.Int64
	home      string // the login's home directory
	work      string // absolute work dir on the machine
	ncpu      int

	// scheduling (guarded by r.schedMu)
	busy     map[string]slot // "EXP/TRIAL" -> live or reserved trial
	scanned  time.Time
	uploaded map[string]bool // code/lib hashes present on the machine

	// listMu serializes the directory listings; lst is the kept
	// session they use (listing.go).
	listMu sync.Mutex
	lst    *lister
}

// connected returns the pooled connection, dialling it (again) when there
// is none or the last one dropped. A machine whose dial failed in this
// process is not dialled again before its back-off ends (Config.Redial):
// meanwhile what the failed dial found is returned at once, and when the
// back-off ends one dial runs in the background (probe), so that no
// caller waits for a machine that stays silent (up to 10 s a dial).
func (m *machine) connected(ctx context.Context) (*ssh.Client, *sftp.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn != nil {
		return m.conn, m.sftp, nil
	}
	if d, ok := m.r.downSince(m); ok && (d.dials > 0 || time.Since(d.lastTry) < time.Second) {
		if d.dials > 0 && !m.probing && !m.r.now().Before(d.retryAt) {
			m.probing = true
			go m.probe()
		}
		return nil, nil, d.error(m)
	}
	m.dialSince.Store(time.Now().UnixNano())
	c, s, err := m.dial(ctx)
	m.dialSince.Store(0)
	if err != nil {
		m.dialFailed(err)
		return nil, nil, err
	}
	// Not up yet (markUp): a machine whose dial works but whose next
	// operation hangs again stays down since its first failure.
	m.conn, m.sftp = c, s
	return c, s, nil
}

// error is what a failed dial of m found, said again.
func (d downInfo) error(m *machine) error {
	if d.Refused {
		return refused(errors.New(d.Err))
	}
	if strings.HasPrefix(d.Err, "machine "+m.key+" ") {
		return errors.New(d.Err) // what dial said, which names the machine
	}
	return fmt.Errorf("machine %s unreachable: %s", m.key, d.Err)
}

// dialFailed records a failed dial (caller holds m.mu): the machine is
// down, and backed off when it is one the other machines go on without.
func (m *machine) dialFailed(err error) {
	// A refused machine is as good as unreachable for its trials:
	// they turn LOST after lost_grace, saying why.
	if !providers.IsPermanent(err) || isRefused(err) {
		m.r.markDown(m, err)
		m.r.backOff(m)
	}
	if isRefused(err) {
		m.r.warn(err.Error() + "; no trial starts there, and its trials turn LOST after lost_grace " + m.r.cfg.LostGrace.String())
	}
}

// probe dials a backed-off machine once, in the background (m.probing),
// and pools the connection when it answers.
func (m *machine) probe() {
	ctx, cancel := context.WithTimeout(m.r.bg, dialTimeout)
	defer cancel()
	// dial sets home and work the first time: only while nobody else
	// can use the machine (no connection, probing).
	c, s, err := m.dial(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.probing = false
	switch {
	case err != nil:
		m.dialFailed(err)
	case m.r.bg.Err() != nil || m.conn != nil: // closed meanwhile
		s.Close()
		c.Close()
	default:
		m.conn, m.sftp = c, s // up once an operation answers (markUp)
	}
}

// refusedError is a machine that answers but that trialform may not or
// cannot log in to (its host key is unknown or changed, the login is
// refused, its key file is unusable): permanent for the machine, not for
// the platform, whose other machines are used (Validate warns of it).
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

func refused(err error) error { return providers.Permanent(&refusedError{err}) }

func isRefused(err error) bool {
	var re *refusedError
	return errors.As(err, &re)
}

// drop forgets a connection that failed, so the next call re-dials.
func (m *machine) drop(c *ssh.Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == c && c != nil {
		m.closeShells()
		m.sftp.Close()
		m.conn.Close()
		m.conn, m.sftp = nil, nil
	}
}

// closeShells ends the idle persistent shells.
func (m *machine) closeShells() {
	for {
		select {
		case s := <-m.shells:
			s.close()
		default:
			return
		}
	}
}

func (m *machine) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closeShells()
	if m.conn != nil {
		m.sftp.Close()
		m.conn.Close()
		m.conn, m.sftp = nil, nil
	}
}

func (m *machine) dial(ctx context.Context) (*ssh.Client, *sftp.Client, error) {
	cfg, err := m.clientConfig()
	if err != nil {
		return nil, nil, err
	}
	timeout := dialTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	cfg.Timeout = timeout
	d := net.Dialer{Timeout: timeout, KeepAlive: 15 * time.Second}
	raw, err := d.DialContext(ctx, "tcp", m.key)
	if err != nil {
		return nil, nil, m.explainDial(err, timeout)
	}
	tcp := &greeting{Conn: raw}
	// The deadline holds until SFTP answered too: a login whose SFTP
	// subsystem hangs must not hold the machine (m.mu) for ever.
	deadline := time.Now().Add(timeout)
	_ = tcp.SetDeadline(deadline)
	// A cancelled dial (Close) does not wait for the handshake's deadline
	// (ctx's deadline is the connection's: it says what timed out).
	defer context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			raw.Close()
		}
	})()
	sc, chans, reqs, err := ssh.NewClientConn(tcp, m.key, cfg)
	if err != nil {
		tcp.Close()
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, nil, &unreachableError{fmt.Sprintf("machine %s: the dial was cancelled during the SSH handshake", m.key), ctx.Err()}
		}
		return nil, nil, m.explain(err, tcp.first(), timeout)
	}
	c := ssh.NewClient(sc, chans, reqs)
	go keepalive(c)
	hung := func(err error) error {
		if !time.Now().Before(deadline) {
			return &unreachableError{fmt.Sprintf("machine %s unreachable: the login worked, but its SFTP subsystem did not answer in %s (a hung sftp-server, "+
				"or a home directory on a stalled network file system); check that sftp -P %d %s@%s works from here",
				m.key, timeout.Round(time.Second), m.cfg.Port, m.cfg.User, m.cfg.Host), err}
		}
		return nil
	}
	s, err := sftp.NewClient(c, sftp.UseConcurrentReads(true), sftp.UseConcurrentWrites(true))
	if err != nil {
		c.Close()
		if h := hung(err); h != nil {
			return nil, nil, h
		}
		return nil, nil, fmt.Errorf("machine %s: start SFTP (the server needs an sftp subsystem): %w", m.key, err)
	}
	if m.home == "" {
		home, err := s.Getwd()
		if err != nil {
			c.Close()
			if h := hung(err); h != nil {
				return nil, nil, h
			}
			return nil, nil, fmt.Errorf("machine %s: find the home directory: %w", m.key, err)
		}
		m.home = home
		wd := m.cfg.WorkDir
		if wd == "" {
			wd = m.r.cfg.WorkDir
		}
		m.work = expandHome(wd, home)
	}
	_ = tcp.SetDeadline(time.Time{})
	return c, s, nil
}

// keepalive closes the connection when the server stops answering, so a
// dead host is noticed and the connection re-dialled.
func keepalive(c *ssh.Client) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for range t.C {
		done := make(chan error, 1)
		go func() {
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				c.Close()
				return
			}
		case <-time.After(15 * time.Second):
			c.Close()
			return
		}
	}
}

// expandHome makes a work dir absolute: "~" and "~/x" are under home, a
// relative path is relative to home.
func expandHome(p, home string) string {
	switch {
	case p == "~":
		return home
	case strings.HasPrefix(p, "~/"):
		return path.Join(home, p[2:])
	case path.IsAbs(p):
		return path.Clean(p)
	default:
		return path.Join(home, p)
	}
}

// clientConfig builds the SSH client configuration: host keys verified
// against known_hosts (no silent trust) and the configured authentication.
func (m *machine) clientConfig() (*ssh.ClientConfig, error) {
	kh := m.r.cfg.KnownHosts
	if _, err := os.Stat(kh); err != nil {
		return nil, providers.Permanent(fmt.Errorf("known_hosts file %s: %w; create it with: ssh-keyscan -p %d %s >> %s (after checking the key's fingerprint)", kh, err, m.cfg.Port, m.cfg.Host, kh))
	}
	cb, err := knownhosts.New(kh)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("read known_hosts %s: %w", kh, err))
	}
	var auth []ssh.AuthMethod
	if m.cfg.KeyFile != "" {
		b, err := os.ReadFile(m.cfg.KeyFile)
		if err != nil {
			return nil, refused(fmt.Errorf("machine %s: ssh_key_file: %w", m.key, err))
		}
		signer, err := ssh.ParsePrivateKey(b)
		var pp *ssh.PassphraseMissingError
		if errors.As(err, &pp) {
			return nil, refused(fmt.Errorf("machine %s: ssh_key_file %s has a passphrase; load it into the SSH agent (ssh-add %s) and leave ssh_key_file out", m.key, m.cfg.KeyFile, m.cfg.KeyFile))
		}
		if err != nil {
			return nil, refused(fmt.Errorf("machine %s: ssh_key_file %s: %w", m.key, m.cfg.KeyFile, err))
		}
		auth = append(auth, ssh.PublicKeys(signer))
	}
	if m.cfg.Password != "" {
		pw := m.cfg.Password
		auth = append(auth, ssh.Password(pw), ssh.KeyboardInteractive(func(_, _ string, qs []string, _ []bool) ([]string, error) {
			out := make([]string, len(qs))
			for i := range out {
				out[i] = pw
			}
			return out, nil
		}))
	}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" && m.cfg.KeyFile == "" && m.cfg.Password == "" {
		if ac, err := net.Dial("unix", sock); err == nil {
			auth = append(auth, ssh.PublicKeysCallback(agent.NewClient(ac).Signers))
		}
	}
	if len(auth) == 0 {
		return nil, refused(fmt.Errorf("machine %s: no way to log in: set ssh_key_file or password, or run an SSH agent (SSH_AUTH_SOCK)", m.key))
	}
	return &ssh.ClientConfig{
		User: m.cfg.User,
		Auth: auth,
		HostKeyCallback: func(host string, remote net.Addr, key ssh.PublicKey) error {
			err := cb(host, remote, key)
			if err != nil {
				return &hostKeyError{err: err, fingerprint: ssh.FingerprintSHA256(key)}
			}
			return nil
		},
		HostKeyAlgorithms: hostKeyAlgorithms(cb, m.key),
	}, nil
}

// hostKeyAlgorithms asks the server for the key types known_hosts holds
// for addr, so a host with several keys offers one we can check.
func hostKeyAlgorithms(cb ssh.HostKeyCallback, addr string) []string {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if err := cb(addr, tcp, probeKey{}); !errors.As(err, &ke) {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, k := range ke.Want {
		t := k.Key.Type()
		algs := []string{t}
		if t == ssh.KeyAlgoRSA {
			algs = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		for _, a := range algs {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// probeKey is a key no host has, to make knownhosts list the known ones.
type probeKey struct{}

func (probeKey) Type() string                        { return "trialform-probe" }
func (probeKey) Marshal() []byte                     { return []byte("trialform-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe") }

var _ ssh.PublicKey = probeKey{}

// hostKeyError carries the fingerprint of the key a server presented.
type hostKeyError struct {
	err         error
	fingerprint string
}

func (e *hostKeyError) Error() string { return e.err.Error() }
func (e *hostKeyError) Unwrap() error { return e.err }

// greeting is the TCP connection of a dial, keeping the first bytes the
// server sent, so that a failed handshake can say what answered.
type greeting struct {
	net.Conn
	mu  sync.Mutex
	got []byte
}

func (g *greeting) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	g.mu.Lock()
	if k := 64 - len(g.got); k > 0 {
		g.got = append(g.got, p[:min(n, k)]...)
	}
	g.mu.Unlock()
	return n, err
}

func (g *greeting) first() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]byte(nil), g.got...)
}

// unreachableError is a machine that could not be reached or did not
// speak SSH: the message says what happened in plain words and what to
// check; the network error stays underneath (Unwrap).
type unreachableError struct {
	msg string
	err error
}

func (e *unreachableError) Error() string { return e.msg }
func (e *unreachableError) Unwrap() error { return e.err }

// explainDial says why the TCP connection to the machine failed.
func (m *machine) explainDial(err error, timeout time.Duration) error {
	port := strconv.Itoa(m.cfg.Port)
	var dns *net.DNSError
	var msg string
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		msg = fmt.Sprintf("machine %s unreachable: the host name %s does not resolve (no such host in DNS); check the machine's host", m.key, m.cfg.Host)
	case errors.As(err, &dns):
		msg = fmt.Sprintf("machine %s unreachable: the host name %s could not be looked up (%s); check the machine's host and this machine's DNS", m.key, m.cfg.Host, dns.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		msg = fmt.Sprintf("machine %s unreachable: connection refused (nothing listens on port %s there); check that sshd runs on it and that port %s is right", m.key, port, port)
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		msg = fmt.Sprintf("machine %s unreachable: no route to the host (it is down or its network is); check the machine's host", m.key)
	case isTimeout(err):
		msg = fmt.Sprintf("machine %s unreachable: no answer to the connection in %s (the host is down, or a firewall drops port %s)", m.key, timeout.Round(time.Second), port)
	default:
		return &unreachableError{fmt.Sprintf("machine %s unreachable: %v", m.key, err), err}
	}
	return &unreachableError{msg, err}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// explain turns handshake errors into what the user should do; got is
// what the server sent before the handshake failed.
func (m *machine) explain(err error, got []byte, timeout time.Duration) error {
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) {
		kh := m.r.cfg.KnownHosts
		fp := "?"
		var he *hostKeyError
		if errors.As(err, &he) {
			fp = he.fingerprint
		}
		if len(ke.Want) == 0 {
			return refused(fmt.Errorf("machine %s: host key is unknown (not in %s; it presented %s). trialform does not trust hosts silently: check that fingerprint with the machine's owner, then add the key with: ssh-keyscan -p %d %s >> %s", m.key, kh, fp, m.cfg.Port, m.cfg.Host, kh))
		}
		w := ke.Want[0]
		return refused(fmt.Errorf("machine %s: HOST KEY MISMATCH: it presented %s, which differs from the key in %s:%d; someone may be intercepting the connection, or the host was reinstalled. If the change is expected, remove the old line (ssh-keygen -R '[%s]:%d' -f %s) and add the new key", m.key, fp, w.Filename, w.Line, m.cfg.Host, m.cfg.Port, kh))
	}
	if strings.Contains(err.Error(), "unable to authenticate") {
		return refused(fmt.Errorf("machine %s: login as %q refused: %w; check user, ssh_key_file or password (and that the key is in the user's authorized_keys)", m.key, m.cfg.User, err))
	}
	port := strconv.Itoa(m.cfg.Port)
	var msg string
	switch {
	case len(got) > 0 && !bytes.HasPrefix(got, []byte("SSH-")):
		msg = fmt.Sprintf("machine %s is not an SSH server: port %s answered %q, not an SSH greeting; check the machine's port (and that no proxy or other service holds it)", m.key, port, printable(got))
	case len(got) == 0 && isTimeout(err):
		msg = fmt.Sprintf("machine %s unreachable: it accepted the connection but sent no SSH greeting in %s; check that sshd (not another service, or a proxy that holds connections) listens on port %s", m.key, timeout.Round(time.Second), port)
	case len(got) == 0:
		msg = fmt.Sprintf("machine %s unreachable: it closed the connection before any SSH greeting; check that sshd listens on port %s and accepts connections from here (its MaxStartups, a firewall, TCP wrappers)", m.key, port)
	case isTimeout(err):
		msg = fmt.Sprintf("machine %s unreachable: the SSH handshake did not finish in %s (the machine is overloaded, or the connection stalls)", m.key, timeout.Round(time.Second))
	default:
		msg = fmt.Sprintf("machine %s unreachable: the SSH handshake failed: %v", m.key, err)
	}
	return &unreachableError{msg, err}
}

// printable is the start of what a server sent, as text.
func printable(b []byte) string {
	if i := bytes.IndexAny(b, "\r\n"); i >= 0 {
		b = b[:i]
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return strings.ToValidUTF8(string(b), "?")
}

// run executes a command line on the machine and returns its stdout. A
// non-zero exit is an error holding stderr. stdin may be nil.
func (m *machine) run(ctx context.Context, cmd string, stdin io.Reader) ([]byte, error) {
	c, _, err := m.connected(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.sem }()
	// Each read up to maxShellOutput, as a shell's: a machine that prints
	// more does not fill this one's memory.
	var out, errb capped
	var opened bool
	// Bounded (bound): a server that stops answering, or a command that
	// never ends, does not hold the caller.
	err = m.bound(ctx, c, "a remote command (an upload)", runTimeout, func() error {
		sess, err := c.NewSession()
		if err != nil {
			return err
		}
		opened = true
		defer sess.Close()
		over := func() { _ = sess.Signal(ssh.SIGKILL); sess.Close() }
		out.over, errb.over = over, over
		sess.Stdout, sess.Stderr = &out, &errb
		if stdin != nil {
			sess.Stdin = stdin
		}
		// The login shell may not be POSIX (fish, csh): hand the line to sh.
		return sess.Run("exec /bin/sh -c " + shq(cmd))
	})
	var ue *unreachableError
	if err != nil && (errors.As(err, &ue) || ctx.Err() != nil) {
		return nil, err // bound closed the connection
	}
	if out.full || errb.full {
		return nil, fmt.Errorf("machine %s: %w", m.key, errTooMuchOutput)
	}
	if err != nil && !opened {
		m.drop(c)
		m.r.markDown(m, err)
		return nil, fmt.Errorf("machine %s: open a session: %w", m.key, err)
	}
	if err != nil {
		var ee *ssh.ExitError
		if errors.As(err, &ee) {
			return out.Bytes(), &exitError{fmt.Sprintf("machine %s: %s", m.key, firstLines(errb.String(), ee))}
		}
		// The connection broke (no exit status).
		m.drop(c)
		m.r.markDown(m, err)
		return nil, fmt.Errorf("machine %s: connection lost: %w", m.key, err)
	}
	return out.Bytes(), nil
}

// capped keeps what a command prints up to maxShellOutput; past it,
// the rest is dropped and over (which ends the command) called once.
// (Not an embedded bytes.Buffer: io.Copy would use its ReadFrom.)
type capped struct {
	buf  bytes.Buffer
	full bool
	over func()
}

func (c *capped) Write(p []byte) (int, error) {
	if c.full {
		return len(p), nil
	}
	if c.buf.Len()+len(p) > maxShellOutput {
		c.full = true
		c.over()
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *capped) Bytes() []byte  { return c.buf.Bytes() }
func (c *capped) String() string { return c.buf.String() }

// exitError is a remote command that ran and failed: the machine
// answered.
type exitError struct{ msg string }

func (e *exitError) Error() string { return e.msg }

func firstLines(stderr string, ee *ssh.ExitError) string {
	s := strings.TrimSpace(stderr)
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	if s == "" {
		return "remote command exited with status " + strconv.Itoa(ee.ExitStatus())
	}
	return s + " (exit status " + strconv.Itoa(ee.ExitStatus()) + ")"
}

// sftpErr classifies an SFTP error: a broken connection is dropped (and
// the machine marked down) so the next call re-dials.
func (m *machine) sftpErr(c *ssh.Client, err error) error {
	if err == nil {
		return nil
	}
	var se *sftp.StatusError
	if errors.As(err, &se) || errors.Is(err, os.ErrNotExist) {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, sftp.ErrSSHFxConnectionLost) || strings.Contains(err.Error(), "connection lost") || errors.Is(err, net.ErrClosed) {
		m.drop(c)
		m.r.markDown(m, err)
		return fmt.Errorf("machine %s: connection lost: %w", m.key, err)
	}
	return err
}

// shq quotes s for a POSIX shell: one word, nothing expanded.
func shq(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shline joins words into a command line, each quoted.
func shline(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shq(w)
	}
	return strings.Join(q, " ")
}
