package controller

import (
	"reflect"
	"testing"
	"time"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

func testPlan() *plan.Plan {
	return &plan.Plan{Experiments: []*plan.ExperimentPlan{
		{Name: "a", SpecHash: "h2", Generation: 2, GenerationReason: []string{"search space changed"}, Trials: []*plan.TrialAction{
			{Action: plan.Teardown, Cause: plan.CauseGeneration}, {Action: plan.Create},
		}},
		{Name: "b", SpecHash: "hb", Trials: []*plan.TrialAction{
			{Action: plan.Create}, {Action: plan.Teardown, Cause: plan.CauseMaxDuration},
		}},
		{Name: "c", SpecHash: "hc", Action: plan.Delete},
	}}
}

// An approval approves exactly the change it names: the experiment, its
// spec hash and the kind of change; a later different change is held.
func TestApprovalNamesTheChange(t *testing.T) {
	p := testPlan()
	d := Destructive(p)
	if len(d) != 2 || d[0].Experiment != "a" || d[0].Teardowns != 1 || d[1].Experiment != "c" || !d[1].Removed {
		t.Fatalf("Destructive = %+v", d)
	}
	st := state.New()
	for _, n := range []string{"a", "b", "c"} {
		st.Experiments[n] = &state.Experiment{Name: n, Trials: map[string]*state.Trial{}}
	}
	t0 := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	if changed, _ := RecordHolds(st, d, "controller x", "c1", t0); !changed {
		t.Fatal("RecordHolds recorded nothing")
	}
	if h := st.Experiments["a"].Hold; h == nil || h.SpecHash != "h2" || h.Generation != 2 || h.Commit != "c1" || h.By != "controller x" || !h.Since.Equal(t0) {
		t.Fatalf("hold of a: %+v", h)
	}
	if st.Experiments["b"].Hold != nil || !st.Experiments["c"].Hold.Removed {
		t.Fatalf("holds of b, c: %+v %+v", st.Experiments["b"].Hold, st.Experiments["c"].Hold)
	}
	// The same pass again: nothing to write, and the hold keeps its start.
	if changed, _ := RecordHolds(st, d, "controller x", "c2", t0.Add(time.Minute)); changed {
		t.Fatal("an unchanged hold was rewritten")
	}
	if _, held := Split(p, st); len(held) != 2 {
		t.Fatalf("held %+v", held)
	}
	if got := Targets(p, d); !reflect.DeepEqual(got, []string{"experiment.b"}) {
		t.Fatalf("Targets = %v", got)
	}
	st.Experiments["a"].Approval = &state.Approval{Change: st.Experiments["a"].Hold.Change, By: "alice", At: t0}
	approved, held := Split(p, st)
	if len(approved) != 1 || approved[0].Experiment != "a" || len(held) != 1 || held[0].Experiment != "c" {
		t.Fatalf("approved %+v held %+v", approved, held)
	}
	// A later commit changes the spec again: held again, and the approval
	// of the earlier change is dropped.
	p.Experiments[0].SpecHash = "h3"
	if approved, _ := Split(p, st); len(approved) != 0 {
		t.Fatalf("a different change was approved: %+v", approved)
	}
	changed, stale := RecordHolds(st, Destructive(p), "controller x", "c3", t0.Add(time.Hour))
	if !changed || !reflect.DeepEqual(stale, []string{"a"}) || st.Experiments["a"].Approval != nil || st.Experiments["a"].Hold.SpecHash != "h3" || st.Experiments["a"].Hold.Commit != "c3" {
		t.Fatalf("after a later change: changed %v stale %v hold %+v approval %+v", changed, stale, st.Experiments["a"].Hold, st.Experiments["a"].Approval)
	}
	// Nothing destructive any more: holds go.
	if RecordHolds(st, nil, "controller x", "c4", t0); st.Experiments["a"].Hold != nil || st.Experiments["c"].Hold != nil {
		t.Fatal("holds stayed with nothing held")
	}
	if Targets(p, nil) != nil {
		t.Fatal("nothing held: Targets must be nil (plan everything)")
	}
}

func TestBackoff(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, Backoff(n, time.Second, 10*time.Second))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Backoff = %v, want %v", got, want)
	}
}
