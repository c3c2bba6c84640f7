package command_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillAnywhere kills the CLI with SIGKILL at many moments of
// `apply -wait` (while recording intents, starting supervisors, saving
// state, collecting metrics), re-running it each time, and checks the end:
// exactly max_trials trials, each run exactly once, all with metrics, and a
// state file that always parses.
func TestKillAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	dir := t.TempDir()
	const maxTrials = 12
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.hcl", `
search_space "s" {
  param "x" { uniform = [0, 1] }
  param "k" { choice = ["a", "b", "c"] }
}
experiment "k" {
  search_space = search_space.s
  tuner "tpe" {
    seed = 9
  }
  max_trials  = 12
  concurrency = 4
  trial {
    command = "python3 trial.py"
  }
}
`)
	write("trial.py", `
import os, time, trialform
with open("runs.log", "a") as f:
    f.write(os.environ["TRIALFORM_TRIAL_ID"] + "\n")
time.sleep(0.15)
trialform.report(trialform.get_params()["x"])
`)
	bin := filepath.Join(binDir, "trialform")
	delays := []time.Duration{5, 20, 40, 60, 90, 120, 150, 200, 260, 330, 400}
	for i, d := range delays {
		cmd := exec.Command(bin, "apply", "-auto-approve", "-wait", "-interval=100ms")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		// The state must always be readable (never torn).
		if b, err := os.ReadFile(filepath.Join(dir, ".trialform", "state.json")); err == nil {
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("kill %d after %s: state.json does not parse: %v", i, d*time.Millisecond, err)
			}
		}
	}
	cmd := exec.Command(bin, "apply", "-auto-approve", "-wait", "-interval=100ms")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("final apply: %v\n%s", err, out)
	}
	cmd = exec.Command(bin, "trials", "k", "-json")
	cmd.Dir = dir
	out, err = cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID     string   `json:"id"`
		Status string   `json:"status"`
		Metric *float64 `json:"metric"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != maxTrials {
		t.Fatalf("%d trials, want %d", len(rows), maxTrials)
	}
	for _, r := range rows {
		if r.Status != "SUCCEEDED" || r.Metric == nil {
			t.Fatalf("trial %s: %s metric %v", r.ID, r.Status, r.Metric)
		}
	}
	runs, _ := os.ReadFile(filepath.Join(dir, "runs.log"))
	seen := map[string]int{}
	for _, id := range strings.Fields(string(runs)) {
		seen[id]++
	}
	if len(seen) != maxTrials {
		t.Fatalf("%d distinct trials ran, want %d", len(seen), maxTrials)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("trial %s ran %d times", id, n)
		}
	}
}
