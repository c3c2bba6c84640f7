package space

import (
	"encoding/json"
	"math"
	"math/rand/v2"
)

// This file holds NNI's value semantics: how a value of each kind is drawn
// (Sample) and which values a kind can produce (Contains). It follows NNI's
// own post-processing (nni/common/hpo_utils, deformat_parameters) exactly:
//
//   - randint [low, high): the integers ceil(low) .. ceil(high)-1.
//   - q-kinds: x = round(x/q)*q, where round is Python's built-in round on a
//     float, which rounds halves to even (banker's rounding). Go's
//     math.RoundToEven is the same function, so the same draw gives the same
//     float64, bit for bit.
//   - quniform and qloguniform are then clipped into [low, high]; qnormal and
//     qlognormal are not clipped (NNI clips only the bounded kinds).
//   - log kinds draw in log space and take exp.
//
// One deliberate addition: loguniform results are clamped into [low, high],
// because exp(log(high)) can exceed high by an ulp; NNI does not clamp.

// Sample draws one value of p with NNI's semantics:
//
//	choice: uniform over options (nested option -> map{"_name": name, sub params sampled recursively})
//	randint [low, high): integer in [low, high) as float64
//	uniform [low, high]; quniform: clip(round(uniform(low,high)/q)*q, low, high)
//	loguniform: exp(uniform(log low, log high)); qloguniform: clip(round(that/q)*q, low, high)
//	normal(mu, sigma); qnormal: round(normal/q)*q; lognormal: exp(normal); qlognormal: round(exp(normal)/q)*q
//
// It returns nil when p is malformed (too few arguments, no options, an
// empty randint range); Validate reports those.
func Sample(p Param, rng *rand.Rand) any {
	if p.Kind == Choice {
		if len(p.Options) == 0 {
			return nil
		}
		return OptionValue(p.Options[rng.IntN(len(p.Options))], rng)
	}
	if p.Kind == Randint {
		lo, hi, ok := IntRange(p)
		if !ok {
			return nil
		}
		return float64(lo + rng.Int64N(hi-lo))
	}
	a, ok := args(p)
	if !ok {
		return nil
	}
	var x float64
	switch p.Kind {
	case Uniform, Quniform:
		x = a[0] + rng.Float64()*(a[1]-a[0])
	case Loguniform, Qloguniform:
		x = math.Exp(math.Log(a[0]) + rng.Float64()*(math.Log(a[1])-math.Log(a[0])))
		x = clamp(x, a[0], a[1])
	case Normal, Qnormal:
		x = a[0] + a[1]*clampZ(rng.NormFloat64())
	case Lognormal, Qlognormal:
		x = math.Exp(a[0] + a[1]*clampZ(rng.NormFloat64()))
	default:
		return nil
	}
	return Quantize(p, x)
}

// clampZ keeps a standard-normal draw within ±MaxNormalZ, so that a
// validated normal or lognormal never yields an infinite value.
func clampZ(z float64) float64 { return clamp(z, -MaxNormalZ, MaxNormalZ) }

// OptionValue is the value a chosen option gives: its Value for a plain
// option, or map{"_name": Name, sub params sampled with rng} for a nested one.
func OptionValue(o Option, rng *rand.Rand) any {
	if !IsNested(o) {
		return o.Value
	}
	m := map[string]any{"_name": o.Name}
	if o.Nested != nil {
		for k, v := range SampleSpace(o.Nested, rng) {
			m[k] = v
		}
	}
	return m
}

// IsNested reports whether o is a nested-choice option (NNI's {"_name": ...}).
func IsNested(o Option) bool { return o.Name != "" || o.Nested != nil }

// SampleSpace draws every parameter of s in declaration order from one
// stream, so the same rng state always gives the same Params.
func SampleSpace(s *Space, rng *rand.Rand) Params {
	ps := Params{}
	if s == nil {
		return ps
	}
	for _, p := range s.Params {
		ps[p.Name] = Sample(p, rng)
	}
	return ps
}

// Quantize applies NNI's post-processing to a raw draw x (already in value
// space, i.e. after exp for log kinds): round(x/q)*q with halves to even for
// the q-kinds, then clipping into [low, high] for quniform and qloguniform.
// For uniform and loguniform x is clamped into [low, high]; other kinds
// return x unchanged.
func Quantize(p Param, x float64) float64 {
	switch p.Kind {
	case Uniform, Loguniform:
		if len(p.Args) >= 2 {
			return clamp(x, p.Args[0], p.Args[1])
		}
	case Quniform, Qloguniform:
		if len(p.Args) >= 3 && p.Args[2] > 0 {
			return clamp(RoundQ(x, p.Args[2]), p.Args[0], p.Args[1])
		}
	case Qnormal, Qlognormal:
		if len(p.Args) >= 3 && p.Args[2] > 0 {
			return RoundQ(x, p.Args[2])
		}
	}
	return x
}

// RoundQ is NNI's round(x/q)*q: Python's round of a float rounds halves to
// even and returns an int, so the result is never -0.
func RoundQ(x, q float64) float64 {
	k := math.RoundToEven(x / q)
	if k == 0 {
		return 0
	}
	return k * q
}

// IntRange returns the integers a randint can produce, as the half-open
// range [lo, hi) with NNI's bounds lo = ceil(low), hi = ceil(high).
func IntRange(p Param) (lo, hi int64, ok bool) {
	if p.Kind != Randint || len(p.Args) < 2 || !finite(p.Args[0]) || !finite(p.Args[1]) {
		return 0, 0, false
	}
	lo, hi = int64(math.Ceil(p.Args[0])), int64(math.Ceil(p.Args[1]))
	return lo, hi, hi > lo
}

// args returns p's numeric arguments when they make a usable distribution.
func args(p Param) ([]float64, bool) {
	n := 2
	if p.Kind == Quniform || p.Kind == Qloguniform || p.Kind == Qnormal || p.Kind == Qlognormal {
		n = 3
	}
	if len(p.Args) < n {
		return nil, false
	}
	a := p.Args[:n]
	for _, v := range a {
		if !finite(v) {
			return nil, false
		}
	}
	if n == 3 && a[2] <= 0 {
		return nil, false
	}
	switch p.Kind {
	case Uniform, Quniform:
		return a, a[0] <= a[1]
	case Loguniform, Qloguniform:
		return a, a[0] > 0 && a[0] <= a[1]
	case Normal, Qnormal, Lognormal, Qlognormal:
		return a, a[1] >= 0
	}
	return nil, false
}

// Contains reports whether v is a value p can produce: within bounds, on the
// q grid (after NNI's rounding and clipping), integral for randint, one of
// the options (nested options with every sub-parameter contained and no
// other key). Numbers may be any Go integer or float type. The grid test
// allows a relative error of 1e-9, so values that went through decimal text
// (0.3 for 0.30000000000000004) still count.
func Contains(p Param, v any) bool {
	if p.Kind == Choice {
		for _, o := range p.Options {
			if optionContains(o, v) {
				return true
			}
		}
		return false
	}
	x, ok := ToFloat(v)
	if !ok || !finite(x) {
		return false
	}
	if p.Kind == Randint {
		lo, hi, ok := IntRange(p)
		return ok && x == math.Trunc(x) && x >= float64(lo) && x < float64(hi)
	}
	a, ok := args(p)
	if !ok {
		return false
	}
	switch p.Kind {
	case Uniform, Loguniform:
		return x >= a[0] && x <= a[1]
	case Quniform, Qloguniform:
		// The image of clip(round(x/q)*q) over [low, high] is exactly the set
		// of points the function maps to themselves.
		return x >= a[0] && x <= a[1] && near(Quantize(p, x), x, a[2])
	case Normal:
		return true
	case Lognormal:
		return x > 0
	case Qnormal:
		return near(Quantize(p, x), x, a[2])
	case Qlognormal:
		return x >= 0 && near(Quantize(p, x), x, a[2])
	}
	return false
}

// Contains reports whether ps is an assignment s can produce: every
// parameter present and contained, and no other key.
func (s *Space) Contains(ps Params) bool {
	return containsMap(s, map[string]any(ps), "")
}

func containsMap(s *Space, m map[string]any, skip string) bool {
	n := 0
	if s != nil {
		for _, p := range s.Params {
			v, ok := m[p.Name]
			if !ok || !Contains(p, v) {
				return false
			}
		}
		n = len(s.Params)
	}
	if _, ok := m[skip]; ok && skip != "" {
		n++
	}
	return len(m) == n
}

func optionContains(o Option, v any) bool {
	if !IsNested(o) {
		return EqualValues(o.Value, v)
	}
	m, ok := asMap(v)
	if !ok {
		return false
	}
	if name, _ := m["_name"].(string); name != o.Name {
		return false
	}
	return containsMap(o.Nested, m, "_name")
}

// asMap accepts the shapes a nested-choice value takes in memory and after
// a JSON round trip.
func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case Params:
		return map[string]any(m), true
	}
	return nil, false
}

// EqualValues compares two plain option values the way they compare after a
// JSON round trip: numbers by value whatever their Go type, strings and
// bools exactly.
func EqualValues(a, b any) bool {
	if fa, ok := ToFloat(a); ok {
		fb, ok := ToFloat(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}

// ToFloat converts any Go number (and json.Number) to float64.
func ToFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// near reports whether a and b agree to a relative 1e-9 of the larger of
// their magnitudes and the grid step q.
func near(a, b, q float64) bool {
	if a == b {
		return true
	}
	scale := math.Max(q, math.Max(math.Abs(a), math.Abs(b)))
	return math.Abs(a-b) <= 1e-9*scale
}

func clamp(x, lo, hi float64) float64 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
