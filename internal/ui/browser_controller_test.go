package ui_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trialform/trialform/internal/proctest"
	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/state"
)

const ctlDefs = `search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "w" {
  search_space = search_space.s
  tuner "random" {
    seed = 3
  }
  max_trials  = 2
  concurrency = 2
  trial {
    command = "python3 trial.py"
  }
}
`

const ctlTrial = `import os, time
release = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "release")
while not os.path.exists(release):
    time.sleep(0.05)
`

// The dashboard of `trialform controller` shows the change it holds and
// its last sync error (a commit whose definitions do not validate), with
// the commit, on the overview, in a real browser (issue 27 items 4, 7).
func TestBrowserControllerHeldAndSyncError(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	testdeps.Python3(t)
	git := testdeps.LookPath(t, "git")
	b := newBrowser(t)
	top := t.TempDir()
	repo, work := filepath.Join(top, "repo"), filepath.Join(top, "ctl")
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	gitDo := func(args ...string) {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir, cmd.Env = top, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	commit := func(defs, msg string) {
		t.Helper()
		os.WriteFile(filepath.Join(repo, "main.hcl"), []byte(defs), 0o644)
		gitDo("-C", repo, "add", "-A")
		gitDo("-C", repo, "commit", "-q", "-m", msg)
	}
	gitDo("init", "-q", "-b", "main", repo)
	os.WriteFile(filepath.Join(repo, "trial.py"), []byte(ctlTrial), 0o644)
	commit(ctlDefs, "v1")
	os.MkdirAll(work, 0o755)
	logf, err := os.Create(filepath.Join(top, "ctl.log"))
	if err != nil {
		t.Fatal(err)
	}
	ctl := exec.Command(trialformBin(t), "controller", "-repo", repo, "-work-dir", work, "-interval", "200ms", "-listen", "127.0.0.1:0")
	ctl.Stdout, ctl.Stderr = logf, logf
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(work, "release"), nil, 0o644)
		ctl.Process.Signal(os.Interrupt)
		ctl.Wait()
		// The trials poll for the release file: the folder must
		// outlive them.
		proctest.WaitGone(t, top, 2*time.Minute)
		if t.Failed() {
			out, _ := os.ReadFile(filepath.Join(top, "ctl.log"))
			t.Logf("controller log:\n%s", out)
		}
	})
	waitState(t, work, "two trials", func(st *state.State) bool {
		return st.Experiment("w") != nil && len(st.Experiment("w").Trials) == 2
	})
	commit(strings.Replace(ctlDefs, "[0, 1]", "[0, 2]", 1), "wider space")
	waitState(t, work, "the hold", func(st *state.State) bool {
		return st.Experiment("w") != nil && st.Experiment("w").Hold != nil
	})
	commit("experiment \"w\" {\n  max_trials = 4\n  concurrency = = 4\n}\n", "broken")

	addr, err := os.ReadFile(filepath.Join(work, "listen.addr"))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + string(addr)
	deadline := time.Now().Add(90 * time.Second)
	for {
		var ov struct {
			Controller *struct {
				SyncError *struct{ Stage string } `json:"sync_error"`
			} `json:"controller"`
		}
		if resp, err := http.Get(base + "/api/overview"); err == nil {
			json.NewDecoder(resp.Body).Decode(&ov)
			resp.Body.Close()
		}
		if ov.Controller != nil && ov.Controller.SyncError != nil && ov.Controller.SyncError.Stage == "definitions" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the overview never reported the broken commit")
		}
		time.Sleep(50 * time.Millisecond)
	}

	b.open(base + "/")
	b.do(chromedp.Poll[chromedp.Void](`document.getElementById('sync-error') !== null && document.getElementById('held') !== null`, chromedp.WithPollingTimeout(60*time.Second)))
	var s string
	b.eval(`document.getElementById('sync-error').innerText`, &s)
	if !strings.Contains(s, "the last definitions sync failed") || !strings.Contains(s, "main.hcl:3") || !regexpCommit.MatchString(s) {
		t.Errorf("the sync error on the overview: %q", s)
	}
	b.eval(`document.querySelector('#held tbody').innerText`, &s)
	if !strings.Contains(s, "generation 2") || !strings.Contains(s, "2 trial(s)") || !strings.Contains(s, "trialform approve w ") || !strings.Contains(s, "controller ") {
		t.Errorf("the held change on the overview: %q", s)
	}
	b.screenshot("controller-overview")
	b.noErrors("controller overview")

	// The experiment's page says so too.
	b.open(base + "/e/w")
	b.do(chromedp.Poll[chromedp.Void](`document.getElementById('held-change') !== null`, chromedp.WithPollingTimeout(60*time.Second)))
	b.eval(`document.getElementById('held-change').innerText`, &s)
	if !strings.Contains(s, "generation 2") || !strings.Contains(s, "tears down 2 trial(s)") || !strings.Contains(s, "trialform approve w ") {
		t.Errorf("the held change on the experiment's page: %q", s)
	}
	b.noErrors("controller experiment page")
}

var regexpCommit = regexp.MustCompile(`commit [0-9a-f]{12}`)
