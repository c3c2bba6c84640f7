package ui_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/tfevents"
	"github.com/trialform/trialform/state"
)

// xss is a param value that would run script if the page put it into HTML.
const xss = `<img src=x onerror=alert(1)>`

const fixtureHCL = `search_space "s" {
  param "x"      { uniform = [-5, 5] }
  param "lr"     { loguniform = [0.0001, 1] }
  param "opt"    { choice = ["sgd", "adam", "<img src=x onerror=alert(1)>"] }
  param "layers" { randint = [1, 6] }
}

experiment "demo" {
  search_space = search_space.s
  objective {
    metric = "default"
    goal   = "minimize"
  }
  tuner "tpe" {
    seed = 1
  }
  max_trials  = 80
  concurrency = 4
  trial {
    command = "python3 train.py --opt ${param.opt}"
  }
}

experiment "other" {
  search_space = search_space.s
  objective {
    metric = "default"
    goal   = "minimize"
  }
  tuner "random" {
    seed = 2
  }
  max_trials  = 30
  concurrency = 2
  trial {
    command = "true"
  }
}
`

// fixture writes a configuration (in a git repository when git is
// installed) and a state with two experiments: "demo" with n trials of
// every status, intermediate values, an early-stopped trial, TensorBoard
// event files for trial t0003 (in its output directory and in the
// TensorBoard tree), and the XSS value as a param of t0002;
// "other" with 20 trials. It returns the directory.
func fixture(t testing.TB, n int) string {
	t.Helper()
	dir := t.TempDir()
	start := time.Now().UTC().Truncate(time.Second).Add(-2 * time.Hour)
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fixtureHCL), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err == nil {
		for _, args := range [][]string{
			{"init", "-q"}, {"add", "main.hcl"},
			{"-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "-m", "search space for demo"},
		} {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			at := start.Add(-time.Hour).Format(time.RFC3339)
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+at, "GIT_COMMITTER_DATE="+at)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	sd := filepath.Join(dir, ".trialform")
	m := state.NewManager(sd)
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	st.Experiments["demo"] = experiment(t, m, "demo", "demoexp1", n, start, true)
	st.Experiments["other"] = experiment(t, m, "other", "otherexp", 20, start, false)
	st.Experiments["other"].MaxTrials, st.Experiments["other"].Concurrency = 30, 2
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	// TensorBoard event files of t0003, in output/ and in a run subdirectory.
	tb := filepath.Join(sd, "trials", "demo", "t0003", "output")
	if err := os.MkdirAll(filepath.Join(tb, "eval"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		tag  string
	}{{filepath.Join(tb, "events.out.tfevents.1.host"), "loss"}, {filepath.Join(tb, "eval", "events.out.tfevents.2.host"), "accuracy"},
		{filepath.Join(sd, "tensorboard", "demo", "t0003", "events.out.tfevents.3.host"), "lr"}} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		for step := int64(0); step < 20; step++ {
			if err := tfevents.WriteScalar(fh, f.tag, step, float64(1767225600+step), float32(math.Exp(-float64(step)/5)), f.tag == "accuracy"); err != nil {
				t.Fatal(err)
			}
		}
		fh.Close()
	}
	return dir
}

func experiment(t testing.TB, m *state.Manager, name, id string, n int, start time.Time, withSeries bool) *state.Experiment {
	rng := rand.New(rand.NewPCG(uint64(n), 3))
	e := &state.Experiment{
		Name: name, ID: id, Platform: "local.default", Generation: 1, MaxTrials: 80, Concurrency: 4,
		Goal: "minimize", Metric: "default", CreatedAt: start, NextSeq: n, Trials: map[string]*state.Trial{},
	}
	opts := []any{"sgd", "adam", xss}
	for i := 0; i < n; i++ {
		x := rng.Float64()*10 - 5
		lr := math.Pow(10, -4+4*rng.Float64())
		opt := opts[rng.IntN(2)]
		if i == 2 {
			opt = xss
		}
		layers := float64(1 + rng.IntN(5))
		loss := (x-1.5)*(x-1.5) + (math.Log10(lr)+2)*(math.Log10(lr)+2) + 0.2*math.Abs(layers-3)
		s := start.Add(time.Duration(i) * 10 * time.Second)
		end := s.Add(8 * time.Second)
		tr := &state.Trial{
			ID: fmt.Sprintf("t%04d", i), Seq: i, ParameterID: i, Generation: 1, Status: state.Succeeded,
			Params:   map[string]any{"x": x, "lr": lr, "opt": opt, "layers": layers},
			Attempts: 1, CreatedAt: s, StartedAt: &s, EndedAt: &end,
		}
		switch {
		case i%20 == 7:
			tr.Status, tr.Reason = state.Failed, "exit code 1"
			code := 1
			tr.ExitCode = &code
		case i%15 == 11:
			tr.Status, tr.Reason = state.EarlyStopped, "stopped by the medianstop assessor"
		case i >= n-2:
			tr.Status, tr.EndedAt = state.Running, nil
		}
		if tr.Status == state.Succeeded {
			code := 0
			tr.ExitCode, tr.Value, tr.Final = &code, &loss, map[string]float64{"default": loss, "std": loss / 10}
		}
		if withSeries {
			steps := 10
			if tr.Status == state.EarlyStopped {
				steps = 4
			}
			var pts []state.MetricPoint
			for k := 0; k < steps; k++ {
				v, _ := json.Marshal(loss * (1 + 2/float64(k+1)))
				pts = append(pts, state.MetricPoint{Type: "PERIODICAL", Sequence: k, Value: v, Time: s.Add(time.Duration(k) * time.Second)})
			}
			if err := m.AppendMetrics(name, tr.ID, pts); err != nil {
				t.Fatal(err)
			}
			tr.Intermediate = steps
		}
		if i == 3 {
			tr.Provenance = &state.Provenance{Commit: "0123456789abcdef0123456789abcdef01234567", Dirty: true, CodeCommit: "fedcba9876543210fedcba9876543210fedcba98", Version: "9.9.9"}
		}
		e.Trials[tr.ID] = tr
	}
	return e
}
