package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

// TestProblemOptima: every analytic problem's stated argmin lies in its
// space and evaluates to its stated minimum within 1e-4, and no random
// point nor small perturbation of the argmin goes below the minimum.
func TestProblemOptima(t *testing.T) {
	for _, pr := range Problems() {
		if pr.Eval == nil {
			continue
		}
		t.Run(pr.Name, func(t *testing.T) {
			if err := pr.Space.Validate(); err != nil {
				t.Fatalf("space: %v", err)
			}
			if !pr.Space.Contains(pr.Argmin) {
				t.Fatalf("argmin %v is not in the space", pr.Argmin)
			}
			got := pr.Eval(pr.Argmin)
			if math.Abs(got-pr.Optimum) > 1e-4 {
				t.Fatalf("f(argmin) = %.8f, stated minimum %.8f", got, pr.Optimum)
			}
			rng := rand.New(rand.NewPCG(7, 7))
			for i := 0; i < 2000; i++ {
				p := space.SampleSpace(pr.Space, rng)
				if v := pr.Eval(p); v < pr.Optimum-1e-4 {
					t.Fatalf("f(%v) = %v is below the stated minimum %v", p, v, pr.Optimum)
				}
			}
			for i := 0; i < 200; i++ {
				p := space.Params{}
				for k, v := range pr.Argmin {
					p[k] = v
				}
				for _, par := range pr.Space.Params {
					if par.Kind != space.Uniform {
						continue
					}
					x := p[par.Name].(float64) + 1e-3*rng.NormFloat64()
					p[par.Name] = math.Min(math.Max(x, par.Args[0]), par.Args[1])
				}
				if v := pr.Eval(p); v < pr.Optimum-1e-4 {
					t.Fatalf("near argmin, f(%v) = %v is below the stated minimum %v", p, v, pr.Optimum)
				}
			}
		})
	}
}

// TestMixedOptionsMoveOptimum: every option of the mixed problem has its
// own best point, and at adam's best point the other options are worse.
func TestMixedOptionsMoveOptimum(t *testing.T) {
	sp := mixedSpace()
	for _, c := range mixedCentres {
		p := space.Params{"lr": math.Pow(10, c.lr), "width": c.w, "depth": c.d, "batch": math.Exp2(c.logb), "opt": c.opt}
		if !sp.Contains(p) {
			t.Errorf("%s: centre %v not in the space", c.opt, p)
		}
		if v := mixed(p); math.Abs(v-c.offset) > 1e-9 {
			t.Errorf("%s: f(centre) = %v, want %v", c.opt, v, c.offset)
		}
		q := space.Params{"lr": 1e-3, "width": 6.5, "depth": 3.0, "batch": 64.0, "opt": c.opt}
		if c.opt != "adam" && mixed(q) < 0.5 {
			t.Errorf("%s at adam's optimum = %v; the choice barely moves the optimum", c.opt, mixed(q))
		}
	}
}

func TestProblemNames(t *testing.T) {
	seen := map[string]bool{}
	for _, pr := range Problems() {
		if seen[pr.Name] {
			t.Errorf("duplicate problem %q", pr.Name)
		}
		seen[pr.Name] = true
		if (pr.Eval == nil) == (pr.Worker == "") {
			t.Errorf("%s: needs exactly one of Eval and Worker", pr.Name)
		}
	}
	if len(seen) != 10 {
		t.Errorf("%d problems, want 10", len(seen))
	}
}
