package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// waitFile returns the trimmed content of path once it is not empty.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s stayed empty", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func pidIn(t *testing.T, path string) int {
	t.Helper()
	p, err := strconv.Atoi(waitFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// One host supervises the trials of one Local; stopping one trial stops
// that trial only.
func TestHostStopsOnlyTheTrialAsked(t *testing.T) {
	l := newLocal(t, nil)
	h1, err := l.Start(context.Background(), req(l, "exp", "t1", "sleep 1000"))
	if err != nil {
		t.Fatal(err)
	}
	h2, err := l.Start(context.Background(), req(l, "exp", "t2", "sleep 1000"))
	if err != nil {
		t.Fatal(err)
	}
	if h1["supervisor_pid"] != h2["supervisor_pid"] || h1["pid"] == h2["pid"] {
		t.Fatalf("handles %v and %v: want one supervisor, two trials", h1, h2)
	}
	if err := l.Stop(context.Background(), providers.StopRequest{Experiment: "exp", TrialID: "t1", Reason: "enough"}); err != nil {
		t.Fatal(err)
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseKilled || o.Reason != "enough" {
		t.Fatalf("t1 after Stop: %+v", o)
	}
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t2"})
	if err != nil || o.Phase != providers.PhaseRunning {
		t.Fatalf("t2 after t1's Stop: %+v, %v", o, err)
	}
	sup, _ := strconv.Atoi(h1["supervisor_pid"])
	if !alive(sup, 0) {
		t.Fatal("the host exited with a trial still running")
	}
}

// What a trial leaves in another session dies with it, and only its own:
// the other trial's stays until that trial ends.
func TestHostKillsOnlyItsTrialsOrphans(t *testing.T) {
	l := newLocal(t, nil)
	code := t.TempDir()
	r1 := req(l, "exp", "t1", `setsid sleep 1001 & echo $! > t1.orphan; while [ ! -e go ]; do sleep 0.02; done`)
	r2 := req(l, "exp", "t2", `setsid sleep 1002 & echo $! > t2.orphan; sleep 1000`)
	r1.CodeDir, r2.CodeDir = code, code
	for _, r := range []providers.StartRequest{r1, r2} {
		if _, err := l.Start(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	o1, o2 := pidIn(t, filepath.Join(code, "t1.orphan")), pidIn(t, filepath.Join(code, "t2.orphan"))
	if err := os.WriteFile(filepath.Join(code, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseSucceeded {
		t.Fatalf("t1: %+v", o)
	}
	if alive(o1, 0) {
		t.Errorf("t1's process in another session (%d) outlived t1", o1)
	}
	if !alive(o2, 0) {
		t.Fatalf("t2's process in another session (%d) died with t1", o2)
	}
	if err := l.Stop(context.Background(), providers.StopRequest{Experiment: "exp", TrialID: "t2"}); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, l, "exp", "t2")
	if alive(o2, 0) {
		t.Errorf("t2's process in another session (%d) outlived t2's stop", o2)
	}
}

// Closing the Local (the CLI exits) leaves the host supervising what
// runs; it records the end, then exits.
func TestHostOutlivesItsLocal(t *testing.T) {
	l := newLocal(t, nil)
	code := t.TempDir()
	r := req(l, "exp", "t1", `while [ ! -e go ]; do sleep 0.02; done; echo 'trialform: {"default": 0.25}'`)
	r.CodeDir = code
	h, err := l.Start(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	sup, _ := strconv.Atoi(h["supervisor_pid"])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !alive(sup, 0) {
		t.Fatal("the host exited with its trial running")
	}
	if err := os.WriteFile(filepath.Join(code, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l2 := newLocal(t, func(c *Config) { c.Root, c.LibDir = l.cfg.Root, l.cfg.LibDir })
	o := waitEnded(t, l2, "exp", "t1")
	if o.Phase != providers.PhaseSucceeded || len(o.Metrics) != 1 {
		t.Fatalf("after the Local closed: %+v", o)
	}
	deadline := time.Now().Add(eventWait)
	for alive(sup, 0) {
		if time.Now().After(deadline) {
			t.Fatal("the host did not exit once its last trial ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A supervisor killed between starting the trial and recording it leaves
// a trial nobody knows the pid of; the attempt is lost, and resuming it
// must first kill that process, or two attempts would run at once.
func TestResumeKillsTheLostAttemptsProcesses(t *testing.T) {
	l := newLocal(t, nil)
	h, err := l.Start(context.Background(), req(l, "exp", "t1", "sleep 1000"))
	if err != nil {
		t.Fatal(err)
	}
	sup, _ := strconv.Atoi(h["supervisor_pid"])
	pid, _ := strconv.Atoi(h["pid"])
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for alive(sup, 0) {
		time.Sleep(5 * time.Millisecond)
	}
	// As if the supervisor had died before its "running" record.
	dir := filepath.Join(l.cfg.Root, "exp", "t1")
	f, err := openStatusLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = appendStatus(f, &status{Attempt: 1, State: stateStarting, SupervisorPID: sup}, false)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	if err != nil || o.Phase != providers.PhaseLost {
		t.Fatalf("after the supervisor died unrecorded: %+v, %v", o, err)
	}
	r := req(l, "exp", "t1", "sleep 1000")
	r.Resume = true
	h2, err := l.Start(context.Background(), r)
	if err != nil || h2["attempt"] != "2" {
		t.Fatalf("resume: %v, %v", h2, err)
	}
	if alive(pid, 0) {
		t.Fatalf("attempt 1's process %d runs beside attempt 2", pid)
	}
}

// Start with Handoff returns once the host has the request; a Read at
// once sees the trial pending or running, never lost, and it ends with
// its result.
func TestStartHandoff(t *testing.T) {
	l := newLocal(t, nil)
	r := req(l, "exp", "t1", `echo 'trialform: {"default": 0.5}'`)
	r.Handoff = true
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	if err != nil || o.Phase == providers.PhaseLost || !o.Exists {
		t.Fatalf("right after a handed-off Start: %+v, %v", o, err)
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseSucceeded {
		t.Fatalf("%+v", o)
	}
}

// A Read of an attempt whose supervisor holds the launch lock (it has
// not written its first record yet) says pending at once, without
// waiting for the lock.
func TestReadDoesNotWaitForALaunch(t *testing.T) {
	l := newLocal(t, nil)
	if _, err := l.Start(context.Background(), req(l, "exp", "t1", "true")); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, l, "exp", "t1")
	dir := filepath.Join(l.cfg.Root, "exp", "t1")
	sp, err := readSpec(dir)
	if err != nil || sp == nil {
		t.Fatal(sp, err)
	}
	sp.Attempt = 2 // launched, not recorded yet
	if err := writeJSON(filepath.Join(dir, specFile), sp); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, statusLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	done := make(chan providers.Observation, 1)
	go func() {
		o, _ := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
		done <- o
	}()
	select {
	case o := <-done:
		if o.Phase != providers.PhasePending {
			t.Fatalf("Read during the launch: %+v", o)
		}
	case <-time.After(eventWait):
		t.Fatalf("Read still waits for the launch lock after %s", time.Since(begin))
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// A Stop right after a handed-off Start, while the host has not taken the
// attempt yet (it starts slowly here), reaches the trial: it ends stopped
// and does not run on.
func TestStopRightAfterHandoff(t *testing.T) {
	l := newLocal(t, func(c *Config) {
		c.Supervisor = []string{"sh", "-c", `sleep 0.7; exec "$0" "$@"`, os.Args[0]}
	})
	code := t.TempDir()
	r := req(l, "exp", "t1", `echo $$ > pid; sleep 1000`)
	r.CodeDir, r.Handoff = code, true
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := l.Stop(context.Background(), providers.StopRequest{Experiment: "exp", TrialID: "t1", Reason: "torn down"}); err != nil {
		t.Fatal(err)
	}
	o := waitEnded(t, l, "exp", "t1")
	if o.Phase != providers.PhaseKilled || o.Reason != "torn down" {
		t.Fatalf("after a Stop right after the Start: %+v", o)
	}
	if b, err := os.ReadFile(filepath.Join(code, "pid")); err == nil {
		if p, _ := strconv.Atoi(strings.TrimSpace(string(b))); p > 0 && alive(p, 0) {
			t.Fatalf("the trial %d runs on after its stop", p)
		}
	}
}

// A Read of an attempt this process handed to its host, which has not
// answered yet (it starts slowly here), says pending from what Start
// wrote: it does not even take the trial lock (held here by somebody
// else, it would wait for it).
func TestReadOfAHandedOffAttemptTouchesNoFile(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	l := newLocal(t, func(c *Config) { c.Supervisor = gated(t, gate) })
	r := req(l, "exp", "t1", `echo 'trialform: {"default": 0.5}'`)
	r.Handoff = true
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockDir(context.Background(), filepath.Join(l.cfg.Root, "exp", "t1"), syscall.LOCK_EX)
	if err != nil {
		t.Fatal(err)
	}
	// (A Read that took the lock would wait for it until ctx ends.)
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	o, err := l.Read(ctx, providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	cancel()
	unlock()
	if err != nil || o.Phase != providers.PhasePending || !o.Exists || o.Owner.ParamsDigest != providers.ParamsDigest(r.Params) {
		t.Fatalf("Read of a handed-off attempt the host has not answered: %+v, %v", o, err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseSucceeded {
		t.Fatalf("%+v", o)
	}
}

// A host that exits without taking the request (as one killed a moment
// before does: its socket closes a while after the process looks dead)
// started nothing: Start hands the attempt to the next host instead of
// failing.
func TestStartRetriesWhenTheHostDiesUnanswered(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "first-host-ran")
	l := newLocal(t, func(c *Config) {
		c.Supervisor = []string{"sh", "-c", `if [ -e "$MARKER" ]; then exec "$0" "$@"; fi; : > "$MARKER"; sleep 0.3`, os.Args[0]}
		c.SupervisorEnv = append(c.SupervisorEnv, "MARKER="+marker)
	})
	h, err := l.Start(context.Background(), req(l, "exp", "t1", `echo 'trialform: {"default": 0.5}'`))
	if err != nil {
		t.Fatalf("Start after a host that exited unanswered: %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the first host did not run: %v", err)
	}
	if h["pid"] == "" {
		t.Fatalf("handle %v", h)
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseSucceeded {
		t.Fatalf("%+v", o)
	}
}

// A process a trial starts in a new session right before it exits
// (`setsid cmd & exit`) may still be in an exec when the trial's end is
// handled, and /proc/PID/environ reads empty during an exec: killRest
// looks at such an orphan again instead of taking it for nobody's and
// leaving it running (TestConformance/KillNewSession failed so in CI, on a
// loaded machine where an exec takes milliseconds). The exec is played by
// an environment that reads empty three times.
func TestKillRestWaitsOutAnExec(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "1000")
	cmd.Env = append(os.Environ(), trialproto.EnvSysDir+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	other := exec.Command("sleep", "1000") // another trial's
	other.Env = append(os.Environ(), trialproto.EnvSysDir+"="+dir+"-other")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	reads := 0
	h := &host{mains: map[int]bool{}, trials: map[*hostTrial]bool{},
		listOrphans: func() []int { return []int{pid, other.Process.Pid} },
		environ: func(p int) ([]byte, error) {
			if p == pid {
				if reads++; reads <= 3 {
					return nil, nil
				}
			}
			return readEnviron(p)
		}}
	h.killRest(dir, eventWait)
	if alive(pid, 0) {
		t.Errorf("the trial's process (%d) outlived killRest after %d reads of its environment", pid, reads)
	}
	if !alive(other.Process.Pid, 0) {
		t.Errorf("another trial's process was killed")
	}
}

// Starts handed to the supervisor host at once never put more trials on a
// GPU than max_trials_per_gpu: a GPU counts as taken from its Start, not
// from when the host records the attempt (here the host starts only once
// every Start has returned).
func TestHandedOffStartsKeepTheGPULimit(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	l := newLocal(t, func(c *Config) {
		c.Supervisor = gated(t, gate)
		c.GPUIndices, c.MaxTrialsPerGPU = []int{0, 1}, 2
	})
	code := t.TempDir()
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "t" + strconv.Itoa(i)
			r := req(l, "exp", id, `echo "$CUDA_VISIBLE_DEVICES" > `+id+`.cuda; while [ ! -e go ]; do sleep 0.02; done`)
			r.CodeDir, r.GPUs, r.Handoff = code, 1, true
			_, errs[i] = l.Start(context.Background(), r)
		}()
	}
	wg.Wait()
	var started []string
	for i, err := range errs {
		switch {
		case err == nil:
			started = append(started, "t"+strconv.Itoa(i))
		case !errors.Is(err, providers.ErrNoCapacity):
			t.Fatalf("t%d: %v", i, err)
		}
	}
	if len(started) != 4 {
		t.Errorf("%d trials started on 2 GPUs of 2 trials each: %v", len(started), started)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	perGPU := map[string]int{}
	for _, id := range started {
		p := filepath.Join(code, id+".cuda")
		deadline := time.Now().Add(eventWait)
		for {
			if b, err := os.ReadFile(p); err == nil && strings.HasSuffix(string(b), "\n") {
				perGPU[strings.TrimSpace(string(b))]++
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never wrote CUDA_VISIBLE_DEVICES", id)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if perGPU["0"] > 2 || perGPU["1"] > 2 || len(perGPU) != 2 {
		t.Errorf("trials per CUDA_VISIBLE_DEVICES: %v, want 2 on each of 0 and 1", perGPU)
	}
	if err := os.WriteFile(filepath.Join(code, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range started {
		if o := waitEnded(t, l, "exp", id); o.Phase != providers.PhaseSucceeded {
			t.Fatalf("%s: %+v", id, o)
		}
	}
	// Ended, they free their GPUs.
	r := req(l, "exp", "after", "true")
	r.CodeDir, r.GPUs, r.Handoff = code, 2, true
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatalf("a trial after the others ended: %v", err)
	}
	if o := waitEnded(t, l, "exp", "after"); o.Phase != providers.PhaseSucceeded {
		t.Fatalf("%+v", o)
	}
}
