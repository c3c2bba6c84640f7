package dlc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trialform/trialform/providers"
)

// BenchmarkReadRunning is one refresh pass's Reads over 50 running trials
// against the local fake: each Read is a signed GetJob and a GetPodLogs.
func BenchmarkReadRunning(b *testing.B) {
	l := newLab(b, keySecret)
	const n = 50
	code := b.TempDir()
	for i := 0; i < n; i++ {
		if _, err := l.p.Start(context.Background(), providers.StartRequest{Experiment: "e", TrialID: fmt.Sprintf("t%03d", i), Shell: "echo 'trialform: intermediate 1'; sleep 1000", CodeDir: code}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for i := 0; i < n; i++ {
			o, err := l.p.Read(context.Background(), providers.ReadRequest{Experiment: "e", TrialID: fmt.Sprintf("t%03d", i)})
			if err != nil || o.Phase != providers.PhaseRunning {
				b.Fatalf("Read: %+v %v", o, err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/read")
}
