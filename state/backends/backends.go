// Package backends is the list of state backend kinds trialform is built
// with, in one place (as providers/platforms is for platforms): the
// schema decodes a `backend "KIND" { ... }` block through a kind's
// settings struct, and the commands open the backend with Open. It
// imports every backend package and nothing imports it but the commands
// (and tests).
package backends

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendreg"
	k8sstate "github.com/trialform/trialform/state/kubernetes"
	pgstate "github.com/trialform/trialform/state/pg"
)

// Local is the default kind: the files of the working copy's .trialform
// directory (state.Manager). It takes no settings.
func Local() backendreg.Kind {
	return backendreg.Kind{
		Name:    state.LocalBackend,
		Summary: "the .trialform directory of this working copy (the default)",
		Open: func(_ any, env backendreg.Env) (state.Backend, error) {
			if env.StateDir == "" {
				return nil, fmt.Errorf("backend local: no state directory")
			}
			return state.Open(env.StateDir), nil
		},
	}
}

// Kinds returns every kind trialform is built with, sorted by name.
func Kinds() []backendreg.Kind {
	ks := []backendreg.Kind{
		Local(),
		k8sstate.Registration(),
		pgstate.Registration(),
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].Name < ks[j].Name })
	return ks
}

// Lookup returns the kind called name, or nil.
func Lookup(name string) *backendreg.Kind {
	for _, k := range Kinds() {
		if k.Name == name {
			return &k
		}
	}
	return nil
}

// Names returns the kinds' names, sorted.
func Names() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, k.Name)
	}
	return out
}

// Open opens a backend of kind with its decoded settings (cfg: what the
// kind's Config returned, filled in by the schema; nil for the local
// backend or the kind's defaults).
func Open(kind string, cfg any, env backendreg.Env) (state.Backend, error) {
	k := Lookup(kind)
	if k == nil {
		return nil, fmt.Errorf("unknown backend kind %q (this trialform knows %s)", kind, strings.Join(Names(), ", "))
	}
	if cfg == nil && k.Config != nil {
		cfg = k.Config()
	}
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	return k.Open(cfg, env)
}
