package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/internal/procfs"
)

// File names inside a trial directory.
const (
	specFile       = "spec.json"
	statusLog      = "status.log"
	statusFile     = "status.json" // before status.log: read, never written
	stopFile       = "stop.json"
	paramCfgFile   = "parameter.cfg"
	paramsFile     = "params.json"
	stdoutFile     = "stdout"
	stderrFile     = "stderr"
	nniDir         = ".nni"
	nniMetricsFile = ".nni/metrics"
	stdoutMetrics  = "metrics.stdout"
	// nniStampsPrefix + attempt: when the supervisor saw the records of
	// that attempt's NNI file appear, for records without a time of their
	// own (lastfinal.go, nniFollower).
	nniStampsPrefix = "metrics.nni-seen."
	supervisorLog   = "supervisor.log"
	outputDir       = "output"
	gpuLockName     = ".gpu.lock"
)

// spec is what the supervisor runs; written by Start before each launch.
type spec struct {
	Version      int               `json:"version"`
	Experiment   string            `json:"experiment"`
	ExperimentID string            `json:"experiment_id"`
	TrialID      string            `json:"trial_id"`
	Seq          int               `json:"seq"`
	ParameterID  int               `json:"parameter_id"`
	Params       map[string]any    `json:"params"`
	Shell        string            `json:"shell,omitempty"`
	Args         []string          `json:"args,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	CodeDir      string            `json:"code_dir"`
	MaxDuration  time.Duration     `json:"max_duration_ns,omitempty"`
	GPUs         int               `json:"gpus,omitempty"`
	MetricRegex  string            `json:"metric_regex,omitempty"`
	Lineage      string            `json:"lineage,omitempty"`
	Generation   int               `json:"generation,omitempty"`
	Attempt      int               `json:"attempt"`
	// GPUScheduling says the platform schedules GPUs; AssignedGPUs are
	// then the indices this attempt got (CUDA_VISIBLE_DEVICES).
	GPUScheduling bool          `json:"gpu_scheduling,omitempty"`
	AssignedGPUs  []int         `json:"assigned_gpus,omitempty"`
	LibDir        string        `json:"lib_dir"`
	StopGrace     time.Duration `json:"stop_grace_ns"`
	// TensorBoardDir is the trial's TensorBoard log directory
	// (Config.TensorBoardRoot/EXPERIMENT/TRIAL); "" means output/tensorboard/TRIAL.
	TensorBoardDir string `json:"tensorboard_dir,omitempty"`
	// OutputLimit caps the stdout and the stderr kept on disk (bytes; 0 =
	// DefaultOutputLimit, negative = no cap).
	OutputLimit int64     `json:"output_limit,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// Supervisor states recorded in status.log.
const (
	stateStarting = "starting" // supervisor up, trial not started yet
	stateRunning  = "running"
	stateEnded    = "ended"
)

// Outcomes of an ended attempt.
const (
	outcomeExited      = "exited"       // exit code recorded
	outcomeSignaled    = "signaled"     // killed by a signal trialform did not send
	outcomeStopped     = "stopped"      // Stop
	outcomeMaxDuration = "max_duration" // ran past max_duration
	outcomeStartFailed = "start_failed" // the process could not be started
	// The trial ended while its supervisor was gone (kill -9, the OOM
	// killer), after reporting its final result: nobody saw its exit
	// status; a Read that found it so recorded this end (orphanend.go).
	outcomeUnrecorded = "exit_unrecorded"
)

// status is the supervisor's record of the current attempt.
type status struct {
	Attempt         int    `json:"attempt"`
	State           string `json:"state"`
	SupervisorPID   int    `json:"supervisor_pid"`
	SupervisorStart uint64 `json:"supervisor_start_time"`
	// Host: the supervisor is a host supervising many trials (host.go):
	// Stop must not kill it to take over.
	Host      bool       `json:"host,omitempty"`
	PID       int        `json:"pid,omitempty"`
	PGID      int        `json:"pgid,omitempty"`
	StartTime uint64     `json:"start_time,omitempty"` // /proc/PID/stat field 22
	GPUs      []int      `json:"gpus,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	Signal    string     `json:"signal,omitempty"`
	Outcome   string     `json:"outcome,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	// Dropped counts the intermediate results on stdout the supervisor
	// did not record, past providers.MaxIntermediate.
	Dropped int64 `json:"dropped_intermediate,omitempty"`
	// Overlong counts the metric lines on stdout longer than maxLine,
	// which were not read.
	Overlong int64 `json:"overlong_metric_lines,omitempty"`
	// StdoutFrom and MetricsFrom (in the running record) are where this
	// attempt's output starts in stdout and its records in
	// metrics.stdout: a Read that finds the attempt ended without its
	// supervisor looks there for a final result (orphanend.go).
	StdoutFrom  *int64 `json:"stdout_from,omitempty"`
	MetricsFrom *int64 `json:"metrics_from,omitempty"`
	// Dir is the trial dir the supervisor writes this log in: a dir whose
	// log names another existing dir is a copy of it (a copied working
	// copy), and the processes the log names are that dir's trial's.
	Dir string `json:"dir,omitempty"`
	// copyOf, set by readStatus (never written), is the dir this one is a
	// copy of, when its unended record names that dir's processes: they
	// are cleared, so nobody here reads them as running, or stops them.
	copyOf string
}

// stopRequest is what Stop leaves for the supervisor before SIGTERM.
type stopRequest struct {
	Reason string        `json:"reason"`
	Grace  time.Duration `json:"grace_ns"`
}

func readJSON(path string, v any) error {
	b, err := fsx.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSON replaces path atomically and durably (fsx.WriteFileAtomic).
func writeJSON(path string, v any) error {
	b, err := encodeJSON(path, v)
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(path, b, 0o600)
}

// replaceSpec replaces a spec atomically (temp file and rename), without
// an fsync (see Start).
func replaceSpec(path string, sp *spec) error {
	b, err := encodeJSON(path, sp)
	if err != nil {
		return err
	}
	return fsx.ReplaceFile(path, b, 0o600, fsx.Options{NoSync: true, NoSyncDir: true})
}

func encodeJSON(path string, v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return append(b, '\n'), nil
}

// readSpec returns nil, nil when there is no spec, or an empty one: spec.json
// is not fsynced (see Start), so a machine crash can leave it empty (its
// rename on disk, its data not); no supervisor of that attempt outlived
// the crash, and the next attempt is numbered past what status.log kept.
func readSpec(dir string) (*spec, error) { return decodeSpec(dir, false) }

// readSpecExact is readSpec with the parameters' numbers as written
// (json.Number; only the parameters are interface values), so that an
// integer past 2^53 reaches parameter.cfg unrounded. Its spec must not be
// digested (owner): json.Number and float64 encode alike, but the
// supervisor has no need to.
func readSpecExact(dir string) (*spec, error) { return decodeSpec(dir, true) }

func decodeSpec(dir string, exact bool) (*spec, error) {
	path := filepath.Join(dir, specFile)
	b, err := fsx.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(bytes.TrimSpace(b)) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s spec
	if exact {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		err = dec.Decode(&s)
	} else {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// readStatus returns the attempt's status: the last complete record of
// status.log, or nil, nil when there is none. A trial dir written before
// status.log existed has status.json instead, read when the log holds no
// record.
func readStatus(dir string) (*status, error) {
	b, err := fsx.ReadFile(filepath.Join(dir, statusLog))
	switch {
	case err == nil:
		// Start creates the log before it launches an attempt: a dir
		// that has one never needs its status.json.
		return notCopied(dir, lastStatus(b)), nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	var s status
	if err := readJSON(filepath.Join(dir, statusFile), &s); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return &s, nil
}

// notCopied clears the processes of st, an unended record of dir's
// status log, when the log was written in another existing directory (Dir)
// that is not dir under another name: dir is a copy of it (cp -a of a
// working copy), and those processes run the original's trial, which
// this dir's platform must neither read as its own nor stop.
func notCopied(dir string, st *status) *status {
	if st == nil || st.Dir == "" || st.Dir == dir || st.State == stateEnded {
		return st
	}
	here, err := os.Stat(dir)
	if err != nil {
		return st
	}
	there, err := os.Stat(st.Dir)
	if err != nil || os.SameFile(here, there) {
		// The original is gone (a working copy moved, say) or this
		// is it: nothing to tell them apart by.
		return st
	}
	st.copyOf = st.Dir
	st.SupervisorPID, st.SupervisorStart, st.Host = 0, 0, false
	st.PID, st.PGID, st.StartTime = 0, 0, 0
	return st
}

// lastStatus decodes the last newline-terminated record of a status log
// that decodes. A record cut short by a crash (no newline, or not JSON) is
// skipped: the one before it is what the disk kept.
func lastStatus(b []byte) *status {
	for len(b) > 0 {
		if b[len(b)-1] != '\n' {
			i := bytes.LastIndexByte(b, '\n')
			b = b[:i+1]
			continue
		}
		line := b[:len(b)-1]
		i := bytes.LastIndexByte(line, '\n')
		rec := line[i+1:]
		var s status
		if len(rec) > 0 && json.Unmarshal(rec, &s) == nil && s.Attempt > 0 {
			return &s
		}
		b = b[:i+1]
	}
	return nil
}

// appendStatus appends st to the status log f as one line (one write);
// sync also fsyncs it (only tests ask: see supervisor.writeStatus).
func appendStatus(f *os.File, st *status, sync bool) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", statusLog, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("write %s: sync: %w", statusLog, err)
		}
	}
	return nil
}

// openStatusLog opens dir's status log for appending, creating it.
func openStatusLog(dir string) (*os.File, error) {
	f, err := fsx.OpenFile(filepath.Join(dir, statusLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", statusLog, err)
	}
	return f, nil
}

// procInfo returns pid's state and start time (internal/procfs).
func procInfo(pid int) (state byte, start uint64, err error) {
	st, err := procfs.Read(pid)
	return st.State, st.Start, err
}

// procStartTime returns the start time of pid, 0 if unknown.
func procStartTime(pid int) uint64 {
	_, st, err := procInfo(pid)
	if err != nil {
		return 0
	}
	return st
}

// alive reports whether pid is a live (not zombie) process started at start
// (guarding against pid reuse; start 0 skips that check).
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	state, st, err := procInfo(pid)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false
		}
		// No usable /proc: fall back to signal 0.
		return syscall.Kill(pid, 0) == nil
	}
	if state == 'Z' || state == 'X' {
		return false
	}
	return start == 0 || st == start
}

// groupAlive reports whether any process of process group pgid exists.
func groupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// lockFile takes a flock (syscall.LOCK_EX or LOCK_SH) on path, creating it,
// polling until ctx is done. The returned func releases it.
func lockFile(ctx context.Context, path string, how int) (func(), error) {
	f, err := fsx.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := fsx.FlockWait(ctx, f, how); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// lockDir takes a flock (syscall.LOCK_EX or LOCK_SH) on the trial dir
// itself, polling until ctx is done: the trial lock Start and Stop take
// exclusive and Read shared. (A lock file in the dir cost one more inode
// per trial; trial dirs made before keep a stale .lock, unused.) The
// returned func releases it.
func lockDir(ctx context.Context, dir string, how int) (func(), error) {
	f, err := fsx.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := fsx.FlockWait(ctx, f, how); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// tail returns the last n bytes of a file, for error messages.
func tail(path string, n int64) string {
	f, err := fsx.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := fi.Size() - n
	if off < 0 {
		off = 0
	}
	b := make([]byte, fi.Size()-off)
	k, _ := f.ReadAt(b, off)
	return strings.TrimSpace(string(b[:k]))
}
