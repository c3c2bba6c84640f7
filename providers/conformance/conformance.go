// Package conformance is the test suite every trialform provider runs: it
// checks the providers contract (create-or-adopt Start, Read of unknown
// trials, Stop of gone trials, resume after loss, max_duration, incremental
// metric offsets, the NNI trial protocol) with tiny trial scripts it writes
// itself. It is test-only code: it must not be imported by non-test code.
package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers"
)

// Options tell the suite about the provider under test.
type Options struct {
	// Python is the interpreter for the Python trial scripts; "" looks up
	// python3 on PATH. Tests that need it fail when there is none.
	Python string
	// CodeDir is where the suite writes its scripts and where trials leave
	// the marker files it checks; it must be visible both to the test and to
	// the trials. "" uses a fresh t.TempDir() per test.
	CodeDir func(t *testing.T) string
	// Lose makes the platform lose a running trial the way a crash does
	// (for local: kill -9 of the supervisor and of the trial's group). nil
	// needs CapResume in Unimplemented.
	Lose func(t *testing.T, h providers.Handle)
	// Unimplemented declares the capabilities (Cap* names) the platform
	// does not implement, each with the reason, as rclone's
	// UnimplementableMethods do. A test of a capability the provider lacks
	// fails unless it is declared here, and a declared capability the
	// provider has fails too: nothing is skipped silently.
	Unimplemented map[string]string
	// Timeout bounds every wait for a trial to reach a phase (default 3m:
	// CI machines reach load average 70 on 2 cores; a passing run never
	// waits it out).
	Timeout time.Duration
	// StopGrace is the grace the suite passes to Stop (default 2s).
	StopGrace time.Duration
	// Parallel runs the tests in parallel.
	Parallel bool
	// CodeCopied says trials run in a copy of CodeDir (remote machines),
	// not in CodeDir itself: the working-dir check then wants the copy.
	CodeCopied bool
	// NNIPlatform is the NNI_PLATFORM trials see (default "local"). On
	// other platforms NNI prints metrics on stdout (NNISDK_MEb'...')
	// instead of writing $NNI_SYS_DIR/.nni/metrics, and so does the
	// suite's hand-written NNI trial.
	NNIPlatform string
}

// Capabilities a platform may declare unimplemented (Options.Unimplemented).
const (
	CapResume          = "Resume"          // a lost trial resumes (needs Options.Lose)
	CapLogs            = "Logs"            // providers.LogStreamer
	CapList            = "List"            // providers.Lister
	CapImport          = "Import"          // providers.Importer
	CapPurgeExperiment = "PurgeExperiment" // providers.ExperimentPurger
	// CapKillNewSession: what a trial starts in a new session (setsid)
	// dies with the trial and with Stop.
	CapKillNewSession  = "KillNewSession"
	CapSpecDiff        = "SpecDiff"        // providers.SpecDiffer
	CapLocation        = "Location"        // providers.Locator
	CapTensorBoardSync = "TensorBoardSync" // providers.TensorBoardSyncer
)

var capabilities = map[string]bool{CapResume: true, CapLogs: true, CapList: true, CapImport: true, CapPurgeExperiment: true, CapKillNewSession: true,
	CapSpecDiff: true, CapLocation: true, CapTensorBoardSync: true}

// need checks that the provider has capability (has), or declared it
// unimplemented (the test is then skipped, with the declared reason).
// has is nil for capabilities the suite cannot see from the outside.
func (e *env) need(capability string, has *bool) {
	e.t.Helper()
	reason, declared := e.s.opts.Unimplemented[capability]
	switch {
	case declared && has != nil && *has:
		e.t.Fatalf("the provider declares %s unimplemented (%s) but implements it: drop the declaration", capability, reason)
	case declared:
		e.t.Skipf("%s is declared unimplemented: %s", capability, reason) // not a dependency: a declared gap
	case has != nil && !*has:
		e.t.Fatalf("the provider does not implement %s and does not declare it in Options.Unimplemented", capability)
	}
}

func yes(b bool) *bool { return &b }

type suite struct {
	t    *testing.T
	newP func(t *testing.T) providers.Provider
	opts Options
}

// Run runs the suite; newProvider must return a fresh provider (with its
// own trial storage) for every call.
func Run(t *testing.T, newProvider func(t *testing.T) providers.Provider, opts Options) {
	if opts.Timeout <= 0 {
		opts.Timeout = 3 * time.Minute
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 2 * time.Second
	}
	if opts.NNIPlatform == "" {
		opts.NNIPlatform = "local"
	}
	if opts.CodeDir == nil {
		opts.CodeDir = func(t *testing.T) string { return t.TempDir() }
	}
	if opts.Python == "" {
		if p, err := exec.LookPath("python3"); err == nil {
			opts.Python = p
		}
	}
	for c := range opts.Unimplemented {
		if !capabilities[c] {
			t.Fatalf("Options.Unimplemented names an unknown capability %q", c)
		}
	}
	s := &suite{t: t, newP: newProvider, opts: opts}
	tests := []struct {
		name string
		fn   func(*env)
	}{
		{"ReadUnknown", testReadUnknown},
		{"NNIFileProtocol", testNNIFileProtocol},
		{"StdoutProtocol", testStdoutProtocol},
		{"MetricRegexFinal", testMetricRegex},
		{"ConcurrentStartAdopts", testConcurrentStart},
		{"StartEndedDoesNotRerun", testStartEnded},
		{"FailingTrial", testFailing},
		{"StopKillsProcessGroup", testStopGroup},
		{"StopEscalatesToKill", testStopEscalates},
		{"ResumeAfterLoss", testResumeAfterLoss},
		{"MaxDuration", testMaxDuration},
		{"MetricOffsetsIncremental", testOffsets},
		{"NoShellInjection", testNoInjection},
		{"Logs", testLogs},
		{"List", testList},
		{"Import", testImport},
		{"StartRefusesOtherOwner", testOtherOwner},
		{"PurgeExperiment", testPurgeExperiment},
		{"KillNewSession", testKillNewSession},
		{"SpecDiff", testSpecDiff},
		{"Location", testLocation},
		{"TensorBoardSync", testTensorBoardSync},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if opts.Parallel {
				t.Parallel()
			}
			e := &env{t: t, s: s, p: newProvider(t), code: opts.CodeDir(t), exp: "conf-" + strings.ToLower(tt.name)}
			t.Cleanup(func() {
				// Stop what the test left running before its code dir goes.
				for _, id := range e.started {
					_ = e.p.Stop(context.Background(), providers.StopRequest{Experiment: e.exp, TrialID: id, Grace: time.Second})
				}
				e.p.Close()
			})
			tt.fn(e)
		})
	}
}

// env is one test's provider and code dir.
type env struct {
	t    *testing.T
	s    *suite
	p    providers.Provider
	code string
	exp  string

	mu      sync.Mutex
	started []string
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), e.s.opts.Timeout)
	e.t.Cleanup(cancel)
	return ctx
}

// script writes a file into the code dir and returns its path.
func (e *env) script(name, body string) string {
	e.t.Helper()
	p := filepath.Join(e.code, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) python() string {
	e.t.Helper()
	if e.s.opts.Python == "" {
		testdeps.Require(e.t, "python3", "not on PATH and not given in Options.Python")
	}
	return e.s.opts.Python
}

func (e *env) req(id, shell string) providers.StartRequest {
	return providers.StartRequest{
		Experiment: e.exp, ExperimentID: "eid-" + e.exp, TrialID: id, Seq: 4, ParameterID: 7,
		Params: map[string]any{"lr": 0.01, "opt": "adam"}, Shell: shell, CodeDir: e.code,
		Lineage: "lineage-" + e.exp, Generation: 1,
	}
}

func (e *env) start(req providers.StartRequest) providers.Handle {
	e.t.Helper()
	e.track(req.TrialID)
	h, err := e.p.Start(e.ctx(), req)
	if err != nil {
		e.t.Fatalf("Start %s: %v", req.TrialID, err)
	}
	if len(h) == 0 {
		e.t.Fatalf("Start %s returned an empty handle", req.TrialID)
	}
	return h
}

func (e *env) track(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.started {
		if s == id {
			return
		}
	}
	e.started = append(e.started, id)
}

func (e *env) stop(id string, purge bool) {
	e.t.Helper()
	if err := e.p.Stop(e.ctx(), providers.StopRequest{Experiment: e.exp, TrialID: id, Grace: e.s.opts.StopGrace, Purge: purge, Reason: "conformance stop"}); err != nil {
		e.t.Fatalf("Stop %s: %v", id, err)
	}
}

// collector reads a trial repeatedly, accumulating its metrics through the
// offsets, failing on a repeated record.
type collector struct {
	e       *env
	id      string
	offset  map[string]int64
	metrics []providers.Metric
	last    providers.Observation
}

func (e *env) collect(id string) *collector { return &collector{e: e, id: id} }

func (c *collector) read() providers.Observation {
	c.e.t.Helper()
	o, err := c.e.p.Read(c.e.ctx(), providers.ReadRequest{Experiment: c.e.exp, TrialID: c.id, MetricsOffset: c.offset})
	if err != nil {
		c.e.t.Fatalf("Read %s: %v", c.id, err)
	}
	for _, m := range o.Metrics {
		for _, old := range c.metrics {
			if m.Type == "PERIODICAL" && old.Type == "PERIODICAL" && m.Sequence == old.Sequence && m.Value == old.Value {
				c.e.t.Errorf("metric read twice: %+v", m)
			}
		}
	}
	c.metrics = append(c.metrics, o.Metrics...)
	if o.MetricsOffset != nil {
		c.offset = o.MetricsOffset
	}
	c.last = o
	return o
}

// until reads until cond holds; it fails the test after the timeout.
func (c *collector) until(what string, cond func(providers.Observation) bool) providers.Observation {
	c.e.t.Helper()
	deadline := time.Now().Add(c.e.s.opts.Timeout)
	wait := 5 * time.Millisecond
	for {
		o := c.read()
		if cond(o) {
			return o
		}
		if time.Now().After(deadline) {
			c.e.t.Fatalf("trial %s: waited %s for %s; last observation %s", c.id, c.e.s.opts.Timeout, what, show(o))
		}
		time.Sleep(wait)
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
}

func (c *collector) phase(p providers.Phase) providers.Observation {
	c.e.t.Helper()
	return c.until("phase "+string(p), func(o providers.Observation) bool {
		if o.Phase.Ended() && o.Phase != p {
			c.e.t.Fatalf("trial %s ended %s, want %s: %s", c.id, o.Phase, p, show(o))
		}
		return o.Phase == p
	})
}

func (c *collector) ended() providers.Observation {
	c.e.t.Helper()
	return c.until("the end", func(o providers.Observation) bool { return o.Phase.Ended() })
}

func show(o providers.Observation) string {
	code := "nil"
	if o.ExitCode != nil {
		code = fmt.Sprint(*o.ExitCode)
	}
	return fmt.Sprintf("{exists %v phase %q reason %q exit %s metrics %d}", o.Exists, o.Phase, o.Reason, code, len(o.Metrics))
}

// waitFile waits for a file the trial creates.
func (e *env) waitFile(path string) {
	e.t.Helper()
	deadline := time.Now().Add(e.s.opts.Timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("waited %s for %s", e.s.opts.Timeout, path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) touch(path string) {
	e.t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// pidGone waits until pid no longer exists (or is a zombie).
func (e *env) pidGone(pid int) bool {
	deadline := time.Now().Add(e.s.opts.Timeout)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := strings.LastIndexByte(string(b), ')'); i > 0 && len(b) > i+2 && (b[i+2] == 'Z' || b[i+2] == 'X') {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func mustJSONEq(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Errorf("%s: %q is not JSON: %v", what, got, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want %q", what, want)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

// checkMetrics compares metrics by type and value (JSON-equal), in order.
func checkMetrics(t *testing.T, got []providers.Metric, want ...providers.Metric) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d metrics %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i].Garbage != "" {
			t.Errorf("metric %d is garbage: %s", i, got[i].Garbage)
			continue
		}
		if got[i].Type != want[i].Type || got[i].ParameterID != want[i].ParameterID {
			t.Errorf("metric %d = %+v, want %+v", i, got[i], want[i])
		}
		if want[i].Type == "PERIODICAL" && got[i].Sequence != want[i].Sequence {
			t.Errorf("metric %d sequence %d, want %d", i, got[i].Sequence, want[i].Sequence)
		}
		mustJSONEq(t, fmt.Sprintf("metric %d value", i), got[i].Value, want[i].Value)
	}
}
