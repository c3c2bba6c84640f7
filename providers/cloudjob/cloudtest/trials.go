package cloudtest

import (
	"context"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// FinalLine is a trial command that reports the final result 0.5 on
// stdout, as NNI's library does off the local platform.
const FinalLine = `echo "NNISDK_MEb'{\"parameter_id\": 1, \"trial_job_id\": \"t1\", \"type\": \"FINAL\", \"sequence\": 0, \"value\": \"0.5\"}'"`

// StartRequest is the request the platform tests start trial id of
// experiment "e" with: the command shell, an empty code directory, lineage
// "L".
func StartRequest(t testing.TB, id, shell string) providers.StartRequest {
	return providers.StartRequest{Experiment: "e", ExperimentID: "x1", TrialID: id, Seq: 1, ParameterID: 1,
		Params: map[string]any{"lr": 0.1}, Shell: shell, CodeDir: t.TempDir(), Lineage: "L", Generation: 1}
}

// Start starts trial id (see StartRequest) and fails the test on an error.
func Start(t testing.TB, p providers.Provider, id, shell string) providers.Handle {
	t.Helper()
	h, err := p.Start(context.Background(), StartRequest(t, id, shell))
	if err != nil {
		t.Fatalf("Start %s: %v", id, err)
	}
	return h
}

// WaitEnd reads trial id of experiment "e" until it ends (30 s at most)
// and returns the last observation with every metric read on the way.
func WaitEnd(t testing.TB, p providers.Provider, id string) providers.Observation {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var off map[string]int64
	var all []providers.Metric
	for {
		o, err := p.Read(context.Background(), providers.ReadRequest{Experiment: "e", TrialID: id, MetricsOffset: off})
		if err != nil {
			t.Fatalf("Read %s: %v", id, err)
		}
		off = o.MetricsOffset
		all = append(all, o.Metrics...)
		if o.Phase.Ended() {
			o.Metrics = all
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial %s did not end: %+v", id, o)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
