package space

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FormatValue renders a parameter value as command-line text: integral
// floats without a fraction ("64", not "64.0" or "6.4e+01"), other floats in
// the shortest form that round-trips, strings as they are, and nested
// choices / other values as compact JSON.
func FormatValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case nil:
		return ""
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return ""
		}
		return string(b)
	}
}

// QuoteValue renders a parameter value as in HCL, for messages: a string
// quoted, and said to be one where it reads as a number ("1" is not 1);
// numbers and other values as FormatValue does.
func QuoteValue(v any) string {
	if x, ok := v.(string); ok {
		if _, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return strconv.Quote(x) + " (a string)"
		}
		return strconv.Quote(x)
	}
	return FormatValue(v)
}

// Describe is a param's distribution as written in HCL, for messages:
// uniform [-5, 5], choice ["a", "b"] (a nested option by its name; at
// most ten options).
func Describe(p Param) string {
	var items []string
	if p.Kind == Choice {
		for i, o := range p.Options {
			if i == 10 {
				items = append(items, fmt.Sprintf("… (%d in all)", len(p.Options)))
				break
			}
			switch x := o.Value.(type) {
			case nil:
				items = append(items, fmt.Sprintf("option %q", o.Name))
			case string:
				items = append(items, strconv.Quote(x))
			default:
				items = append(items, FormatValue(x))
			}
		}
	} else {
		for _, a := range p.Args {
			items = append(items, strconv.FormatFloat(a, 'g', -1, 64))
		}
	}
	return fmt.Sprintf("%s [%s]", p.Kind, strings.Join(items, ", "))
}
