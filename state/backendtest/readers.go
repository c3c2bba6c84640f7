package backendtest

import (
	"context"
	"errors"
	"testing"

	"github.com/trialform/trialform/state"
)

// The case of a reader beside a writer in one process: a controller's
// dashboard reads the state (state.Peek) through the client its pass
// saves with. What the reader reads must not become what the writer's
// next save compares with: the writer's save then goes on from what the
// writer loaded, whatever was written since and read by the reader.

// peek reads b's state as a reader that does not save it.
func peek(t *testing.T, b state.Backend) {
	t.Helper()
	if _, err := state.Peek(b); err != nil {
		t.Fatalf("peek: %v", err)
	}
}

// lockFor takes the lock a controller's pass takes on mnist: that
// experiment's where the backend has experiment locks, else the whole
// state.
func lockFor(t *testing.T, b state.Backend) *state.Lock {
	t.Helper()
	lk, err := state.LockScope(context.Background(), b, []string{"mnist"}, "controller", "v1", 0)
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

// testReaderBetweenPrepareAndCommit: the dashboard reads between a
// prepared change and its commit.
func testReaderBetweenPrepareAndCommit(t *testing.T, st *Store) {
	w := st.Open()
	save(t, w, Sample(3))
	lk := lockFor(t, w)
	defer lk.Unlock()
	s := load(t, w)
	s.Experiments["mnist"].Trials[trialID(0)].Attempts = 5
	commit, err := w.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	peek(t, w) // the dashboard reads between the prepare and its commit
	if commit != nil {
		if err := commit(); err != nil {
			t.Fatalf("a commit after a reader read the state through the writer's client: %v", err)
		}
	}
	if n := load(t, st.Open()).Experiments["mnist"].Trials[trialID(0)].Attempts; n != 5 {
		t.Fatalf("the commit's change is not stored: attempts %d, want 5", n)
	}
}

// testReaderKeepsConflicts: someone else's change to the writer's
// experiment, read by the writer's reader, is still a conflict for the
// writer.
func testReaderKeepsConflicts(t *testing.T, st *Store) {
	w := st.Open()
	save(t, w, Sample(3))
	lk := lockFor(t, w)
	defer lk.Unlock()
	s := load(t, w)
	// Someone else changes the writer's experiment (a client that
	// saves without a lock), then the writer's dashboard reads it.
	other := st.Open()
	so := load(t, other)
	so.Experiments["mnist"].Trials[trialID(1)].Attempts = 9
	save(t, other, so)
	peek(t, w)
	s.Experiments["mnist"].Trials[trialID(0)].Attempts = 6
	var ce *state.ConflictError
	if err := w.Save(s); !errors.As(err, &ce) {
		t.Errorf("the writer's save over an experiment someone else wrote since it was loaded, after a reader read that write: %v, want *state.ConflictError", err)
	}
	if n := load(t, st.Open()).Experiments["mnist"].Trials[trialID(1)].Attempts; n != 9 {
		t.Fatalf("someone else's change was written over: t0001's attempts are %d, want 9", n)
	}
}

// testReaderOfAnotherHoldersSave: another holder's save of its own
// experiment, read by the writer's reader, does not make the writer's
// save refuse its own change.
func testReaderOfAnotherHoldersSave(t *testing.T, st *Store) {
	w := st.Open()
	experimentLocker(t, w)
	save(t, w, Sample(3))
	lk := lockExps(t, w, "mnist")
	defer lk.Unlock()
	s := load(t, w)
	// Another holder saves the experiment it locked, then the
	// writer's dashboard reads it.
	other := st.Open()
	lo := lockExps(t, other, "cifar")
	so := load(t, other)
	so.Experiments["cifar"].Concurrency = 9
	save(t, other, so)
	lo.Unlock()
	peek(t, w)
	s.Experiments["mnist"].Trials[trialID(0)].Attempts = 7
	if err := w.Save(s); err != nil {
		t.Fatalf("the writer's save after a reader read another holder's save: %v", err)
	}
	got := load(t, st.Open())
	if got.Experiments["mnist"].Trials[trialID(0)].Attempts != 7 || got.Experiments["cifar"].Concurrency != 9 {
		t.Fatalf("a change is missing: mnist t0000 attempts %d (want 7), cifar concurrency %d (want 9)",
			got.Experiments["mnist"].Trials[trialID(0)].Attempts, got.Experiments["cifar"].Concurrency)
	}
}
