// Package crds holds minimal CustomResourceDefinitions of the operators
// that cannot run in the tests: AdaptDLJob (adaptdl.petuum.com/v1) and
// Framework (frameworkcontroller.microsoft.com/v1). (The kubeflow.org/v1
// kinds are tested with the training operator's own CRDs.) They carry the real group,
// version, kind and plural and structural schemas of the fields trialform
// sets (pod templates and status preserved as given), so an apiserver
// validates what trialform creates. Tests install them; real clusters get
// the operators' own CRDs.
package crds

import "embed"

//go:embed *.yaml
var files embed.FS

// Names lists the manifests.
var Names = []string{"adaptdljob.yaml", "framework.yaml"}

// Get returns one manifest (YAML).
func Get(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return b
}
