package tuner

import (
	"fmt"
	"math"

	"github.com/trialform/trialform/tuner/space"
)

var metisSettings = map[string]string{
	"seed":           "int, random seed (default: the experiment's seed)",
	"startup_trials": "int >= 1, random trials before the model is used (default 10, NNI's cold_start_num)",
	"restarts":       gpSettings["restarts"],
	"resample":       "bool, re-run a trial whose result looks like an outlier (default true; NNI's no_resampling = false)",
	"outlier_z":      "number >= 1, the leave-one-out z-score above which a result looks like an outlier (default 3)",
}

func metisInfo() Info {
	return Info{Name: "metis", Settings: metisSettings, New: newMetis}
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

func newMetis(in map[string]any, sp *space.Space) (Tuner, error) {
	s, _, err := seededSettings("metis", in, metisSettings)
	if err != nil {
		return nil, err
	}
	gpIn := map[string]any{}
	for _, k := range []string{"seed", "startup_trials", "restarts"} {
		if v, ok := in[k]; ok {
			gpIn[k] = v
		}
	}
	bo, err := newBO("metis", gpIn, sp, metisSettings)
	if err != nil {
		return nil, err
	}
	t := &metisTuner{bo: bo}
	if t.resample, err = s.bool("resample", true); err != nil {
		return nil, err
	}
	if t.z, err = s.float("outlier_z", 3, 1, 1e6); err != nil {
		return nil, err
	}
	return t, nil
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
	data.capPoints()
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
