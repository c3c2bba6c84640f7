package openpai_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trialform/trialform/providers"
)

// BenchmarkReadRunning: one refresh pass (a Read of each of 100 running
// trials, sequentially) over the fake OpenPAI on this machine: the
// provider's own cost (record on the mount, two REST calls, the log) with
// no network latency.
func BenchmarkReadRunning(b *testing.B) {
	l := newLab(b, token, nil)
	const n = 100
	code := b.TempDir()
	for i := 0; i < n; i++ {
		if _, err := l.p.Start(context.Background(), providers.StartRequest{Experiment: "e", TrialID: fmt.Sprintf("t%03d", i), Shell: "echo 'trialform: intermediate 1'; sleep 1000", CodeDir: code}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for i := 0; i < n; i++ {
			if _, err := l.p.Read(context.Background(), providers.ReadRequest{Experiment: "e", TrialID: fmt.Sprintf("t%03d", i)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/read")
}
