package plan

import (
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner"
)

// tunerSpec is a tuner block's spec as schema.Load makes it.
func tunerSpec(name string, seed int64, settings map[string]any) schema.TunerSpec {
	t := schema.TunerSpec{Name: name, Seed: seed, Settings: settings}
	if err := t.Resolve(tuner.Builtin()); err != nil {
		panic(err)
	}
	return t
}

// assessorSpec is an assessor block's spec as schema.Load makes it.
func assessorSpec(name string, settings map[string]any) *schema.AssessorSpec {
	a := &schema.AssessorSpec{Name: name, Settings: settings}
	if err := a.Resolve(tuner.Builtin()); err != nil {
		panic(err)
	}
	return a
}
