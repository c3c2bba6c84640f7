package command_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillAnywhere kills the CLI with SIGKILL at many moments of
// `apply -wait` (while recording intents, starting supervisors, saving
// state, collecting metrics), re-running it each time, and checks the end:
// exactly max_trials trials, each run exactly once, all with metrics, and a
// state that always reads. It runs once per state backend (killBackends):
// the same kills, the same checks, whatever keeps the state.
func TestKillAnywhere(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	for _, b := range killBackends() {
		t.Run(b.name, func(t *testing.T) {
			killAnywhere(t, b)
		})
	}
}

// killBackend is one state backend TestKillAnywhere runs against.
type killBackend struct {
	name string
	// setup starts what the backend needs (a server) and returns the
	// backend block for main.hcl ("" for the default, local) and the
	// environment the CLI needs (credentials).
	setup func(t *testing.T) (block string, env []string)
}

// killBackends lists the backends TestKillAnywhere covers: the local
// one and every shared one (sharedBackends), its server started as the
// fault tests start it.
func killBackends() []killBackend {
	kbs := []killBackend{{name: "local", setup: func(*testing.T) (string, []string) { return "", nil }}}
	for _, sb := range sharedBackends {
		kbs = append(kbs, killBackend{name: sb.name, setup: func(t *testing.T) (string, []string) {
			return sb.open(t).setup(t)
		}})
	}
	return kbs
}

// killDelays are when each kill comes after the start of `apply -wait`:
// 24 kills, from the first state read to the middle of collecting results.
var killDelays = []time.Duration{5, 10, 20, 30, 40, 50, 60, 75, 90, 105, 120, 135, 150, 175, 200, 230, 260, 300, 330, 360, 400, 450, 500, 600}

func killAnywhere(t *testing.T, b killBackend) {
	dir := t.TempDir()
	const maxTrials = 12
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	block, env := b.setup(t)
	env = append(append(os.Environ(), "NO_COLOR=1"), env...)
	write("main.hcl", block+`
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
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = env
		return cmd.Output()
	}
	if block != "" {
		if out, err := run("init"); err != nil {
			t.Fatalf("init: %v\n%s%s", err, out, exitStderr(err))
		}
	}
	if len(killDelays) < 20 {
		t.Fatalf("%d kills; the issue asks for at least 20 per backend", len(killDelays))
	}
	for i, d := range killDelays {
		cmd := exec.Command(bin, "apply", "-auto-approve", "-wait", "-interval=100ms")
		cmd.Dir = dir
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		// The state must always be readable (never torn): through the
		// backend, as every command reads it, and for the local backend
		// its file too.
		if b.name == "local" {
			if data, err := os.ReadFile(filepath.Join(dir, ".trialform", "state.json")); err == nil {
				var v map[string]any
				if err := json.Unmarshal(data, &v); err != nil {
					t.Fatalf("kill %d after %s: state.json does not parse: %v", i, d*time.Millisecond, err)
				}
			}
		}
		// A lock the killed apply held on a shared backend outlives it
		// (a Kubernetes Lease goes stale, it does not go away): release
		// it as a person would, with force-unlock of the dead holder's
		// lock ID, which show names.
		show := exec.Command(bin, "show")
		show.Dir, show.Env = dir, env
		var showErr strings.Builder
		show.Stderr = &showErr
		show.Run()
		for _, m := range lockLineRE.FindAllStringSubmatch(showErr.String(), -1) {
			if m[1] != strconv.Itoa(cmd.Process.Pid) {
				t.Fatalf("kill %d: a lock held by pid %s, not by the killed apply (%d):\n%s", i, m[1], cmd.Process.Pid, showErr.String())
			}
			if out, err := run("force-unlock", m[2]); err != nil {
				// On pg the lock is the dead session's: the server drops
				// it once it notices the connection closed, which may
				// come between show and force-unlock (a loaded machine).
				if strings.Contains(string(exitStderr(err)), "the state is not locked") {
					continue
				}
				t.Fatalf("kill %d: force-unlock %s: %v\n%s%s", i, m[2], err, out, exitStderr(err))
			}
		}
		if out, err := run("show", "-json"); err != nil {
			t.Fatalf("kill %d after %s: the state does not read: %v\n%s%s", i, d*time.Millisecond, err, out, exitStderr(err))
		}
	}
	cmd := exec.Command(bin, "apply", "-auto-approve", "-wait", "-interval=100ms")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("final apply: %v\n%s", err, out)
	}
	out, err = run("trials", "k", "-json")
	if err != nil {
		t.Fatalf("trials: %v\n%s", err, exitStderr(err))
	}
	checkRanOnce(t, dir, out, maxTrials)
}

// lockLineRE matches a lock show names on stderr: the holder's pid and
// the lock ID.
var lockLineRE = regexp.MustCompile(`locked: .*, pid (\d+), since [^,]+, lock ID ([0-9a-f-]+)\)`)

// exitStderr is what a command that failed wrote to stderr.
func exitStderr(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}

// checkRanOnce checks `trials -json` output (trialsJSON) and dir/runs.log,
// where every attempt of the trial logs its id: exactly n trials, all
// SUCCEEDED with a metric, each run exactly once.
func checkRanOnce(t *testing.T, dir string, trialsJSON []byte, n int) {
	t.Helper()
	var rows []struct {
		ID     string   `json:"id"`
		Status string   `json:"status"`
		Metric *float64 `json:"metric"`
	}
	if err := json.Unmarshal(trialsJSON, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d trials, want %d", len(rows), n)
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
	if len(seen) != n {
		t.Fatalf("%d distinct trials ran, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("trial %s ran %d times", id, k)
		}
	}
}
