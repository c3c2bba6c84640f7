package command_test

import (
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

// haGatedTrial appends its id to the runs file, then runs until the
// file gate (beside the runs file) exists.
const haGatedTrial = `import os, time
import nni

p = nni.get_next_parameter()
runs = %q
with open(runs, "a") as f:
    f.write(os.environ["NNI_TRIAL_JOB_ID"] + "\n")
gate = os.path.join(os.path.dirname(runs), "gate")
while not os.path.exists(gate):
    time.sleep(0.05)
nni.report_final_result(p["x"])
`

// TestControllerHAApproval: a change the leader holds is approved from a
// laptop while the leader is dead (killed with SIGKILL); the replica that
// takes over applies the approval (it is in the shared state, not in the
// dead replica's work directory), once.
func TestControllerHAApproval(t *testing.T) {
	t.Parallel()
	const budget = 2
	h := startHA(t, budget, haGatedTrial)
	h.replicas(2)
	leader := h.leader()
	h.waitFor("the first generation's trials running", 2*time.Minute, func() bool {
		b, _ := os.ReadFile(h.runs)
		return len(strings.Fields(string(b))) == budget
	})
	v2 := strings.Replace(fmt.Sprintf(haDefs, budget), "uniform = [0, 1]", "uniform = [0, 2]", 1)
	h.commit(v2, "v2: a new search space")
	h.waitFor("the leader holding the new generation", time.Minute, func() bool {
		return h.lines(leader, "held: destructive change waits for approval") > 0
	})
	leader.cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	<-leader.done
	other := h.other(leader)
	before := h.lines(other, "started leading")

	// A laptop sharing the backend approves while no replica leads.
	laptop := filepath.Join(h.top, "laptop")
	os.MkdirAll(laptop, 0o755)
	os.WriteFile(filepath.Join(laptop, "main.hcl"), []byte(v2), 0o644)
	tf := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "trialform"), args...)
		cmd.Dir, cmd.Env = laptop, append(h.env, "TRIALFORM_VAR_namespace="+h.ns)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("trialform %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tf("init")
	out := tf("approve", "-lock-timeout", "2m", "ha")
	approved := time.Since(killed)

	h.waitFor(other.name+" taking over", h.lease+30*time.Second, func() bool {
		return h.lines(other, "started leading") > before
	})
	t.Logf("approved %s after the leader was killed, %s took over after %s; trialform approve ha:\n%s",
		approved.Round(10*time.Millisecond), other.name, time.Since(killed).Round(10*time.Millisecond), out)
	h.start(leader) // restarted by its Deployment: it stands by
	h.waitFor(other.name+" applying the approval", time.Minute, func() bool {
		return h.lines(other, "applying an approved change") > 0
	})
	// The new generation's trials start; let every trial finish.
	h.waitFor("the second generation's trials running", 2*time.Minute, func() bool {
		b, _ := os.ReadFile(h.runs)
		return len(strings.Fields(string(b))) == 2*budget
	})
	os.WriteFile(filepath.Join(h.top, "gate"), nil, 0o644)
	var st *state.State
	h.waitFor("the second generation's trials to succeed", 2*time.Minute, func() bool {
		st = h.state()
		e := st.Experiment("ha")
		if e == nil {
			return false
		}
		n := 0
		for _, tr := range e.Trials {
			if tr.Generation == e.Generation && tr.Status == state.Succeeded {
				n++
			}
		}
		return e.Generation == 2 && n == budget
	})
	// Applied once, by the new leader; the held change is not held again.
	if n := h.lines(leader, "applying an approved change"); n != 0 {
		t.Errorf("the killed leader applied the approval %d times", n)
	}
	if n := h.lines(other, "applying an approved change"); n != 1 {
		t.Errorf("%s applied the approval %d times, want 1", other.name, n)
	}
	// (It may hold the change once before the approval reaches the state:
	// under load the approve waits for the killed leader's lock, which
	// the new leader breaks when it takes over.)
	if n := h.linesAfter(other, "applying an approved change", "held: destructive change waits for approval"); n != 0 {
		t.Errorf("%s held the approved change again after applying it (%d times)", other.name, n)
	}
	b, _ := os.ReadFile(h.runs)
	seen := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		seen[l]++
	}
	if len(seen) != 2*budget {
		t.Errorf("%d distinct trials ran, want %d (two generations of %d): %v", len(seen), 2*budget, budget, seen)
	}
}
