// Package crds holds minimal CustomResourceDefinitions of the operators
// trialform's CRD platforms create objects for: TFJob and PyTorchJob
// (kubeflow.org/v1), AdaptDLJob (adaptdl.petuum.com/v1) and Framework
// (frameworkcontroller.microsoft.com/v1). They carry the real group,
// version, kind and plural and structural schemas of the fields trialform
// sets (pod templates and status preserved as given), so an apiserver
// validates what trialform creates. Tests install them; real clusters get
// the operators' own CRDs.
package crds

import "embed"

//go:embed *.yaml
var files embed.FS

// Names lists the manifests.
var Names = []string{"tfjob.yaml", "pytorchjob.yaml", "adaptdljob.yaml", "framework.yaml"}

// Get returns one manifest (YAML).
func Get(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return b
}
