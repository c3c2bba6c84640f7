// Package trialproto speaks NNI's trial protocol for every trialform
// platform: the parameter.cfg a trial reads, the environment it runs with,
// the "ME" metric records NNI's local mode appends to $NNI_SYS_DIR/.nni/metrics,
// the metric lines a trial may print on stdout, and the extraction of the
// objective from a final result.
//
// It is pure: it encodes and decodes bytes it is handed. It must not start
// processes, read the environment or know where a platform keeps its files
// (InstallPython is the only helper that touches the file system).
package trialproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// ParameterCfg renders the parameter.cfg an NNI trial reads in local mode:
//
//	{"parameter_id":N,"parameter_source":"algorithm","parameters":{...},"parameter_index":0}
//
// Parameter names are sorted (encoding/json map order). Values that JSON
// cannot hold (NaN, ±Inf) are written as null.
func ParameterCfg(parameterID int, params map[string]any) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"parameter_id":%d,"parameter_source":"algorithm","parameters":`, parameterID)
	b.Write(ParamsJSON(params))
	b.WriteString(`,"parameter_index":0}`)
	return b.Bytes()
}

// ParseParameterCfg reads a parameter.cfg as ParameterCfg writes it (NNI's
// format): the parameter id and the parameters (numbers as float64, as
// they come back from the state file).
func ParseParameterCfg(data []byte) (parameterID int, params map[string]any, err error) {
	var cfg struct {
		ParameterID *int           `json:"parameter_id"`
		Parameters  map[string]any `json:"parameters"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(data), &cfg); err != nil {
		return 0, nil, fmt.Errorf("parameter.cfg: %w", err)
	}
	if cfg.ParameterID == nil || cfg.Parameters == nil {
		return 0, nil, fmt.Errorf("parameter.cfg: no parameter_id or parameters")
	}
	return *cfg.ParameterID, cfg.Parameters, nil
}

// ParamsJSON renders the parameters object alone (the file TRIALFORM_PARAMS
// points to). A nil map is written as {}.
func ParamsJSON(params map[string]any) []byte {
	if params == nil {
		return []byte("{}")
	}
	out, err := marshal(params)
	if err != nil {
		out, err = marshal(sanitize(params))
		if err != nil {
			// Only unsupported Go types (channels, funcs) get here; the
			// planner never produces them.
			return []byte("{}")
		}
	}
	return out
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// sanitize replaces floats JSON cannot represent with nil, recursively.
func sanitize(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	case float32:
		return sanitize(float64(x))
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = sanitize(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = sanitize(e)
		}
		return s
	default:
		return v
	}
}
