// Package space is the search-space model shared by schema (which builds it
// from HCL or NNI JSON), the tuners (which sample it) and the planner (which
// records the sampled values). It is pure data plus NNI's exact value
// semantics; it must not do I/O beyond decoding bytes it is handed.
//
// Values of a parameter assignment (Params) are JSON-compatible Go values:
// float64 for every numeric distribution (integral for randint and for
// q-types whose q and bounds are integral), string/float64/bool for choice
// options, and map[string]any for a nested choice ({"_name": ..., sub params}).
package space

// Kind is an NNI distribution type name, spelled exactly as NNI spells it.
type Kind string

const (
	Choice      Kind = "choice"
	Randint     Kind = "randint"
	Uniform     Kind = "uniform"
	Quniform    Kind = "quniform"
	Loguniform  Kind = "loguniform"
	Qloguniform Kind = "qloguniform"
	Normal      Kind = "normal"
	Qnormal     Kind = "qnormal"
	Lognormal   Kind = "lognormal"
	Qlognormal  Kind = "qlognormal"
)

// Kinds lists every supported kind, in NNI's documentation order.
var Kinds = []Kind{Choice, Randint, Uniform, Quniform, Loguniform, Qloguniform, Normal, Qnormal, Lognormal, Qlognormal}

// Param is one named dimension of a Space.
//
// Args holds the numeric arguments exactly as NNI's "_value" list orders them:
//   - randint: [low, high]          (integers, value in [low, high))
//   - uniform, loguniform: [low, high]
//   - quniform, qloguniform: [low, high, q]
//   - normal, lognormal: [mu, sigma]
//   - qnormal, qlognormal: [mu, sigma, q]
//
// For Choice, Options holds the options and Args is empty.
type Param struct {
	Name    string    `json:"name"`
	Kind    Kind      `json:"type"`
	Args    []float64 `json:"args,omitempty"`
	Options []Option  `json:"options,omitempty"`
}

// Option is one option of a choice. Value is a string, float64 or bool for a
// plain option. A nested choice option has Name set (NNI's "_name") and
// Nested holding its sub-space; its sampled value is
// map[string]any{"_name": Name, <sub param>: <value>, ...}.
type Option struct {
	Value  any    `json:"value,omitempty"`
	Name   string `json:"name,omitempty"`
	Nested *Space `json:"nested,omitempty"`
}

// Space is an ordered list of parameters (declaration order is kept; it is
// part of what makes sampling deterministic).
type Space struct {
	Params []Param `json:"params"`
}

// Params is one concrete assignment: parameter name -> value.
type Params map[string]any
