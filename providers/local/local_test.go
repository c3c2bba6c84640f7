package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/conformance"
)

// The test binary doubles as the supervisor (TRIALFORM_TEST_SUPERVISOR=1)
// and as a short-lived "CLI" that starts a trial and waits to be killed
// (TRIALFORM_TEST_CLI=ROOT).
func TestMain(m *testing.M) {
	if os.Getenv("TRIALFORM_TEST_SUPERVISOR") == "1" {
		os.Exit(SupervisorMain(os.Args[1:]))
	}
	if root := os.Getenv("TRIALFORM_TEST_CLI"); root != "" {
		os.Exit(fakeCLI(root, os.Args[1]))
	}
	os.Exit(m.Run())
}

func testConfig(t testing.TB) Config {
	dir := t.TempDir()
	return Config{
		Root:          filepath.Join(dir, "trials"),
		LibDir:        filepath.Join(dir, "lib"),
		Supervisor:    []string{os.Args[0]},
		SupervisorEnv: []string{"TRIALFORM_TEST_SUPERVISOR=1"},
		StopGrace:     2 * time.Second,
	}
}

// eventWait bounds a test's wait for an event (a phase, a file, a
// signal, a process's end): generous, since CI machines reach load
// average 70 on 2 cores; a passing run never waits it out.
const eventWait = 3 * time.Minute

// gated is a supervisor command that starts the real one (this test
// binary) only once the file gate exists: a supervisor that is still
// starting for as long as the test needs, whatever the load. The gate is
// opened when the test ends.
func gated(t testing.TB, gate string) []string {
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) })
	return []string{"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done; shift; exec "$0" "$@"`, os.Args[0], gate}
}

func newLocal(t testing.TB, mod func(*Config)) *Local {
	t.Helper()
	cfg := testConfig(t)
	if mod != nil {
		mod(&cfg)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopAll(l) })
	return l
}

// stopAll stops whatever a test left running.
func stopAll(l *Local) {
	exps, _ := os.ReadDir(l.cfg.Root)
	for _, e := range exps {
		trials, _ := os.ReadDir(filepath.Join(l.cfg.Root, e.Name()))
		for _, t := range trials {
			_ = l.Stop(context.Background(), providers.StopRequest{Experiment: e.Name(), TrialID: t.Name(), Grace: time.Second})
		}
	}
}

// loseTrial kills the supervisor and the trial's group with SIGKILL, as a
// machine crash would.
func loseTrial(t *testing.T, h providers.Handle) {
	sup, _ := strconv.Atoi(h["supervisor_pid"])
	pgid, _ := strconv.Atoi(h["pgid"])
	if sup <= 0 || pgid <= 0 {
		t.Fatalf("handle without pids: %v", h)
	}
	_ = syscall.Kill(sup, syscall.SIGKILL)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// localUnimplemented are the optional capabilities the local platform
// lacks, and why.
var localUnimplemented = map[string]string{
	conformance.CapSpecDiff:        "a trial is a process: there is no platform object to drift from its definition",
	conformance.CapLocation:        "every trial runs on this machine: there is nothing to name",
	conformance.CapTensorBoardSync: "trials write their TensorBoard logs on this machine, where they are read in place",
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) providers.Provider { return newLocal(t, nil) }, conformance.Options{
		Lose:          loseTrial,
		Parallel:      true,
		Unimplemented: localUnimplemented,
	})
}

// The same contract with a supervisor process per trial
// (TRIALFORM_LOCAL_SUPERVISOR=per-trial) instead of the host.
func TestConformancePerTrialSupervisor(t *testing.T) {
	conformance.Run(t, func(t *testing.T) providers.Provider {
		return newLocal(t, func(c *Config) { c.PerTrialSupervisor = true })
	}, conformance.Options{
		Lose:          loseTrial,
		Parallel:      true,
		Unimplemented: localUnimplemented,
	})
}

func req(l *Local, exp, id, shell string) providers.StartRequest {
	return providers.StartRequest{
		Experiment: exp, ExperimentID: "eid", TrialID: id, ParameterID: 3,
		Params: map[string]any{"lr": 0.5}, Shell: shell, CodeDir: filepath.Dir(l.cfg.Root),
	}
}

func waitEnded(t *testing.T, l *Local, exp, id string) providers.Observation {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: exp, TrialID: id})
		if err != nil {
			t.Fatal(err)
		}
		if o.Phase.Ended() || o.Phase == providers.PhaseLost {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial %s did not end: %+v", id, o)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"relative root", func(c *Config) { c.Root = "trials" }},
		{"relative lib", func(c *Config) { c.LibDir = "lib" }},
		{"duplicate gpus", func(c *Config) { c.GPUIndices = []int{0, 0} }},
		{"negative gpu", func(c *Config) { c.GPUIndices = []int{-1} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			tt.mod(&cfg)
			if _, err := New(cfg); err == nil || !providers.IsPermanent(err) {
				t.Errorf("New: %v, want a permanent error", err)
			}
		})
	}
	l := newLocal(t, nil)
	if err := l.Validate(context.Background()); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if l.Kind() != "local" {
		t.Errorf("Kind = %q", l.Kind())
	}
}

func TestStartRejectsBadRequests(t *testing.T) {
	l := newLocal(t, nil)
	good := req(l, "exp", "t1", "true")
	tests := []struct {
		name string
		mod  func(*providers.StartRequest)
	}{
		{"no command", func(r *providers.StartRequest) { r.Shell = "" }},
		{"both", func(r *providers.StartRequest) { r.Args = []string{"true"} }},
		{"relative code dir", func(r *providers.StartRequest) { r.CodeDir = "code" }},
		{"dotdot trial", func(r *providers.StartRequest) { r.TrialID = ".." }},
		{"slash experiment", func(r *providers.StartRequest) { r.Experiment = "a/b" }},
		{"bad regex", func(r *providers.StartRequest) { r.MetricRegex = "(" }},
		{"regex without value", func(r *providers.StartRequest) { r.MetricRegex = "(?P<name>x)" }},
	}
	for _, tt := range tests {
		r := good
		tt.mod(&r)
		if _, err := l.Start(context.Background(), r); err == nil || !providers.IsPermanent(err) {
			t.Errorf("%s: Start = %v, want a permanent error", tt.name, err)
		}
	}
}

func TestTrialDirFiles(t *testing.T) {
	l := newLocal(t, nil)
	r := req(l, "exp", "t1", "echo hi; echo oops >&2")
	r.Lineage = "lin"
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	o := waitEnded(t, l, "exp", "t1")
	if o.Phase != providers.PhaseSucceeded {
		t.Fatalf("%+v", o)
	}
	dir := filepath.Join(l.cfg.Root, "exp", "t1")
	for name, want := range map[string]string{
		"parameter.cfg": `{"parameter_id":3,"parameter_source":"algorithm","parameters":{"lr":0.5},"parameter_index":0}`,
		"params.json":   `{"lr":0.5}`,
		"stdout":        "hi\n",
		"stderr":        "oops\n",
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	var sp spec
	if err := readJSON(filepath.Join(dir, specFile), &sp); err != nil || sp.Lineage != "lin" || sp.Attempt != 1 || sp.ExperimentID != "eid" {
		t.Errorf("spec %+v, %v", sp, err)
	}
	// status.log: one record per change of the attempt, the last current.
	b, err := os.ReadFile(filepath.Join(dir, statusLog))
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var st status
		if err := json.Unmarshal([]byte(line), &st); err != nil || st.Attempt != 1 {
			t.Fatalf("status.log line %q: %v", line, err)
		}
		states = append(states, st.State)
	}
	if strings.Join(states, ",") != "starting,running,ended" {
		t.Errorf("status.log states %v, want starting,running,ended", states)
	}
	st, err := readStatus(dir)
	if err != nil || st == nil || st.State != stateEnded || st.PID == 0 || st.StartTime == 0 || st.SupervisorStart == 0 {
		t.Errorf("status %+v, %v", st, err)
	}
	// Nothing but these: every file a trial creates costs an inode (and
	// on ext4 without a journal, a scan past recently deleted ones), and
	// no temporary file is left or replaced per trial.
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), "output parameter.cfg params.json spec.json status.log stderr stdout"; got != want {
		t.Errorf("trial dir holds %q, want %q", got, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, outputDir)); err != nil || !fi.IsDir() {
		t.Errorf("output dir: %v", err)
	}
}

// The trial keeps running, and is adopted, when the process that started it
// is killed -9.
func TestTrialOutlivesCLI(t *testing.T) {
	cfg := testConfig(t)
	code := t.TempDir()
	cli := exec.Command(os.Args[0], code)
	cli.Env = append(os.Environ(), "TRIALFORM_TEST_CLI="+cfg.Root, "TRIALFORM_TEST_LIB="+cfg.LibDir)
	out, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, _ := out.Read(buf) // "started\n" once Start returned
	if !strings.HasPrefix(string(buf[:n]), "started") {
		cli.Process.Kill()
		cli.Wait()
		t.Fatalf("fake CLI said %q", buf[:n])
	}
	_ = cli.Process.Kill()
	_ = cli.Wait()

	l := newLocal(t, func(c *Config) { c.Root, c.LibDir = cfg.Root, cfg.LibDir })
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	if err != nil || o.Phase != providers.PhaseRunning {
		t.Fatalf("after the CLI died: %+v, %v", o, err)
	}
	r := req(l, "exp", "t1", "unused")
	r.CodeDir = code
	h, err := l.Start(context.Background(), r)
	if err != nil || h["pid"] != o.Handle["pid"] {
		t.Fatalf("adopt: %v, %v (was %v)", h, err, o.Handle)
	}
	if err := os.WriteFile(filepath.Join(code, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseSucceeded {
		t.Fatalf("%+v", o)
	}
}

func fakeCLI(root, code string) int {
	cfg := Config{Root: root, LibDir: os.Getenv("TRIALFORM_TEST_LIB"), Supervisor: []string{os.Args[0]}, SupervisorEnv: []string{"TRIALFORM_TEST_SUPERVISOR=1"}}
	l, err := New(cfg)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	r := req(l, "exp", "t1", "while [ ! -e go ]; do sleep 0.02; done")
	r.CodeDir = code
	if _, err := l.Start(context.Background(), r); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("started")
	time.Sleep(time.Hour)
	return 0
}

func TestGPUScheduling(t *testing.T) {
	l := newLocal(t, func(c *Config) { c.GPUIndices = []int{0, 1} })
	code := t.TempDir()
	start := func(id string, gpus int) (providers.Handle, error) {
		r := req(l, "exp", id, `echo "$CUDA_VISIBLE_DEVICES" > `+id+`.cuda; while [ ! -e go ]; do sleep 0.02; done`)
		r.CodeDir = code
		r.GPUs = gpus
		return l.Start(context.Background(), r)
	}
	cuda := func(id string) string {
		p := filepath.Join(code, id+".cuda")
		deadline := time.Now().Add(eventWait)
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(p); err == nil && strings.HasSuffix(string(b), "\n") {
				return strings.TrimSpace(string(b))
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s never wrote CUDA_VISIBLE_DEVICES", id)
		return ""
	}
	if _, err := start("a", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := start("b", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := start("nogpu", 0); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{cuda("a"): true, cuda("b"): true}
	if !got["0"] || !got["1"] {
		t.Errorf("two one-GPU trials got %v, want 0 and 1", got)
	}
	if c := cuda("nogpu"); c != "" {
		t.Errorf("a trial without GPUs saw CUDA_VISIBLE_DEVICES=%q", c)
	}
	_, err := start("c", 1)
	if !errors.Is(err, providers.ErrNoCapacity) || !strings.Contains(err.Error(), "no free GPU: 2/2 busy") {
		t.Fatalf("third trial: %v, want ErrNoCapacity", err)
	}
	if _, err := start("big", 3); err == nil || !providers.IsPermanent(err) {
		t.Errorf("a trial needing 3 of 2 GPUs: %v, want a permanent error", err)
	}
	// Stopping one frees its GPU.
	if err := l.Stop(context.Background(), providers.StopRequest{Experiment: "exp", TrialID: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := start("c", 1); err != nil {
		t.Fatalf("after a GPU was freed: %v", err)
	}
	if c := cuda("c"); !got[c] {
		t.Errorf("c got GPU %q", c)
	}

	l2 := newLocal(t, func(c *Config) { c.GPUIndices = []int{0}; c.MaxTrialsPerGPU = 2 })
	for i, id := range []string{"x", "y", "z"} {
		r := req(l2, "exp", id, "sleep 1000")
		r.GPUs = 1
		_, err := l2.Start(context.Background(), r)
		if (err == nil) != (i < 2) {
			t.Errorf("trial %d on a GPU shared by 2: %v", i, err)
		}
	}
}

func TestStopOfTrialWithoutSupervisor(t *testing.T) {
	l := newLocal(t, nil)
	h, err := l.Start(context.Background(), req(l, "exp", "t1", "sleep 1000"))
	if err != nil {
		t.Fatal(err)
	}
	sup, _ := strconv.Atoi(h["supervisor_pid"])
	_ = syscall.Kill(sup, syscall.SIGKILL)
	o, _ := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	deadline := time.Now().Add(eventWait)
	for o.Reason == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		o, _ = l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	}
	if o.Phase != providers.PhaseRunning || !strings.Contains(o.Reason, "without its supervisor") {
		t.Fatalf("after killing the supervisor: %+v", o)
	}
	if err := l.Stop(context.Background(), providers.StopRequest{Experiment: "exp", TrialID: "t1", Grace: time.Second}); err != nil {
		t.Fatal(err)
	}
	o, _ = l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	if o.Phase != providers.PhaseKilled {
		t.Errorf("after Stop: %+v", o)
	}
	pgid, _ := strconv.Atoi(h["pgid"])
	if groupAlive(pgid) {
		t.Errorf("trial group %d survived", pgid)
	}
}

func TestMetricsAcrossAttempts(t *testing.T) {
	l := newLocal(t, nil)
	code := t.TempDir()
	// Attempt 1 writes an NNI record and hangs; attempt 2 writes another.
	script := `
mkdir -p "$NNI_SYS_DIR/.nni"
if [ -e "$NNI_OUTPUT_DIR/one" ]; then v=2; else v=1; touch "$NNI_OUTPUT_DIR/one"; fi
rec="{\"parameter_id\": 3, \"type\": \"PERIODICAL\", \"sequence\": 0, \"value\": \"$v\"}"
printf 'ME%06d%s\n' $(( ${#rec} + 1 )) "$rec" > "$NNI_SYS_DIR/.nni/metrics"
[ $v = 1 ] && sleep 1000
exit 0`
	r := req(l, "exp", "t1", script)
	r.CodeDir = code
	h, err := l.Start(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	var off map[string]int64
	var vals []string
	read := func() providers.Observation {
		o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1", MetricsOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range o.Metrics {
			vals = append(vals, m.Value)
		}
		off = o.MetricsOffset
		return o
	}
	deadline := time.Now().Add(eventWait)
	for len(vals) == 0 && time.Now().Before(deadline) {
		read()
		time.Sleep(10 * time.Millisecond)
	}
	loseTrial(t, h)
	for o := read(); o.Phase != providers.PhaseLost; o = read() {
		time.Sleep(10 * time.Millisecond)
	}
	r.Resume = true
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, l, "exp", "t1")
	read()
	if strings.Join(vals, ",") != "1,2" {
		t.Errorf("metrics over two attempts = %v, want [1 2]", vals)
	}
	if _, err := os.Stat(filepath.Join(l.cfg.Root, "exp", "t1", ".nni", "metrics.1")); err != nil {
		t.Errorf("attempt 1's NNI file was not archived: %v", err)
	}
	off = nil
	vals = nil
	read()
	if strings.Join(vals, ",") != "1,2" {
		t.Errorf("fresh read over two attempts = %v, want [1 2]", vals)
	}
}

// runPython runs a Python trial through the provider and returns its end
// observation and all metrics.
func runPython(t *testing.T, l *Local, id, script string, env map[string]string) (providers.Observation, []providers.Metric) {
	t.Helper()
	py := testdeps.Python3(t)
	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "trial.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	r := req(l, "exp", id, py+" trial.py")
	r.CodeDir = code
	r.Env = env
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, l, "exp", id)
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: id})
	if err != nil {
		t.Fatal(err)
	}
	if o.Phase != providers.PhaseSucceeded {
		b, _ := os.ReadFile(filepath.Join(l.cfg.Root, "exp", id, "stderr"))
		t.Fatalf("python trial %s: %+v\nstderr:\n%s", id, o, b)
	}
	return o, o.Metrics
}

func values(ms []providers.Metric) string {
	var s []string
	for _, m := range ms {
		if m.Garbage != "" {
			s = append(s, "garbage:"+m.Garbage)
			continue
		}
		s = append(s, fmt.Sprintf("%s/%d/%d=%s", m.Type, m.Sequence, m.ParameterID, m.Value))
	}
	return strings.Join(s, " ")
}

// Unmodified NNI trial scripts run through the stand-in nni package.
func TestNNIShim(t *testing.T) {
	l := newLocal(t, nil)
	shim := map[string]string{"TRIALFORM_NNI_SHIM": "1"}
	tests := []struct {
		name, script, want string
		env                map[string]string
	}{
		{"float", `
import nni
p = nni.get_next_parameter()
assert p == {"lr": 0.5}, p
assert nni.get_next_parameter() is None
assert nni.get_current_parameter("lr") == 0.5
assert nni.get_trial_id() == "float" and nni.get_experiment_id() == "eid" and nni.get_sequence_id() == 0
nni.report_intermediate_result(0.1)
nni.report_intermediate_result(0.2)
nni.report_final_result(p["lr"])
`, "PERIODICAL/0/3=0.1 PERIODICAL/1/3=0.2 FINAL/0/3=0.5", shim},
		{"dict with default", `
import nni
nni.get_next_parameter()
nni.report_intermediate_result({"default": 0.3, "loss": 1.5})
nni.report_final_result({"default": 0.9, "loss": 0.25})
`, `PERIODICAL/0/3={"default":0.3,"loss":1.5} FINAL/0/3={"default":0.9,"loss":0.25}`, shim},
		{"nan", `
import nni
nni.get_next_parameter()
nni.report_intermediate_result(float("nan"))
nni.report_final_result({"default": float("inf"), "x": float("-inf")})
`, `PERIODICAL/0/3=null FINAL/0/3={"default":null,"x":null}`, shim},
		{"report without get_next_parameter", `
import nni
nni.report_final_result(1)
`, "FINAL/0/3=1", shim},
		{"non-local platform prints NNISDK lines", `
import nni
nni.get_next_parameter()
nni.report_final_result({"default": 0.5, "s": "it's"})
`, `FINAL/0/3={"default":0.5,"s":"it's"}`, map[string]string{"TRIALFORM_NNI_SHIM": "1"}},
		{"merge_parameter", `
import argparse, nni
from nni.utils import merge_parameter
args = argparse.Namespace(lr=0.1, epochs=3)
merge_parameter(args, nni.get_next_parameter())
assert args.lr == 0.5 and args.epochs == 3
nni.report_final_result(args.lr)
`, "FINAL/0/3=0.5", shim},
		{"real nni found elsewhere on sys.path", `
import sys, os
# A fake "installed" nni after the stand-in on sys.path.
fake = os.path.join(os.getcwd(), "site")
os.makedirs(os.path.join(fake, "nni"), exist_ok=True)
open(os.path.join(fake, "nni", "__init__.py"), "w").write("from .trial import VALUE\nimport nni.trial as t\nREAL = t.VALUE\n")
open(os.path.join(fake, "nni", "trial.py"), "w").write("VALUE = True\n")
sys.path.append(fake)
import nni
assert getattr(nni, "REAL", False), nni.__file__
import nni.trial
assert nni.trial.VALUE
import trialform
trialform.report(1)
`, "FINAL/0/3=1", nil},
		{"trialform helper", `
import trialform
p = trialform.get_params()
assert p == {"lr": 0.5}, p
assert trialform.get_trial_id() == "trialform helper"[:0] + "trialform-helper"
trialform.report_intermediate({"loss": 0.5})
trialform.report_intermediate(float("nan"))
print("trialform", "unrelated")
trialform.report({"default": p["lr"], "acc": 0.75})
`, `PERIODICAL/0/3={"loss":0.5} PERIODICAL/1/3=null FINAL/0/3={"default":0.5,"acc":0.75}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := strings.ReplaceAll(tt.name, " ", "-")
			if tt.name == "float" {
				id = "float"
			}
			script := tt.script
			if strings.HasPrefix(tt.name, "non-local") {
				script = "import os\nos.environ['NNI_PLATFORM'] = 'remote'\n" + script
			}
			_, ms := runPython(t, l, id, script, tt.env)
			if got := values(ms); got != tt.want {
				t.Errorf("metrics:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// The stand-in writes exactly NNI's framing (checked byte for byte), with
// trialform's one extension: "time", when the result was reported.
func TestNNIShimFileFormat(t *testing.T) {
	l := newLocal(t, nil)
	runPython(t, l, "fmt", `
import nni
nni.get_next_parameter()
nni.report_final_result(0.5)
`, map[string]string{"TRIALFORM_NNI_SHIM": "1"})
	b, err := os.ReadFile(filepath.Join(l.cfg.Root, "exp", "fmt", ".nni", "metrics"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`, "time": ([0-9]+\.[0-9]+)\}\n$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("metrics file %q: no time at the end of the record", b)
	}
	rec := `{"parameter_id": 3, "trial_job_id": "fmt", "type": "FINAL", "sequence": 0, "value": "0.5", "time": ` + string(m[1]) + "}\n"
	want := fmt.Sprintf("ME%06d%s", len(rec), rec)
	if string(b) != want {
		t.Errorf("metrics file:\n got %q\nwant %q", b, want)
	}
	var x map[string]any
	if err := json.Unmarshal([]byte(rec), &x); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkStartToExit(b *testing.B) {
	l := newLocal(b, nil)
	code := b.TempDir()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := "t" + strconv.Itoa(i)
		r := req(l, "bench", id, "true")
		r.CodeDir = code
		if _, err := l.Start(ctx, r); err != nil {
			b.Fatal(err)
		}
		for {
			o, err := l.Read(ctx, providers.ReadRequest{Experiment: "bench", TrialID: id})
			if err != nil {
				b.Fatal(err)
			}
			if o.Phase.Ended() {
				if o.Phase != providers.PhaseSucceeded {
					b.Fatalf("%+v", o)
				}
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func TestChangedAfterTrialEnds(t *testing.T) {
	l := newLocal(t, nil)
	select {
	case <-l.Changed():
		t.Fatal("Changed fired before any trial")
	default:
	}
	if _, err := l.Start(context.Background(), req(l, "exp", "t1", "true")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Changed():
	case <-time.After(eventWait):
		t.Fatal("Changed did not fire after the trial ended")
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseSucceeded {
		t.Errorf("%+v", o)
	}
}

// A spec without a status (the CLI died between writing the spec and the
// supervisor starting) reads as lost, and Start launches it.
func TestSpecWithoutStatusIsLost(t *testing.T) {
	l := newLocal(t, nil)
	r := req(l, "exp", "t1", "true")
	dir := filepath.Join(l.cfg.Root, "exp", "t1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(filepath.Join(dir, specFile), &spec{Experiment: "exp", TrialID: "t1", Attempt: 1, Lineage: "x"}); err != nil {
		t.Fatal(err)
	}
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	if err != nil || !o.Exists || o.Phase != providers.PhaseLost || o.Lineage != "x" {
		t.Fatalf("Read = %+v, %v", o, err)
	}
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseSucceeded || o.Handle["attempt"] != "2" {
		t.Errorf("%+v", o)
	}
}

// cudaCount is a trial that prints how many CUDA devices the driver API
// shows it (CUDA_VISIBLE_DEVICES applies there).
const cudaCount = `
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) in (0, 100), "cuInit failed"  # 100: no device visible
n = ctypes.c_int(0)
cuda.cuDeviceGetCount(ctypes.byref(n))
print("trialform: %d" % n.value)
`

// On a machine with an NVIDIA GPU: a trial given GPU 0 sees one device, a
// trial given none sees none.
func TestRealGPUVisibility(t *testing.T) {
	py := testdeps.Python3(t)
	if err := exec.Command(py, "-c", `import ctypes; ctypes.CDLL("libcuda.so.1")`).Run(); err != nil {
		testdeps.Hardware(t, "an NVIDIA GPU", "python3 cannot load libcuda.so.1 (no CUDA driver)")
	}
	l := newLocal(t, func(c *Config) { c.GPUIndices = []int{0} })
	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "count.py"), []byte(cudaCount), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		gpus int
		want string
	}{{1, "1"}, {0, "0"}} {
		id := "gpu" + strconv.Itoa(tt.gpus)
		r := req(l, "exp", id, py+" count.py")
		r.CodeDir, r.GPUs = code, tt.gpus
		if _, err := l.Start(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		waitEnded(t, l, "exp", id)
		o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: id})
		if err != nil || o.Phase != providers.PhaseSucceeded || len(o.Metrics) != 1 || o.Metrics[0].Value != tt.want {
			b, _ := os.ReadFile(filepath.Join(l.cfg.Root, "exp", id, "stderr"))
			t.Errorf("trial with %d GPUs: %+v, %v\n%s", tt.gpus, o, err, b)
		}
	}
}

// A CLI that dies while its supervisor is still starting (here: a
// supervisor slowed down by a shell) must not make the attempt look lost:
// Read and Start wait for the supervisor's first status, and the trial
// runs once.
func TestSlowSupervisorStartIsNotLost(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	l := newLocal(t, func(c *Config) { c.Supervisor = gated(t, gate) })
	runs := filepath.Join(filepath.Dir(l.cfg.Root), "runs.txt")
	r := req(l, "slow", "t0000", "echo run >> "+runs+"; echo 'trialform: 1'")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	_, err := l.Start(ctx, r)
	cancel()
	if err == nil {
		t.Fatal("Start returned before the slow supervisor started the trial")
	}
	// The "CLI" gave up (as if killed); the supervisor is still starting
	// (and is let go on: Read waits for its first status).
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "slow", TrialID: "t0000"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Phase == providers.PhaseLost {
		t.Fatalf("a trial whose supervisor is still starting was reported lost: %+v", o)
	}
	// A re-run's Start adopts it instead of launching a second attempt.
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if o := waitEnded(t, l, "slow", "t0000"); o.Phase != providers.PhaseSucceeded {
		t.Fatalf("ended %+v", o)
	}
	b, _ := os.ReadFile(runs)
	if n := strings.Count(string(b), "run"); n != 1 {
		t.Fatalf("the trial ran %d times, want 1", n)
	}
}
