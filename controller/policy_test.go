package controller

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/trialform/trialform/plan"
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
	ap, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, held := Split(p, ap); len(held) != 2 {
		t.Fatalf("held %+v", held)
	}
	if got := Targets(p, d); !reflect.DeepEqual(got, []string{"experiment.b"}) {
		t.Fatalf("Targets = %v", got)
	}
	if err := ap.Add(Approval{Change: d[0].Change, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Reopened from the file: the approval survives a restart.
	ap, err = OpenApprovals(ap.path)
	if err != nil {
		t.Fatal(err)
	}
	approved, held := Split(p, ap)
	if len(approved) != 1 || approved[0].Experiment != "a" || len(held) != 1 || held[0].Experiment != "c" {
		t.Fatalf("approved %+v held %+v", approved, held)
	}
	// A later commit changes the spec again: held again.
	p.Experiments[0].SpecHash = "h3"
	if approved, _ := Split(p, ap); len(approved) != 0 {
		t.Fatalf("a different change was approved: %+v", approved)
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
