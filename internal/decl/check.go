package decl

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/trialform/trialform/internal/didyoumean"
)

// Problem is what is wrong with one value: a diagnostic's summary and
// detail, without the source range (schema adds it).
type Problem struct {
	Summary string
	Detail  string
}

// AttrError is a Problem of the attribute Attr, as an error; a tuner's
// own checks return one to have it reported at that attribute.
type AttrError struct {
	Attr string
	Problem
}

func (e *AttrError) Error() string { return strings.TrimSuffix(e.Detail, ".") }

// Errorf is an AttrError of attr with the summary "Invalid value".
func Errorf(attr, format string, args ...any) *AttrError {
	return &AttrError{Attr: attr, Problem: Problem{Summary: "Invalid value", Detail: fmt.Sprintf(format, args...)}}
}

// Interval is the range tag: numbers between Lo and Hi (nil: unbounded),
// each end in or out.
type Interval struct {
	Lo, Hi         *float64
	LoOpen, HiOpen bool // the end is left out: "(" or ")"
}

// ParseInterval reads "[1,)", "(0, 1]", "[0, 0.5]".
func ParseInterval(s string) (*Interval, error) {
	s = strings.TrimSpace(s)
	if len(s) < 3 || !strings.ContainsAny(s[:1], "[(") || !strings.ContainsAny(s[len(s)-1:], "])") {
		return nil, fmt.Errorf(`want an interval like "[0, 1)" or "(0,)"`)
	}
	lo, hi, ok := strings.Cut(s[1:len(s)-1], ",")
	if !ok {
		return nil, fmt.Errorf("want two ends separated by a comma")
	}
	iv := &Interval{LoOpen: s[0] == '(', HiOpen: s[len(s)-1] == ')'}
	for _, e := range []struct {
		text string
		dst  **float64
	}{{lo, &iv.Lo}, {hi, &iv.Hi}} {
		if t := strings.TrimSpace(e.text); t != "" {
			f, err := strconv.ParseFloat(t, 64)
			if err != nil {
				return nil, err
			}
			*e.dst = &f
		}
	}
	if iv.Lo == nil && iv.Hi == nil {
		return nil, fmt.Errorf("no end is given")
	}
	if iv.Lo != nil && iv.Hi != nil && *iv.Lo > *iv.Hi {
		return nil, fmt.Errorf("the low end is above the high one")
	}
	return iv, nil
}

// num is a bound as people write it: 4096, 0.25, 1e9.
func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e7 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	s = strings.Replace(s, "e+0", "e", 1)
	s = strings.Replace(s, "e+", "e", 1)
	return strings.Replace(s, "e-0", "e-", 1)
}

// Symbols is the interval for a reference: ">= 1", "> 0", "in [0, 1]".
func (iv *Interval) Symbols() string {
	switch {
	case iv.Lo != nil && iv.Hi != nil:
		return "in " + iv.String()
	case iv.Lo != nil && iv.LoOpen:
		return "> " + num(*iv.Lo)
	case iv.Lo != nil:
		return ">= " + num(*iv.Lo)
	case iv.HiOpen:
		return "< " + num(*iv.Hi)
	}
	return "<= " + num(*iv.Hi)
}

// String is the interval as written in the tag, normalised: "(0, 1]".
func (iv *Interval) String() string {
	var b strings.Builder
	b.WriteString(map[bool]string{true: "(", false: "["}[iv.LoOpen])
	if iv.Lo != nil {
		b.WriteString(num(*iv.Lo))
	}
	b.WriteString(", ")
	if iv.Hi != nil {
		b.WriteString(num(*iv.Hi))
	}
	b.WriteString(map[bool]string{true: ")", false: "]"}[iv.HiOpen])
	return b.String()
}

// Words is the interval for people: "at least 1", "between 0 and 1",
// "greater than 0 and at most 0.5".
func (iv *Interval) Words() string {
	var parts []string
	if iv.Lo != nil && iv.Hi != nil && !iv.LoOpen && !iv.HiOpen {
		return "between " + num(*iv.Lo) + " and " + num(*iv.Hi)
	}
	if iv.Lo != nil {
		parts = append(parts, iv.loWords())
	}
	if iv.Hi != nil {
		parts = append(parts, iv.hiWords())
	}
	return strings.Join(parts, " and ")
}

func (iv *Interval) loWords() string {
	if iv.LoOpen {
		return "greater than " + num(*iv.Lo)
	}
	return "at least " + num(*iv.Lo)
}

func (iv *Interval) hiWords() string {
	if iv.HiOpen {
		return "less than " + num(*iv.Hi)
	}
	return "at most " + num(*iv.Hi)
}

// violated says which end x is beyond, in words ("" when x is inside).
func (iv *Interval) violated(x float64) string {
	if iv.Lo != nil && (x < *iv.Lo || iv.LoOpen && x == *iv.Lo) {
		return iv.loWords()
	}
	if iv.Hi != nil && (x > *iv.Hi || iv.HiOpen && x == *iv.Hi) {
		return iv.hiWords()
	}
	return ""
}

// Contains reports whether x is in the interval.
func (iv *Interval) Contains(x float64) bool { return iv.violated(x) == "" }

// Check checks one value of the attribute: its type, and the whole
// number, min, range, oneof and duration rules. name is how the message
// calls the attribute ("seed", `setting "seed"`). An unknown value passes
// (it is checked once known).
func (a *Attr) Check(v cty.Value, name string, parseDuration func(string) (time.Duration, error)) *Problem {
	if !v.IsWhollyKnown() {
		return nil
	}
	if v.IsNull() {
		if a.Required {
			return &Problem{"Invalid value", fmt.Sprintf("%s must not be null; it must be %s.", name, a.What)}
		}
		return nil
	}
	if a.Type == cty.DynamicPseudoType {
		return nil
	}
	cv, err := convert.Convert(v, a.Type)
	if err != nil {
		return &Problem{"Incorrect attribute value type", fmt.Sprintf("Inappropriate value for %s: %s is required.", name, a.What)}
	}
	if a.Duration && parseDuration != nil {
		if _, err := parseDuration(cv.AsString()); err != nil {
			return &Problem{"Invalid duration", fmt.Sprintf("%s %q: %s. Use a Go duration like \"90m\" or \"2h30m\", or days like \"1d\".", name, cv.AsString(), err)}
		}
	}
	if a.Whole && cv.Type() == cty.Number {
		i, whole := WholeNumber(cv)
		switch {
		case a.What == "a whole number" && !whole:
			return &Problem{"Invalid value", fmt.Sprintf("%s must be a whole number, got %s.", name, cv.AsBigFloat().Text('g', -1))}
		case a.What == "a whole number" && a.Min != nil && i < *a.Min:
			return &Problem{"Invalid value", fmt.Sprintf("%s must be at least %d, got %d.", name, *a.Min, i)}
		case !whole || (a.Min != nil && i < *a.Min):
			return &Problem{"Invalid value", fmt.Sprintf("%s must be %s.", name, a.WholeWhat())}
		}
	}
	if a.Range != nil && cv.Type() == cty.Number {
		x, _ := cv.AsBigFloat().Float64()
		if w := a.Range.violated(x); w != "" || math.IsNaN(x) {
			return &Problem{"Invalid value", fmt.Sprintf("%s must be %s, got %s.", name, w, cv.AsBigFloat().Text('g', -1))}
		}
	}
	if len(a.OneOf) > 0 && cv.Type() == cty.String {
		s := cv.AsString()
		for _, o := range a.OneOf {
			if s == o {
				return nil
			}
		}
		return &Problem{"Invalid value", fmt.Sprintf("%s must be %s, got %q.%s", name, QuotedOr(a.OneOf), s, didyoumean.Sentence(s, a.OneOf, "%q"))}
	}
	return nil
}

// WholeWhat is how a whole-number attribute looks in a message.
func (a *Attr) WholeWhat() string {
	if strings.HasPrefix(a.What, "a whole number") && a.What != "a whole number" {
		return a.What
	}
	if a.Min != nil {
		return "a whole number >= " + strconv.FormatInt(*a.Min, 10)
	}
	return "a whole number"
}

// WholeNumber returns v as an int64 when it is a whole number that fits.
func WholeNumber(v cty.Value) (int64, bool) {
	if v.Type() != cty.Number || !v.IsKnown() || v.IsNull() {
		return 0, false
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return 0, false
	}
	i, acc := bf.Int64()
	return i, acc == big.Exact
}

// QuotedOr is `"a", "b" or "c"`.
func QuotedOr(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// FromGo turns plain Go values (what encoding/json decodes, and Go's
// integer types) into a cty value: the form Decode reads. Lists become
// tuples and maps objects, so mixed elements keep their types.
func FromGo(x any) (cty.Value, error) {
	switch v := x.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType), nil
	case cty.Value:
		return v, nil
	case string:
		return cty.StringVal(v), nil
	case bool:
		return cty.BoolVal(v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return cty.NilVal, fmt.Errorf("%v is not a number a setting can hold", v)
		}
		return cty.NumberFloatVal(v), nil
	case float32:
		return FromGo(float64(v))
	case int:
		return cty.NumberIntVal(int64(v)), nil
	case int64:
		return cty.NumberIntVal(v), nil
	case int32:
		return cty.NumberIntVal(int64(v)), nil
	case uint64:
		return cty.NumberUIntVal(v), nil
	case []any:
		if len(v) == 0 {
			return cty.EmptyTupleVal, nil
		}
		vals := make([]cty.Value, len(v))
		for i, e := range v {
			cv, err := FromGo(e)
			if err != nil {
				return cty.NilVal, err
			}
			vals[i] = cv
		}
		return cty.TupleVal(vals), nil
	case []string:
		vals := make([]any, len(v))
		for i, e := range v {
			vals[i] = e
		}
		return FromGo(vals)
	case []map[string]any:
		vals := make([]any, len(v))
		for i, e := range v {
			vals[i] = e
		}
		return FromGo(vals)
	case map[string]any:
		if len(v) == 0 {
			return cty.EmptyObjectVal, nil
		}
		vals := make(map[string]cty.Value, len(v))
		for k, e := range v {
			cv, err := FromGo(e)
			if err != nil {
				return cty.NilVal, err
			}
			vals[k] = cv
		}
		return cty.ObjectVal(vals), nil
	}
	// Named types (a map[string]any under another name), other slices.
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			m := make(map[string]any, rv.Len())
			for it := rv.MapRange(); it.Next(); {
				m[it.Key().String()] = it.Value().Interface()
			}
			return FromGo(m)
		}
	case reflect.Slice:
		l := make([]any, rv.Len())
		for i := range l {
			l[i] = rv.Index(i).Interface()
		}
		return FromGo(l)
	}
	return cty.NilVal, fmt.Errorf("unsupported value %v (%T)", x, x)
}

// DecodeGo is Decode for settings held as plain Go values (a plan's
// recorded settings, a benchmark's): unknown names are refused (with the
// closest valid one), every value is checked as schema checks it, then
// decoded. label is how messages call a setting (`setting "seed"`).
func (s *Schema) DecodeGo(in map[string]any, dst any, label func(name string) string) error {
	var unknown []string
	vals := make(map[string]cty.Value, len(in))
	for k, x := range in {
		if s.AttrNamed(k) == nil {
			unknown = append(unknown, k)
			continue
		}
		v, err := FromGo(x)
		if err != nil {
			return &AttrError{Attr: k, Problem: Problem{"Invalid value", fmt.Sprintf("%s: %s.", label(k), err)}}
		}
		vals[k] = v
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		what := "setting"
		if len(unknown) > 1 {
			what = "settings"
		}
		q := make([]string, len(unknown))
		for i, u := range unknown {
			q[i] = strconv.Quote(u)
		}
		return &AttrError{Attr: unknown[0], Problem: Problem{"Unsupported argument", fmt.Sprintf("unknown %s %s (valid: %s).%s",
			what, strings.Join(q, ", "), strings.Join(s.AttrNames(), ", "), didyoumean.Sentence(unknown[0], s.AttrNames(), "%q"))}}
	}
	for _, a := range s.Attrs {
		v, ok := vals[a.Name]
		if !ok {
			if a.Required {
				return &AttrError{Attr: a.Name, Problem: Problem{"Missing required argument", fmt.Sprintf("%s is required: %s.", label(a.Name), a.Doc)}}
			}
			continue
		}
		if p := a.Check(v, label(a.Name), nil); p != nil {
			return &AttrError{Attr: a.Name, Problem: *p}
		}
	}
	return s.Decode(vals, dst, nil)
}
