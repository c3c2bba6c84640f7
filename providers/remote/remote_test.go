package remote

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/codedir"
	"github.com/trialform/trialform/providers/conformance"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

var (
	labOnce sync.Once
	lab     *sshtest.Lab
	labErr  error
)

// testLab starts two sshd servers on 127.0.0.1 for the package's tests
// (stopped by TestMain).
func testLab(t testing.TB) *sshtest.Lab {
	t.Helper()
	testdeps.Require(t, "sshd", sshtest.Available())
	labOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trialform-sshlab-")
		if err != nil {
			labErr = err
			return
		}
		lab, labErr = sshtest.NewLab(dir, 2)
	})
	if labErr != nil {
		t.Fatalf("start sshd: %v", labErr)
	}
	return lab
}

func TestMain(m *testing.M) {
	if os.Getenv(hangEnv) != "" {
		os.Exit(sftpHangingAfterInit()) // this binary as an sftp subsystem (hung_test.go)
	}
	code := m.Run()
	if lab != nil {
		lab.Close()
		os.RemoveAll(lab.Dir)
	}
	os.Exit(code)
}

func labConfig(t testing.TB, l *sshtest.Lab) Config {
	// The machines share this file system: each gets its own work dir.
	dir := t.TempDir()
	// Before the dir goes: let the supervisors of ended trials finish
	// writing into it.
	t.Cleanup(func() {
		waitSupervisorsGone(dir)
		sshtest.KillUnder(dir) // what a failed test left running
	})
	// A machine a test stops and starts again is dialled again a second
	// after a failed dial, not 30 s (DefaultRedial).
	cfg := Config{Name: "lab", KnownHosts: l.KnownHosts, StopGrace: 2 * time.Second, Redial: time.Second}
	for _, s := range l.Servers {
		cfg.Machines = append(cfg.Machines, Machine{Host: s.Host, Port: s.Port, User: l.User, KeyFile: l.KeyFile, MaxTrials: 8,
			WorkDir: filepath.Join(dir, "work-"+s.Name)})
	}
	return cfg
}

func newRemote(t testing.TB, cfg Config) *Remote {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// loseTrial kills the supervisor and the trial's group, as a reboot would
// (the machines are this one).
func loseTrial(t *testing.T, h providers.Handle) {
	for _, k := range []string{"supervisor_pid"} {
		if pid, err := strconv.Atoi(h[k]); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if pg, err := strconv.Atoi(h["pgid"]); err == nil && pg > 0 {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
}

func TestConformance(t *testing.T) {
	l := testLab(t)
	conformance.Run(t, func(t *testing.T) providers.Provider { return newRemote(t, labConfig(t, l)) }, conformance.Options{
		Lose:       loseTrial,
		Parallel:   true,
		CodeCopied: true,
		Unimplemented: map[string]string{
			conformance.CapSpecDiff: "a trial is a process on a machine: there is no platform object to drift from its definition",
		},
	})
}

func TestUnknownHostKeyRefused(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	// Only the second server is known.
	if err := os.WriteFile(kh, []byte(sshtest.KnownHostsLine(l.Servers[1].Host, l.Servers[1].Port, l.Servers[1].HostKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.KnownHosts = kh
	want := "ssh-keyscan -p " + strconv.Itoa(l.Servers[0].Port) + " 127.0.0.1 >> " + kh
	// The other machine is used: a warning says what to do.
	r := newRemote(t, cfg)
	if err := r.Validate(context.Background()); err != nil {
		t.Errorf("Validate with one unknown host key of two: %v", err)
	}
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, want) {
		t.Errorf("warnings %q do not say %q", w, want)
	}
	only := cfg
	only.Machines = cfg.Machines[:1]
	err := newRemote(t, only).Validate(context.Background())
	if err == nil {
		t.Fatal("Validate with an unknown host key: want an error")
	}
	if !strings.Contains(err.Error(), want) || !providers.IsPermanent(err) {
		t.Errorf("error %q (permanent %v) does not say %q", err, providers.IsPermanent(err), want)
	}
	// A wrong key is refused too, as a mismatch.
	other := l.Servers[1].HostKey
	if err := os.WriteFile(kh, []byte(sshtest.KnownHostsLine(l.Servers[0].Host, l.Servers[0].Port, other)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Machines = cfg.Machines[:1]
	r2 := newRemote(t, cfg)
	if err := r2.Validate(context.Background()); err == nil || !strings.Contains(err.Error(), "HOST KEY MISMATCH") {
		t.Errorf("mismatching host key: %v", err)
	}
}

// eventWait bounds a test's wait for an event (a phase, a file, a
// process's end) or one call: generous, since CI machines reach load
// average 70 on 2 cores; a passing run never waits it out.
const eventWait = 3 * time.Minute

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), eventWait)
	t.Cleanup(cancel)
	return c
}

func trialReq(exp, id, shell, code string) providers.StartRequest {
	return providers.StartRequest{Experiment: exp, ExperimentID: "eid", TrialID: id, ParameterID: 1,
		Params: map[string]any{"x": 1}, Shell: shell, CodeDir: code, Lineage: "lin"}
}

// waitPhase reads until the trial reaches phase p.
func waitPhase(t *testing.T, r *Remote, exp, id string, p providers.Phase) providers.Observation {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		o, err := r.Read(ctx(t), providers.ReadRequest{Experiment: exp, TrialID: id})
		if err == nil && o.Phase == p {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial %s/%s: want %s, last %+v err %v", exp, id, p, o, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func logs(t *testing.T, r *Remote, exp, id string) string {
	t.Helper()
	var b strings.Builder
	if err := r.Logs(ctx(t), providers.LogsRequest{Experiment: exp, TrialID: id, Out: &b}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestCodeUploadIgnoresAndCopies(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	code := t.TempDir()
	files := map[string]string{
		"train.py":          "print('hi')\n",
		"pkg/util.py":       "x = 1\n",
		"data/big.bin":      "data",
		"model.ckpt":        "weights",
		"secret.txt":        "s3cret",
		".trialformignore":  "# what trials do not need\ndata/\n*.ckpt\n",
		".nniignore":        "secret.txt\n",
		".trialform/x.json": "{}",
	}
	for name, body := range files {
		p := filepath.Join(code, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The first trial changes its copy; the second must not see that.
	if _, err := r.Start(ctx(t), trialReq("up", "t1", "find . -type f | sort; echo changed > train.py", code)); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "up", "t1", providers.PhaseSucceeded)
	if _, err := r.Start(ctx(t), trialReq("up", "t2", "cat train.py", code)); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "up", "t2", providers.PhaseSucceeded)
	got := logs(t, r, "up", "t1")
	for _, want := range []string{"./train.py", "./pkg/util.py", "./.trialformignore"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("uploaded files %q lack %s", got, want)
		}
	}
	for _, not := range []string{"big.bin", "model.ckpt", "secret.txt", "x.json"} {
		if strings.Contains(got, not) {
			t.Errorf("uploaded files %q include ignored %s", got, not)
		}
	}
	if got := logs(t, r, "up", "t2"); got != "print('hi')\n" {
		t.Errorf("second trial's copy: %q", got)
	}
	// One upload serves both trials.
	ents, err := os.ReadDir(filepath.Join(cfg.Machines[0].WorkDir, "code"))
	if err != nil || len(ents) != 1 {
		t.Errorf("code uploads: %v %v", ents, err)
	}
}

// The limits are providers/codedir's (tested there); the bundle keeps them.
func TestCodeLimits(t *testing.T) {
	big := t.TempDir()
	f, err := os.Create(filepath.Join(big, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(codedir.MaxBytes + 1) // sparse
	f.Close()
	if _, err := codeBundle(big); err == nil || !strings.Contains(err.Error(), "300 MB") || !strings.Contains(err.Error(), ".trialformignore") {
		t.Errorf("301 MB: %v", err)
	}
}

func TestNoFreeSlotSaysWhy(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	for i := range cfg.Machines {
		cfg.Machines[i].MaxTrials = 1
	}
	r := newRemote(t, cfg)
	code := t.TempDir()
	machines := map[string]bool{}
	for _, id := range []string{"t1", "t2"} {
		h, err := r.Start(ctx(t), trialReq("full", id, "sleep 300", code))
		if err != nil {
			t.Fatal(err)
		}
		machines[h["machine"]] = true
		t.Cleanup(func() {
			r.Stop(context.Background(), providers.StopRequest{Experiment: "full", TrialID: id, Grace: time.Second})
		})
	}
	if len(machines) != 2 {
		t.Errorf("two trials with one slot per machine went to %v", machines)
	}
	_, err := r.Start(ctx(t), trialReq("full", "t3", "true", code))
	want := "no free slot on lab: " + l.Servers[0].Addr() + " 1/1 busy, " + l.Servers[1].Addr() + " 1/1 busy"
	if !errors.Is(err, providers.ErrNoCapacity) || !strings.Contains(err.Error(), want) {
		t.Fatalf("third trial: %v, want %q", err, want)
	}
	// A slot frees when a trial ends.
	if err := r.Stop(ctx(t), providers.StopRequest{Experiment: "full", TrialID: "t1", Grace: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(ctx(t), trialReq("full", "t3", "true", code)); err != nil {
		t.Errorf("after a stop: %v", err)
	}
}

func TestGPUSlotsAndPythonPath(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	cfg.Machines[0].GPUIndices = []int{0, 1}
	cfg.Machines[0].PythonPath = "/opt/my env/bin"
	r := newRemote(t, cfg)
	code := t.TempDir()
	seen := map[string]bool{}
	for _, id := range []string{"g1", "g2"} {
		req := trialReq("gpu", id, `echo "cuda=$CUDA_VISIBLE_DEVICES path=$PATH"; sleep 300`, code)
		req.GPUs = 1
		if _, err := r.Start(ctx(t), req); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			r.Stop(context.Background(), providers.StopRequest{Experiment: "gpu", TrialID: id, Grace: time.Second})
		})
		deadline := time.Now().Add(eventWait)
		out := ""
		for !strings.Contains(out, "\n") {
			if time.Now().After(deadline) {
				t.Fatalf("%s printed nothing in %s", id, eventWait)
			}
			time.Sleep(20 * time.Millisecond)
			out = logs(t, r, "gpu", id)
		}
		cuda, _, _ := strings.Cut(strings.TrimPrefix(out, "cuda="), " ")
		seen[cuda] = true
		if !strings.Contains(out, "path=/opt/my env/bin:") {
			t.Errorf("python_path not first in PATH: %q", out)
		}
	}
	if !seen["0"] || !seen["1"] {
		t.Errorf("two 1-GPU trials got CUDA_VISIBLE_DEVICES %v, want 0 and 1", seen)
	}
	req := trialReq("gpu", "g3", "true", code)
	req.GPUs = 1
	_, err := r.Start(ctx(t), req)
	if !errors.Is(err, providers.ErrNoCapacity) || !strings.Contains(err.Error(), "no free GPU on lab: "+l.Servers[0].Addr()+" 2/2 GPUs busy") {
		t.Errorf("third GPU trial: %v", err)
	}
	req.GPUs = 3
	if _, err := r.Start(ctx(t), req); err == nil || !providers.IsPermanent(err) {
		t.Errorf("3 GPUs on a 2-GPU machine: %v", err)
	}
}

func TestUnreachableMachineLostAfterGrace(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	srv := l.Servers[1]
	cfg.Machines = cfg.Machines[1:]
	// A long grace for the first run: its Read must see the machine down
	// within it, however slow a loaded machine makes that Read.
	cfg.LostGrace = time.Minute
	cfg.StateDir = t.TempDir()
	r := newRemote(t, cfg)
	code := t.TempDir()
	h, err := r.Start(ctx(t), trialReq("net", "t1", "sleep 300", code))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop(context.Background(), providers.StopRequest{Experiment: "net", TrialID: "t1", Grace: time.Second})
	srv.Stop()
	defer srv.Start()
	rr := providers.ReadRequest{Experiment: "net", TrialID: "t1", Handle: h}
	_, err = r.Read(ctx(t), rr)
	if err == nil || !strings.Contains(err.Error(), "its trials become LOST after lost_grace 1m0s") {
		t.Fatalf("Read right after the machine went away: %v", err)
	}
	// A later CLI run, with a grace of 1s, remembers since when (StateDir).
	cfg.LostGrace = time.Second
	r2 := newRemote(t, cfg)
	time.Sleep(1100 * time.Millisecond) // (at least: past the grace)
	o, err := r2.Read(ctx(t), rr)
	if err != nil || o.Phase != providers.PhaseLost || !strings.Contains(o.Reason, "unreachable for") {
		t.Fatalf("after lost_grace: %+v %v", o, err)
	}
	// Back (the process survived: a network outage, not a reboot): the
	// pooled connection is dialled again and the trial runs.
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// Past the re-dial back-off (Redial 1 s) one dial runs, in the
	// background: the reads say unreachable until it answered.
	deadline := time.Now().Add(eventWait)
	for {
		o, err = r2.Read(ctx(t), rr)
		if err == nil && o.Phase == providers.PhaseRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the machine came back: %+v %v", o, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Resume of a running trial adopts it.
	req := trialReq("net", "t1", "sleep 300", code)
	req.Resume, req.Handle = true, h
	h2, err := r2.Start(ctx(t), req)
	if err != nil || h2["pid"] != h["pid"] {
		t.Errorf("resume of a running trial: %v %v, want pid %s", h2, err, h["pid"])
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "unreachable.json")); err == nil {
		t.Error("unreachable.json left after the machine came back")
	}
}

// BenchmarkLaunch measures Start over SSH once the code and helpers are
// uploaded: one round trip (files + launch) and the supervisor start.
func BenchmarkLaunch(b *testing.B) {
	r := benchRemote(b)
	code := b.TempDir()
	os.WriteFile(filepath.Join(code, "train.py"), []byte("print(1)\n"), 0o644)
	if _, err := r.Start(context.Background(), trialReq("bench", "warm", "true", code)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Start(context.Background(), trialReq("bench", "t"+strconv.Itoa(i), "true", code)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/launch")
}

// BenchmarkLaunchParallel is BenchmarkLaunch with 16 Starts at once over
// both machines (apply's default parallelism): wall time per trial.
func BenchmarkLaunchParallel(b *testing.B) {
	l := testLab(b)
	cfg := labConfig(b, l)
	for i := range cfg.Machines {
		cfg.Machines[i].MaxTrials = 1 << 20
	}
	r := newRemote(b, cfg)
	code := b.TempDir()
	os.WriteFile(filepath.Join(code, "train.py"), []byte("print(1)\n"), 0o644)
	for i := range cfg.Machines {
		if _, err := r.Start(context.Background(), trialReq("benchp", "warm"+strconv.Itoa(i), "true", code)); err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	b.SetParallelism(8) // x GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := "t" + strconv.FormatInt(n.Add(1), 10)
			if _, err := r.Start(context.Background(), trialReq("benchp", id, "true", code)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/launch")
}

// namedBy says whether a process names dir on its command line (a
// supervisor, or its capping child, of a trial under dir).
func namedBy(dir string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), dir) {
			return true
		}
	}
	return false
}

// waitSupervisorsGone waits until no process names dir on its command
// line (up to eventWait; what is left then is killed).
func waitSupervisorsGone(dir string) {
	deadline := time.Now().Add(eventWait)
	for namedBy(dir) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// waitNoProcess waits until no process names dir on its command line: the
// supervisor of the trial in dir and its children have ended.
func waitNoProcess(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for namedBy(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("a process naming %s still runs after %s", dir, eventWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAgentAuth(t *testing.T) {
	l := testLab(t)
	agentBin := testdeps.LookPath(t, "ssh-agent")
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := exec.Command(agentBin, "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	// Ready once it accepts a connection: the socket file appears at
	// bind(), before listen(), and an ssh-add in between was refused
	// ("Error connecting to agent: Connection refused", once in CI).
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-agent does not accept connections on %s: %v", sock, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	add := exec.Command("ssh-add", l.KeyFile)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	cfg.Machines[0].KeyFile = ""
	r := newRemote(t, cfg)
	if err := r.Validate(ctx(t)); err != nil {
		t.Fatalf("login through the agent: %v", err)
	}
	// Without the agent and without a key, the error says what to set.
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("HOME", t.TempDir())
	r2 := newRemote(t, cfg)
	if err := r2.Validate(ctx(t)); err == nil || !strings.Contains(err.Error(), "set ssh_key_file or password") {
		t.Errorf("no credentials: %v", err)
	}
}

// BenchmarkReadParallel measures a refresh's Reads: 20 finished trials on
// one machine read 16 at once (plan's default read parallelism) over the
// pooled connection, wall time per trial read.
func BenchmarkReadParallel(b *testing.B) {
	r := benchRemote(b)
	code := b.TempDir()
	var reqs []providers.ReadRequest
	for i := range 20 {
		id := "t" + strconv.Itoa(i)
		h, err := r.Start(context.Background(), trialReq("benchr", id, "echo hello", code))
		if err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, providers.ReadRequest{Experiment: "benchr", TrialID: id, Handle: h})
	}
	deadline := time.Now().Add(eventWait)
	for _, rr := range reqs {
		for {
			o, err := r.Read(context.Background(), rr)
			if err == nil && o.Phase == providers.PhaseSucceeded {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: %s, %v", rr.TrialID, o.Phase, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var n atomic.Int64
	b.SetParallelism(8) // x GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rr := reqs[int(n.Add(1))%len(reqs)]
			if o, err := r.Read(context.Background(), rr); err != nil || o.Phase != providers.PhaseSucceeded {
				b.Errorf("%s: %s, %v", rr.TrialID, o.Phase, err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/read")
}

// benchRemote is a Remote on one lab machine that takes any number of
// trials, for the benchmarks.
func benchRemote(b *testing.B) *Remote {
	l := testLab(b)
	cfg := labConfig(b, l)
	cfg.Machines = cfg.Machines[:1]
	cfg.Machines[0].MaxTrials = 1 << 20
	return newRemote(b, cfg)
}
