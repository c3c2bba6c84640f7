package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/internal/topdir"
	"github.com/trialform/trialform/providers"
)

// startTimeout bounds the wait for a launched supervisor to start the trial.
const startTimeout = 60 * time.Second

// Start creates or adopts the trial (see the providers contract). A trial
// whose supervisor is alive is adopted; an ended one is returned as is
// unless req.Resume; otherwise a new attempt is launched: a detached
// supervisor (its own session, stdin /dev/null, output to supervisor.log)
// that outlives the CLI. Start returns once the trial process runs (or the
// supervisor recorded that it could not start it).
//
// With GPU scheduling on (gpu_indices, or, for a trial needing GPUs, the
// GPUs found on the machine: gpus.go), a trial needing GPUs gets the least
// loaded ones with a free slot; none free -> an error wrapping
// providers.ErrNoCapacity.
func (l *Local) Start(ctx context.Context, req providers.StartRequest) (providers.Handle, error) {
	if err := validateStart(req); err != nil {
		return nil, err
	}
	dir, err := l.trialDir(req.Experiment, req.TrialID)
	if err != nil {
		return nil, err
	}
	gpuIdx, err := l.gpuIndices(req.GPUs)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("trial needs %d GPUs but %w; set gpu_indices", req.GPUs, err))
	}
	if len(gpuIdx) > 0 && req.GPUs > len(gpuIdx) {
		return nil, providers.Permanent(fmt.Errorf("trial needs %d GPUs but the platform has %d (gpu_indices %v)", req.GPUs, len(gpuIdx), gpuIdx))
	}
	if err := l.expDir(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("create trial dir: %w", err)
	}
	if err := mkdirs(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create trial dir: %w", err)
	}
	unlock, err := lockDir(ctx, dir, syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer unlock()

	sp, err := readSpec(dir)
	if err != nil {
		return nil, err
	}
	st, err := readStatus(dir)
	if err != nil {
		return nil, err
	}
	if sp != nil {
		if err := providers.CheckOwner("trial dir "+dir, req, sp.owner()); err != nil {
			return nil, err
		}
	}
	if sp != nil && (st == nil || st.Attempt != sp.Attempt) {
		// A supervisor launched by a CLI that died may still be starting.
		if err := waitLaunch(ctx, dir); err != nil {
			return nil, err
		}
		if st, err = readStatus(dir); err != nil {
			return nil, err
		}
	}
	if sp != nil && st != nil && st.Attempt == sp.Attempt {
		o := observe(dir, sp, st)
		switch {
		case o.Phase == providers.PhaseRunning || o.Phase == providers.PhasePending:
			return o.Handle, nil
		case o.Phase.Ended() && !req.Resume:
			return o.Handle, nil
		}
	}

	attempt := 1
	if sp != nil {
		attempt = sp.Attempt + 1
	}
	if st != nil && st.Attempt >= attempt {
		attempt = st.Attempt + 1
	}
	if attempt > 1 && (st == nil || st.State != stateEnded) {
		// The last attempt's supervisor died before recording its end (or
		// even that the trial runs): whatever it started must not run
		// beside the new attempt.
		killStragglers(dir)
	}

	var gpus []int
	sched := len(gpuIdx) > 0
	if sched && req.GPUs > 0 {
		gunlock, err := lockFile(ctx, filepath.Join(l.cfg.Root, gpuLockName), syscall.LOCK_EX)
		if err != nil {
			return nil, err
		}
		// Held until the spec, which records the GPUs, is written and its
		// launch lock taken: gpuLoad counts them from then on.
		defer gunlock()
		gpus, err = l.pickGPUs(gpuIdx, req.GPUs)
		if err != nil {
			return nil, err
		}
	}

	if err := l.prepare(dir, attempt); err != nil {
		return nil, err
	}
	ns := &spec{
		Version: 1, Experiment: req.Experiment, ExperimentID: req.ExperimentID, TrialID: req.TrialID,
		Seq: req.Seq, ParameterID: req.ParameterID, Params: req.Params, Shell: req.Shell, Args: req.Args,
		Env: req.Env, CodeDir: req.CodeDir, MaxDuration: req.MaxDuration, GPUs: req.GPUs,
		MetricRegex: req.MetricRegex, Lineage: req.Lineage, Generation: req.Generation, Attempt: attempt,
		GPUScheduling: sched, AssignedGPUs: gpus, LibDir: l.cfg.LibDir, StopGrace: l.cfg.StopGrace, OutputLimit: l.cfg.OutputLimit,
		CreatedAt: time.Now().UTC(),
	}
	if tb := l.tensorBoardOf(req.Experiment, req.TrialID); tb != "" {
		// The trial's own dir is made by its supervisor (prepare).
		ns.TensorBoardDir = tb
		if err := l.tensorBoardDir(filepath.Dir(tb)); err != nil {
			return nil, fmt.Errorf("tensorboard dir: %w", err)
		}
		if sp == nil && st == nil {
			// A new trial: logs already there are an earlier experiment's
			// of the same name (destroyed by a version that left them),
			// which TensorBoard and the dashboard would show as this
			// trial's.
			if err := os.RemoveAll(tb); err != nil {
				return nil, fmt.Errorf("remove stale tensorboard logs: %w", err)
			}
		}
	}
	// Replaced atomically (a reader never sees half a spec; a kill -9
	// leaves the old one or the new one) but not fsynced: the files of a
	// trial dir are not made durable one by one. The state's journal is
	// what survives a machine crash; a crash also ends every trial, and
	// one the state does not record as ended is run again (docs/trials.md,
	// "State").
	if err := replaceSpec(filepath.Join(dir, specFile), ns); err != nil {
		return nil, err
	}
	specs.put(dir, ns) // the next Read need not read it back
	slog, err := openStatusLog(dir)
	if err != nil {
		return nil, err
	}
	defer slog.Close() // the supervisor keeps its inherited copy
	st, err = l.launch(ctx, dir, attempt, slog, req)
	if err != nil {
		return nil, err
	}
	return handle(dir, st), nil
}

// owner is the ownership marker the spec records.
func (sp *spec) owner() providers.Owner {
	return providers.Owner{Lineage: sp.Lineage, ExperimentID: sp.ExperimentID, Generation: sp.Generation, ParamsDigest: providers.ParamsDigest(sp.Params)}
}

// expDir creates an experiment's dir of trials once per process, and
// marks it as a top directory for ext4's Orlov allocator: its trial dirs, and the files
// each trial creates in its own, are spread over the block groups instead
// of packed in one, where the inodes of trials just destroyed (or of an
// earlier run's files) would make every creation scan past them (see
// internal/topdir). Measured on ext4 without a journal, 300 trials in a
// row after a destroy: 3.2 s of system CPU before, 1.2 s after.
func (l *Local) expDir(dir string, perm fs.FileMode) error {
	if _, ok := l.expDirs.Load(dir); ok {
		return nil
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	topdir.Mark(dir)
	l.expDirs.Store(dir, true)
	return nil
}

// tensorBoardOf is the trial's directory in the TensorBoard tree
// (TensorBoardRoot/EXPERIMENT/TRIAL), "" when there is no tree.
func (l *Local) tensorBoardOf(experiment, trial string) string {
	if l.cfg.TensorBoardRoot == "" {
		return ""
	}
	return filepath.Join(l.cfg.TensorBoardRoot, experiment, trial)
}

// removeTensorBoard removes the trial's TensorBoard logs (destroy), then
// the experiment's directory of them once nothing else is in it.
func (l *Local) removeTensorBoard(experiment, trial string) error {
	tb := l.tensorBoardOf(experiment, trial)
	if tb == "" {
		return nil
	}
	if err := os.RemoveAll(tb); err != nil {
		return fmt.Errorf("remove the tensorboard logs of trial %s/%s: %w", experiment, trial, err)
	}
	l.dropTensorBoardExp(filepath.Dir(tb))
	return nil
}

// dropTensorBoardExp removes an experiment's dir of TensorBoard logs when
// it is empty, and forgets that this process made it (a later trial of
// the experiment makes it again).
func (l *Local) dropTensorBoardExp(dir string) {
	if os.Remove(dir) == nil {
		l.expDirs.Delete(dir)
	}
}

// tensorBoardDir creates an experiment's dir of TensorBoard logs once per
// process. Unlike a trials dir it is not marked (its parent, the root of
// the tree, is): each trial's TensorBoard dir, empty unless the trial logs
// there, goes next to it (one inode per trial) instead of being spread
// over the block groups by a scan of them all (0.2 ms of the supervisor
// host's CPU per trial on this 2-core VM, perf).
func (l *Local) tensorBoardDir(dir string) error {
	if _, ok := l.expDirs.Load(dir); ok {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	topdir.Mark(filepath.Dir(dir))
	l.expDirs.Store(dir, true)
	return nil
}

// mkdirs creates dir with perm, and its parents only when they are missing
// (the common case costs one mkdir); one that exists as a directory is
// fine. A trial dir is 0700: its spec.json may hold a sensitive env value.
func mkdirs(dir string, perm fs.FileMode) error {
	err := os.Mkdir(dir, perm)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, perm)
	case errors.Is(err, fs.ErrExist):
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

// prepare archives the previous attempt's NNI metric file and removes a
// stop request left by it. The attempt's protocol files (parameter.cfg,
// params.json) and its output dirs are written by its supervisor, right
// before it starts the trial (supervisor.prepare): nothing reads them
// before, and the CLI's part of a launch is what bounds how fast trials
// start.
func (l *Local) prepare(dir string, attempt int) error {
	if attempt > 1 {
		old := filepath.Join(dir, nniMetricsFile)
		if err := os.Rename(old, old+"."+strconv.Itoa(attempt-1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("archive metrics of attempt %d: %w", attempt-1, err)
		}
	}
	if err := syscall.Unlink(filepath.Join(dir, stopFile)); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("remove %s: %w", stopFile, err)
	}
	return nil
}

// readyFDEnv names the supervisor's environment variable holding the file
// descriptor of the readiness pipe: the supervisor writes a byte to it (and
// closes it) once the attempt's status says the trial runs or ended, so
// Start need not poll status.json while the supervisor starts.
const readyFDEnv = "TRIALFORM_SUPERVISOR_READY_FD"

// launchFDEnv names the descriptor of the launch lock a supervisor inherits:
// Start holds an exclusive flock on DIR/status.log from before the
// supervisor exists until it has appended its first record (the
// supervisor, which appends its records through that same descriptor,
// unlocks it then). A reader that finds a spec without a status for its
// attempt waits on that lock (waitLaunch) instead of calling the attempt
// lost while its supervisor is still starting, which would start the trial
// twice.
const launchFDEnv = "TRIALFORM_SUPERVISOR_LAUNCH_FD"

// waitLaunch waits until no supervisor holds dir's launch lock, i.e. any
// supervisor launched for the current attempt has recorded its status or
// is gone.
func waitLaunch(ctx context.Context, dir string) error {
	f, err := fsx.Open(filepath.Join(dir, statusLog))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no attempt was ever launched here by this version
	}
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := fsx.FlockWait(ctx, f, syscall.LOCK_SH); err != nil {
		return err
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// launching reports whether a supervisor holds dir's launch lock: an
// attempt is being started, and its first record is not written yet.
func launching(dir string) bool {
	f, err := fsx.Open(filepath.Join(dir, statusLog))
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// launch starts the supervisor for dir and waits until it has started the
// trial (or recorded why it could not). launchLock is dir's status log,
// open for appending: the supervisor inherits it, locked.
func (l *Local) launch(ctx context.Context, dir string, attempt int, launchLock *os.File, req providers.StartRequest) (*status, error) {
	if l.useHost() {
		if err := syscall.Flock(int(launchLock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			return nil, fmt.Errorf("start supervisor: another supervisor of this trial is starting: %w", err)
		}
		return l.launchInHost(ctx, dir, attempt, launchLock, req.Handoff)
	}
	logPath := filepath.Join(dir, supervisorLog)
	logf, err := fsx.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open supervisor log: %w", err)
	}
	if err := syscall.Flock(int(launchLock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start supervisor: another supervisor of this trial is starting: %w", err)
	}
	rp, wp, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	argv := append(append([]string(nil), l.cfg.Supervisor...), dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), l.cfg.SupervisorEnv...), readyFDEnv+"=3", launchFDEnv+"=4")
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{wp, launchLock} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	logf.Close()
	wp.Close()
	if err != nil {
		rp.Close()
		return nil, fmt.Errorf("start supervisor %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	go func() {
		// Reap it (a zombie would look alive) and wake apply's loop.
		_ = cmd.Wait()
		close(exited)
		l.notify()
	}()
	ready := make(chan struct{})
	go func() {
		// A byte, or EOF when the supervisor exits (or closes it).
		var b [1]byte
		_, _ = rp.Read(b[:])
		rp.Close()
		close(ready)
	}()

	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	// Wait for the readiness signal, then read the status; poll only if
	// it does not show the attempt started (a supervisor that closed the
	// pipe without recording anything, which then exits).
	readyC := (<-chan struct{})(ready)
	wait := time.Millisecond
	for {
		var tick <-chan time.Time
		if readyC == nil {
			st, err := readStatus(dir)
			if err == nil && st != nil && st.Attempt == attempt && st.State != stateStarting {
				return st, nil
			}
			tick = time.After(wait)
			if wait < 20*time.Millisecond {
				wait *= 2
			}
		}
		select {
		case <-readyC:
			readyC = nil
		case <-tick:
		case <-exited:
			// It may have written its final status just before exiting.
			if st, err := readStatus(dir); err == nil && st != nil && st.Attempt == attempt && st.State != stateStarting {
				return st, nil
			}
			return nil, fmt.Errorf("the supervisor exited before starting the trial: %s", lastLines(tail(logPath, 2000)))
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the supervisor to start the trial: %w", ctx.Err())
		case <-deadline.C:
			return nil, fmt.Errorf("the supervisor did not start the trial within %s: %s", startTimeout, lastLines(tail(logPath, 2000)))
		}
	}
}

func lastLines(s string) string {
	if s == "" {
		return "(supervisor.log is empty)"
	}
	return s
}

// handle is the provider handle of an attempt.
func handle(dir string, st *status) providers.Handle {
	h := providers.Handle{"dir": dir}
	if st == nil {
		return h
	}
	h["attempt"] = strconv.Itoa(st.Attempt)
	h["supervisor_pid"] = strconv.Itoa(st.SupervisorPID)
	if st.PID > 0 {
		h["pid"] = strconv.Itoa(st.PID)
		h["pgid"] = strconv.Itoa(st.PGID)
		h["start_time"] = strconv.FormatUint(st.StartTime, 10)
	}
	return h
}

// pickGPUs chooses n GPUs with a free slot, least loaded first. The caller
// holds the root GPU lock.
func (l *Local) pickGPUs(indices []int, n int) ([]int, error) {
	load := l.gpuLoad()
	type cand struct{ idx, load int }
	var free []cand
	full := 0
	for _, g := range indices {
		if load[g] < l.cfg.MaxTrialsPerGPU {
			free = append(free, cand{g, load[g]})
		} else {
			full++
		}
	}
	if len(free) < n {
		if n == 1 {
			return nil, fmt.Errorf("no free GPU: %d/%d busy (max %d trials per GPU): %w", full, len(indices), l.cfg.MaxTrialsPerGPU, providers.ErrNoCapacity)
		}
		return nil, fmt.Errorf("no %d free GPUs: %d/%d busy (max %d trials per GPU): %w", n, full, len(indices), l.cfg.MaxTrialsPerGPU, providers.ErrNoCapacity)
	}
	sort.SliceStable(free, func(i, j int) bool { return free[i].load < free[j].load })
	out := make([]int, n)
	for i := range out {
		out[i] = free[i].idx
	}
	sort.Ints(out)
	return out, nil
}

// gpuLoad counts, per GPU, the live attempts under Root that hold it: a
// recorded attempt by its status until it ends, one being launched (its
// launch lock held: a handed-off Start returns before the supervisor
// recorded anything) by the GPUs its spec assigns.
func (l *Local) gpuLoad() map[int]int {
	load := map[int]int{}
	exps, _ := os.ReadDir(l.cfg.Root)
	for _, e := range exps {
		if !e.IsDir() {
			continue
		}
		trials, _ := os.ReadDir(filepath.Join(l.cfg.Root, e.Name()))
		for _, t := range trials {
			if !t.IsDir() {
				continue
			}
			for _, g := range attemptGPUs(filepath.Join(l.cfg.Root, e.Name(), t.Name())) {
				load[g]++
			}
		}
	}
	return load
}

// attemptGPUs returns the GPUs the live attempt of dir holds (none when it
// ended, or was lost). The caller holds the root GPU lock.
func attemptGPUs(dir string) []int {
	sp, err := specs.read(dir)
	if err != nil || sp == nil || len(sp.AssignedGPUs) == 0 {
		// Without GPUs: its launch lock is not probed, which could make
		// the Start of a trial without GPUs (not under the GPU lock)
		// fail to take it.
		return nil
	}
	live := func(st *status) []int {
		if st.State == stateEnded || !(alive(st.SupervisorPID, st.SupervisorStart) || alive(st.PID, st.StartTime)) {
			return nil
		}
		return st.GPUs
	}
	st, err := readStatus(dir)
	if err != nil {
		return nil
	}
	if st != nil && st.Attempt == sp.Attempt {
		return live(st)
	}
	if launching(dir) {
		return sp.AssignedGPUs
	}
	// Not (or no longer) launching: a supervisor unlocks only once the
	// status records the attempt, so it shows now if it started.
	if st, err = readStatus(dir); err != nil || st == nil || st.Attempt != sp.Attempt {
		return nil
	}
	return live(st)
}
