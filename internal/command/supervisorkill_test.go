package command_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// TestKillSupervisorMidRun kills -9 the supervisor of a running trial
// while `apply -wait` runs (real processes; the test acts when the trial
// says, through a FIFO, that it runs). The trial is then let go. The end:
// exactly max_trials trials, all SUCCEEDED with their metric, no trial id
// twice. The supervisor is the host of every trial of the run: the
// attempts it had not seen end, whose exit nobody recorded, reported their
// final result (on stdout, after the kill for the blocked one): each ends
// SUCCEEDED after one attempt, with a reason that says its exit status was
// not recorded, and is not run again. No attempt ran twice, and every
// trial ran exactly once, but those being launched as the host was killed
// (lost before they ran, and resumed).
func TestKillSupervisorMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	dir := t.TempDir()
	const maxTrials = 6
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.hcl", `
search_space "s" {
  param "x" { uniform = [0, 1] }
}
experiment "k" {
  search_space = search_space.s
  tuner "random" {
    seed = 3
  }
  max_trials  = 6
  concurrency = 3
  trial {
    command = "python3 trial.py"
  }
}
`)
	// The first trial's first attempt tells the test it runs (its id, on
	// the FIFO), then waits for the release file.
	write("trial.py", `
import os, time, trialform
tid = os.environ["TRIALFORM_TRIAL_ID"]
with open("runs.log", "a") as f:
    f.write(tid + "\n")
if os.environ["NNI_TRIAL_SEQ_ID"] == "0" and not os.path.exists("released"):
    with open("started.fifo", "w") as f:
        f.write(tid + "\n")
    while not os.path.exists("released"):
        time.sleep(0.01)
trialform.report(trialform.get_params()["x"])
`)
	if err := syscall.Mkfifo(filepath.Join(dir, "started.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "trialform")
	cmd := exec.Command(bin, "apply", "-auto-approve", "-wait", "-interval=100ms")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()

	// Blocks until the trial opens the FIFO.
	fifo, err := os.Open(filepath.Join(dir, "started.fifo"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := bufio.NewReader(fifo).ReadString('\n')
	fifo.Close()
	if err != nil {
		t.Fatal(err)
	}
	id = strings.TrimSpace(id)
	// The supervisor records the running attempt right after starting
	// the trial, which may be just after the trial wrote to the FIFO.
	statusPath := filepath.Join(dir, ".trialform", "trials", "k", id, "status.log")
	var st struct {
		State         string `json:"state"`
		SupervisorPID int    `json:"supervisor_pid"`
		PID           int    `json:"pid"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile(statusPath)
		// One JSON record per line; the last complete one is current.
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if err == nil && json.Unmarshal([]byte(lines[len(lines)-1]), &st) == nil && st.State == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial %s: no running status in %s: %v %s", id, statusPath, err, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(st.SupervisorPID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill supervisor %d: %v", st.SupervisorPID, err)
	}
	// The trial outlives its supervisor.
	if err := syscall.Kill(st.PID, 0); err != nil {
		t.Fatalf("the trial %d died with its supervisor: %v", st.PID, err)
	}
	// SIGKILL is delivered asynchronously: until the host is really gone,
	// a thread of it may still append a record, and its socket is open
	// (a request sent then is lost with it: that trial's attempt is lost
	// and resumed, which the snapshot below could not foresee). The
	// leader shows Z while other threads are still exiting: wait for the
	// last one.
	for deadline := time.Now().Add(30 * time.Second); ; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", st.SupervisorPID))
		tasks, terr := os.ReadDir(fmt.Sprintf("/proc/%d/task", st.SupervisorPID))
		if err != nil || (strings.Contains(string(b), ") Z ") && (terr != nil || len(tasks) <= 1)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed supervisor %d is still there", st.SupervisorPID)
		}
		time.Sleep(time.Millisecond)
	}
	// The supervisor is the host of every trial this apply started: each
	// attempt it had not seen end is over without a record, and resumed.
	// hit: the trials the killed host ran (its status of an attempt
	// running); unsure: the trials being launched (a spec without the
	// status of its attempt yet, or the host's "starting").
	hit, unsure := map[string]bool{}, map[string]bool{}
	snap := map[string]string{} // status.log at the snapshot, for failures
	trialsDir := filepath.Join(dir, ".trialform", "trials", "k")
	ents, _ := os.ReadDir(trialsDir)
	for _, e := range ents {
		var sp struct {
			Attempt int `json:"attempt"`
		}
		b, err := os.ReadFile(filepath.Join(trialsDir, e.Name(), "spec.json"))
		if err != nil || json.Unmarshal(b, &sp) != nil {
			continue // no attempt launched yet
		}
		var last struct {
			Attempt       int    `json:"attempt"`
			State         string `json:"state"`
			SupervisorPID int    `json:"supervisor_pid"`
		}
		b, _ = os.ReadFile(filepath.Join(trialsDir, e.Name(), "status.log"))
		snap[e.Name()] = string(b)
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
		switch {
		case last.Attempt == sp.Attempt && last.SupervisorPID == st.SupervisorPID && last.State == "running":
			hit[e.Name()] = true
		case last.Attempt != sp.Attempt || (last.SupervisorPID == st.SupervisorPID && last.State == "starting") || sp.Attempt > 1:
			// Being launched: by the killed host (its start then failed,
			// or it is lost before running, and started again) or already
			// by the next one; or (sp.Attempt > 1) already resumed, while
			// the host's last threads exited, from an attempt it had.
			unsure[e.Name()] = true
		}
	}
	if !hit[id] {
		t.Fatalf("the blocked trial %s is not among the killed host's: %v", id, hit)
	}
	write("released", "")

	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("apply: %v\n%s", err, out.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("apply did not finish\n%s", out.String())
	}

	s, err := state.NewManager(filepath.Join(dir, ".trialform")).Load()
	if err != nil {
		t.Fatal(err)
	}
	e := s.Experiments["k"]
	if e == nil || len(e.Trials) != maxTrials {
		t.Fatalf("state has %v trials, want %d\n%s", e, maxTrials, out.String())
	}
	runs, err := os.ReadFile(filepath.Join(dir, "runs.log"))
	if errors.Is(err, os.ErrNotExist) || err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range strings.Fields(string(runs)) {
		seen[r]++
	}
	for tid, tr := range e.Trials {
		if tr.Status != state.Succeeded || tr.Value == nil {
			t.Errorf("trial %s: %s (%s), value %v", tid, tr.Status, tr.Reason, tr.Value)
		}
		switch {
		case hit[tid]:
			// Its supervisor was killed while it ran (the blocked trial
			// among them): it reported its final result and ended, and
			// is not run again.
			if tr.Attempts != 1 || seen[tid] != 1 || !strings.Contains(tr.Reason, "exit status was not recorded") {
				now, _ := os.ReadFile(filepath.Join(trialsDir, tid, "status.log"))
				t.Errorf("trial %s (the killed host's): %d attempts, ran %d times, reason %q; want 1 attempt, 1 run, its exit not recorded\nstatus.log at the kill:\n%s\nnow:\n%s", tid, tr.Attempts, seen[tid], tr.Reason, snap[tid], now)
			}
		case unsure[tid]:
			if tr.Attempts < 1 || tr.Attempts > 2 || seen[tid] < 1 || seen[tid] > tr.Attempts {
				t.Errorf("trial %s (launched as the host was killed): %d attempts, ran %d times; want 1 or 2 attempts, 1 run per attempt at most", tid, tr.Attempts, seen[tid])
			}
		default:
			if tr.Attempts != 1 || seen[tid] != 1 {
				t.Errorf("trial %s: %d attempts, ran %d times; want 1 and 1", tid, tr.Attempts, seen[tid])
			}
		}
	}
	if len(seen) != maxTrials {
		t.Errorf("%d distinct trials ran, want %d", len(seen), maxTrials)
	}
	// The views say what happened.
	view := exec.Command(bin, "trials", "-o", "json", "k")
	view.Dir = dir
	b, err := view.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "its exit status was not recorded: its supervisor was gone when it ended (killed, or it could not write the trial's status), after reporting its final result") {
		t.Errorf("trials -o json: %v\n%s", err, b)
	}
}
