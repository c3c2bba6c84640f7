package tuner

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

func pbtSpace() *space.Space {
	return &space.Space{Params: []space.Param{
		{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-4, 1e-1}},
		{Name: "units", Kind: space.Quniform, Args: []float64{16, 256, 16}},
		{Name: "opt", Kind: space.Choice, Options: []space.Option{{Value: "sgd"}, {Value: "adam"}}},
	}}
}

func TestPBTRounds(t *testing.T) {
	sp := pbtSpace()
	tn, err := New("pbt", map[string]any{"population_size": 5.0, "factor": 0.2, "resample_probability": 0.0, "checkpoint_dir": "/ck"}, sp)
	if err != nil {
		t.Fatal(err)
	}
	seqs := []int{0, 1, 2, 3, 4}
	r0, err := tn.Suggest(Request{Space: sp, Goal: Maximize, Seed: 3, Seqs: seqs})
	if err != nil {
		t.Fatal(err)
	}
	var hist []Observation
	for i, p := range r0 {
		if p[LoadCheckpointParam] != "" || p[SaveCheckpointParam] != fmt.Sprintf("/ck/ckpt-%04d", i) {
			t.Fatalf("round 0 trial %d: %v", i, p)
		}
		if !sp.Contains(strip(p)) {
			t.Fatalf("round 0 trial %d outside the space: %v", i, p)
		}
		hist = append(hist, Observation{Seq: i, Params: p, State: Pending})
	}
	// Round 1 waits for round 0.
	if _, err := tn.Suggest(Request{Space: sp, Goal: Maximize, Seed: 3, History: hist, Seqs: []int{5}}); !errors.As(err, new(*WaitError)) {
		t.Fatalf("round 1 before round 0 finished: %v", err)
	}
	// Round 0 results: trial 4 best, trial 0 worst.
	for i := range hist {
		hist[i].State, hist[i].Value = Completed, float64(i)
	}
	r1, err := tn.Suggest(Request{Space: sp, Goal: Maximize, Seed: 3, History: hist, Seqs: []int{5, 6, 7, 8, 9}})
	if err != nil {
		t.Fatal(err)
	}
	// Member 0 (worst) exploits trial 4 (the top 1 of 5): its checkpoint,
	// and params perturbed from trial 4's.
	if r1[0][LoadCheckpointParam] != "/ck/ckpt-0004" {
		t.Fatalf("member 0 loads %v, want trial 4's checkpoint", r1[0][LoadCheckpointParam])
	}
	if reflect.DeepEqual(strip(r1[0]), strip(r0[4])) || r1[0]["opt"] != r0[4]["opt"] || !sp.Contains(strip(r1[0])) {
		t.Fatalf("member 0 params %v: want a perturbed copy of %v inside the space", r1[0], r0[4])
	}
	lr0, lr4 := r1[0]["lr"].(float64), r0[4]["lr"].(float64)
	if r := lr0 / lr4; (r < 0.79 || r > 0.81) && (r < 1.19 || r > 1.21) && lr0 != 1e-4 && lr0 != 1e-1 {
		t.Errorf("lr perturbed by %v, want x0.8 or x1.2", r)
	}
	// The others continue from their own checkpoints with their own params.
	for m := 1; m < 5; m++ {
		if r1[m][LoadCheckpointParam] != fmt.Sprintf("/ck/ckpt-%04d", m) || !reflect.DeepEqual(strip(r1[m]), strip(r0[m])) {
			t.Fatalf("member %d: %v, want to continue trial %d %v", m, r1[m], m, r0[m])
		}
		if r1[m][SaveCheckpointParam] != fmt.Sprintf("/ck/ckpt-%04d", 5+m) {
			t.Fatalf("member %d saves to %v", m, r1[m][SaveCheckpointParam])
		}
	}
	// Minimize: trial 0 is now the best, trial 4 is replaced by it.
	r1m, _ := tn.Suggest(Request{Space: sp, Goal: Minimize, Seed: 3, History: hist, Seqs: []int{9}})
	if r1m[0][LoadCheckpointParam] != "/ck/ckpt-0000" {
		t.Fatalf("minimize: member 4 loads %v", r1m[0][LoadCheckpointParam])
	}
}

func strip(p space.Params) space.Params {
	q := space.Params{}
	for k, v := range p {
		if k != LoadCheckpointParam && k != SaveCheckpointParam {
			q[k] = v
		}
	}
	return q
}

func TestPBTSettings(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"population_size": 1.0}, `"population_size" must be at least 2`},
		{map[string]any{"factor": 0.9}, `"factor" must be at most 0.5, got 0.9`},
		{map[string]any{"checkpoint_dir": ""}, "checkpoint_dir must be a non-empty string"},
		{map[string]any{"popsize": 3.0}, `unknown setting "popsize"`},
	} {
		if _, err := New("pbt", tc.in, pbtSpace()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.in, err, tc.want)
		}
	}
}
