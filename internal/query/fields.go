package query

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/state"
)

// Type is the type of a field or of a literal.
type Type int

const (
	// TypeString: compared for equality (id, experiment, reason).
	TypeString Type = iota
	// TypeStatus: one of the trial statuses, case-insensitive.
	TypeStatus
	// TypeNumber: a float64; generation, attempts and metrics.
	TypeNumber
	// TypeDuration: Go duration syntax ("90s", "1h30m"), days ("1d") or seconds.
	TypeDuration
	// TypeTime: RFC 3339, "2006-01-02T15:04", or a date; UTC unless a
	// zone is given.
	TypeTime
	// TypeParam: a parameter, whose values may be numbers, strings or
	// bools; a literal compares numerically with a number and as text
	// with a string.
	TypeParam
	// TypeCommit: a git commit; a literal of at least 4 hex digits
	// matches the commits it begins (case-insensitive), as git's short
	// ids do.
	TypeCommit
	// TypeBool: true or false.
	TypeBool
)

func (t Type) String() string {
	switch t {
	case TypeString:
		return "a string"
	case TypeStatus:
		return "a status (" + strings.ToLower(strings.Join(Statuses, ", ")) + ")"
	case TypeNumber:
		return "a number"
	case TypeDuration:
		return "a duration (90s, 1h30m, 1d, or seconds)"
	case TypeTime:
		return "a time (2006-01-02, 2006-01-02T15:04, or RFC 3339)"
	case TypeParam:
		return "a parameter value"
	case TypeCommit:
		return "a git commit (at least 4 hex digits)"
	case TypeBool:
		return "true or false"
	}
	return "?"
}

// Ordered reports whether <, <=, >, >= and ranges apply to the type.
func (t Type) Ordered() bool {
	return t == TypeNumber || t == TypeDuration || t == TypeTime || t == TypeParam
}

// Statuses are the trial statuses a status condition accepts: every status
// the state can hold (state.Statuses), so the two cannot drift.
var Statuses = state.Statuses

// Field is a resolved field name: a fixed field, params.NAME or
// metrics.NAME.
type Field struct {
	// Name is the field as written, lower-cased prefix: "status",
	// "params.lr", "metrics.loss".
	Name string
	// Key is NAME for params.NAME and metrics.NAME, "" otherwise.
	Key  string
	Type Type
	get  func(r *results.Row) (any, bool)
}

// IsParam and IsMetric tell the two open namespaces apart.
func (f Field) IsParam() bool  { return strings.HasPrefix(f.Name, "params.") }
func (f Field) IsMetric() bool { return strings.HasPrefix(f.Name, "metrics.") }

// Get returns r's value of the field: float64 (numbers), string,
// bool (params), time.Duration or time.Time; ok is false when r has no
// such value (no final metric yet, not started, ...).
func (f Field) Get(r *results.Row) (v any, ok bool) { return f.get(r) }

type fixed struct {
	typ  Type
	get  func(r *results.Row) (any, bool)
	help string
}

// fixedFields are the fields other than params.NAME and metrics.NAME.
var fixedFields = map[string]fixed{
	"status":     {TypeStatus, func(r *results.Row) (any, bool) { return r.Status, true }, "trial status"},
	"id":         {TypeString, func(r *results.Row) (any, bool) { return r.ID, true }, "trial id (t0001)"},
	"experiment": {TypeString, func(r *results.Row) (any, bool) { return r.Experiment, true }, "experiment name"},
	"seq":        {TypeNumber, func(r *results.Row) (any, bool) { return float64(r.Seq), true }, "trial sequence number"},
	"generation": {TypeNumber, func(r *results.Row) (any, bool) { return float64(r.Generation), true }, "spec generation the trial ran under"},
	"attempts":   {TypeNumber, func(r *results.Row) (any, bool) { return float64(r.Attempts), true }, "starts (1 + resumes)"},
	"metric":     {TypeNumber, func(r *results.Row) (any, bool) { return fptr(r.Metric) }, "objective value"},
	"pareto": {TypeNumber, func(r *results.Row) (any, bool) {
		if r.ParetoRank == 0 {
			return nil, false
		}
		return float64(r.ParetoRank), true
	}, "Pareto rank with several objectives (1 = the front)"},
	"duration": {TypeDuration, func(r *results.Row) (any, bool) {
		if r.Duration != nil {
			return *r.Duration, true
		}
		if r.Elapsed != nil {
			return *r.Elapsed, true
		}
		return nil, false
	}, "run time (so far, for a running trial)"},
	"elapsed":    {TypeDuration, func(r *results.Row) (any, bool) { return dptr(r.Elapsed) }, "run time so far of a running trial"},
	"started_at": {TypeTime, func(r *results.Row) (any, bool) { return tptr(r.StartedAt) }, "start time"},
	"ended_at":   {TypeTime, func(r *results.Row) (any, bool) { return tptr(r.EndedAt) }, "end time"},
	"reason":     {TypeString, func(r *results.Row) (any, bool) { return r.Reason, r.Reason != "" }, "why the trial ended or waits"},
	"exit_code": {TypeNumber, func(r *results.Row) (any, bool) {
		if r.ExitCode == nil {
			return nil, false
		}
		return float64(*r.ExitCode), true
	}, "exit code"},
	"intermediate": {TypeNumber, func(r *results.Row) (any, bool) { return float64(r.Intermediate), true }, "number of intermediate results"},
	"latest": {TypeNumber, func(r *results.Row) (any, bool) {
		if r.Latest == nil {
			return nil, false
		}
		return fptr(r.Latest.Value)
	}, "latest intermediate value"},
	"latest_step": {TypeNumber, func(r *results.Row) (any, bool) {
		if r.Latest == nil {
			return nil, false
		}
		return float64(r.Latest.Step), true
	}, "step of the latest intermediate value"},
	"commit": {TypeCommit, func(r *results.Row) (any, bool) {
		if r.Provenance == nil || r.Provenance.Commit == "" {
			return nil, false
		}
		return commit(r.Provenance.Commit), true
	}, "git commit of the definitions the trial was created from"},
	"code_commit": {TypeCommit, func(r *results.Row) (any, bool) {
		if r.Provenance == nil || r.Provenance.CodeCommit == "" {
			return nil, false
		}
		return commit(r.Provenance.CodeCommit), true
	}, "git commit of the code_dir the trial ran from"},
	"dirty": {TypeBool, func(r *results.Row) (any, bool) {
		if r.Provenance == nil || (r.Provenance.Commit == "" && r.Provenance.CodeCommit == "") {
			return nil, false
		}
		return r.Provenance.Dirty || r.Provenance.CodeDirty, true
	}, "whether the definitions or code_dir had uncommitted changes"},
	"version": {TypeString, func(r *results.Row) (any, bool) {
		if r.Provenance == nil || r.Provenance.Version == "" {
			return nil, false
		}
		return r.Provenance.Version, true
	}, "trialform version that created the trial"},
	"best_intermediate": {TypeNumber, func(r *results.Row) (any, bool) {
		if r.BestIntermediate == nil {
			return nil, false
		}
		return fptr(r.BestIntermediate.Value)
	}, "best intermediate value"},
}

// fptr is a number field's value; NaN (a report that was not a number)
// is no value, as the tables show it ("-"): it sorts last and matches no
// condition, where it compared equal to every number and broke the sort.
func fptr(p *float64) (any, bool) {
	if p == nil || math.IsNaN(*p) {
		return nil, false
	}
	return *p, true
}
func dptr(p *time.Duration) (any, bool) {
	if p == nil {
		return nil, false
	}
	return *p, true
}
func tptr(p *time.Time) (any, bool) {
	if p == nil {
		return nil, false
	}
	return *p, true
}

// FieldNames lists every fixed field name and the two prefixes, sorted.
func FieldNames() []string {
	names := []string{"params.NAME", "metrics.NAME"}
	for n := range fixedFields {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FieldHelp returns a one-line description of a fixed field name.
func FieldHelp(name string) string { return fixedFields[name].help }

// LookupField resolves a field name: a fixed field, params.NAME or
// metrics.NAME (NAME non-empty). ok is false for anything else.
func LookupField(name string) (Field, bool) {
	if k, ok := strings.CutPrefix(name, "params."); ok && k != "" {
		return Field{Name: name, Key: k, Type: TypeParam, get: func(r *results.Row) (any, bool) {
			v, ok := ParamValue(r.Params, k)
			if !ok || v == nil {
				return nil, false
			}
			if n, isInt := v.(int); isInt {
				return float64(n), true
			}
			return v, true
		}}, true
	}
	if k, ok := strings.CutPrefix(name, "metrics."); ok && k != "" {
		return Field{Name: name, Key: k, Type: TypeNumber, get: func(r *results.Row) (any, bool) {
			v, ok := r.Metrics[k]
			return v, ok && !math.IsNaN(v)
		}}, true
	}
	if f, ok := fixedFields[name]; ok {
		return Field{Name: name, Type: f.typ, get: f.get}, true
	}
	return Field{}, false
}

// ParamValue is the value of parameter key in params, as queries see it.
// A nested choice's value (NNI's {"_name": "cnn", "k": 3}) is the name of
// the option taken ("cnn"), and "arch.k" names a parameter inside it.
func ParamValue(params map[string]any, key string) (any, bool) {
	v, ok := params[key]
	if !ok {
		// A path into nested choices, unless a parameter is named so.
		head, rest, dotted := strings.Cut(key, ".")
		m, isMap := params[head].(map[string]any)
		if !dotted || !isMap {
			return nil, false
		}
		return ParamValue(m, rest)
	}
	if m, isMap := v.(map[string]any); isMap {
		name, named := m["_name"]
		return name, named
	}
	return v, true
}

// paramPaths calls fn with every parameter path params holds: its keys,
// and "key.sub" for the parameters inside a nested choice's option.
func paramPaths(params map[string]any, prefix string, fn func(path string, v any)) {
	for k, v := range params {
		if k == "_name" && prefix != "" {
			continue
		}
		if m, isMap := v.(map[string]any); isMap {
			fn(prefix+k, m["_name"])
			paramPaths(m, prefix+k+".", fn)
			continue
		}
		fn(prefix+k, v)
	}
}

// fieldCandidates are what an unknown field is matched against.
func fieldCandidates(s Schema) []string {
	var c []string
	for n := range fixedFields {
		c = append(c, n)
	}
	for n := range s.Params {
		c = append(c, "params."+n)
	}
	for n := range s.Metrics {
		c = append(c, "metrics."+n)
	}
	if len(s.Params) == 0 {
		c = append(c, "params.")
	}
	if len(s.Metrics) == 0 {
		c = append(c, "metrics.")
	}
	sort.Strings(c)
	return c
}

// commit is a git commit as a field value: it matches a literal that
// begins it.
type commit string
