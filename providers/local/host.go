package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/internal/procfs"
	"github.com/trialform/trialform/providers/trialproto"
)

// A supervisor host supervises many trials in one process: the trials one
// Local (one CLI run) starts. Starting a Go process per trial costs about
// 2 ms of CPU, a third of what a trivial trial costs trialform in all on
// two cores; the host is started once, at the first Start, and each
// Start is one message to it.
//
// The CLI and its host share a SOCK_SEQPACKET socket pair (the host's end
// is its fd 3). A request is {"id", "dir"} with the trial's locked status
// log attached (SCM_RIGHTS): the launch lock, handed over exactly as a
// per-trial supervisor inherits it, so a CLI killed at any point leaves
// either no request (the lock dies with the CLI, the attempt is lost and
// resumed) or a host that records the attempt. The host answers
// {"id", "ready"} once the status shows the attempt running or ended, or
// {"id", "error"} when it could not supervise it, and {"id", "ended"}
// when the attempt is over (apply's loop wakes up). When the CLI's end
// closes, the host finishes supervising what runs and exits.
//
// Each trial is supervised as by a supervisor of its own (runAttempt),
// except for three process-wide things: the host is the child subreaper
// of every trial, and reaps the orphans, never a trial's main process;
// what a trial left outside its process group is found by its
// environment (NNI_SYS_DIR, as stop and destroy find stragglers); and
// Stop's SIGTERM stops the trials whose stop.json appeared, not all.
// A host killed (kill -9, the OOM killer) leaves its trials running
// without a supervisor, as a per-trial supervisor killed does: once one
// ends, it is SUCCEEDED if it reported its final result (its exit status
// not recorded: orphanend.go), else LOST and resumed.

// hostArg, after "__supervise", runs a supervisor host.
const hostArg = "-host"

// hostModeEnv selects the per-trial supervisor instead of the host
// ("per-trial"), for comparison and as a fallback.
const hostModeEnv = "TRIALFORM_LOCAL_SUPERVISOR"

type hostRequest struct {
	ID  int    `json:"id"`
	Dir string `json:"dir"`
}

type hostReply struct {
	ID    int    `json:"id"`
	Ready bool   `json:"ready,omitempty"`
	Ended bool   `json:"ended,omitempty"`
	Error string `json:"error,omitempty"`
}

type host struct {
	conn *net.UnixConn
	wmu  sync.Mutex // replies

	mu     sync.Mutex
	mains  map[int]bool // trials' main processes: not the reaper's
	trials map[*hostTrial]bool
	wg     sync.WaitGroup

	// listOrphans and environ read /proc (orphans, readEnviron); tests
	// replace them.
	listOrphans func() []int
	environ     func(pid int) ([]byte, error)
}

// readEnviron is /proc/PID/environ. It reads empty while the process is
// in an exec (between the new program's memory and its arguments).
func readEnviron(pid int) ([]byte, error) {
	return fsx.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
}

// execWait is how long killRest keeps looking at orphans whose
// environment reads empty: an exec ends within it, and a process that
// cleared its environment costs a trial's end no more.
const execWait = time.Second

type hostTrial struct {
	dir  string
	stop chan struct{}
	// stopV is the version of stop.json last delivered: Stop writes it
	// anew each time, so a new version is a new request.
	stopV fileVersion
}

// hostMain is `__supervise -host`: it serves the requests on fd 3 until
// the CLI's end closes and every trial it started has ended.
func hostMain() error {
	syscall.CloseOnExec(3)
	f := os.NewFile(3, "host-socket")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("supervisor host: fd 3: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return errors.New("supervisor host: fd 3 is not a unix socket")
	}
	signal.Ignore(syscall.SIGHUP)
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "trialform supervisor host: cannot become a child subreaper (processes trials start in a new session may outlive them): %v\n", err)
	}
	if os.Getenv("GOGC") == "" {
		// Its heap stays small (a few KiB per running trial), so the
		// default would collect every few hundred trials' garbage.
		debug.SetGCPercent(400)
	}
	h := &host{conn: uc, mains: map[int]bool{}, trials: map[*hostTrial]bool{}, listOrphans: orphans, environ: readEnviron}
	go h.signals()
	go h.reaper()
	h.serve()
	h.wg.Wait()
	h.reapOrphans()
	return nil
}

// serve reads requests until the CLI's end closes.
func (h *host) serve() {
	buf := make([]byte, 64<<10)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := h.conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return // the CLI is gone
		}
		var launch *os.File
		if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				fds, err := syscall.ParseUnixRights(&m)
				if err != nil {
					continue
				}
				for _, fd := range fds {
					if launch == nil {
						syscall.CloseOnExec(fd)
						launch = os.NewFile(uintptr(fd), "launch-lock")
					} else {
						syscall.Close(fd)
					}
				}
			}
		}
		var req hostRequest
		if err := json.Unmarshal(buf[:n], &req); err != nil || req.Dir == "" || !filepath.IsAbs(req.Dir) {
			if launch != nil {
				launch.Close()
			}
			h.reply(hostReply{ID: req.ID, Error: fmt.Sprintf("bad request %q", buf[:n])})
			continue
		}
		h.wg.Add(1)
		go h.run(req, launch)
	}
}

func (h *host) reply(r hostReply) {
	b, _ := json.Marshal(r)
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_, _ = h.conn.Write(b) // the CLI may be gone: the trial goes on
}

// run supervises one attempt.
func (h *host) run(req hostRequest, launch *os.File) {
	defer h.wg.Done()
	if launch != nil {
		defer launch.Close()
	}
	t := &hostTrial{dir: req.Dir, stop: make(chan struct{}, 4)}
	h.mu.Lock()
	h.trials[t] = true
	// Start removed any stop.json before asking: one here came from a
	// Stop sent while the request waited (its SIGTERM found no trial).
	if v, ok := statVersion(filepath.Join(t.dir, stopFile)); ok {
		t.stopV = v
		t.stop <- struct{}{}
	}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.trials, t)
		h.mu.Unlock()
	}()
	ctl := attemptCtl{
		ready: func() { h.reply(hostReply{ID: req.ID, Ready: true}) },
		stop:  t.stop,
		signalRest: func(main int, sig syscall.Signal) {
			ps, _ := h.rest(req.Dir, main)
			signalOutsideGroup(ps, main, sig)
		},
		killRest: func(d time.Duration) { h.killRest(req.Dir, d) },
		host:     true,
		startProc: func(cmd *exec.Cmd) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			if err := cmd.Start(); err != nil {
				return err
			}
			h.mains[cmd.Process.Pid] = true
			return nil
		},
		waited: func(pid int) {
			h.mu.Lock()
			delete(h.mains, pid)
			h.mu.Unlock()
		},
	}
	if err := runAttempt(req.Dir, launch, ctl); err != nil {
		fmt.Fprintf(os.Stderr, "trialform supervisor host: %s: %v\n", req.Dir, err)
		h.reply(hostReply{ID: req.ID, Error: err.Error()})
	}
	h.reply(hostReply{ID: req.ID, Ended: true})
}

// signals delivers Stop's SIGTERM (or SIGINT) to the trials whose
// stop.json appeared since the last one; with none, it does nothing (a
// stray signal must not stop every trial; `trialform stop` and destroy
// go through stop.json).
func (h *host) signals() {
	c := make(chan os.Signal, 8)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	for range c {
		h.mu.Lock()
		for t := range h.trials {
			v, ok := statVersion(filepath.Join(t.dir, stopFile))
			if !ok || v == t.stopV {
				continue
			}
			// The first request terminates the trial, a second one kills
			// it, as SIGTERMs to its own supervisor would.
			t.stopV = v
			select {
			case t.stop <- struct{}{}:
			default:
			}
		}
		h.mu.Unlock()
	}
}

// reaper reaps the orphans re-parented to the host, on SIGCHLD and every
// second.
func (h *host) reaper() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGCHLD)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-c:
		case <-tick.C:
		}
		h.reapOrphans()
	}
}

// reapOrphans reaps every exited child that is not a trial's main
// process (exec.Cmd.Wait reaps those).
func (h *host) reapOrphans() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.listOrphans() {
		if h.mains[c] {
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(c, &ws, syscall.WNOHANG, nil)
	}
}

// rest lists the trial's processes outside its main process's group:
// below main (0: none), and the host's orphans whose environment names
// the trial dir, with theirs. unsure counts the live orphans whose
// environment read empty: in an exec, or with none at all.
func (h *host) rest(dir string, main int) (out []int, unsure int) {
	if main > 0 {
		if ds, ok := childrenTree(main); ok {
			out = append(out, ds...)
		}
	}
	marker := []byte("\x00" + trialproto.EnvSysDir + "=" + dir + "\x00")
	h.mu.Lock()
	var kids []int
	for _, c := range h.listOrphans() {
		if !h.mains[c] {
			kids = append(kids, c)
		}
	}
	h.mu.Unlock()
	for _, c := range kids {
		b, err := h.environ(c)
		if err != nil {
			continue
		}
		if state, _, err := procInfo(c); err != nil || state == 'Z' || state == 'X' {
			continue
		}
		if len(b) == 0 {
			unsure++
			continue
		}
		if !bytes.Contains(append([]byte{0}, b...), marker) {
			continue
		}
		out = append(out, c)
		if ds, ok := childrenTree(c); ok {
			out = append(out, ds...)
		}
	}
	return out, unsure
}

// killRest SIGKILLs the trial's processes left outside its group (see
// rest) until none is left or d passed. An orphan whose environment reads
// empty may be the trial's, caught in an exec (`setsid cmd &` right
// before the trial exits): it is looked at again, for execWait at most.
func (h *host) killRest(dir string, d time.Duration) {
	start := time.Now()
	deadline := start.Add(d)
	for {
		ps, unsure := h.rest(dir, 0)
		for _, p := range ps {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		h.reapOrphans()
		if (len(ps) == 0 && (unsure == 0 || time.Since(start) > execWait)) || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// orphans lists the children of this process's main thread: where the
// kernel re-parents the orphans of a child subreaper (the first live
// thread of its thread group, which for a Go program is the main thread,
// alive as long as the process). The trials' main processes are the
// children of whichever thread forked them, some of them listed here too.
// One read per call, where directChildren reads every thread's list.
func orphans() []int {
	pid := strconv.Itoa(os.Getpid())
	b, err := fsx.ReadFile("/proc/" + pid + "/task/" + pid + "/children")
	if err != nil {
		return directChildren(os.Getpid())
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// directChildren lists pid's children (zombies included), from the
// children files of its threads, or a scan of every process's stat on a
// kernel without them.
func directChildren(pid int) []int {
	base := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := fsx.ReadFile(base + t.Name() + "/children")
		if errors.Is(err, fs.ErrNotExist) {
			return scanChildren(pid)
		}
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// scanChildren lists pid's children (zombies included) from every
// process's stat.
func scanChildren(pid int) []int { return procfs.ChildrenByParent(true)[pid] }
