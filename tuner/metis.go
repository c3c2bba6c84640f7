package tuner

import (
	"fmt"
	"math"

	"github.com/trialform/trialform/tuner/space"
)

// MetisSettings are the metis tuner's settings.
type MetisSettings struct {
	Seeded
	StartupTrials int     `hcl:"startup_trials,optional" range:"[1,)" default:"10" doc:"random trials before the model is used (NNI's cold_start_num)"`
	Restarts      int     `hcl:"restarts,optional" range:"[0, 20]" default:"2" doc:"random restarts of the hyperparameter fit besides the default start"`
	Resample      bool    `hcl:"resample,optional" default:"true" doc:"re-run a trial whose result looks like an outlier (NNI's no_resampling = false)"`
	OutlierZ      float64 `hcl:"outlier_z,optional" range:"[1, 1e6]" default:"3" doc:"the leave-one-out z-score above which a result looks like an outlier"`
}

func metisKind() Kind {
	return Kind{
		Name: "metis", Spaces: "as `gp`",
		Summary:  "NNI's Metis: `gp` with expected improvement, plus its diagnostic: a completed result more than `outlier_z` standard deviations from the GP's leave-one-out prediction of it (and a tenth of the results' spread) is run again as a new trial with the same params; the plan shows it as `+ trial tNNNN` with `# repeat_of tMMMM: why` (`\"repeat_of\"` in `plan -json`). A point is repeated once",
		Settings: func() any { return &MetisSettings{StartupTrials: 10, Restarts: 2, Resample: true, OutlierZ: 3} },
		New:      newMetis,
	}
}

// metisTuner is the gp tuner (expected improvement) plus Metis's
// diagnostic step: after each fit it checks every completed trial against
// the model of all the others (the GP's closed-form leave-one-out
// prediction), and when a result lies more than outlier_z predictive
// standard deviations (and a tenth of the results' spread) from that
// prediction, and no other trial has the same parameters, the next trial
// re-runs that trial's parameters: a new trial, with a note naming the
// trial it repeats. At most one trial per request is such a repeat, and a
// point is repeated once (a second result at the same point tells the
// model how noisy it is). The rest is gp.
type metisTuner struct {
	bo       *boTuner
	resample bool
	z        float64
}

func newMetis(cfg any, sp *space.Space) (Tuner, error) {
	c := cfg.(*MetisSettings)
	gp := defaultGPSettings()
	gp.Seeded, gp.StartupTrials, gp.Restarts = c.Seeded, c.StartupTrials, c.Restarts
	return &metisTuner{bo: newBO("metis", gp, sp), resample: c.Resample, z: c.OutlierZ}, nil
}

func (t *metisTuner) Suggest(req Request) ([]space.Params, error) {
	out, _, err := t.SuggestNotes(req)
	return out, err
}

func (t *metisTuner) SuggestNotes(req Request) ([]space.Params, []Note, error) {
	notes := make([]Note, len(req.Seqs))
	if !t.resample || len(req.Seqs) == 0 {
		out, _, err := t.bo.suggest(req)
		return out, notes, err
	}
	sp, sign, err := spaceAndSign(req, t.bo.sp)
	if err != nil {
		return nil, nil, err
	}
	rep, why := t.outlier(req, sp, sign)
	if rep == nil {
		out, _, err := t.bo.suggest(req)
		return out, notes, err
	}
	// The first trial (in sequence order) repeats; the others are gp's,
	// with the repeat running.
	first := ascending(req.Seqs)[0]
	rest := req
	rest.Seqs = nil
	rest.History = append([]Observation(nil), req.History...)
	rest.History = append(rest.History, Observation{Seq: req.Seqs[first], Params: rep.Params, State: Pending})
	for i, s := range req.Seqs {
		if i != first {
			rest.Seqs = append(rest.Seqs, s)
		}
	}
	out := make([]space.Params, len(req.Seqs))
	out[first] = cloneParams(rep.Params)
	notes[first] = Note{RepeatOf: rep.Seq, Why: why}
	if len(rest.Seqs) > 0 {
		more, _, err := t.bo.suggest(rest)
		if err != nil {
			return nil, nil, err
		}
		k := 0
		for i := range req.Seqs {
			if i != first {
				out[i] = more[k]
				k++
			}
		}
	}
	return out, notes, nil
}

// outlier finds the completed trial to re-run, nil when none.
func (t *metisTuner) outlier(req Request, sp *space.Space, sign float64) (*Observation, string) {
	c := newGPCodec(sp)
	data := boHistory(req, sign, c.encode)
	data.capPoints(gpMaxPoints)
	if c.d == 0 || data.ndone < t.bo.startup || data.ndone < 3 {
		return nil, ""
	}
	count := map[string]int{}
	for _, o := range history(req) {
		count[pointKey(o.Params)]++
	}
	m := t.bo.fit(c, data, t.bo.seedOf(req))
	z, resid := newGPPost(data.X, m.y, m.h).loo()
	best, bestZ := -1, t.z
	for i := range z {
		if !data.done[i] || count[pointKey(data.params[i])] > 1 {
			continue
		}
		if math.Abs(z[i]) > bestZ && math.Abs(resid[i]) > 0.1 {
			best, bestZ = i, math.Abs(z[i])
		}
	}
	if best < 0 {
		return nil, ""
	}
	for _, o := range history(req) {
		if o.Seq == data.seqs[best] {
			return &o, fmt.Sprintf("the result of trial %d lies %.1f standard deviations from what the other trials predict; it is run again to tell noise from signal", o.Seq, bestZ)
		}
	}
	return nil, ""
}

func cloneParams(p space.Params) space.Params {
	q := make(space.Params, len(p))
	for k, v := range p {
		q[k] = v
	}
	return q
}
