package space

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// argNames gives, per kind, the names of the numeric arguments in NNI's
// "_value" order; its length is the number of arguments the kind takes.
var argNames = map[Kind][]string{
	Randint:     {"low", "high"},
	Uniform:     {"low", "high"},
	Quniform:    {"low", "high", "q"},
	Loguniform:  {"low", "high"},
	Qloguniform: {"low", "high", "q"},
	Normal:      {"mu", "sigma"},
	Qnormal:     {"mu", "sigma", "q"},
	Lognormal:   {"mu", "sigma"},
	Qlognormal:  {"mu", "sigma", "q"},
}

// ArgNames returns the names of a kind's numeric arguments in NNI's
// "_value" order ("low", "high", "q" or "mu", "sigma", "q"); nil for choice
// and for unknown kinds.
func ArgNames(k Kind) []string {
	return append([]string(nil), argNames[k]...)
}

// KnownKind reports whether k is one of the ten NNI distribution types.
func KnownKind(k Kind) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Validate checks one parameter: a known kind, the right number of finite
// arguments, low < high, positive bounds for the log kinds, positive q and
// sigma, integral randint bounds, a non-empty choice whose options are
// strings, numbers or bools or nested options with unique names. Nested
// options' sub-spaces are validated too. The error says what to change; it
// does not name the parameter (callers add that).
func (p Param) Validate() error {
	if p.Kind == Choice {
		return validateChoice(p)
	}
	names, ok := argNames[p.Kind]
	if !ok {
		return fmt.Errorf("unknown distribution type %q; use one of %s", p.Kind, kindList())
	}
	if len(p.Options) > 0 {
		return fmt.Errorf("%s takes numeric arguments, not options; only choice has options", p.Kind)
	}
	if len(p.Args) != len(names) {
		return fmt.Errorf("%s needs %d values [%s], got %d", p.Kind, len(names), strings.Join(names, ", "), len(p.Args))
	}
	for i, a := range p.Args {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return fmt.Errorf("%s %s must be a finite number, got %v", p.Kind, names[i], a)
		}
	}
	switch p.Kind {
	case Randint, Uniform, Quniform, Loguniform, Qloguniform:
		low, high := p.Args[0], p.Args[1]
		if low >= high {
			return fmt.Errorf("%s needs low < high, got low %s and high %s; swap them or widen the range",
				p.Kind, FormatValue(low), FormatValue(high))
		}
		if (p.Kind == Loguniform || p.Kind == Qloguniform) && low <= 0 {
			return fmt.Errorf("%s needs low > 0 (it samples the logarithm), got low %s; use a small positive low such as 1e-6",
				p.Kind, FormatValue(low))
		}
		if p.Kind == Randint && (low != math.Trunc(low) || high != math.Trunc(high)) {
			return fmt.Errorf("randint bounds must be integers, got [%s, %s]; use uniform or quniform for fractional ranges",
				FormatValue(low), FormatValue(high))
		}
	case Normal, Qnormal, Lognormal, Qlognormal:
		if sigma := p.Args[1]; sigma <= 0 {
			return fmt.Errorf("%s needs sigma > 0, got %s", p.Kind, FormatValue(sigma))
		}
	}
	if len(names) == 3 {
		if q := p.Args[2]; q <= 0 {
			return fmt.Errorf("%s needs q > 0 (the step values are rounded to), got %s", p.Kind, FormatValue(q))
		}
	}
	return nil
}

func validateChoice(p Param) error {
	if len(p.Args) > 0 {
		return errors.New("choice takes options, not numeric arguments")
	}
	if len(p.Options) == 0 {
		return errors.New("choice needs at least one option; an empty choice cannot be sampled")
	}
	seen := map[string]bool{}
	for i, o := range p.Options {
		if o.Nested != nil || o.Name != "" {
			if o.Value != nil {
				return fmt.Errorf("option %d has both a value and a name; a nested option has only a name and sub-params", i+1)
			}
			if o.Name == "" {
				return fmt.Errorf("nested option %d needs a name (NNI's _name)", i+1)
			}
			if seen[o.Name] {
				return fmt.Errorf("nested option %q appears twice; option names must be unique", o.Name)
			}
			seen[o.Name] = true
			if o.Nested != nil {
				if err := o.Nested.Validate(); err != nil {
					return fmt.Errorf("option %q: %w", o.Name, err)
				}
			}
			continue
		}
		switch v := o.Value.(type) {
		case string, bool:
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("option %d must be a finite number, got %v", i+1, v)
			}
		case nil:
			return fmt.Errorf("option %d is null; options must be strings, numbers or bools", i+1)
		default:
			return fmt.Errorf("option %d has type %T; options must be strings, numbers or bools (use nested options for structured choices)", i+1, v)
		}
	}
	return nil
}

// Validate checks every parameter (see Param.Validate) and that parameter
// names are unique and non-empty. Errors name the parameter path, e.g.
// `param "layer": option "conv": param "kernel": ...`.
func (s *Space) Validate() error {
	if s == nil {
		return errors.New("no search space")
	}
	seen := map[string]bool{}
	for _, p := range s.Params {
		if p.Name == "" {
			return errors.New("a param has an empty name")
		}
		if seen[p.Name] {
			return fmt.Errorf("param %q is declared twice; param names must be unique", p.Name)
		}
		seen[p.Name] = true
		if err := p.Validate(); err != nil {
			return fmt.Errorf("param %q: %w", p.Name, err)
		}
	}
	return nil
}
