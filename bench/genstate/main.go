// Command genstate writes a configuration and a state with N finished
// trials into a directory, so `make bench` can time `trialform plan` on a
// long history. It is a benchmark fixture, not part of trialform.
//
// With -like DIR it grows what a real apply left in DIR (main.hcl and
// .trialform: the state, each trial's directory, metric series and
// TensorBoard directory) to N trials: trial i is a copy of real trial
// i mod (trials in DIR), files and state record, under its own id. The
// state then holds what users' states hold, and the trial directories are
// there, as after a real apply. Without -like it writes a state alone (no
// trial directories), as the benchmarks before issue 30 did.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/trialform/trialform/state"
)

const config = `search_space "s" {
  param "lr"     { loguniform = [0.0001, 1] }
  param "units"  { quniform = [16, 512, 16] }
  param "layers" { randint = [1, 8] }
  param "opt"    { choice = ["sgd", "adam", "rmsprop"] }
  param "drop"   { uniform = [0, 0.5] }
}

experiment "big" {
  search_space = search_space.s
  tuner "%s" {
    seed = 1
  }
  max_trials  = %d
  concurrency = 8
  trial {
    command = "true"
  }
}
`

func main() {
	n := flag.Int("n", 10000, "finished trials in the state")
	dir := flag.String("dir", "", "directory to write")
	tunerName := flag.String("tuner", "random", "tuner of the experiment")
	inter := flag.Int("intermediate", 0, "intermediate results per trial, written to the metric series files")
	like := flag.String("like", "", "directory of a real, finished apply to grow to -n trials (copies of its trials and their files)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "genstate: -dir is required")
		os.Exit(2)
	}
	if *like != "" {
		if err := grow(*like, *dir, *n); err != nil {
			fmt.Fprintln(os.Stderr, "genstate:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*dir, *n, *tunerName, *inter); err != nil {
		fmt.Fprintln(os.Stderr, "genstate:", err)
		os.Exit(1)
	}
}

func run(dir string, n int, tunerName string, inter int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// One more trial than the history, so plan has one trial to propose.
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(config, tunerName, n+1)), 0o644); err != nil {
		return err
	}
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	st, err := m.Load()
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &state.Experiment{
		Name: "big", ID: "benchexp", Platform: "local.default", Generation: 1,
		MaxTrials: n + 1, Concurrency: 8, Goal: "maximize", Metric: "default",
		CreatedAt: now, NextSeq: n, Trials: map[string]*state.Trial{},
	}
	opts := []string{"sgd", "adam", "rmsprop"}
	var batches []state.MetricsBatch
	for i := 0; i < n; i++ {
		v := rng.Float64()
		start := now.Add(time.Duration(i) * time.Second)
		end := start.Add(time.Second)
		code := 0
		id := fmt.Sprintf("t%04d", i)
		e.Trials[id] = &state.Trial{
			ID: id, Seq: i, ParameterID: i, Generation: 1, Status: state.Succeeded,
			Params: map[string]any{
				"lr": 0.0001 + rng.Float64()*0.9, "units": float64(16 * (1 + rng.IntN(32))),
				"layers": float64(1 + rng.IntN(7)), "opt": opts[rng.IntN(3)], "drop": rng.Float64() / 2,
			},
			Attempts: 1, CreatedAt: start, StartedAt: &start, EndedAt: &end, ExitCode: &code,
			Value: &v, Final: map[string]float64{"default": v, "loss": 1 - v},
		}
		if inter > 0 {
			pts := series(inter, v, start)
			t := e.Trials[id]
			for _, p := range pts { // as the refresh records them
				t.NoteIntermediate(p, e.Metric, e.Goal)
				t.Intermediate++
			}
			batches = append(batches, state.MetricsBatch{Experiment: "big", Trial: id, Points: pts})
			if len(batches) == 256 {
				if err := m.AppendMetricsBatch(batches); err != nil {
					return err
				}
				batches = batches[:0]
			}
		}
	}
	if err := m.AppendMetricsBatch(batches); err != nil {
		return err
	}
	st.Experiments["big"] = e
	return m.Save(st)
}

// series returns k intermediate points of a trial, written through the
// state's metric series (batched: the files are synced 256 at a time).
func series(k int, final float64, start time.Time) []state.MetricPoint {
	pts := make([]state.MetricPoint, k)
	for s := range pts {
		v := final * float64(s+1) / float64(k)
		pts[s] = state.MetricPoint{
			Type: "PERIODICAL", Sequence: s,
			Value: json.RawMessage(fmt.Sprintf(`{"default":%g,"loss":%g}`, v, 1-v)),
			Time:  start.Add(time.Duration(s) * 10 * time.Millisecond).UTC(),
		}
	}
	return pts
}
