package space

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// MaxExactInt is the largest integer magnitude a randint bound may have:
// float64 (and so a JSON number) holds every integer up to 2^53 exactly.
const MaxExactInt = 1 << 53

// MaxNormalZ bounds the standard-normal draw of the normal kinds (Sample
// clamps it to ±MaxNormalZ, a probability below 1e-32 of ever mattering),
// so that a validated space never samples an infinite value.
const MaxNormalZ = 12

// maxLogValue is the largest x with a finite exp(x).
const maxLogValue = 709.0

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
		if p.Kind == Randint && (math.Abs(low) > MaxExactInt || math.Abs(high) > MaxExactInt) {
			return fmt.Errorf("randint bounds must lie within ±%s (2^53, the largest integers a float64 and a JSON number hold exactly), got [%s, %s]; use loguniform for wider ranges",
				FormatValue(float64(MaxExactInt)), FormatValue(low), FormatValue(high))
		}
		if math.IsInf(high-low, 0) {
			return fmt.Errorf("%s range [%s, %s] is wider than the largest float; narrow it", p.Kind, FormatValue(low), FormatValue(high))
		}
	case Normal, Qnormal, Lognormal, Qlognormal:
		mu, sigma := p.Args[0], p.Args[1]
		if sigma <= 0 {
			return fmt.Errorf("%s needs sigma > 0, got %s", p.Kind, FormatValue(sigma))
		}
		top, bottom := mu+MaxNormalZ*sigma, mu-MaxNormalZ*sigma
		switch {
		case (p.Kind == Lognormal || p.Kind == Qlognormal) && top > maxLogValue:
			return fmt.Errorf("%s [%s, %s] gives values past the largest float (exp(mu + %g·sigma) overflows); mu and sigma are those of the logarithm: for values near 1000 use mu = %.4g (log 1000)",
				p.Kind, FormatValue(mu), FormatValue(sigma), float64(MaxNormalZ), math.Log(1000))
		case math.IsInf(top, 0) || math.IsInf(bottom, 0):
			return fmt.Errorf("%s [%s, %s] gives values past the largest float; use a smaller mu or sigma", p.Kind, FormatValue(mu), FormatValue(sigma))
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
		case string:
			if strings.IndexByte(v, 0) >= 0 {
				return fmt.Errorf("option %d holds a NUL byte, which no command argument or environment variable can carry; remove it", i+1)
			}
		case bool:
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
