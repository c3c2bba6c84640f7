package backendtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// The cases of the shared backends' contract: experiment locks
// (state.ExperimentLocker) and change notifications
// (state.ChangeNotifier). A backend without the capability skips them.

// HoldEnv names the experiments a Holder process locks (comma-separated;
// "*" for the whole state).
const HoldEnv = "BACKENDTEST_HOLD"

// Hold, run by a Holder process, takes the lock HoldEnv names on b,
// prints "locked ID" and waits to be killed.
func Hold(b state.Backend) {
	var names []string
	if v := os.Getenv(HoldEnv); v != "*" {
		names = strings.Split(v, ",")
	}
	lk, err := state.LockScope(context.Background(), b, names, "hold", "v0", 0)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("locked", lk.Info().ID)
	select {}
}

func experimentLocker(t *testing.T, b state.Backend) state.ExperimentLocker {
	t.Helper()
	el, ok := b.(state.ExperimentLocker)
	if !ok {
		// A capability this backend lacks, not a dependency.
		t.Skip("the backend locks only the whole state (no ExperimentLocker capability)")
	}
	return el
}

func lockExps(t *testing.T, b state.Backend, names ...string) *state.Lock {
	t.Helper()
	lk, err := experimentLocker(t, b).LockExperiments(context.Background(), names, "apply", "v1", 0)
	if err != nil {
		t.Fatalf("lock %v: %v", names, err)
	}
	return lk
}

func tryExps(b state.Backend, names ...string) error {
	_, err := b.(state.ExperimentLocker).LockExperiments(context.Background(), names, "plan", "v1", 0)
	return err
}

func testExperimentLocks(t *testing.T, st *Store) {
	ctx := context.Background()
	a, b, c := st.Open(), st.Open(), st.Open()
	experimentLocker(t, a)
	// Two experiments at once, by two clients.
	la := lockExps(t, a, "mnist")
	lb := lockExps(t, b, "cifar")
	if info := la.Info(); info.Backend != a.Name() || len(info.Experiments) != 1 || info.Experiments[0] != "mnist" {
		t.Fatalf("lock info %+v: want the backend and the experiment", info)
	}
	// The same experiment is excluded, naming its holder.
	if got := lockedBy(t, tryExps(c, "mnist")); got.ID != la.Info().ID || len(got.Experiments) != 1 || got.Experiments[0] != "mnist" {
		t.Fatalf("mnist: held by %+v, want %+v", got, la.Info())
	}
	// All or nothing: "other" is not held after a refused lock of
	// cifar and other.
	if got := lockedBy(t, tryExps(c, "other", "cifar")); got.ID != lb.Info().ID {
		t.Fatalf("cifar, other: held by %+v, want %+v", got, lb.Info())
	}
	lo := lockExps(t, st.Open(), "other")
	lo.Unlock()
	// The whole state is excluded by any experiment lock.
	if got := lockedBy(t, func() error { _, err := c.Lock(ctx, "state mv", "v1", 0); return err }()); got.ID != la.Info().ID && got.ID != lb.Info().ID {
		t.Fatalf("whole state: held by %+v, want one of the experiment locks", got)
	}
	locks, err := state.CurrentLocksOf(c)
	if err != nil || len(locks) != 2 {
		t.Fatalf("CurrentLocks = %+v, %v, want the two experiment locks", locks, err)
	}
	if err := la.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := lb.Unlock(); err != nil {
		t.Fatal(err)
	}
	if locks, err := state.CurrentLocksOf(c); err != nil || len(locks) != 0 {
		t.Fatalf("after Unlock: CurrentLocks = %+v, %v", locks, err)
	}
	// And the whole state excludes every experiment lock.
	whole, err := c.Lock(ctx, "state mv", "v1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, names := range [][]string{{"mnist"}, {"brand-new"}} {
		if got := lockedBy(t, tryExps(a, names...)); got.ID != whole.Info().ID || len(got.Experiments) != 0 {
			t.Fatalf("%v under a whole-state lock: held by %+v, want %+v", names, got, whole.Info())
		}
	}
	if err := whole.Unlock(); err != nil {
		t.Fatal(err)
	}
	lockExps(t, a, "mnist", "cifar").Unlock()
}

func testExperimentLockWaits(t *testing.T, st *Store) {
	a, b := st.Open(), st.Open()
	experimentLocker(t, a)
	la := lockExps(t, a, "mnist")
	// A timeout passes: an error wrapping the holder's.
	start := time.Now()
	_, err := b.(state.ExperimentLocker).LockExperiments(context.Background(), []string{"mnist"}, "plan", "v1", 300*time.Millisecond)
	if got := lockedBy(t, err); got.ID != la.Info().ID {
		t.Fatalf("after the timeout: held by %+v, want %+v", got, la.Info())
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("gave up after %s, before the timeout", waited)
	}
	if !strings.Contains(err.Error(), "mnist") {
		t.Fatalf("the error does not name the experiment: %v", err)
	}
	// A waiter gets it when the holder lets go.
	got := make(chan error, 1)
	var lw *state.Lock
	go func() {
		var err error
		lw, err = st.Open().(state.ExperimentLocker).LockExperiments(context.Background(), []string{"cifar", "mnist"}, "destroy", "v1", 10*time.Minute)
		got <- err
	}()
	if err := la.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	if got := lockedBy(t, tryExps(b, "cifar")); got.ID != lw.Info().ID || got.Operation != "destroy" {
		t.Fatalf("cifar: held by %+v, want the waiter", got)
	}
	lw.Unlock()
}

func testExperimentLockKilledHolder(t *testing.T, st *Store) {
	b := st.Open()
	experimentLocker(t, b)
	if st.Holder == nil {
		// A capability this store does not offer, not a dependency.
		t.Skip("the store runs no holder process")
	}
	cmd := st.Holder(t)
	cmd.Env = append(cmd.Env, HoldEnv+"=mnist")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	id, ok := strings.CutPrefix(strings.TrimSpace(line), "locked ")
	if !ok {
		t.Fatalf("the holder process said %q", line)
	}
	if got := lockedBy(t, tryExps(b, "mnist")); got.ID != id || got.PID != cmd.Process.Pid {
		t.Fatalf("held by %+v, want the holder process (pid %d, lock %s)", got, cmd.Process.Pid, id)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if st.DeadHolderKeepsLock {
		if got := lockedBy(t, tryExps(b, "mnist")); got.ID != id {
			t.Fatalf("after the holder was killed: held by %+v, want its lock until force-unlock", got)
		}
		if err := b.ForceUnlock(id); err != nil {
			t.Fatal(err)
		}
	}
	// The lock goes with the holder: the server may notice the closed
	// connection a moment later, so wait for it (an event, not a time).
	lk, err := b.(state.ExperimentLocker).LockExperiments(context.Background(), []string{"mnist"}, "apply", "v1", 5*time.Minute)
	if err != nil {
		t.Fatalf("the lock of a killed holder: %v", err)
	}
	if locks, err := state.CurrentLocksOf(b); err != nil || len(locks) != 1 || locks[0].ID != lk.Info().ID {
		t.Fatalf("CurrentLocks = %+v, %v: want only the new lock (the dead holder's is not listed)", locks, err)
	}
	lk.Unlock()
}

func testScopedSaves(t *testing.T, st *Store) {
	a, b := st.Open(), st.Open()
	experimentLocker(t, a)
	base := Sample(3)
	save(t, a, base)
	la, lb := lockExps(t, a, "mnist"), lockExps(t, b, "cifar")
	defer la.Unlock()
	defer lb.Unlock()
	sa, sb := load(t, a), load(t, b)
	// Two holders of different experiments both save, in turn and again.
	for i := range 2 {
		sa.Experiments["mnist"].Trials[trialID(20+i)] = Trial(20 + i)
		sa.Experiments["mnist"].NextSeq++
		save(t, a, sa)
		sb.Experiments["cifar"].Concurrency = 7 + i
		sb.Experiments["cifar"].Trials[trialID(30+i)] = Trial(30 + i)
		commit, err := b.PrepareTrials(sb, []state.TrialRef{{Experiment: "cifar", ID: trialID(30 + i)}})
		if err == nil && commit != nil {
			err = commit()
		}
		if err != nil {
			t.Fatalf("round %d: the second holder's save: %v", i, err)
		}
	}
	got := load(t, st.Open())
	if got.Experiments["mnist"].Trials[trialID(21)] == nil || got.Experiments["cifar"].Trials[trialID(31)] == nil || got.Experiments["cifar"].Concurrency != 8 {
		t.Fatalf("a reload lacks a holder's change: mnist %d trials, cifar %d trials, concurrency %d",
			len(got.Experiments["mnist"].Trials), len(got.Experiments["cifar"].Trials), got.Experiments["cifar"].Concurrency)
	}
	if got.Serial != base.Serial+4 {
		t.Fatalf("serial %d after four saves of serial %d", got.Serial, base.Serial)
	}
	// A change outside the experiments held is refused, and not written.
	sa.Experiments["cifar"].Paused = true
	if err := a.Save(sa); err == nil {
		t.Fatal("a save changing an experiment its holder did not lock succeeded")
	} else if !strings.Contains(err.Error(), "cifar") {
		t.Fatalf("the refusal does not name the experiment: %v", err)
	}
	sa.Experiments["cifar"].Paused = false
	sa.Experiments["added"] = &state.Experiment{Name: "added", Trials: map[string]*state.Trial{}}
	if err := a.Save(sa); err == nil {
		t.Fatal("a save adding an experiment its holder did not lock succeeded")
	}
	delete(sa.Experiments, "added")
	if again := load(t, st.Open()); again.Experiments["cifar"].Paused || again.Experiments["added"] != nil {
		t.Fatal("a refused save wrote something")
	}
	// An experiment written by someone else since its holder loaded it
	// is a conflict (here a client that saves without a lock).
	other := st.Open()
	so := load(t, other)
	so.Experiments["mnist"].Failed = true
	save(t, other, so)
	sa.Experiments["mnist"].Paused = true
	var ce *state.ConflictError
	if err := a.Save(sa); !errors.As(err, &ce) {
		t.Fatalf("a save over an experiment written since it was loaded: %v, want *state.ConflictError", err)
	}
}

func testChangeNotifier(t *testing.T, st *Store) {
	w, r := st.Open(), st.Open()
	n, ok := r.(state.ChangeNotifier)
	if !ok {
		// A capability this backend lacks, not a dependency.
		t.Skip("the backend cannot notify changes (no ChangeNotifier capability)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes, err := n.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Notifications may arrive for what happened before: drain, then
	// expect one for each change (a save, an append) in turn.
	for i, change := range []func(){
		func() { save(t, w, Sample(1)) },
		func() {
			if err := w.AppendMetrics("mnist", trialID(0), []state.MetricPoint{point("PERIODICAL", 0, "1")}); err != nil {
				t.Fatal(err)
			}
		},
	} {
		for drained := false; !drained; {
			select {
			case <-changes:
			default:
				drained = true
			}
		}
		change()
		select {
		case _, open := <-changes:
			if !open {
				t.Fatalf("change %d: the channel closed", i)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("change %d: no notification", i)
		}
	}
	cancel()
	for range changes {
	}
}
