package tuner

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

func gridSuggest(t *testing.T, sp *space.Space, settings map[string]any, hist []Observation, n int) ([]space.Params, error) {
	t.Helper()
	tn, err := New("grid", settings, sp)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([]int, n)
	for i := range seqs {
		seqs[i] = len(hist) + i + 1
	}
	return tn.Suggest(Request{Space: sp, History: hist, Seqs: seqs})
}

func TestGridEnumeratesProduct(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "a", Kind: space.Choice, Options: []space.Option{{Value: "x"}, {Value: 2.0}}},
		{Name: "b", Kind: space.Randint, Args: []float64{0, 3}},
		{Name: "c", Kind: space.Quniform, Args: []float64{1, 10, 3}},
	}}
	var want []space.Params
	for _, a := range []any{"x", 2.0} {
		for _, b := range []float64{0, 1, 2} {
			for _, c := range []float64{1, 3, 6, 9} {
				want = append(want, space.Params{"a": a, "b": b, "c": c})
			}
		}
	}
	n, err := gridSizeOf(sp, nil)
	if err != nil || n != len(want) {
		t.Fatalf("GridSize = %d, %v; want %d", n, err, len(want))
	}
	got, err := gridSuggest(t, sp, nil, nil, n)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("grid order:\n got %v\nwant %v", got, want)
	}
	for _, p := range got {
		if !sp.Contains(p) {
			t.Fatalf("%v not in space", p)
		}
	}
	_, err = gridSuggest(t, sp, nil, nil, n+1)
	var ex *ExhaustedError
	if !errors.As(err, &ex) || ex.Size != 24 || !strings.Contains(err.Error(), "grid has only 24 points") {
		t.Fatalf("asking for %d points: err = %v", n+1, err)
	}
}

func TestGridNestedAndContinuous(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "model", Kind: space.Choice, Options: []space.Option{
			{Name: "cnn", Nested: &space.Space{Params: []space.Param{
				{Name: "layers", Kind: space.Randint, Args: []float64{1, 3}},
				{Name: "dropout", Kind: space.Uniform, Args: []float64{0, 0.5}},
			}}},
			{Name: "linear"},
		}},
		{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-4, 1}},
	}}
	_, err := gridSizeOf(sp, nil)
	if err == nil || !strings.Contains(err.Error(), `"model.cnn.dropout"`) || !strings.Contains(err.Error(), "grid_points") {
		t.Fatalf("no grid_points: err = %v", err)
	}
	if _, err := New("grid", nil, sp); err == nil {
		t.Fatal("factory accepted a continuous parameter without grid_points")
	}
	settings := map[string]any{"grid_points": 5.0}
	n, err := gridSizeOf(sp, settings)
	// model: cnn 2 layers x 5 dropouts + linear = 11; lr: 5.
	if err != nil || n != 55 {
		t.Fatalf("GridSize = %d, %v; want 55", n, err)
	}
	got, err := gridSuggest(t, sp, settings, nil, n)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	lrs := map[float64]bool{}
	drops := map[float64]bool{}
	for _, p := range got {
		if !sp.Contains(p) || seen[key(p)] {
			t.Fatalf("%v: not in space or repeated", p)
		}
		seen[key(p)] = true
		lrs[p["lr"].(float64)] = true
		if m := p["model"].(map[string]any); m["_name"] == "cnn" {
			drops[m["dropout"].(float64)] = true
		}
	}
	for _, want := range []float64{1e-4, 1e-3, 1e-2, 1e-1, 1} {
		found := false
		for lr := range lrs {
			found = found || math.Abs(lr-want) <= 1e-12*want
		}
		if !found {
			t.Errorf("lr grid %v lacks log-spaced %g", lrs, want)
		}
	}
	if !reflect.DeepEqual(drops, map[float64]bool{0: true, 0.125: true, 0.25: true, 0.375: true, 0.5: true}) {
		t.Errorf("dropout grid %v", drops)
	}
	if got[0]["model"].(map[string]any)["_name"] != "cnn" || got[len(got)-1]["model"].(map[string]any)["_name"] != "linear" {
		t.Errorf("first parameter should vary slowest: %v ... %v", got[0], got[len(got)-1])
	}
}

func TestGridUnboundedKinds(t *testing.T) {
	tests := []struct {
		p    space.Param
		n    int
		want []float64
	}{
		{space.Param{Name: "x", Kind: space.Normal, Args: []float64{1, 2}}, 3, []float64{-3, 1, 5}},
		{space.Param{Name: "x", Kind: space.Qnormal, Args: []float64{0, 1, 1}}, 5, []float64{-2, -1, 0, 1, 2}},
		{space.Param{Name: "x", Kind: space.Qnormal, Args: []float64{0, 1, 2}}, 5, []float64{-2, 0, 2}}, // duplicates dropped
		{space.Param{Name: "x", Kind: space.Lognormal, Args: []float64{0, 1}}, 1, []float64{1}},
		{space.Param{Name: "x", Kind: space.Uniform, Args: []float64{2, 4}}, 1, []float64{3}},
	}
	for _, tc := range tests {
		sp := &space.Space{Params: []space.Param{tc.p}}
		got, err := gridSuggest(t, sp, map[string]any{"grid_points": float64(tc.n)}, nil, len(tc.want))
		if err != nil {
			t.Errorf("%s %v: %v", tc.p.Kind, tc.p.Args, err)
			continue
		}
		var xs []float64
		for _, p := range got {
			xs = append(xs, p["x"].(float64))
		}
		if !reflect.DeepEqual(xs, tc.want) {
			t.Errorf("%s %v with %d points: %v, want %v", tc.p.Kind, tc.p.Args, tc.n, xs, tc.want)
		}
		if n, _ := gridSizeOf(sp, map[string]any{"grid_points": float64(tc.n)}); n != len(tc.want) {
			t.Errorf("%s: GridSize %d, want %d", tc.p.Kind, n, len(tc.want))
		}
	}
	if _, err := gridSizeOf(&space.Space{Params: []space.Param{{Name: "q", Kind: space.Qnormal, Args: []float64{0, 1, 1}}}}, nil); err == nil || !strings.Contains(err.Error(), "unbounded") {
		t.Errorf("qnormal without grid_points: %v", err)
	}
	if _, err := gridSizeOf(&space.Space{Params: []space.Param{{Name: "c", Kind: space.Choice}}}, nil); err == nil || !strings.Contains(err.Error(), `"c" has no values`) {
		t.Errorf("empty choice: %v", err)
	}
}

// TestGridSkipsHistory: points earlier trials have (in any state) are not
// proposed again, and a gap left by a lost trial is filled first.
func TestGridSkipsHistory(t *testing.T) {
	sp := &space.Space{Params: []space.Param{{Name: "b", Kind: space.Randint, Args: []float64{0, 6}}}}
	pt := func(b float64) space.Params { return space.Params{"b": b} }
	hist := []Observation{
		{Seq: 1, Params: pt(0), State: Completed, Value: 1},
		{Seq: 2, Params: pt(3), State: Failed},
		{Seq: 3, Params: pt(2), State: Pending},
		{Seq: 4, Params: space.Params{"b": 99.0}, State: Completed}, // not a grid point
	}
	got, err := gridSuggest(t, sp, nil, hist, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []space.Params{pt(1), pt(4), pt(5)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := gridSuggest(t, sp, nil, hist, 4); err == nil || !strings.Contains(err.Error(), "grid has only 6 points") {
		t.Fatalf("overflow: %v", err)
	}
}

func TestGridRepeat(t *testing.T) {
	sp := &space.Space{Params: []space.Param{{Name: "k", Kind: space.Choice, Options: []space.Option{{Value: "a"}, {Value: "b"}, {Value: "c"}}}}}
	tn, err := New("grid", map[string]any{"repeat": true}, sp)
	if err != nil {
		t.Fatal(err)
	}
	var hist []Observation
	var got []any
	for seq := 0; seq < 7; seq++ {
		out, err := tn.Suggest(Request{Space: sp, History: hist, Seqs: []int{seq}})
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		got = append(got, out[0]["k"])
		hist = append(hist, Observation{Seq: seq, Params: out[0], State: Completed})
	}
	if want := []any{"a", "b", "c", "a", "b", "c", "a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("repeating grid = %v, want %v", got, want)
	}
	// Without repeat the fourth trial is an error.
	plain, _ := New("grid", nil, sp)
	if _, err := plain.Suggest(Request{Space: sp, History: hist[:3], Seqs: []int{3}}); err == nil {
		t.Fatal("an exhausted grid without repeat proposed a point")
	}
	if _, err := New("grid", map[string]any{"repeat": "yes"}, sp); err == nil || !strings.Contains(err.Error(), `setting "repeat": true or false is required`) {
		t.Fatalf("repeat = \"yes\": %v", err)
	}
}

// benchGrid: the next grid point after n trials the grid itself gave
// (the bench in bench/tuners measures the same through the CLI's path).
func benchGrid(b *testing.B, n int) {
	sp := &space.Space{Params: []space.Param{
		{Name: "a", Kind: space.Randint, Args: []float64{0, 10}},
		{Name: "b", Kind: space.Choice, Options: []space.Option{{Value: "x"}, {Value: "y"}, {Value: 3.0}}},
		{Name: "c", Kind: space.Quniform, Args: []float64{0, 1, 0.1}},
		{Name: "d", Kind: space.Uniform, Args: []float64{0, 1}},
		{Name: "e", Kind: space.Randint, Args: []float64{0, 10}},
	}}
	tn := mustNew(b, "grid", map[string]any{"grid_points": 5.0}, sp)
	hist := loop(b, tn, sp, Minimize, 1, n, func(p space.Params) float64 { return 0 })
	req := Request{Space: sp, Goal: Minimize, Seed: 1, History: hist, Seqs: []int{n + 1}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tn.Suggest(req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGridSuggest1000(b *testing.B)  { benchGrid(b, 1000) }
func BenchmarkGridSuggest10000(b *testing.B) { benchGrid(b, 10000) }

// TestGridSkipsHistoryLikeKeys: the grid finds the points earlier trials
// took by index arithmetic; it must agree with comparing canonical keys,
// whatever the numeric Go types in the history, with nested choices, and
// ignoring points off the grid.
func TestGridSkipsHistoryLikeKeys(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "lr", Kind: space.Loguniform, Args: []float64{1e-4, 1e-1}},
		{Name: "model", Kind: space.Choice, Options: []space.Option{
			{Value: "linear"},
			{Name: "mlp", Nested: &space.Space{Params: []space.Param{{Name: "layers", Kind: space.Randint, Args: []float64{1, 4}}}}},
			{Name: "empty"},
			{Value: 7.0},
		}},
		{Name: "bs", Kind: space.Quniform, Args: []float64{16, 64, 16}},
	}}
	settings := map[string]any{"grid_points": 3.0}
	n, err := gridSizeOf(sp, settings)
	if err != nil || n != 72 {
		t.Fatalf("grid size %d, %v; want 3 lr x 6 models x 4 bs", n, err)
	}
	all, err := gridSuggest(t, sp, settings, nil, n)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		var hist []Observation
		taken := map[string]bool{}
		for _, p := range all {
			if rng.IntN(3) == 0 {
				continue
			}
			taken[pointKey(p)] = true
			q := space.Params{}
			for k, v := range p {
				if f, ok := v.(float64); ok && f == float64(int(f)) && rng.IntN(2) == 0 {
					v = int(f) // a history decoded with other numeric types
				}
				q[k] = v
			}
			hist = append(hist, Observation{Params: q, State: Completed})
		}
		// Off-grid points take nothing.
		hist = append(hist, Observation{Params: space.Params{"lr": 0.5, "model": "linear", "bs": 16.0}, State: Completed},
			Observation{Params: space.Params{"lr": 1e-4, "model": "linear", "bs": 16.0, "extra": 1.0}, State: Completed})
		var want []space.Params
		for _, p := range all {
			if !taken[pointKey(p)] {
				want = append(want, p)
			}
		}
		if len(want) == 0 {
			continue
		}
		got, err := gridSuggest(t, sp, settings, hist, len(want))
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if pointKey(got[i]) != pointKey(want[i]) {
				t.Fatalf("round %d: suggestion %d = %v, want %v", round, i, got[i], want[i])
			}
		}
	}
}
