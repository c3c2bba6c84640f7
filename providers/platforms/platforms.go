// Package platforms is the one place the platform registry is built: every
// kind trialform knows, in the order the docs list them. Adding a
// platform is one package plus one line here.
package platforms

import (
	"github.com/trialform/trialform/providers/aml"
	"github.com/trialform/trialform/providers/dlc"
	"github.com/trialform/trialform/providers/dlts"
	"github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/local"
	"github.com/trialform/trialform/providers/openpai"
	"github.com/trialform/trialform/providers/registry"
	"github.com/trialform/trialform/providers/remote"
)

// Registry returns the registry of every platform kind.
func Registry() *registry.Registry { return registry.New(Kinds()...) }

// Kinds is every platform kind's registration, in the docs' order.
func Kinds() []registry.Kind {
	kinds := []registry.Kind{
		local.Registration(),
		remote.Registration(),
		kubernetes.Registration(),
	}
	kinds = append(kinds, kubernetes.CRDRegistrations()...)
	kinds = append(kinds,
		openpai.Registration(),
		dlc.Registration(),
		aml.Registration(),
		dlts.Registration(),
	)
	return kinds
}
