package command_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trialform/trialform/internal/pgtest"
	"github.com/trialform/trialform/internal/procfs"
	"github.com/trialform/trialform/internal/proctest"
	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendreg"
	"github.com/trialform/trialform/state/pg"
)

const controllerPgDefs = `backend "pg" {}

search_space "s" {
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
    command = "python3 trial.py ${param.x}"
  }
}
`

const controllerPgTrial = `import os, sys, time
import trialform
release = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "release")
while not os.path.exists(release):
    time.sleep(0.05)
trialform.report(float(sys.argv[1]))
`

// The controller shares a pg state with a laptop: the laptop's plan works
// while the controller runs, and the laptop's apply on the same
// experiment, while the controller holds it, is refused naming the
// controller as the holder (issue 27 item 2). A commit that changes the
// search space is held; the laptop's plan and show say so, and the
// laptop approves it through the shared state (no HTTP access to the
// controller): the controller applies it (issue 27 item 1).
func TestControllerSharesPgBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	testdeps.Python3(t)
	git := testdeps.LookPath(t, "git")
	srv := pgtest.NewServer(t)
	conn := srv.NewDB(t)
	db := conn[strings.LastIndex(conn, "/")+1:]
	db, _, _ = strings.Cut(db, "?")
	env := os.Environ()
	for k, v := range srv.Env(db) {
		env = append(env, k+"="+v)
	}
	env = append(env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	top := t.TempDir()
	run := func(dir string, name string, args ...string) (string, error) {
		if name == "trialform" {
			name = filepath.Join(binDir, name)
		}
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(dir string, name string, args ...string) string {
		t.Helper()
		out, err := run(dir, name, args...)
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return out
	}
	repo := filepath.Join(top, "repo")
	must(top, git, "init", "-q", "-b", "main", repo)
	os.WriteFile(filepath.Join(repo, "main.hcl"), []byte(controllerPgDefs), 0o644)
	os.WriteFile(filepath.Join(repo, "trial.py"), []byte(controllerPgTrial), 0o644)
	must(repo, git, "add", "-A")
	must(repo, git, "commit", "-q", "-m", "v1")
	laptop := filepath.Join(top, "laptop")
	must(top, git, "clone", "-q", repo, laptop)

	work := filepath.Join(top, "ctl")
	os.MkdirAll(work, 0o755)
	var log bytes.Buffer
	ctl := exec.Command(filepath.Join(binDir, "trialform"), "controller", "-repo", repo, "-work-dir", work, "-interval", "200ms", "-lock-timeout", "30s")
	ctl.Env, ctl.Stdout, ctl.Stderr = env, &log, &log
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctl.Process.Signal(syscall.SIGCONT)
		ctl.Process.Signal(os.Interrupt)
		ctl.Wait()
		os.WriteFile(filepath.Join(top, "release"), nil, 0o644)
		// The trials poll for the release file: the test's folder
		// must outlive them (it left two trials and their supervisor
		// polling for ever in a fresh-machine run).
		proctest.WaitGone(t, top, 2*time.Minute)
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	}()

	b, err := pg.Open(pg.Settings{ConnStr: srv.ConnString(db)}, backendreg.Env{StateDir: filepath.Join(top, "probe")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err := b.Load()
		if err == nil && st.Experiment("w") != nil && len(st.Experiment("w").Trials) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controller started no trials in the shared state: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The laptop joins the shared state; its plan works beside the controller.
	must(laptop, "trialform", "init")
	out := must(laptop, "trialform", "plan", "-no-color")
	if !strings.Contains(out, "No changes") {
		t.Fatalf("laptop plan:\n%s", out)
	}

	// Catch the controller inside a pass, holding the experiment's lock,
	// and stop it there (SIGSTOP keeps its connection and so its lock).
	caught := false
	for !caught && time.Now().Before(deadline) {
		if heldBy(t, b, "controller") {
			ctl.Process.Signal(syscall.SIGSTOP)
			// SIGSTOP is delivered asynchronously: until every thread is
			// stopped the controller may still end its pass and release
			// the lock, after the check below saw it held.
			// The lock's record outlives its advisory lock for a moment
			// of Unlock (the lock first, then the record), so the lock
			// itself must be held too.
			if allStopped(ctl.Process.Pid) && heldBy(t, b, "controller") && advisoryHeld(t, srv.ConnString(db)) {
				caught = true
				break
			}
			ctl.Process.Signal(syscall.SIGCONT)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if !caught {
		t.Fatal("never saw the controller hold the lock")
	}
	out, err = run(laptop, "trialform", "apply", "-auto-approve", "-no-color", "-lock-timeout=1s")
	ctl.Process.Signal(syscall.SIGCONT)
	if err == nil {
		t.Fatalf("the laptop's apply ran while the controller held the experiment:\n%s", out)
	}
	if !regexp.MustCompile(`experiment w of the state in the pg backend .* locked by controller \(pid [0-9]+`).MatchString(out) {
		t.Fatalf("the refusal does not name the controller:\n%s", out)
	}
	// Once the controller's pass is over, the laptop's apply goes through.
	out = must(laptop, "trialform", "apply", "-auto-approve", "-no-color", "-lock-timeout=30s")
	if !strings.Contains(out, "Apply complete") && !strings.Contains(out, "No changes") {
		t.Fatalf("laptop apply:\n%s", out)
	}

	// A new search space: the controller holds the new generation and
	// records it in the shared state.
	os.WriteFile(filepath.Join(repo, "main.hcl"), []byte(strings.Replace(controllerPgDefs, "[0, 1]", "[0, 2]", 1)), 0o644)
	must(repo, git, "commit", "-q", "-am", "wider space")
	must(laptop, git, "pull", "-q")
	var hold *state.Hold
	for hold == nil {
		if st, err := b.Load(); err == nil && st.Experiment("w") != nil {
			hold = st.Experiment("w").Hold
		}
		if time.Now().After(deadline) {
			t.Fatal("the controller recorded no hold in the shared state")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if hold.Generation != 2 || hold.Teardowns != 2 || !strings.HasPrefix(hold.By, "controller ") || len(hold.Commit) != 40 {
		t.Fatalf("hold %+v: want generation 2, 2 teardowns, by the controller, a commit", hold)
	}
	out = must(laptop, "trialform", "plan", "-no-color")
	if !strings.Contains(out, "Held by the controller until approved:") || !strings.Contains(out, "waits for approval: trialform approve w "+hold.SpecHash[:12]) {
		t.Fatalf("the laptop's plan does not show the held change:\n%s", out)
	}
	out = must(laptop, "trialform", "show", "-no-color")
	if !strings.Contains(out, "held: generation 2") {
		t.Fatalf("the laptop's show does not show the held change:\n%s", out)
	}
	if _, err := run(laptop, "trialform", "approve", "x"); err == nil {
		t.Fatal("approving an experiment not in the state succeeded")
	}
	out = must(laptop, "trialform", "approve", "-by", "alice", "w", hold.SpecHash[:12])
	if !strings.Contains(out, "Approved: experiment w, generation 2") {
		t.Fatalf("approve:\n%s", out)
	}
	for {
		st, err := b.Load()
		if err == nil && st.Experiment("w") != nil && st.Experiment("w").Generation == 2 && st.Experiment("w").Hold == nil && st.Experiment("w").Approval == nil {
			break
		}
		if time.Now().After(deadline.Add(60 * time.Second)) {
			t.Fatalf("the controller did not apply the approved change: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func heldBy(t *testing.T, b state.Locker, op string) bool {
	locks, err := state.CurrentLocksOf(b)
	if err != nil {
		return false
	}
	for _, l := range locks {
		if l.Operation == op {
			return true
		}
	}
	return false
}

// advisoryHeld reports whether a session other than this one holds an
// advisory lock in the database of conn.
func advisoryHeld(t *testing.T, conn string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Logf("advisory locks: %v", err)
		return false
	}
	defer c.Close(ctx)
	var n int
	err = c.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()`).Scan(&n)
	return err == nil && n > 0
}

// allStopped waits (up to 10 s) until every thread of process pid is
// stopped by a signal, and reports whether they all are.
func allStopped(pid int) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil || len(tasks) == 0 {
			return false
		}
		all := true
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			st, perr := procfs.Parse(pid, b)
			if err != nil || perr != nil || st.State != 'T' {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
