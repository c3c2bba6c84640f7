package backendtest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// testHeldChanges: the controller's held changes and their approvals
// (state.Hold, state.Approval) are part of the state every backend keeps.
// The controller records a hold under its lock; another client (a
// laptop's `trialform approve`) reads it and records an approval under
// the experiment's lock, while the controller may write another
// experiment; the controller reads the approval; removing both is
// written too.
func testHeldChanges(t *testing.T, st *Store) {
	ctx := context.Background()
	ctl, laptop := st.Open(), st.Open()
	save(t, ctl, Sample(2))

	lk, err := state.LockScope(ctx, ctl, []string{"mnist", "cifar"}, "controller", "v1", 0)
	if err != nil {
		t.Fatal(err)
	}
	s := load(t, ctl)
	hold := &state.Hold{
		Change:    state.Change{SpecHash: "h2", Generation: 2},
		Teardowns: 2, Reasons: []string{"search_space"}, Commit: "0123abcd",
		By: "controller host_42", Since: t0.Add(time.Minute),
	}
	s.Experiments["mnist"].Hold = hold
	save(t, ctl, s)
	lk.Unlock()

	got := load(t, laptop).Experiments["mnist"]
	if !reflect.DeepEqual(got.Hold, hold) || got.Approval != nil {
		t.Fatalf("another client reads hold %+v approval %+v, want %+v and none", got.Hold, got.Approval, hold)
	}

	// The laptop approves under mnist's lock; the controller meanwhile
	// writes cifar where the backend locks per experiment.
	la, err := state.LockScope(ctx, laptop, []string{"mnist"}, "approve", "v1", 0)
	if err != nil {
		t.Fatal(err)
	}
	sl := load(t, laptop)
	ap := &state.Approval{Change: sl.Experiments["mnist"].Hold.Change, By: "alice@laptop", At: t0.Add(2 * time.Minute)}
	sl.Experiments["mnist"].Approval = ap
	save(t, laptop, sl)
	if _, ok := ctl.(state.ExperimentLocker); ok {
		lc, err := state.LockScope(ctx, ctl, []string{"cifar"}, "controller", "v1", 0)
		if err != nil {
			t.Fatalf("the controller's lock of another experiment while an approval is written: %v", err)
		}
		sc := load(t, ctl)
		sc.Experiments["cifar"].Concurrency = 9
		save(t, ctl, sc)
		lc.Unlock()
	}
	la.Unlock()

	got = load(t, ctl).Experiments["mnist"]
	if !reflect.DeepEqual(got.Approval, ap) || !got.Pending() {
		t.Fatalf("the controller reads approval %+v (pending %v), want %+v", got.Approval, got.Pending(), ap)
	}

	// Applied: the controller removes the hold and the approval.
	lk, err = state.LockScope(ctx, ctl, []string{"mnist", "cifar"}, "controller", "v1", 0)
	if err != nil {
		t.Fatal(err)
	}
	s = load(t, ctl)
	s.Experiments["mnist"].Hold, s.Experiments["mnist"].Approval = nil, nil
	s.Experiments["mnist"].Generation, s.Experiments["mnist"].SpecHash = 2, "h2"
	save(t, ctl, s)
	lk.Unlock()
	if got := load(t, st.Open()).Experiments["mnist"]; got.Hold != nil || got.Approval != nil || got.SpecHash != "h2" {
		t.Fatalf("after the change was applied another client reads hold %+v approval %+v spec %s", got.Hold, got.Approval, got.SpecHash)
	}
}
