// Package local runs trials as processes on this machine. A detached
// supervisor (the hidden `trialform __supervise` command, SupervisorMain)
// starts each trial in its own process group, tees its stdout for metric
// lines, enforces max_duration, forwards Stop and records the outcome in
// the trial directory, so trials outlive the CLI and a later CLI finds
// them again from the files alone. By default one supervisor host per
// Local supervises every trial it starts (host.go); a supervisor process
// per trial is the other way (Config.PerTrialSupervisor).
//
// Trial directory ROOT/EXPERIMENT/TRIAL/:
//
//	spec.json        what to run (the request, lineage, attempt); written
//	                 atomically before launching: the ownership marker
//	parameter.cfg    NNI's parameter file; params.json = TRIALFORM_PARAMS
//	stdout, stderr   the trial's output, appended across attempts
//	.nni/metrics     NNI's metric file, made by the trial library (archived as .nni/metrics.N when
//	                 attempt N+1 starts, since NNI may truncate it)
//	metrics.stdout   metric records the supervisor parsed from stdout
//	status.log       the supervisor's records, one JSON line per change (pids,
//	                 start times, outcome); the last complete line is current.
//	                 It is also the launch lock (see launchFDEnv)
//	stop.json        Stop's reason and grace, read by the supervisor
//	supervisor.log   a per-trial supervisor's own output (a host writes
//	                 ROOT/supervisor-host.log)
//	output/          NNI_OUTPUT_DIR, kept across attempts
//
// The package must not import plan or apply, and must not print: the
// supervisor writes only to its own supervisor.log.
package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/topdir"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// Config configures a local platform.
type Config struct {
	// Root is the absolute directory of trial directories:
	// ROOT/EXPERIMENT/TRIAL/ (the CLI passes <workdir>/.trialform/trials).
	Root string
	// LibDir is the absolute directory the embedded Python helpers are
	// written to and that trials get in front of PYTHONPATH (the CLI passes
	// <workdir>/.trialform/lib).
	LibDir string
	// GPUIndices are the GPUs trials may be given; nil: a trial asking for
	// GPUs is given them out of the GPUs found on the machine (gpus.go),
	// and the others see the machine's CUDA_VISIBLE_DEVICES unchanged.
	GPUIndices []int
	// MaxTrialsPerGPU is how many trials may share one GPU (default 1).
	MaxTrialsPerGPU int
	// Supervisor is the argv prefix that runs the supervisor; the trial
	// directory is appended. Default {os.Executable(), "__supervise"}.
	Supervisor []string
	// PerTrialSupervisor runs a supervisor process per trial instead of
	// one supervisor host per Local (host.go); the environment variable
	// TRIALFORM_LOCAL_SUPERVISOR=per-trial sets it.
	PerTrialSupervisor bool
	// SupervisorEnv is added to the supervisor's environment (tests use it
	// to make the test binary act as the supervisor). The trial does not
	// see names starting with TRIALFORM_ or NNI_ from it.
	SupervisorEnv []string
	// StopGrace is the time between SIGTERM and SIGKILL when a trial is
	// stopped or runs past its max_duration (default 10s).
	StopGrace time.Duration
	// TensorBoardRoot, if set, is the absolute root of the TensorBoard
	// tree: trials log into TensorBoardRoot/EXPERIMENT/TRIAL (the CLI passes
	// <workdir>/.trialform/tensorboard), so one `tensorboard --logdir ROOT`
	// shows every trial. Unset: OUTPUT/tensorboard in the trial directory.
	TensorBoardRoot string
	// OutputLimit is how much of a trial's stdout, and of its stderr, is
	// kept on disk: the first and the latest half (default
	// DefaultOutputLimit; negative: no cap).
	OutputLimit int64
}

// Local is the local platform. It is safe for concurrent use, and several
// processes may use the same Root at once (file locks serialize them).
type Local struct {
	cfg     Config
	changed chan struct{}
	closeMu sync.Mutex // guards sends on changed against Close closing it
	closed  bool
	listc   listCache
	// expDirs: the experiment dirs this process made sure of (created
	// and marked for ext4's allocator, see internal/topdir).
	expDirs sync.Map
	// h is the supervisor host of the trials this Local starts (see
	// host.go), started at the first Start.
	hostMu sync.Mutex
	h      *hostConn
	// The GPUs found on the machine when gpu_indices is unset (gpus.go).
	detectOnce   sync.Once
	detected     []int
	detectedFrom string
	detectErr    error
}

var (
	_ providers.Provider    = (*Local)(nil)
	_ providers.Lister      = (*Local)(nil)
	_ providers.LogStreamer = (*Local)(nil)
	_ providers.Private     = (*Local)(nil)
	_ providers.GPUChecker  = (*Local)(nil)
)

// New checks cfg, fills defaults, creates Root and writes the Python
// helpers into LibDir (only files whose content differs).
func New(cfg Config) (*Local, error) {
	if !filepath.IsAbs(cfg.Root) {
		return nil, providers.Permanent(fmt.Errorf("local platform: trial root %q is not an absolute path", cfg.Root))
	}
	if !filepath.IsAbs(cfg.LibDir) {
		return nil, providers.Permanent(fmt.Errorf("local platform: lib dir %q is not an absolute path", cfg.LibDir))
	}
	cfg.Root = filepath.Clean(cfg.Root)
	cfg.LibDir = filepath.Clean(cfg.LibDir)
	if cfg.MaxTrialsPerGPU <= 0 {
		cfg.MaxTrialsPerGPU = 1
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	if os.Getenv(hostModeEnv) == "per-trial" {
		cfg.PerTrialSupervisor = true
	}
	seen := map[int]bool{}
	for _, g := range cfg.GPUIndices {
		if g < 0 || seen[g] {
			return nil, providers.Permanent(fmt.Errorf("local platform: gpu_indices %v: indices must be distinct and not negative", cfg.GPUIndices))
		}
		seen[g] = true
	}
	if len(cfg.Supervisor) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local platform: find the trialform executable for the supervisor: %w", err)
		}
		cfg.Supervisor = []string{exe, "__supervise"}
		// The standalone supervisor next to the CLI starts faster.
		if small := filepath.Join(filepath.Dir(exe), SupervisorBinary); isExecutable(small) {
			cfg.Supervisor = []string{small, "__supervise"}
		}
	}
	cfg.GPUIndices = append([]int(nil), cfg.GPUIndices...)
	if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
		return nil, fmt.Errorf("local platform: create trial root: %w", err)
	}
	topdir.Mark(cfg.Root) // experiments' trial dirs in quiet inode groups
	if err := trialproto.InstallPython(cfg.LibDir); err != nil {
		return nil, fmt.Errorf("local platform: %w", err)
	}
	return &Local{cfg: cfg, changed: make(chan struct{}, 1)}, nil
}

// PrivateToWorkingCopy reports that a local trial is seen only by the
// working copy whose Root holds it (providers.Private).
func (l *Local) PrivateToWorkingCopy() bool { return true }

// Kind returns "local".
func (l *Local) Kind() string { return "local" }

// Validate checks that the trial root is writable and the supervisor and
// /bin/sh exist.
func (l *Local) Validate(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.CreateTemp(l.cfg.Root, ".validate-*")
	if err != nil {
		return fmt.Errorf("local platform: trial root %s is not writable: %w", l.cfg.Root, err)
	}
	f.Close()
	os.Remove(f.Name())
	if _, err := os.Stat(l.cfg.Supervisor[0]); err != nil {
		return fmt.Errorf("local platform: supervisor %s: %w", l.cfg.Supervisor[0], err)
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		return fmt.Errorf("local platform: /bin/sh: %w", err)
	}
	return nil
}

// Close closes Changed's channel, so whoever listens stops; trials keep
// running without the provider.
func (l *Local) Close() error {
	l.closeMu.Lock()
	if !l.closed {
		l.closed = true
		close(l.changed)
	}
	l.closeMu.Unlock()
	// The host finishes supervising what runs, then exits.
	l.hostMu.Lock()
	if l.h != nil {
		l.h.close()
	}
	l.hostMu.Unlock()
	return nil
}

// Changed receives a value when a supervisor this Local launched exits,
// i.e. a trial it started ended (apply's Notifier capability). Close
// closes it.
func (l *Local) Changed() <-chan struct{} { return l.changed }

func (l *Local) notify() {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	if l.closed {
		return
	}
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// trialDir returns ROOT/EXP/TRIAL after checking both are safe path names.
func (l *Local) trialDir(exp, trial string) (string, error) {
	if err := checkName("experiment", exp); err != nil {
		return "", err
	}
	if err := checkName("trial id", trial); err != nil {
		return "", err
	}
	return filepath.Join(l.cfg.Root, exp, trial), nil
}

func checkName(what, s string) error {
	if s == "" || s == "." || s == ".." || strings.HasPrefix(s, ".") || strings.ContainsAny(s, "/\\\x00") || len(s) > 200 {
		return providers.Permanent(fmt.Errorf("%s %q cannot name a directory", what, s))
	}
	return nil
}

func validateStart(req providers.StartRequest) error { return req.Validate() }

// SupervisorBinary is the name of the standalone supervisor
// (cmd/trialform-supervisor) that New prefers when it lies next to the
// running executable.
const SupervisorBinary = "trialform-supervisor"

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
