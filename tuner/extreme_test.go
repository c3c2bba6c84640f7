package tuner

import (
	"math"
	"strings"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

// TestExtremeSpacesStayFinite: at the edges Validate still accepts
// (randint bounds at ±2^53, lognormal and normal whose mu ± 12 sigma is
// near the float limits), every tuner's suggestions are finite values of
// the space. Just past those edges Validate refuses the space.
func TestExtremeSpacesStayFinite(t *testing.T) {
	sp := &space.Space{Params: []space.Param{
		{Name: "ri", Kind: space.Randint, Args: []float64{-space.MaxExactInt, space.MaxExactInt}},
		{Name: "ln", Kind: space.Lognormal, Args: []float64{600, 9}},
		{Name: "qln", Kind: space.Qlognormal, Args: []float64{600, 9, 1}},
		{Name: "n", Kind: space.Normal, Args: []float64{0, 1e306}},
		{Name: "u", Kind: space.Uniform, Args: []float64{-1e307, 1e307}},
	}}
	if err := sp.Validate(); err != nil {
		t.Fatalf("edge space refused: %v", err)
	}
	if _, err := New("grid", nil, sp); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("grid over 2^54 integers: %v", err)
	}
	names := []string{"random", "tpe", "anneal", "evolution", "auto", "cmaes", "hyperband", "bohb", "pbt"}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var settings map[string]any
			if name == "hyperband" || name == "bohb" {
				settings = map[string]any{"max_budget": 9.0}
			}
			tn := mustNew(t, name, settings, sp)
			loop(t, tn, sp, Maximize, 7, 40, func(p space.Params) float64 {
				for _, prm := range sp.Params {
					x, ok := p[prm.Name].(float64)
					if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
						t.Fatalf("%s = %v (%T)", prm.Name, p[prm.Name], p[prm.Name])
					}
				}
				for _, prm := range sp.Params {
					if !space.Contains(prm, p[prm.Name]) {
						t.Fatalf("%s = %v is not in the space", prm.Name, p[prm.Name])
					}
				}
				return math.Log1p(p["ln"].(float64))
			})
		})
	}
	for _, bad := range []struct {
		p    space.Param
		want string
	}{
		{space.Param{Name: "x", Kind: space.Randint, Args: []float64{0, 1e19}}, "2^53"},
		{space.Param{Name: "x", Kind: space.Lognormal, Args: []float64{1000, 100}}, "log 1000"},
		{space.Param{Name: "x", Kind: space.Qlognormal, Args: []float64{600, 10, 1}}, "overflows"},
		{space.Param{Name: "x", Kind: space.Normal, Args: []float64{0, 1e308}}, "largest float"},
		{space.Param{Name: "x", Kind: space.Uniform, Args: []float64{-1e308, 1e308}}, "wider than the largest float"},
	} {
		if err := bad.p.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %v: got %v, want an error with %q", bad.p.Kind, bad.p.Args, err, bad.want)
		}
	}
}
