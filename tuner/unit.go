package tuner

import (
	"fmt"
	"math"

	"github.com/trialform/trialform/tuner/space"
)

// This file maps numeric parameters to a normalised "unit" coordinate, on
// top of TPE's model space (numDim): log kinds in log space, randint and
// q-kinds continuous there and rounded by numDim.finish at the end. Bounded
// kinds map their model range onto [0, 1]; unbounded kinds (normal,
// lognormal and their q-variants) map mu ± 3 sigma onto [0, 1] and may leave
// it. CMA-ES, anneal and auto work in these coordinates.

// unitDim is one numeric parameter in unit coordinates.
type unitDim struct {
	param   space.Param
	d       *numDim
	lo, w   float64 // model value = lo + u*w
	bounded bool    // u must stay in [0, 1]
}

func newUnitDim(p space.Param) (*unitDim, bool) {
	d, ok := newNumDim(p)
	if !ok {
		return nil, false
	}
	if math.IsInf(d.lo, 0) || math.IsInf(d.hi, 0) {
		return &unitDim{param: p, d: d, lo: d.priorMu - 3*d.priorSigma, w: 6 * d.priorSigma}, true
	}
	return &unitDim{param: p, d: d, lo: d.lo, w: d.hi - d.lo, bounded: true}, true
}

// toUnit is the unit coordinate of an observed value, false when p cannot
// produce v.
func (u *unitDim) toUnit(v any) (float64, bool) {
	m, ok := u.d.modelledVal(v)
	if !ok {
		return 0, false
	}
	x := (m - u.lo) / u.w
	if u.bounded {
		x = clampF(x, 0, 1)
	}
	return x, true
}

// value is the parameter value at unit coordinate x (clamped into [0, 1]
// for bounded kinds), rounded and clipped as the kind requires.
func (u *unitDim) value(x float64) float64 {
	if u.bounded {
		x = clampF(x, 0, 1)
	}
	v, _, _ := u.d.finish(u.lo + x*u.w)
	return v
}

// unitCodec splits a space's top-level parameters into the numeric ones
// that have a unit coordinate (in declaration order) and the rest (choices,
// nested choices, malformed or zero-width parameters).
type unitCodec struct {
	dims  []*unitDim
	other []space.Param
}

func newUnitCodec(sp *space.Space) *unitCodec {
	c := &unitCodec{}
	if sp == nil {
		return c
	}
	for _, p := range sp.Params {
		if p.Kind != space.Choice {
			if u, ok := newUnitDim(p); ok {
				c.dims = append(c.dims, u)
				continue
			}
		}
		c.other = append(c.other, p)
	}
	return c
}

// encode returns the unit coordinates of ps's numeric parameters, false
// when one is missing or not a value of its parameter.
func (c *unitCodec) encode(ps space.Params) ([]float64, bool) {
	x := make([]float64, len(c.dims))
	for i, u := range c.dims {
		v, has := ps[u.param.Name]
		if !has {
			return nil, false
		}
		var ok bool
		if x[i], ok = u.toUnit(v); !ok {
			return nil, false
		}
	}
	return x, true
}

// decode writes the numeric parameters of x into ps.
func (c *unitCodec) decode(x []float64, ps space.Params) {
	for i, u := range c.dims {
		ps[u.param.Name] = u.value(x[i])
	}
}

// sameNumbers reports whether ps holds exactly the values decode(x) gives.
func (c *unitCodec) sameNumbers(x []float64, ps space.Params) bool {
	for i, u := range c.dims {
		v, ok := space.ToFloat(ps[u.param.Name])
		if !ok || v != u.value(x[i]) {
			return false
		}
	}
	return true
}

// feasible reports whether x lies inside the bounds of the bounded dims.
func (c *unitCodec) feasible(x []float64) bool {
	for i, u := range c.dims {
		if u.bounded && (x[i] < 0 || x[i] > 1) {
			return false
		}
	}
	return true
}

// goalSign is the factor that turns an objective value into a loss
// (smaller is better).
func goalSign(g Goal) (float64, error) {
	switch g {
	case Maximize, "":
		return -1, nil
	case Minimize:
		return 1, nil
	}
	return 0, fmt.Errorf("unknown goal %q (want %q or %q)", g, Maximize, Minimize)
}

// scored is a past trial as the model-free tuners see it.
type scored struct {
	seq     int
	params  space.Params
	loss    float64 // sign*value; +Inf for failed and pending trials
	pending bool
}

// scoredHistory returns the history in sequence order with losses. NaN and
// infinite values count as failed.
func scoredHistory(req Request, sign float64) []scored {
	hist := history(req)
	out := make([]scored, 0, len(hist))
	for _, o := range hist {
		s := scored{seq: o.Seq, params: o.Params, loss: math.Inf(1)}
		switch {
		case o.State == Completed && !math.IsNaN(o.Value) && !math.IsInf(o.Value, 0):
			s.loss = sign * o.Value
		case o.State == Pending:
			s.pending = true
		}
		out = append(out, s)
	}
	return out
}
