package space

import (
	"encoding/json"
	"math"
	"strconv"
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
