// Package registry is the one list of platform kinds: each kind registers
// its name, a configuration struct whose fields carry `hcl` and `doc` tags,
// and a constructor (rclone's RegInfo and a Terraform provider's schema are
// the models). schema checks and decodes every platform block through it,
// the README's platform reference is generated from it, and the command
// package builds providers with it.
//
// The registry itself knows no platform: the list is built explicitly in
// providers/platforms (no init() registration). It must never import a
// platform package, plan or apply.
//
// Struct tags on a configuration struct:
//
//	hcl:"name,optional"  an attribute ("name,attr" when required)
//	hcl:"name,block"     a nested block: *T at most one, []T any number
//	hcl:"name,label"     (in a block struct) the block's one label
//	doc:"..."            what it means, for the README and did-you-mean
//	type:"..."           how a value looks, for messages ("a quantity string")
//	min:"N"              (whole numbers) the least value
//	sensitive:"true"     the value may come from a sensitive variable (a
//	                     token): allowed there, kept out of plans and state
//
// Field types: string, bool, int, float64, time.Duration (written as a
// duration string), []string, []int, map[string]string, and any (a value of
// any type, converted to Go as encoding/json would).
package registry

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/providers"
)

// Env is what a constructor gets besides its decoded configuration.
type Env struct {
	Name     string // the platform block's name ("lab")
	Dir      string // the configuration directory (relative paths are relative to it)
	StateDir string // the .trialform directory; a kind keeps its files under StateDir/KIND/NAME
}

// Kind is one platform kind's registration.
type Kind struct {
	Name    string // the first label of its platform blocks
	Summary string // one line for the README's platform reference
	// Config returns a new configuration struct (a pointer) with its
	// defaults set; schema decodes a block into it. nil: the kind takes any
	// settings (a kind not implemented yet).
	Config func() any
	// New builds the provider from what Config returned, decoded. nil: the
	// kind is declared in the language but not implemented yet.
	New func(cfg any, env Env) (providers.Provider, error)
	// Extends names a kind whose settings this one takes too (the CRD kinds
	// extend kubernetes): the reference lists only what it adds.
	Extends string
}

// Implemented reports whether the kind can run trials.
func (k *Kind) Implemented() bool { return k.New != nil }

// Checker is implemented by configuration structs with rules beyond types
// (values that go together, names given twice). Check runs after every
// attribute was decoded without error.
type Checker interface {
	Check(w *Where) hcl.Diagnostics
}

// Registry is the ordered list of kinds.
type Registry struct {
	kinds []*Kind
	by    map[string]*Kind
}

// New builds a registry; a kind registered twice, or with a Config whose
// tags do not parse, panics (a programming error found by any test).
func New(kinds ...Kind) *Registry {
	r := &Registry{by: map[string]*Kind{}}
	for i := range kinds {
		k := kinds[i]
		if k.Name == "" {
			panic("registry: a kind without a name")
		}
		if _, dup := r.by[k.Name]; dup {
			panic("registry: kind " + k.Name + " registered twice")
		}
		if k.Config != nil {
			if _, err := SchemaOf(k.Config()); err != nil {
				panic(fmt.Sprintf("registry: kind %s: %v", k.Name, err))
			}
		}
		r.kinds = append(r.kinds, &k)
		r.by[k.Name] = &k
	}
	return r
}

// Lookup returns the kind named name, or nil.
func (r *Registry) Lookup(name string) *Kind {
	if r == nil {
		return nil
	}
	return r.by[name]
}

// Kinds returns the kinds in registration order.
func (r *Registry) Kinds() []*Kind {
	if r == nil {
		return nil
	}
	return append([]*Kind(nil), r.kinds...)
}

// Names returns the kind names in registration order.
func (r *Registry) Names() []string {
	var out []string
	for _, k := range r.Kinds() {
		out = append(out, k.Name)
	}
	return out
}

// ImplementedNames returns the names of the kinds that run trials.
func (r *Registry) ImplementedNames() []string {
	var out []string
	for _, k := range r.Kinds() {
		if k.Implemented() {
			out = append(out, k.Name)
		}
	}
	return out
}

// Build builds the provider of a decoded platform block (cfg nil: the
// kind's defaults, for the implicit local platform).
func (r *Registry) Build(kind string, cfg any, env Env) (providers.Provider, error) {
	k := r.Lookup(kind)
	if k == nil {
		return nil, providers.Permanent(fmt.Errorf("unknown platform kind %q; known kinds: %s", kind, strings.Join(r.Names(), ", ")))
	}
	if !k.Implemented() {
		return nil, providers.Permanent(fmt.Errorf("platform kind %q is not implemented yet (see the status table in README.md); use platform %s",
			kind, quotedOr(r.ImplementedNames())))
	}
	if cfg == nil && k.Config != nil {
		cfg = k.Config()
	}
	return k.New(cfg, env)
}

func quotedOr(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// Where gives a Checker the source ranges of what it checks. Paths name
// attributes and blocks with dots; a block has its index among the blocks
// of its type: "worker.0.replicas", "task_role.1".
type Where struct {
	Name   string    // the platform block's name
	Def    hcl.Range // the platform block's header
	ranges map[string]hcl.Range
}

// NewWhere is used by schema while it decodes.
func NewWhere(name string, def hcl.Range) *Where {
	return &Where{Name: name, Def: def, ranges: map[string]hcl.Range{}}
}

// Set records the range of path (an attribute's value or a block's header).
func (w *Where) Set(path string, r hcl.Range) { w.ranges[path] = r }

// Range returns the range of path, or of the closest enclosing block that
// is written, or the platform block's header.
func (w *Where) Range(path string) *hcl.Range {
	for {
		if r, ok := w.ranges[path]; ok {
			return &r
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			r := w.Def
			return &r
		}
		path = path[:i]
	}
}

// Has reports whether path is written in the block.
func (w *Where) Has(path string) bool {
	_, ok := w.ranges[path]
	return ok
}

// Error is a diagnostic at path.
func (w *Where) Error(path, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: w.Range(path)}
}

// Paths lists the recorded paths, sorted (tests).
func (w *Where) Paths() []string {
	out := make([]string, 0, len(w.ranges))
	for p := range w.ranges {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
