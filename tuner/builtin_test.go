package tuner

import "github.com/trialform/trialform/tuner/space"

// The tests build tuners from settings held as Go values, through the
// built-in registry.
var builtin = Builtin()

func New(name string, settings map[string]any, sp *space.Space) (Tuner, error) {
	return builtin.New(name, settings, sp)
}

func NewAssessor(name string, settings map[string]any) (Assessor, error) {
	return builtin.NewAssessor(name, settings)
}

// gridSizeOf is GridSize of grid settings held as Go values.
func gridSizeOf(sp *space.Space, settings map[string]any) (int, error) {
	cfg, err := builtin.Lookup("grid").Decode(settings)
	if err != nil {
		return 0, err
	}
	return GridSize(sp, cfg.(*GridSettings))
}
