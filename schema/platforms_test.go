package schema

import (
	"github.com/trialform/trialform/providers/platforms"
	"github.com/trialform/trialform/providers/registry"
	"github.com/trialform/trialform/tuner"
)

// testPlatforms is the registry every test loads with, as the CLI does.
var testPlatforms = platforms.Registry()

// testTuners is every tuner and assessor, as the command line passes them.
var testTuners = tuner.Builtin()

// notYetPlatforms adds to the registry a kind it declares without running
// it (as it once declared the cloud kinds), for the tests of such kinds.
var notYetPlatforms = registry.New(append(platforms.Kinds(), registry.Kind{Name: "futurecloud", Summary: "a kind not implemented yet"})...)

// notYetKinds are the kinds of notYetPlatforms not implemented.
func notYetKinds() []string {
	var out []string
	for _, k := range notYetPlatforms.Kinds() {
		if !k.Implemented() {
			out = append(out, k.Name)
		}
	}
	return out
}
