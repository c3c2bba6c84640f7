package query

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/trialform/trialform/internal/results"
)

// BenchmarkFilterSort10k: the query and sort of `trials` over 10,000 rows
// (the whole command, state load included, is timed by make bench).
func BenchmarkFilterSort10k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	acts := []string{"relu", "sigmoid", "tanh"}
	rows := make([]*results.Row, 10000)
	for i := range rows {
		loss := rng.Float64()
		rows[i] = &results.Row{Experiment: "big", ID: fmt.Sprintf("t%04d", i), Seq: i, Status: "SUCCEEDED",
			Params:  map[string]any{"activation": acts[rng.IntN(3)], "lr": rng.Float64()},
			Metrics: map[string]float64{"loss": loss}, Metric: &loss, Objective: "loss", Goal: "minimize"}
	}
	q, err := Parse("status:succeeded, params.activation:relu|sigmoid, metrics.loss:<=0.3")
	if err != nil {
		b.Fatal(err)
	}
	s, err := ParseSort("-metrics.loss,params.lr")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		out := q.Filter(rows)
		s.Apply(out)
		if len(out) == 0 {
			b.Fatal("nothing matched")
		}
	}
}
