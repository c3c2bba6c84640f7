package kubernetes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
)

// TestUnschedulablePodSaysWhy: a pod no node can take is not RUNNING
// with no word: the trial's note gives the scheduler's reason.
func TestUnschedulablePodSaysWhy(t *testing.T) {
	need(t)
	ns := namespace(t, "unschedulable")
	p, err := k8s.New(k8s.Config{Rest: cp.Config, Namespace: ns, CodeDir: "/app", NodeSelector: map[string]string{"trialform.io/test": "nowhere"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := p.Start(ctx, providers.StartRequest{Experiment: "us", ExperimentID: "eid", TrialID: "t0", Params: map[string]any{"x": 1},
		Shell: "true", CodeDir: "/app", Lineage: "L"}); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), providers.StopRequest{Experiment: "us", TrialID: "t0", Purge: true, Grace: time.Second})
	for {
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: "us", TrialID: "t0"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(o.Note, "its pod cannot be scheduled: Unschedulable") {
			return
		}
		if ctx.Err() != nil {
			dump(t, ns)
			t.Fatalf("phase %s, note %q: no reason the pod waits", o.Phase, o.Note)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
