package trialproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Objective extracts the objective from a FINAL value (providers.Metric.Value,
// or any JSON text with NaN/Infinity allowed). metric is the objective key;
// "" means "default".
//
// A plain number counts as key "default". For an object, all holds every
// numeric member (null members, NNI's NaN, are left out). ok is false when
// the key is missing or its value is null; err is set only when value is not
// JSON or is neither a number, an object nor null.
func Objective(value string, metric string) (v float64, all map[string]float64, ok bool, err error) {
	if metric == "" {
		metric = "default"
	}
	norm, err := NormalizeValue(value)
	if err != nil {
		return 0, nil, false, fmt.Errorf("final result %q is not JSON: %w", clip(value), err)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(norm)))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return 0, nil, false, fmt.Errorf("final result %q: %w", clip(value), err)
	}
	switch t := x.(type) {
	case nil:
		return 0, nil, false, nil
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return 0, nil, false, fmt.Errorf("final result %q: %w", clip(value), err)
		}
		all = map[string]float64{"default": f}
	case map[string]any:
		all = map[string]float64{}
		for k, e := range t {
			if n, isNum := e.(json.Number); isNum {
				if f, err := n.Float64(); err == nil {
					all[k] = f
				}
			}
		}
	default:
		return 0, nil, false, fmt.Errorf("final result %s is neither a number nor an object with %q", clip(norm), metric)
	}
	v, ok = all[metric]
	return v, all, ok, nil
}

// MissingObjective says why a final result value (JSON, as Objective
// takes it) that Objective found no objective in does not hold it:
// `no key "default" (got: acc, loss)`, that the key's value is not a
// number, or that a plain number counts as "default". "" when the value
// holds it.
func MissingObjective(value, metric string) string {
	if metric == "" {
		metric = "default"
	}
	norm, err := NormalizeValue(value)
	if err != nil {
		return ""
	}
	if why := FinalNotANumber(value, norm); why != "" {
		return why
	}
	if f, err := strconv.ParseFloat(norm, 64); err == nil && metric != "default" {
		// NNI's plain number is the key "default", not the objective.
		return fmt.Sprintf("the final result is a plain number (%s), which counts as \"default\", not %q",
			strconv.FormatFloat(f, 'g', -1, 64), metric)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(norm), &obj); err != nil {
		return ""
	}
	if v, ok := obj[metric]; ok {
		if string(v) == "null" {
			return fmt.Sprintf("the final result's %q is NaN, Infinity or null, not a number", metric)
		}
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return fmt.Sprintf("the final result's %q is %s, not a number", metric, clip(string(v)))
		}
		return ""
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 10 {
		keys = append(keys[:10], "...")
	}
	return fmt.Sprintf("the final result has no key %q (got: %s)", metric, strings.Join(keys, ", "))
}
