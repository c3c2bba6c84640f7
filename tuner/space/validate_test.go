package space_test

import (
	"math"
	"strings"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

func TestParamValidate(t *testing.T) {
	nested := func(ps ...space.Param) *space.Space { return &space.Space{Params: ps} }
	tests := []struct {
		name    string
		p       space.Param
		wantErr string // "" = valid
	}{
		{"uniform ok", space.Param{Name: "x", Kind: space.Uniform, Args: []float64{0.1, 1}}, ""},
		{"randint ok", space.Param{Name: "x", Kind: space.Randint, Args: []float64{1, 5}}, ""},
		{"quniform ok", space.Param{Name: "x", Kind: space.Quniform, Args: []float64{32, 256, 32}}, ""},
		{"qlognormal ok", space.Param{Name: "x", Kind: space.Qlognormal, Args: []float64{0, 1, 1}}, ""},
		{"normal negative mu ok", space.Param{Name: "x", Kind: space.Normal, Args: []float64{-3, 0.5}}, ""},
		{"choice ok", space.Param{Name: "x", Kind: space.Choice, Options: []space.Option{{Value: "a"}, {Value: 1.0}, {Value: true}}}, ""},
		{"nested ok", space.Param{Name: "x", Kind: space.Choice, Options: []space.Option{
			{Name: "conv", Nested: nested(space.Param{Name: "k", Kind: space.Choice, Options: []space.Option{{Value: 3.0}}})},
			{Name: "pool", Nested: &space.Space{}},
		}}, ""},
		{"unknown kind", space.Param{Name: "x", Kind: "gaussian", Args: []float64{0, 1}}, `unknown distribution type "gaussian"`},
		{"too few args", space.Param{Name: "x", Kind: space.Uniform, Args: []float64{0}}, "uniform needs 2 values [low, high], got 1"},
		{"too many args", space.Param{Name: "x", Kind: space.Quniform, Args: []float64{0, 1, 1, 1}}, "quniform needs 3 values [low, high, q], got 4"},
		{"low == high", space.Param{Name: "x", Kind: space.Uniform, Args: []float64{1, 1}}, "uniform needs low < high, got low 1 and high 1"},
		{"low > high", space.Param{Name: "x", Kind: space.Randint, Args: []float64{5, 1}}, "randint needs low < high, got low 5 and high 1"},
		{"loguniform low 0", space.Param{Name: "x", Kind: space.Loguniform, Args: []float64{0, 1}}, "loguniform needs low > 0"},
		{"qloguniform low negative", space.Param{Name: "x", Kind: space.Qloguniform, Args: []float64{-1, 10, 1}}, "qloguniform needs low > 0"},
		{"q zero", space.Param{Name: "x", Kind: space.Quniform, Args: []float64{0, 10, 0}}, "quniform needs q > 0"},
		{"q negative", space.Param{Name: "x", Kind: space.Qnormal, Args: []float64{0, 1, -1}}, "qnormal needs q > 0"},
		{"randint fraction", space.Param{Name: "x", Kind: space.Randint, Args: []float64{0.5, 3}}, "randint bounds must be integers"},
		{"sigma zero", space.Param{Name: "x", Kind: space.Lognormal, Args: []float64{0, 0}}, "lognormal needs sigma > 0, got 0"},
		{"nan", space.Param{Name: "x", Kind: space.Uniform, Args: []float64{math.NaN(), 1}}, "uniform low must be a finite number"},
		{"empty choice", space.Param{Name: "x", Kind: space.Choice}, "choice needs at least one option"},
		{"choice with args", space.Param{Name: "x", Kind: space.Choice, Args: []float64{1}}, "choice takes options"},
		{"choice list option", space.Param{Name: "x", Kind: space.Choice, Options: []space.Option{{Value: []any{1.0}}}}, "option 1 has type []interface {}"},
		{"choice null option", space.Param{Name: "x", Kind: space.Choice, Options: []space.Option{{Value: "a"}, {}}}, "option 2 is null"},
		{"duplicate nested name", space.Param{Name: "x", Kind: space.Choice, Options: []space.Option{
			{Name: "a", Nested: &space.Space{}}, {Name: "a", Nested: &space.Space{}}}}, `nested option "a" appears twice`},
		{"bad nested param", space.Param{Name: "x", Kind: space.Choice, Options: []space.Option{
			{Name: "conv", Nested: nested(space.Param{Name: "k", Kind: space.Uniform, Args: []float64{2, 1}})}}},
			`option "conv": param "k": uniform needs low < high`},
		{"options on uniform", space.Param{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}, Options: []space.Option{{Value: "a"}}}, "not options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSpaceValidate(t *testing.T) {
	u := func(name string) space.Param {
		return space.Param{Name: name, Kind: space.Uniform, Args: []float64{0, 1}}
	}
	tests := []struct {
		name    string
		s       *space.Space
		wantErr string
	}{
		{"ok", &space.Space{Params: []space.Param{u("a"), u("b")}}, ""},
		{"empty ok", &space.Space{}, ""},
		{"nil", nil, "no search space"},
		{"duplicate", &space.Space{Params: []space.Param{u("a"), u("a")}}, `param "a" is declared twice`},
		{"empty name", &space.Space{Params: []space.Param{u("")}}, "empty name"},
		{"bad param named", &space.Space{Params: []space.Param{u("a"), {Name: "b", Kind: space.Uniform, Args: []float64{1, 0}}}}, `param "b": uniform needs low < high`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}
