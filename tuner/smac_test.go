package tuner

import (
	"math/rand/v2"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

// TestForestCategoricalSplit: a response that depends on which of five
// options is chosen (not on their order) is learnt by option-subset
// splits: the forest ranks the options as the data do.
func TestForestCategoricalSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	level := []float64{3, 0, 4, 1, 2} // option 1 best, then 3
	var X [][]float64
	var y []float64
	for i := 0; i < 60; i++ {
		c := r.IntN(5)
		X = append(X, []float64{r.Float64(), float64(c)})
		y = append(y, level[c]+0.1*r.NormFloat64())
	}
	f := fitForest(X, y, []rfFeature{{}, {ncat: 5}}, rfDefaults, r)
	for c, want := range level {
		m, _ := f.predict([]float64{0.5, float64(c)})
		if m < want-0.5 || m > want+0.5 {
			t.Errorf("option %d: predicted %.3f, want about %v", c, m, want)
		}
	}
}

// TestSMACLearnsChoice: with a choice that moves the optimum, smac picks
// the best option in most of its late trials.
func TestSMACLearnsChoice(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}},
		{Name: "c", Kind: space.Choice, Options: []space.Option{{Value: "a"}, {Value: "b"}, {Value: "c"}, {Value: "d"}}},
	}}
	f := func(p space.Params) float64 {
		x := p["x"].(float64)
		bonus := map[any]float64{"a": 1, "b": 0.6, "c": 0, "d": 0.8}[p["c"]]
		return (x-0.4)*(x-0.4) + bonus
	}
	for _, name := range []string{"smac", "gp"} {
		hist := loop(t, mustNew(t, name, nil, sp), sp, Minimize, 4, 50, f)
		n := 0
		for _, h := range hist[30:] {
			if h.Params["c"] == "c" {
				n++
			}
		}
		if n < 12 {
			t.Errorf("%s: only %d of the last 20 trials chose the best option", name, n)
		}
	}
}

func BenchmarkSMACSuggest200(b *testing.B) {
	benchBO(b, "smac", map[string]any{"random_prob": 0.0}, 200)
}

// TestCopula: normal scores of ranks, monotone, ties equal, symmetric.
func TestCopula(t *testing.T) {
	z := copula([]float64{5, 1e6, -2, 5, 0})
	if !(z[2] < z[4] && z[4] < z[0] && z[0] == z[3] && z[3] < z[1]) {
		t.Fatalf("copula %v is not the rank order", z)
	}
	if s := z[2] + z[1]; s > 1e-12 || s < -1e-12 {
		t.Fatalf("lowest and highest scores %v, %v are not symmetric", z[2], z[1])
	}
}
