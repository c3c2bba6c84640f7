package importance

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os/exec"
	"testing"

	"github.com/trialform/trialform/internal/testdeps"
)

// problem: on the params' own scales x matters most (variance about
// 1.4), then y (2·log10 y over y uniform in [0.001, 1]: about 0.75), then
// the choice c (about 0.17); z does nothing.
func problem(n int) (params []Param, X [][]float64, y []float64, raw []map[string]any) {
	rng := rand.New(rand.NewPCG(7, 7))
	opts := []string{"a", "b", "c"}
	params = []Param{{"x", -1, 1}, {"y", 1e-3, 1}, {"c", -0.5, 2.5}, {"z", 0, 10}}
	for i := 0; i < n; i++ {
		x := rng.Float64()*2 - 1
		yy := 1e-3 + rng.Float64()*(1-1e-3)
		c := rng.IntN(3)
		z := rng.Float64() * 10
		v := 4*x*x + 2*math.Log10(yy) + 0.5*float64(c)
		X = append(X, []float64{x, yy, float64(c), z})
		y = append(y, v)
		raw = append(raw, map[string]any{"params": map[string]any{"x": x, "y": yy, "c": opts[c], "z": z}, "value": v})
	}
	return
}

func names(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestRankingOnAKnownProblem(t *testing.T) {
	params, X, y, _ := problem(200)
	got := Compute(params, X, y, Options{Seed: 1})
	if n := names(got); n[0] != "x" || n[1] != "y" || n[2] != "c" || n[3] != "z" {
		t.Fatalf("ranking %v, want [x y c z]: %+v", n, got)
	}
	sum := 0.0
	for _, r := range got {
		sum += r.Importance
	}
	if math.Abs(sum-1) > 1e-9 || got[3].Importance > 0.05 {
		t.Fatalf("importances %+v (sum %v; z must be near 0)", got, sum)
	}
}

func TestNoVariance(t *testing.T) {
	got := Compute([]Param{{Name: "a"}}, [][]float64{{1}, {2}}, []float64{3, 3}, Options{})
	if len(got) != 1 || got[0].Importance != 0 {
		t.Fatalf("%+v", got)
	}
}

// TestAgreesWithOptuna fits the same trials with Optuna's fANOVA
// (Debian's python3-optuna) and compares the rankings.
func TestAgreesWithOptuna(t *testing.T) {
	testdeps.Require(t, "python3-optuna", testdeps.PythonModules("/usr/bin/python3", "optuna"))
	params, X, y, raw := problem(200)
	in, _ := json.Marshal(raw)
	cmd := exec.Command("/usr/bin/python3", "testdata/optuna_importance.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("optuna: %v\n%s", err, stderr.String())
	}
	var pairs [][2]any
	if err := json.Unmarshal(out, &pairs); err != nil {
		t.Fatalf("optuna output %q: %v", out, err)
	}
	var want []string
	for _, p := range pairs {
		want = append(want, p[0].(string))
	}
	got := Compute(params, X, y, Options{Seed: 1})
	t.Logf("optuna: %v\nours:   %+v", pairs, got)
	if g := names(got); len(g) != len(want) || g[0] != want[0] || g[1] != want[1] || g[2] != want[2] || g[3] != want[3] {
		t.Fatalf("ranking %v, optuna's %v", g, want)
	}
}

func BenchmarkCompute2000(b *testing.B) {
	params, X, y, _ := problem(2000)
	for b.Loop() {
		Compute(params, X, y, Options{Seed: 1})
	}
}
