// Package cloudtest is what every cloud platform's httptest fake needs: a
// Runner that really runs a job's command as a local /bin/sh process (real
// python3 trials) with its env and working directory, captures its output,
// reports its status and kills it on stop; and fault injection (429 with
// Retry-After, 500, slow responses, dropped connections, a job that
// vanishes) as an http.Handler wrapper. A platform's fake implements its
// service's documented request and response shapes on top of it.
//
// Only tests import it.
package cloudtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"
)

// State is a fake job's process state.
type State string

const (
	Waiting   State = "waiting" // submitted, not started (Hold)
	Running   State = "running"
	Succeeded State = "succeeded"
	Failed    State = "failed"
	Stopped   State = "stopped" // killed by Stop
)

// Status is what the Runner knows of one job.
type Status struct {
	State    State
	ExitCode int // valid once ended
	Started  time.Time
	Ended    time.Time
}

// Done reports whether the job is over.
func (s Status) Done() bool { return s.State == Succeeded || s.State == Failed || s.State == Stopped }

// Runner runs fake jobs as local /bin/sh processes (each in its own process
// group, killed on Stop and on Close).
type Runner struct {
	mu   sync.Mutex
	jobs map[string]*proc
	// Hold, when set, leaves newly started jobs Waiting until Release.
	Hold bool
	// Grace is how long Stop waits after SIGTERM before SIGKILL (0: 1s),
	// as a container runtime does.
	Grace time.Duration
	// Starts counts Start calls per id (a duplicate-job detector for tests).
	starts map[string]int
}

type proc struct {
	cmd, dir string
	marker   string // the value of markerVar in the job's processes
	stopping bool   // Stop was called: the end is Stopped
	env      map[string]string
	st       Status
	out      bytes.Buffer
	c        *exec.Cmd
	done     chan struct{}
}

// NewRunner returns an empty runner; Close kills what still runs.
func NewRunner() *Runner {
	return &Runner{jobs: map[string]*proc{}, starts: map[string]int{}}
}

// ErrExists is returned by Start for an id the runner already has.
var ErrExists = errors.New("job exists")

// Start runs command under /bin/sh -c in dir with exactly env (plus PATH and
// HOME from this process when env lacks them). An id already known is
// ErrExists.
func (r *Runner) Start(id, command string, env map[string]string, dir string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts[id]++
	if _, ok := r.jobs[id]; ok {
		return ErrExists
	}
	p := &proc{cmd: command, dir: dir, env: env, done: make(chan struct{}), st: Status{State: Waiting},
		marker: fmt.Sprintf("%p/%s/%d", r, id, r.starts[id])}
	r.jobs[id] = p
	if !r.Hold {
		r.launch(p)
	}
	return nil
}

// Release starts every Waiting job.
func (r *Runner) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.jobs {
		if p.st.State == Waiting {
			r.launch(p)
		}
	}
}

// launch runs with r.mu held.
func (r *Runner) launch(p *proc) {
	// The job runs under its own init (jobinit.go): the test binary.
	c := exec.Command("/proc/self/exe")
	c.Dir = p.dir
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}
	for k, v := range p.env {
		env[k] = v
	}
	env[markerVar] = p.marker
	env[jobInitVar] = p.cmd
	env[jobInitGrace] = r.grace().String()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.Env = append(c.Env, k+"="+env[k])
	}
	w := &lockedWriter{mu: &r.mu, buf: &p.out}
	c.Stdout, c.Stderr = w, w
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.st = Status{State: Running, Started: time.Now()}
	if err := c.Start(); err != nil {
		p.out.WriteString(err.Error() + "\n")
		p.st = Status{State: Failed, ExitCode: 127, Started: p.st.Started, Ended: time.Now()}
		close(p.done)
		return
	}
	p.c = c
	go func() {
		// The container ends with its main process: its init has killed
		// everything the job started, in a new session too, before it
		// exits.
		err := c.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		p.st.Ended = time.Now()
		switch {
		case p.stopping:
			p.st.State = Stopped
		case err == nil:
			p.st.State = Succeeded
		default:
			p.st.State = Failed
			p.st.ExitCode = c.ProcessState.ExitCode()
		}
		if p.st.State != Succeeded && c.ProcessState != nil {
			p.st.ExitCode = c.ProcessState.ExitCode()
		}
		close(p.done)
	}()
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

// Status returns the job's status; false when the runner does not know id.
func (r *Runner) Status(id string) (Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.jobs[id]
	if !ok {
		return Status{}, false
	}
	return p.st, true
}

// Log returns the job's output (stdout and stderr) past byte offset from.
func (r *Runner) Log(id string, from int64) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.jobs[id]
	if !ok {
		return nil, false
	}
	b := p.out.Bytes()
	if from < 0 || from > int64(len(b)) {
		from = int64(len(b))
	}
	return append([]byte(nil), b[from:]...), true
}

// Stop kills the job's process group (SIGKILL) and waits for it; a job
// that ended or is unknown is left alone. It reports whether id is known.
func (r *Runner) Stop(id string) bool {
	r.mu.Lock()
	p, ok := r.jobs[id]
	if !ok {
		r.mu.Unlock()
		return false
	}
	switch p.st.State {
	case Waiting:
		p.st = Status{State: Stopped, ExitCode: -1, Ended: time.Now()}
		close(p.done)
		r.mu.Unlock()
		return true
	case Running:
		p.stopping = true
		// The job's init forwards it to the job's group, SIGKILLs the
		// group after the grace, then everything the job left behind,
		// and exits: its end is the event to wait for.
		_ = syscall.Kill(p.c.Process.Pid, syscall.SIGTERM)
	}
	r.mu.Unlock()
	<-p.done
	return true
}

// grace is Grace, 1s when unset.
func (r *Runner) grace() time.Duration {
	if r.Grace <= 0 {
		return time.Second
	}
	return r.Grace
}

// markerVar is set in every fake job's environment (tests may look for it).
const markerVar = "TRIALFORM_FAKE_JOB"

// Forget drops the job as if the service lost it (killing it first).
func (r *Runner) Forget(id string) {
	r.Stop(id)
	r.mu.Lock()
	delete(r.jobs, id)
	r.mu.Unlock()
}

// Wait blocks until the job ends (or is unknown).
func (r *Runner) Wait(id string) {
	r.mu.Lock()
	p, ok := r.jobs[id]
	r.mu.Unlock()
	if ok {
		<-p.done
	}
}

// Starts returns how many times Start was called for id.
func (r *Runner) Starts(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts[id]
}

// IDs returns every job id the runner knows, sorted.
func (r *Runner) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id := range r.jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Close kills every running job and waits for them.
func (r *Runner) Close() {
	for _, id := range r.IDs() {
		r.Stop(id)
	}
}

// StateNames are a fake service's own words for the Runner's states.
type StateNames struct {
	Unknown, Waiting, Running, Stopping, Succeeded, Failed, Stopped string
}

// Name is the service's word for a job: Unknown when the Runner does not
// know it (known false), Stopping while a job asked to stop still runs.
func (n StateNames) Name(st Status, known, stopping bool) string {
	if !known {
		return n.Unknown
	}
	switch st.State {
	case Waiting:
		return n.Waiting
	case Running:
		if stopping {
			return n.Stopping
		}
		return n.Running
	case Succeeded:
		return n.Succeeded
	case Stopped:
		return n.Stopped
	}
	return n.Failed
}
