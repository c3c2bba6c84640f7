package command_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The faults of a state backend that several working copies share (issue
// 26), each against a real server: two applies of one experiment, two of
// different experiments at once, the server going away in the middle of
// `apply -wait`, and a state changed behind trialform's back. Every test
// runs once per shared backend (sharedBackends), with real python3 trials
// in two working copies (two directories with their own .trialform, the
// same configuration, one backend block).

// sharedBackend is a backend several working copies share, with the
// faults its tests inject.
type sharedBackend struct {
	name string
	// setup makes a fresh, empty state on the server (its own database,
	// namespace or suffix) and returns its backend block and the
	// environment the CLI needs to reach it (credentials).
	setup func(t *testing.T) (block string, env []string)
	// stop and start make the server go away and come back (nil: this
	// backend's test server cannot).
	stop, start func(t *testing.T)
	// tamper changes experiment exp's stored state behind trialform's
	// back, as a person with access to the server might, and returns a
	// regexp that what a command says about it must match.
	tamper func(t *testing.T, exp string) *regexp.Regexp
}

// namedBackend is an entry of sharedBackends (shared_backends_test.go): a
// name and what starts its server (once for the test binary) and returns
// the backend; open skips, or fails under TRIALFORM_REQUIRE_ALL=1, when
// the server is not installed.
type namedBackend struct {
	name string
	open func(t *testing.T) sharedBackend
}

// forEachShared runs test once per shared backend.
func forEachShared(t *testing.T, test func(t *testing.T, b sharedBackend)) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	if len(sharedBackends) == 0 {
		t.Fatal("no shared backend is listed")
	}
	for _, sb := range sharedBackends {
		t.Run(sb.name, func(t *testing.T) {
			b := sb.open(t)
			b.name = sb.name
			test(t, b)
		})
	}
}

// workingCopy is one directory with the configuration, its own
// .trialform, and the shared backend.
type workingCopy struct {
	t   *testing.T
	dir string
	env []string
}

// sharedDir is a directory both working copies' trials write to: the
// runs log (every attempt of every trial, wherever it runs) and the files
// the trials wait for.
func sharedTrialPy(shared string) string {
	return `
import os, sys, time, trialform
shared = ` + fmt.Sprintf("%q", shared) + `
tid = os.environ["TRIALFORM_TRIAL_ID"]
exp = os.environ["TRIAL_EXP"]
with open(os.path.join(shared, "runs.log"), "a") as f:
    f.write(exp + "/" + tid + " " + os.getcwd() + "\n")
open(os.path.join(shared, "started-" + exp), "a").close()
# Wait for what the test releases: "release" (every trial), or, for
# TRIAL_WAIT_FOR, another experiment's first trial (bounded: a trial that
# waits in vain fails, and so does the test).
want = os.environ.get("TRIAL_WAIT_FOR", "")
deadline = time.time() + 240
while True:
    if want and os.path.exists(os.path.join(shared, "started-" + want)):
        break
    if not want and os.path.exists(os.path.join(shared, "release")):
        break
    if time.time() > deadline:
        sys.exit(3)
    time.sleep(0.02)
trialform.report(trialform.get_params()["x"])
`
}

// experimentHCL is one experiment whose trials log to the shared dir and
// wait for waitFor's first trial ("" = for the release file).
func experimentHCL(name string, maxTrials, concurrency int, waitFor string) string {
	return fmt.Sprintf(`
experiment %q {
  search_space = search_space.s
  tuner "random" {
    seed = 3
  }
  max_trials  = %d
  concurrency = %d
  trial {
    command = "python3 trial.py"
    env = {
      TRIAL_EXP      = %q
      TRIAL_WAIT_FOR = %q
    }
  }
}
`, name, maxTrials, concurrency, name, waitFor)
}

// newWorkingCopies makes n working copies of one configuration (block +
// experiments) sharing the backend, each initialized, and the shared dir.
func newWorkingCopies(t *testing.T, block string, env []string, experiments string, n int) ([]*workingCopy, string) {
	t.Helper()
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := block + `
search_space "s" {
  param "x" { uniform = [0, 1] }
}
` + experiments
	var wcs []*workingCopy
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("wc%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{"main.hcl": cfg, "trial.py": sharedTrialPy(shared)} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		wc := &workingCopy{t: t, dir: dir, env: append(append(os.Environ(), "NO_COLOR=1", "PYTHONDONTWRITEBYTECODE=1"), env...)}
		if block != "" {
			if out, errOut, err := wc.run("init"); err != nil {
				t.Fatalf("init in %s: %v\n%s%s", dir, err, out, errOut)
			}
		}
		wcs = append(wcs, wc)
	}
	return wcs, shared
}

func (w *workingCopy) command(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, "trialform"), args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	return cmd
}

// run runs a command to its end.
func (w *workingCopy) run(args ...string) (stdout, stderr string, err error) {
	cmd := w.command(args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// started is a command running in the background.
type started struct {
	cmd      *exec.Cmd
	out, err *syncBuffer
	done     chan struct{}
	runErr   error
}

// start starts a command; it is killed when the test ends.
func (w *workingCopy) start(args ...string) *started {
	s := &started{cmd: w.command(args...), out: newSyncBuffer(), err: newSyncBuffer(), done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.err
	if err := s.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		s.runErr = s.cmd.Wait()
		close(s.done)
	}()
	w.t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// wait waits for the command's end (the test's deadline bounds it).
func (s *started) wait(t *testing.T) error {
	t.Helper()
	<-s.done
	return s.runErr
}

func (s *started) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// runs reads the shared runs log: experiment/trial -> the working copies
// (directories) each attempt ran in.
func runs(t *testing.T, shared string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shared, "runs.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if id, dir, ok := strings.Cut(line, " "); ok {
			out[id] = append(out[id], dir)
		}
	}
	return out
}

// waitRuns waits until at least n attempts have started (the trials' own
// event; the test's deadline bounds the wait).
func waitRuns(t *testing.T, shared string, n int, alive ...*started) {
	t.Helper()
	for {
		total := 0
		for _, dirs := range runs(t, shared) {
			total += len(dirs)
		}
		if total >= n {
			return
		}
		for _, s := range alive {
			if s.exited() {
				t.Fatalf("a command ended before %d trials started: %v\nstdout:\n%s\nstderr:\n%s", n, s.runErr, s.out.String(), s.err.String())
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func release(t *testing.T, shared string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(shared, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// trialsOf reads `trials EXP -json` in w: id -> status.
func (w *workingCopy) trialsOf(exp string) map[string]string {
	w.t.Helper()
	out, errOut, err := w.run("trials", exp, "-json")
	if err != nil {
		w.t.Fatalf("trials %s: %v\n%s", exp, err, errOut)
	}
	var rows []struct {
		ID     string   `json:"id"`
		Status string   `json:"status"`
		Metric *float64 `json:"metric"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		w.t.Fatalf("trials %s -json: %v\n%s", exp, err, out)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.ID] = r.Status
	}
	return got
}

// checkEnded checks that exp has n trials, all SUCCEEDED, each run exactly
// once in all working copies together.
func checkEnded(t *testing.T, w *workingCopy, shared, exp string, n int) {
	t.Helper()
	got := w.trialsOf(exp)
	if len(got) != n {
		t.Fatalf("experiment %s has %d trials, want %d: %v", exp, len(got), n, got)
	}
	ran := runs(t, shared)
	for id, status := range got {
		if status != "SUCCEEDED" {
			t.Errorf("trial %s/%s is %s", exp, id, status)
		}
		if dirs := ran[exp+"/"+id]; len(dirs) != 1 {
			t.Errorf("trial %s/%s ran %d times: %v", exp, id, len(dirs), dirs)
		}
	}
	for id := range ran {
		if e, tid, _ := strings.Cut(id, "/"); e == exp && got[tid] == "" {
			t.Errorf("trial %s ran but is not in the state", id)
		}
	}
}

// TestSharedSameExperiment: two `apply -wait` of one experiment from two
// working copies: while the first runs, the second fails at once naming
// the holder (-lock-timeout=0), or waits for it (-lock-timeout) and then
// finds nothing left to do; no trial runs twice.
func TestSharedSameExperiment(t *testing.T) {
	t.Parallel()
	forEachShared(t, func(t *testing.T, b sharedBackend) {
		block, env := b.setup(t)
		wcs, shared := newWorkingCopies(t, block, env, experimentHCL("same", 4, 2, ""), 2)
		a, bb := wcs[0], wcs[1]
		first := a.start("apply", "-auto-approve", "-wait", "-interval=100ms")
		waitRuns(t, shared, 2, first)

		_, errOut, err := bb.run("apply", "-auto-approve", "-wait", "-interval=100ms")
		if err == nil {
			t.Fatal("a second apply of the same experiment did not fail while the first runs")
		}
		if !regexp.MustCompile(`locked by apply .*@`).MatchString(errOut) {
			t.Fatalf("the lock error does not name the holder:\n%s", errOut)
		}

		second := bb.start("apply", "-auto-approve", "-wait", "-interval=100ms", "-lock-timeout=10m")
		release(t, shared)
		if err := first.wait(t); err != nil {
			t.Fatalf("first apply: %v\n%s\n%s", err, first.out.String(), first.err.String())
		}
		if err := second.wait(t); err != nil {
			t.Fatalf("second apply: %v\n%s\n%s", err, second.out.String(), second.err.String())
		}
		if strings.Contains(second.out.String(), " started") {
			t.Fatalf("the second apply started trials:\n%s", second.out.String())
		}
		checkEnded(t, bb, shared, "same", 4)
	})
}

// TestSharedWaitsForTheHolder: the second apply, waiting for the lock,
// ends after the first one (it cannot have planned while the first held
// the experiment).
func TestSharedWaitsForTheHolder(t *testing.T) {
	t.Parallel()
	forEachShared(t, func(t *testing.T, b sharedBackend) {
		block, env := b.setup(t)
		wcs, shared := newWorkingCopies(t, block, env, experimentHCL("same", 2, 2, ""), 2)
		first := wcs[0].start("apply", "-auto-approve", "-wait", "-interval=100ms")
		waitRuns(t, shared, 2, first)
		second := wcs[1].start("apply", "-auto-approve", "-wait", "-interval=100ms", "-lock-timeout=10m")
		// The second must still be waiting while the first holds the
		// lock: release only once the first is the one that finishes.
		release(t, shared)
		err2 := second.wait(t)
		if !first.exited() {
			t.Fatalf("the second apply ended (%v) while the first still held the experiment:\n%s", err2, second.out.String())
		}
		if err := first.wait(t); err != nil || err2 != nil {
			t.Fatalf("applies: %v, %v", err, err2)
		}
		checkEnded(t, wcs[1], shared, "same", 2)
	})
}

// TestSharedDifferentExperiments: two working copies apply different
// experiments of one state at the same time. Neither waits for the other:
// each experiment's trials wait until the other's have started (they
// would fail after 240 s otherwise), and both sets end in the state.
func TestSharedDifferentExperiments(t *testing.T) {
	t.Parallel()
	forEachShared(t, func(t *testing.T, b sharedBackend) {
		block, env := b.setup(t)
		wcs, shared := newWorkingCopies(t, block, env, experimentHCL("e1", 3, 3, "e2")+experimentHCL("e2", 3, 3, "e1"), 2)
		one := wcs[0].start("apply", "-auto-approve", "-wait", "-interval=100ms", "-target=experiment.e1")
		two := wcs[1].start("apply", "-auto-approve", "-wait", "-interval=100ms", "-target=experiment.e2")
		// Report whichever fails first: one that failed at once leaves
		// the other's trials waiting 240 s in vain.
		for !one.exited() && !two.exited() {
			time.Sleep(50 * time.Millisecond)
		}
		first, next := one, two
		if two.exited() {
			first, next = two, one
		}
		for _, s := range []*started{first, next} {
			if err := s.wait(t); err != nil {
				t.Fatalf("apply: %v\n%s\n%s", err, s.out.String(), s.err.String())
			}
		}
		for _, w := range wcs {
			checkEnded(t, w, shared, "e1", 3)
			checkEnded(t, w, shared, "e2", 3)
		}
	})
}

// TestSharedServerAway: the server goes away for 10 s in the middle of
// `apply -wait`, while the trials end: apply says so, retries, and goes on
// when the server is back; nothing is lost or run twice.
func TestSharedServerAway(t *testing.T) {
	forEachShared(t, func(t *testing.T, b sharedBackend) {
		if b.stop == nil {
			// A capability of the backend's test server, not a dependency.
			t.Skipf("the %s test server cannot be stopped and started", b.name)
		}
		block, env := b.setup(t)
		wcs, shared := newWorkingCopies(t, block, env, experimentHCL("away", 4, 2, ""), 1)
		w := wcs[0]
		ap := w.start("apply", "-auto-approve", "-wait", "-interval=100ms")
		waitRuns(t, shared, 2, ap)
		b.stop(t)
		// The trials end while the server is away: their results must
		// wait to be saved.
		release(t, shared)
		time.Sleep(10 * time.Second) // the outage itself, not a wait for an event
		if ap.exited() {
			t.Fatalf("apply gave up during the outage: %v\n%s\n%s", ap.runErr, ap.out.String(), ap.err.String())
		}
		b.start(t)
		if err := ap.wait(t); err != nil {
			t.Fatalf("apply across the outage: %v\n%s\n%s", err, ap.out.String(), ap.err.String())
		}
		said := ap.out.String() + ap.err.String()
		if !regexp.MustCompile(`(?i)(cannot be reached|unreachable|unavailable).*retry`).MatchString(said) {
			t.Errorf("apply did not report the outage:\n%s", said)
		}
		checkEnded(t, w, shared, "away", 4)
	})
}

// TestSharedStateChangedBehind: the stored state changed by someone else
// than trialform (a row edited by SQL, a Secret deleted) is reported by
// the next command, and not silently written over.
func TestSharedStateChangedBehind(t *testing.T) {
	t.Parallel()
	forEachShared(t, func(t *testing.T, b sharedBackend) {
		block, env := b.setup(t)
		wcs, shared := newWorkingCopies(t, block, env, experimentHCL("behind", 2, 2, ""), 1)
		w := wcs[0]
		release(t, shared)
		if out, errOut, err := w.run("apply", "-auto-approve", "-wait", "-interval=100ms"); err != nil {
			t.Fatalf("apply: %v\n%s%s", err, out, errOut)
		}
		want := b.tamper(t, "behind")
		out, errOut, err := w.run("apply", "-auto-approve", "-wait", "-interval=100ms")
		if !want.MatchString(out + errOut) {
			t.Fatalf("apply after the state changed behind its back (err %v) did not say %q:\n%s%s", err, want, out, errOut)
		}
		if strings.Contains(out, " started") {
			t.Fatalf("apply started trials over a state changed behind its back:\n%s", out)
		}
	})
}

// TestSharedOwnerElsewhere: trials run on one working copy's local
// platform, which the other working copy cannot see: sharing the backend,
// the other plans them as left to their owner (naming where they run),
// never calls them LOST and never runs them; their owner ends them.
func TestSharedOwnerElsewhere(t *testing.T) {
	t.Parallel()
	forEachShared(t, func(t *testing.T, b sharedBackend) {
		block, env := b.setup(t)
		wcs, shared := newWorkingCopies(t, block, env, experimentHCL("own", 3, 2, ""), 2)
		a, bb := wcs[0], wcs[1]
		if out, errOut, err := a.run("apply", "-auto-approve"); err != nil {
			t.Fatalf("apply in A: %v\n%s%s", err, out, errOut)
		}
		waitRuns(t, shared, 2)

		out, errOut, err := bb.run("plan", "-no-color")
		if err != nil {
			t.Fatalf("plan in B: %v\n%s", err, errOut)
		}
		where := regexp.QuoteMeta(filepath.Join(a.dir, ".trialform"))
		if !regexp.MustCompile(`trials t0000, t0001 run in .+@.+:`+where+`: left to that working copy`).MatchString(out) || strings.Contains(out, "LOST") || !strings.Contains(out, "No changes") {
			t.Fatalf("B's plan does not leave A's trials to A:\n%s", out)
		}
		out, errOut, err = bb.run("apply", "-auto-approve", "-wait", "-interval=100ms")
		if err != nil {
			t.Fatalf("apply -wait in B: %v\n%s%s", err, out, errOut)
		}
		if !regexp.MustCompile(`experiment\.own: nothing left to do in this working copy: trials t0000, t0001 run in .+` + where).MatchString(out) {
			t.Fatalf("B's apply -wait does not say why it stopped waiting:\n%s", out)
		}

		release(t, shared)
		if out, errOut, err := a.run("apply", "-auto-approve", "-wait", "-interval=100ms"); err != nil {
			t.Fatalf("apply -wait in A: %v\n%s%s", err, out, errOut)
		}
		checkEnded(t, bb, shared, "own", 3)
		for id, dirs := range runs(t, shared) {
			if dirs[0] != a.dir {
				t.Errorf("trial %s ran in %s, not in A", id, dirs[0])
			}
		}
	})
}
