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
	// Each wait has its own generous deadline: one 90 s deadline taken at
	// the start covered every step, so a loaded machine that spent it on
	// the first steps failed a later wait at its first look.
	waitUntil(t, 3*time.Minute, "the controller started no trials in the shared state", func() (bool, error) {
		st, err := b.Load()
		return err == nil && st.Experiment("w") != nil && len(st.Experiment("w").Trials) == 2, err
	})

	// The laptop joins the shared state; its plan works beside the controller.
	must(laptop, "trialform", "init")
	out := must(laptop, "trialform", "plan", "-no-color")
	if !strings.Contains(out, "No changes") {
		t.Fatalf("laptop plan:\n%s", out)
	}

	// Catch the controller inside a pass, holding the experiment's lock,
	// and stop it there (SIGSTOP keeps its connection and so its lock).
	// It was caught by polling the lock and stopping the process when
	// the lock looked held: a release the controller had sent just before
	// SIGSTOP still ran at the server after the check, and the laptop's
	// apply took the lock (seen under load). Now the controller's pass is
	// made to wait on an event the test controls: the test holds the
	// state table, the pass's next read of the state waits for it, and
	// the controller is stopped only once it waits there holding the
	// lock, so nothing it sent is still on its way.
	catchHolding(t, ctl.Process, b, srv.ConnString(db))
	out, err = run(laptop, "trialform", "apply", "-auto-approve", "-no-color", "-lock-timeout=1s")
	ctl.Process.Signal(syscall.SIGCONT)
	if err == nil {
		t.Fatalf("the laptop's apply ran while the controller held the experiment:\n%s", out)
	}
	if !regexp.MustCompile(`experiment w of the state in the pg backend .* locked by controller \(pid [0-9]+`).MatchString(out) {
		t.Fatalf("the refusal does not name the controller:\n%s", out)
	}
	// Once the controller's pass is over, the laptop's apply goes through
	// (its lock wait meets the controller's passes, one every 200 ms:
	// a generous timeout).
	out = must(laptop, "trialform", "apply", "-auto-approve", "-no-color", "-lock-timeout=2m")
	if !strings.Contains(out, "Apply complete") && !strings.Contains(out, "No changes") {
		t.Fatalf("laptop apply:\n%s", out)
	}

	// A new search space: the controller holds the new generation and
	// records it in the shared state.
	os.WriteFile(filepath.Join(repo, "main.hcl"), []byte(strings.Replace(controllerPgDefs, "[0, 1]", "[0, 2]", 1)), 0o644)
	must(repo, git, "commit", "-q", "-am", "wider space")
	must(laptop, git, "pull", "-q")
	var hold *state.Hold
	waitUntil(t, 3*time.Minute, "the controller recorded no hold in the shared state", func() (bool, error) {
		st, err := b.Load()
		if err == nil && st.Experiment("w") != nil {
			hold = st.Experiment("w").Hold
		}
		return hold != nil, err
	})
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
	waitUntil(t, 3*time.Minute, "the controller did not apply the approved change", func() (bool, error) {
		st, err := b.Load()
		return err == nil && st.Experiment("w") != nil && st.Experiment("w").Generation == 2 && st.Experiment("w").Hold == nil && st.Experiment("w").Approval == nil, err
	})
}

// waitUntil polls cond every 50 ms until it holds, and fails the test
// with what (and cond's last error) when it still does not after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after %s: %v", what, limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// catchHolding stops the controller (SIGSTOP) inside a pass while it holds
// an experiment's lock, with nothing it sent still on its way to the
// server: the test takes the state table (LOCK TABLE, in a transaction of
// its own), waits until a session of the controller waits for it, and
// stops the controller when it then holds the lock. Only the pass reads
// the state table, and it releases the lock only after its reads and
// saves (the release's statements each answered before the next), so a
// pass that waits there with its lock recorded and held cannot release
// it until the table is given back, and by then it is stopped. Otherwise
// (a read before the lock is taken, or after the release) the table is
// given back and the next pass tried.
func catchHolding(t *testing.T, ctl *os.Process, b state.Locker, conn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for {
		if ctx.Err() != nil {
			t.Fatal("never caught the controller holding the lock in 5 minutes")
		}
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE trialform.state IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		// A pass comes every 200 ms and reads the state.
		for !waitsForTable(ctx, t, c) {
			if ctx.Err() != nil {
				t.Fatal("the controller never read the state while the test held the state table")
			}
			time.Sleep(5 * time.Millisecond)
		}
		caught := false
		if heldBy(t, b, "controller") {
			ctl.Signal(syscall.SIGSTOP)
			// (it cannot move while it waits; heldBy again only in case
			// it was not the pass that waited)
			caught = allStopped(ctl.Pid) && heldBy(t, b, "controller")
			if !caught {
				ctl.Signal(syscall.SIGCONT)
			}
		}
		// Given back: a stopped controller's read runs at the server,
		// its answer waits in the socket.
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if caught {
			return
		}
	}
}

// waitsForTable reports whether a session waits for the lock of the state
// table that the test's transaction on c holds.
func waitsForTable(ctx context.Context, t *testing.T, c *pgx.Conn) bool {
	var n int
	err := c.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'trialform.state'::regclass`).Scan(&n)
	if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	return n > 0
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
