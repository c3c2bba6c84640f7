package tuner

import "github.com/trialform/trialform/tuner/space"

// suggestMulti is auto with several objectives: motpe with its defaults
// and auto's seed (the multi-objective benchmark, bench/tuners -multi,
// is where this choice is measured). auto's own settings shape its
// single-objective phases and are not used here.
func (t *autoTuner) suggestMulti(req Request) ([]space.Params, error) {
	tp := tpeFrom(defaultTPESettings(), t.sp)
	tp.seeder = t.seeder
	tp.joint = true // motpe's default
	return (&motpeTuner{tpe: tp}).Suggest(req)
}
