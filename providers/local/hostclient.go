package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/fsx"
)

// hostLogName is the supervisor hosts' own log in the trial root (their
// stdout and stderr, appended by each).
const hostLogName = "supervisor-host.log"

// hostConn is the CLI's end of its supervisor host (see host.go).
type hostConn struct {
	conn    *net.UnixConn
	pid     int
	logPath string
	gone    chan struct{} // closed when the host's end closed (it exited)
	exited  chan struct{} // closed once the host process was reaped

	mu      sync.Mutex
	next    int
	pending map[int]chan hostReply
	active  int // attempts asked for and not ended
	// launching maps the trial dir of each request to its id until the
	// host replies to it (the trial runs, or could not start): till then
	// the attempt is being launched, whatever its files say yet. dirs is
	// the other way round.
	launching map[string]int
	dirs      map[int]string
}

// isLaunching reports whether dir's attempt was handed to this host, which
// has not said yet that it runs (or could not start) and is alive.
func (h *hostConn) isLaunching(dir string) bool {
	select {
	case <-h.gone:
		return false
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.launching[dir]
	return ok
}

// answered forgets request id's dir as launching. The caller holds h.mu.
func (h *hostConn) answered(id int) {
	if dir, ok := h.dirs[id]; ok {
		delete(h.dirs, id)
		if h.launching[dir] == id {
			delete(h.launching, dir)
		}
	}
}

// useHost reports whether trials start under a supervisor host (the
// default) rather than a supervisor each.
func (l *Local) useHost() bool { return !l.cfg.PerTrialSupervisor }

// host returns the running supervisor host of this Local, starting one
// when there is none or the last one exited.
func (l *Local) host() (*hostConn, error) {
	l.hostMu.Lock()
	defer l.hostMu.Unlock()
	if l.h != nil {
		select {
		case <-l.h.gone:
		default:
			return l.h, nil
		}
	}
	l.closeMu.Lock()
	closed := l.closed
	l.closeMu.Unlock()
	if closed {
		return nil, errors.New("the local platform is closed")
	}
	h, err := l.startHost()
	if err != nil {
		return nil, err
	}
	l.h = h
	return h, nil
}

func (l *Local) startHost() (*hostConn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("start supervisor host: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "host")
	defer theirs.Close()
	logPath := filepath.Join(l.cfg.Root, hostLogName)
	logf, err := fsx.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		mine.Close()
		return nil, fmt.Errorf("start supervisor host: %w", err)
	}
	defer logf.Close()
	argv := append(append([]string(nil), l.cfg.Supervisor...), hostArg)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = l.cfg.Root
	cmd.Env = append(os.Environ(), l.cfg.SupervisorEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{theirs} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		mine.Close()
		return nil, fmt.Errorf("start supervisor host %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // reap it; a zombie would look alive
		close(exited)
	}()
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, fmt.Errorf("start supervisor host: %w", err)
	}
	h := &hostConn{conn: c.(*net.UnixConn), pid: cmd.Process.Pid, logPath: logPath, gone: make(chan struct{}), exited: exited, pending: map[int]chan hostReply{}, launching: map[string]int{}, dirs: map[int]string{}}
	go h.read(l)
	return h, nil
}

// read dispatches the host's replies until its end closes.
func (h *hostConn) read(l *Local) {
	defer func() {
		close(h.gone)
		l.notify()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := h.conn.Read(buf)
		if err != nil || n == 0 {
			return
		}
		var r hostReply
		if json.Unmarshal(buf[:n], &r) != nil {
			continue
		}
		if r.Ended {
			h.mu.Lock()
			h.active--
			h.answered(r.ID)
			h.mu.Unlock()
			l.notify() // a trial ended: apply's loop looks again
			continue
		}
		h.mu.Lock()
		ch := h.pending[r.ID]
		delete(h.pending, r.ID)
		h.answered(r.ID)
		h.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// send asks the host to run dir's attempt, handing it launchLock.
func (h *hostConn) send(dir string, launchLock *os.File) (chan hostReply, error) {
	h.mu.Lock()
	h.next++
	id := h.next
	ch := make(chan hostReply, 1)
	h.pending[id] = ch
	h.active++
	h.launching[dir], h.dirs[id] = id, dir
	h.mu.Unlock()
	b, _ := json.Marshal(hostRequest{ID: id, Dir: dir})
	if _, _, err := h.conn.WriteMsgUnix(b, syscall.UnixRights(int(launchLock.Fd())), nil); err != nil {
		h.mu.Lock()
		delete(h.pending, id)
		h.active--
		h.answered(id)
		h.mu.Unlock()
		return nil, err
	}
	return ch, nil
}

// dropHost forgets h when it is still this Local's host, so the next
// Start starts another.
func (l *Local) dropHost(h *hostConn) {
	l.hostMu.Lock()
	defer l.hostMu.Unlock()
	if l.h == h {
		l.h = nil
		h.conn.Close()
	}
}

// close closes the CLI's end: the host finishes what runs, then exits.
// With nothing running it exits at once: close waits for that (up to a
// second), so the host is reaped by this process (its CPU time counted
// with the CLI's) rather than left to init.
func (h *hostConn) close() {
	h.mu.Lock()
	idle := h.active == 0
	h.mu.Unlock()
	h.conn.Close()
	if idle {
		select {
		case <-h.exited:
		case <-time.After(time.Second):
		}
	}
}

// launchInHost asks the host to run dir's attempt and waits until it has
// started the trial (or recorded why it could not). launchLock is dir's
// status log, locked: the host gets it with the request.
//
// With handoff it returns (a nil status) as soon as the request is sent:
// the host records the attempt whatever happens to this process, so
// Start need not wait for the trial to run.
func (l *Local) launchInHost(ctx context.Context, dir string, attempt int, launchLock *os.File, handoff bool) (*status, error) {
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	for round := 0; ; round++ {
		h, ch, err := l.sendToHost(dir, launchLock)
		if err != nil {
			return nil, err
		}
		if handoff {
			// The request holds the locked status log: queued in the
			// socket or read by the host, it keeps the lock until the host
			// has recorded the attempt; if the host dies first, the lock
			// goes with it and the attempt is lost (and resumed), as
			// without handoff.
			return nil, nil
		}
		st, err := l.awaitHost(ctx, h, ch, dir, attempt, deadline.C)
		if errors.Is(err, errHostGone) && round == 0 {
			// The host was dying when the request went out (a SIGKILL
			// takes effect a while after the process looks dead: its
			// socket closes last). If it recorded nothing of the attempt
			// it started nothing; the lock is still this process's: the
			// next host takes the request.
			if cur, rerr := readStatus(dir); rerr == nil && (cur == nil || cur.Attempt != attempt) {
				l.dropHost(h)
				continue
			}
		}
		return st, err
	}
}

// errHostGone: the host exited before it answered a request.
var errHostGone = errors.New("the supervisor host exited before starting the trial")

// sendToHost sends dir's request to this Local's host, starting another
// once when the current one turns out to be gone.
func (l *Local) sendToHost(dir string, launchLock *os.File) (*hostConn, chan hostReply, error) {
	for try := 0; ; try++ {
		h, err := l.host()
		if err != nil {
			return nil, nil, err
		}
		ch, err := h.send(dir, launchLock)
		if err == nil {
			return h, ch, nil
		}
		// The host is gone (killed) and its reader has not seen it yet:
		// nothing was handed over, the next host takes the request.
		l.dropHost(h)
		if try == 1 {
			return nil, nil, fmt.Errorf("start the trial in the supervisor host: %w: %s", err, lastLines(tail(h.logPath, 2000)))
		}
	}
}

// awaitHost waits for the host's answer to a request and returns the
// attempt's status once it shows the trial started (or ended).
func (l *Local) awaitHost(ctx context.Context, h *hostConn, ch chan hostReply, dir string, attempt int, deadline <-chan time.Time) (*status, error) {
	started := func() *status {
		st, err := readStatus(dir)
		if err == nil && st != nil && st.Attempt == attempt && st.State != stateStarting {
			return st
		}
		return nil
	}
	select {
	case r := <-ch:
		if st := started(); st != nil {
			return st, nil
		}
		if r.Error != "" {
			return nil, fmt.Errorf("the supervisor could not start the trial: %s", r.Error)
		}
		return nil, errors.New("the supervisor said the trial started, but its status does not show it")
	case <-h.gone:
		if st := started(); st != nil {
			return st, nil
		}
		return nil, fmt.Errorf("%w: %s", errHostGone, lastLines(tail(h.logPath, 2000)))
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the supervisor to start the trial: %w", ctx.Err())
	case <-deadline:
		return nil, fmt.Errorf("the supervisor did not start the trial within %s: %s", startTimeout, lastLines(tail(h.logPath, 2000)))
	}
}

// hostDied is told that a Read found the supervisor pid of an attempt
// dead: when that is this Local's host, the next Start starts another
// instead of sending into a host whose socket is still closing (a killed
// process looks dead before its last thread closes its files; a request
// sent then is lost with it, and its trial resumed once more).
func (l *Local) hostDied(pid int) {
	l.hostMu.Lock()
	h := l.h
	l.hostMu.Unlock()
	if h != nil && h.pid == pid {
		l.dropHost(h)
	}
}
