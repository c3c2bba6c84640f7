// Package registry is the one list of platform kinds: each kind registers
// its name, a configuration struct whose fields carry `hcl` and `doc` tags
// (read and decoded by internal/decl, as tuner and backend settings are),
// and a constructor (rclone's RegInfo and a Terraform provider's schema are
// the models). schema checks and decodes every platform block through it,
// the platforms' pages (docs/platforms) are generated from it, and the command
// package builds providers with it.
//
// The registry itself knows no platform: the list is built explicitly in
// providers/platforms (no init() registration). It must never import a
// platform package, plan or apply.
//
// Struct tags: see internal/decl.
package registry

import (
	"fmt"
	"strings"

	"github.com/trialform/trialform/internal/decl"
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
	Summary string // one line for the platform's page and the index of platforms
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
			if _, err := decl.SchemaOf(k.Config()); err != nil {
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
