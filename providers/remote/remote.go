// Package remote runs trials on other machines over SSH, as NNI's remote
// mode does. Each machine is reached through one pooled SSH connection
// (golang.org/x/crypto/ssh, host keys checked against known_hosts; the
// connection is re-dialled after a drop) carrying an SFTP session for
// reading files back and short exec sessions for launching and stopping.
//
// Nothing of trialform is installed on a machine but a few POSIX sh
// scripts and the stdlib-only Python helpers (lib/, uploaded once per
// content hash): a detached sh supervisor (setsid + nohup) starts the trial
// in its own process group and records pids, start time and exit code in
// the trial directory, so trials survive the SSH connection and the CLI.
// The user's machine parses metrics itself from the files it reads over
// SFTP (NNI's .nni/metrics records and the stdout metric lines), so trials
// never connect back.
//
// On each machine, under work_dir (default ~/trialform):
//
//	lib/HASH/            supervise.sh, launch.sh, stop.sh, scan.sh, python/
//	code/HASH/           the experiment's code dir, uploaded once (content hash)
//	trials/EXP/TRIAL/    spec.json, run.sh, parameter.cfg, params.json,
//	                     status, stdout, stderr, .nni/metrics, output/,
//	                     code/ (the trial's own copy of the code dir),
//	                     ticks (output sizes, to order final results),
//	                     tick-times (sizes and times, to date results),
//	                     stdout.cut, stderr.cut, stdout.kept (output cap)
//
// Every value put into a remote command line is shell-quoted. The package
// must not import plan or apply, and must not print.
package remote

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// Config configures a remote platform (one platform "remote" block).
type Config struct {
	Name       string // the platform's name, for messages ("lab")
	Machines   []Machine
	KnownHosts string        // known_hosts file (absolute; default ~/.ssh/known_hosts)
	WorkDir    string        // on each machine; "~/x", relative (to home) or absolute; default ~/trialform
	LostGrace  time.Duration // how long a trial may go unread (its machine unreachable, or its own files hanging there) before it is LOST (default 2m)
	StopGrace  time.Duration // SIGTERM to SIGKILL (default 10s)
	// OutputLimit is how much of a trial's stdout and of its stderr is
	// kept on the machine (default DefaultOutputLimit).
	OutputLimit int64
	// StateDir is a local directory where the provider remembers since when
	// a machine is unreachable, across CLI runs ("" keeps it in memory).
	StateDir string
	// Redial is how long a machine whose dial failed is left alone before
	// it is dialled again (default DefaultRedial), doubled after each
	// failed dial up to RedialMax (default DefaultRedialMax). It holds
	// within one process: a new CLI command dials at once.
	Redial, RedialMax time.Duration
}

// The back-off of a machine that could not be dialled (Config.Redial).
const (
	DefaultRedial    = 30 * time.Second
	DefaultRedialMax = 5 * time.Minute
)

// Machine is one machine block.
type Machine struct {
	Host            string
	Port            int    // default 22
	User            string // default: the local user
	KeyFile         string // private key (absolute); or Password, or the SSH agent
	Password        string
	GPUIndices      []int
	MaxTrialsPerGPU int    // default 1
	MaxTrials       int    // trials at once on the machine; default: its CPU count
	PythonPath      string // prepended to PATH on the machine
	WorkDir         string // overrides Config.WorkDir for this machine
}

// Remote is the remote platform. It is safe for concurrent use.
type Remote struct {
	cfg      Config
	machines []*machine
	lib      *bundle

	schedMu sync.Mutex // machine.busy, scanned, uploaded

	locksMu sync.Mutex
	locks   map[string]*sync.Mutex
	code    map[string]*bundle

	downMu sync.Mutex
	down   map[string]downInfo   // by machine key
	unread map[string]unreadInfo // by unreadKey: trials not read since their machine went down or a file of theirs hung
	// unreadable.json is written once a pass (flushUnread): unreadDirty
	// says that unread changed since, unreadNew that an outage began.
	unreadDirty, unreadNew bool
	unreadWrites           int // writes of unreadable.json (tests count them)

	warnMu sync.Mutex
	warned map[string]bool // warnings given (providers.Warner)
	warns  []string        // not yet returned

	bg    context.Context // the background dials' (probe), cancelled by Close
	close context.CancelFunc
	now   func() time.Time // the back-off's clock (tests move it)
}

type downInfo struct {
	Since   time.Time `json:"since"`
	Err     string    `json:"error"`
	Refused bool      `json:"refused,omitempty"` // it answers but refuses trialform (refusedError)
	lastTry time.Time
	// The back-off (not saved: a new process dials at once): the failed
	// dials of this process, and when the next may run.
	dials   int
	retryAt time.Time
}

var (
	_ providers.Provider      = (*Remote)(nil)
	_ providers.Lister        = (*Remote)(nil)
	_ providers.LogStreamer   = (*Remote)(nil)
	_ providers.Locator       = (*Remote)(nil)
	_ providers.Warner        = (*Remote)(nil)
	_ providers.HandleChecker = (*Remote)(nil)
)

// New checks cfg and fills defaults. It does not connect.
func New(cfg Config) (*Remote, error) {
	if len(cfg.Machines) == 0 {
		return nil, providers.Permanent(errors.New("remote platform: no machine blocks; add at least one machine { host = ... }"))
	}
	home, _ := os.UserHomeDir()
	if cfg.KnownHosts == "" {
		cfg.KnownHosts = filepath.Join(home, ".ssh", "known_hosts")
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = "~/trialform"
	}
	if cfg.LostGrace <= 0 {
		cfg.LostGrace = 2 * time.Minute
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	if cfg.Redial <= 0 {
		cfg.Redial = DefaultRedial
	}
	if cfg.RedialMax <= 0 {
		cfg.RedialMax = max(DefaultRedialMax, cfg.Redial)
	}
	lib, err := libBundle()
	if err != nil {
		return nil, err
	}
	r := &Remote{cfg: cfg, lib: lib, locks: map[string]*sync.Mutex{}, code: map[string]*bundle{}, down: map[string]downInfo{}, unread: map[string]unreadInfo{}, now: time.Now}
	r.bg, r.close = context.WithCancel(context.Background())
	seen := map[string]bool{}
	for i, mc := range cfg.Machines {
		if mc.Host == "" {
			return nil, providers.Permanent(fmt.Errorf("remote platform: machine %d has no host", i+1))
		}
		if mc.Port == 0 {
			mc.Port = 22
		}
		if mc.User == "" {
			mc.User = os.Getenv("USER")
			if mc.User == "" {
				mc.User = "root"
			}
		}
		if mc.MaxTrialsPerGPU <= 0 {
			mc.MaxTrialsPerGPU = 1
		}
		if mc.KeyFile == "" && mc.Password == "" && os.Getenv("SSH_AUTH_SOCK") == "" {
			for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
				if p := filepath.Join(home, ".ssh", n); fileExists(p) {
					mc.KeyFile = p
					break
				}
			}
		}
		key := net.JoinHostPort(mc.Host, strconv.Itoa(mc.Port))
		if seen[key] {
			return nil, providers.Permanent(fmt.Errorf("remote platform: machine %s is listed twice", key))
		}
		seen[key] = true
		r.machines = append(r.machines, &machine{cfg: mc, r: r, key: key, sem: make(chan struct{}, maxExec), shells: make(chan *shell, maxShells), shellSem: make(chan struct{}, maxShells),
			uploaded: map[string]bool{}})
	}
	r.loadDown()
	r.loadUnread()
	return r, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// libBundle is the helpers every machine gets: the sh scripts and the
// Python modules.
func libBundle() (*bundle, error) {
	sh, err := fs.Sub(scripts, "lib")
	if err != nil {
		return nil, err
	}
	return fsBundle(fsPart{"", sh}, fsPart{"python", trialproto.PythonFS()})
}

// scripts are the POSIX sh helpers run on the machines.
//
//go:embed lib/*.sh
var scripts embed.FS

// Kind returns "remote".
func (r *Remote) Kind() string { return "remote" }

// Validate connects to every machine. A machine that cannot be reached
// is no error: its trials turn LOST after lost_grace, and new trials go to
// the others (or wait, saying so). Nor is one that refuses trialform (an
// unknown or changed host key, a refused login) while another machine
// does not: it is never logged in to, and a warning says why
// (Warnings); when every machine refuses, that is the error.
func (r *Remote) Validate(ctx context.Context) error {
	errs := make([]error, len(r.machines))
	var wg sync.WaitGroup
	for i, m := range r.machines {
		wg.Add(1)
		go func(i int, m *machine) {
			defer wg.Done()
			_, _, errs[i] = m.connected(ctx)
		}(i, m)
	}
	wg.Wait()
	var refusals []error
	for _, err := range errs {
		switch {
		case isRefused(err):
			refusals = append(refusals, err)
		case providers.IsPermanent(err):
			return err
		}
	}
	if len(refusals) == len(r.machines) {
		return providers.Permanent(errors.Join(refusals...))
	}
	return nil
}

// warn queues a warning for Warnings, once per text.
func (r *Remote) warn(msg string) {
	r.warnMu.Lock()
	defer r.warnMu.Unlock()
	if r.warned == nil {
		r.warned = map[string]bool{}
	}
	if !r.warned[msg] {
		r.warned[msg] = true
		r.warns = append(r.warns, msg)
	}
}

// Warnings returns the machines that refused trialform since the last
// call (each once; providers.Warner). A refresh asks once its reads and
// listings are done: the end of a pass, when the trials' outages that
// began or ended in it are saved (flushUnread).
func (r *Remote) Warnings() []string {
	r.downMu.Lock()
	r.flushUnread()
	r.downMu.Unlock()
	r.warnMu.Lock()
	defer r.warnMu.Unlock()
	w := r.warns
	r.warns = nil
	return w
}

// Close closes the connections, and saves the trials' outages; trials
// keep running.
func (r *Remote) Close() error {
	r.downMu.Lock()
	r.flushUnread()
	r.downMu.Unlock()
	r.close()
	for _, m := range r.machines {
		m.closeLister()
		m.close()
	}
	return nil
}

// machineByKey finds a configured machine.
func (r *Remote) machineByKey(key string) *machine {
	for _, m := range r.machines {
		if m.key == key {
			return m
		}
	}
	return nil
}

// markDown records that m failed (the first failure starts the grace).
func (r *Remote) markDown(m *machine, err error) {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	d, ok := r.down[m.key]
	if !ok {
		d.Since = time.Now().UTC()
	}
	d.Err = err.Error()
	d.Refused = isRefused(err)
	d.lastTry = time.Now()
	r.down[m.key] = d
	if !ok {
		r.saveDown()
	}
}

// backOff sets when m, whose dial just failed (markDown), may be dialled
// again: Redial after the first failed dial, doubling up to RedialMax.
func (r *Remote) backOff(m *machine) {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	d := r.down[m.key]
	wait := r.cfg.Redial
	for i := 0; i < d.dials && wait < r.cfg.RedialMax; i++ {
		wait *= 2
	}
	d.dials++
	d.retryAt = r.now().Add(min(wait, r.cfg.RedialMax))
	r.down[m.key] = d
}

// markUp records that m answers: an operation on its connection
// completed (bound, sh), not only a dial, so that a machine whose re-dial
// works but whose next operation hangs again stays down since its first
// failure, and its trials become LOST after lost_grace. One this process
// had backed off is said to be back, and what was said of it may be said
// again when it goes.
func (r *Remote) markUp(m *machine) {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	d, ok := r.down[m.key]
	if !ok {
		return
	}
	// The trials' outages that began while m was down are saved before
	// m's record goes: until then m's record holds their start (since
	// m went down), after it nothing would.
	if r.unreadNew {
		r.flushUnread()
	}
	delete(r.down, m.key)
	r.saveDown()
	if d.dials == 0 {
		return
	}
	r.warnMu.Lock()
	for w := range r.warned {
		if strings.HasPrefix(w, "machine "+m.key+" ") || strings.HasPrefix(w, "machine "+m.key+":") {
			delete(r.warned, w)
		}
	}
	r.warnMu.Unlock()
	r.warn(fmt.Sprintf("machine %s answers again (unreachable for %s): its trials are read again and new trials may start there", m.key, time.Since(d.Since).Round(time.Second)))
}

// downSince says since when m is unreachable (zero when it is not known
// to be).
func (r *Remote) downSince(m *machine) (downInfo, bool) {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	d, ok := r.down[m.key]
	return d, ok
}

func (r *Remote) downFile() string {
	if r.cfg.StateDir == "" {
		return ""
	}
	return filepath.Join(r.cfg.StateDir, "unreachable.json")
}

func (r *Remote) loadDown() {
	f := r.downFile()
	if f == "" {
		return
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return
	}
	var m map[string]downInfo
	if json.Unmarshal(b, &m) == nil {
		for k, v := range m {
			if r.machineByKey(k) != nil {
				r.down[k] = v
			}
		}
	}
}

// saveDown writes the unreachable machines (caller holds downMu).
func (r *Remote) saveDown() {
	f := r.downFile()
	if f == "" {
		return
	}
	if len(r.down) == 0 {
		_ = os.Remove(f)
		return
	}
	b, _ := json.Marshal(r.down)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err == nil {
		_ = fsx.WriteFileAtomic(f, b, 0o644)
	}
}
