package tuner

import (
	"fmt"
	"math"

	"github.com/trialform/trialform/tuner/space"
)

// GridSettings are the grid tuner's settings.
type GridSettings struct {
	GridPoints *int `hcl:"grid_points,optional" range:"[1, 1048576]" doc:"values tried for each continuous or unbounded parameter (evenly spaced; log-spaced for log kinds); needed when the space has one"`
	Repeat     bool `hcl:"repeat,optional" default:"false" doc:"when every point has been tried, start over (false: max_trials may not exceed the grid)"`
	Seed       *int `hcl:"seed,optional" doc:"accepted for symmetry with the other tuners; grid search uses no randomness"`
}

func gridKind() Kind {
	return Kind{
		Name: "grid", Spaces: "choice, randint, q-kinds; continuous kinds need `grid_points`",
		Summary:        "every grid point once, in order; `validate` refuses `max_trials` larger than the grid unless `repeat = true` (sweep again)",
		Settings:       func() any { return &GridSettings{} },
		MultiObjective: true,
		New:            newGrid,
		Finite: &Finite{
			Size: func(cfg any, sp *space.Space) (int, bool, error) {
				g := cfg.(*GridSettings)
				n, err := gridSize(sp, g.points())
				return n, g.Repeat, err
			},
			Noun: "grid", Unit: "points",
			More: "widen the grid (more options or values, a smaller q, a larger grid_points), or set repeat = true to sweep it again",
		},
	}
}

func (g *GridSettings) points() int {
	if g.GridPoints == nil {
		return 0
	}
	return *g.GridPoints
}

// gridTuner enumerates the cartesian product of every parameter's values in
// declaration order, the first parameter varying slowest. Trials get the
// points in order, skipping every point an earlier trial (completed, failed
// or pending) already has, so a re-plan never repeats one.
//
// The values of each kind:
//   - choice: its options in order; a nested option contributes one point
//     per point of its own sub-space grid.
//   - randint: every integer of [ceil(low), ceil(high)).
//   - quniform, qloguniform: every value NNI's rounding can produce,
//     clip(k*q, low, high) for k = round(low/q) .. round(high/q).
//   - uniform, loguniform: grid_points values from low to high inclusive,
//     evenly spaced (log-spaced for loguniform); one point is the
//     (geometric) middle.
//   - normal, lognormal: grid_points values evenly spaced over mu ± 2 sigma
//     (in log space for lognormal); one point is mu (exp(mu)).
//   - qnormal, qlognormal: those values after NNI's rounding, duplicates
//     dropped.
type gridTuner struct {
	points int // grid_points; 0 when unset
	repeat bool
	sp     *space.Space
}

func newGrid(cfg any, sp *space.Space) (Tuner, error) {
	g := cfg.(*GridSettings)
	if sp != nil {
		if _, err := buildGrid(sp, g.points(), ""); err != nil {
			return nil, err
		}
	}
	return &gridTuner{points: g.points(), repeat: g.Repeat, sp: sp}, nil
}

// GridSize is the number of points the grid tuner with these settings
// enumerates for sp. It fails like the grid tuner's factory: when the
// space needs grid_points and the settings lack it.
func GridSize(sp *space.Space, settings *GridSettings) (int, error) {
	return gridSize(sp, settings.points())
}

func gridSize(sp *space.Space, points int) (int, error) {
	g, err := buildGrid(sp, points, "")
	if err != nil {
		return 0, err
	}
	return g.size, nil
}

// ExhaustedError is returned by an exhaustive tuner (grid without repeat,
// batch) when earlier trials took every point it has. The planner, which
// knows max_trials and the generations, says what to do about it.
type ExhaustedError struct {
	Tuner string // "grid" or "batch"
	Size  int    // how many points (parameter sets) it has
}

func (e *ExhaustedError) Error() string {
	if e.Tuner == "batch" {
		return fmt.Sprintf("batch has only %d parameter sets and earlier trials took them all", e.Size)
	}
	return fmt.Sprintf("grid has only %d points and earlier trials took them all", e.Size)
}

func (t *gridTuner) Suggest(req Request) ([]space.Params, error) {
	sp, err := spaceOf(req, t.sp)
	if err != nil {
		return nil, err
	}
	g, err := buildGrid(sp, t.points, "")
	if err != nil {
		return nil, err
	}
	hist := history(req)
	if t.repeat {
		return t.suggestRepeating(g, hist, req.Seqs), nil
	}
	used := make(map[int]bool, len(hist))
	for _, o := range hist {
		if i := g.indexOf(map[string]any(o.Params)); i >= 0 {
			used[i] = true
		}
	}
	out := make([]space.Params, len(req.Seqs))
	next := 0
	for _, i := range ascending(req.Seqs) {
		var p space.Params
		for ; next < g.size; next++ {
			if !used[next] {
				used[next] = true
				p = g.at(next)
				break
			}
		}
		if next >= g.size {
			return nil, &ExhaustedError{Tuner: "grid", Size: g.size}
		}
		next++
		out[i] = p
	}
	return out, nil
}

// suggestRepeating gives each trial the first point (in grid order) that
// has been tried the fewest times, so the grid is swept again and again.
func (t *gridTuner) suggestRepeating(g *gridSpace, hist []Observation, seqs []int) []space.Params {
	uses := make(map[string]int, len(hist))
	for _, o := range hist {
		uses[pointKey(o.Params)]++
	}
	out := make([]space.Params, len(seqs))
	for _, i := range ascending(seqs) {
		best, bestN := 0, -1
		for j := 0; j < g.size; j++ {
			n := uses[pointKey(g.at(j))]
			if bestN < 0 || n < bestN {
				best, bestN = j, n
				if n == 0 {
					break
				}
			}
		}
		p := g.at(best)
		uses[pointKey(p)]++
		out[i] = p
	}
	return out
}

// maxGrid bounds a grid's size so that index arithmetic cannot overflow.
const maxGrid = 1 << 53

// gridSpace is a lazily indexed cartesian product.
type gridSpace struct {
	params []gridParam
	size   int
}

// gridParam is one parameter's list of values: either numbers (at), or a
// choice's options, each covering size consecutive indexes.
type gridParam struct {
	name string
	size int
	at   func(i int) float64
	// inv is at's inverse: the index of value f, or -1 when f is not one
	// of the values.
	inv  func(f float64) int
	opts []gridOption
}

type gridOption struct {
	size  int
	value any        // a plain option's value
	name  string     // a nested option's _name
	sub   *gridSpace // a nested option's sub-grid (nil for an empty one)
	isSub bool       // nested option
}

func (g *gridSpace) at(i int) space.Params {
	ps := make(space.Params, len(g.params))
	for j := len(g.params) - 1; j >= 0; j-- {
		gp := &g.params[j]
		ps[gp.name] = gp.value(i % gp.size)
		i /= gp.size
	}
	return ps
}

func (gp *gridParam) value(i int) any {
	if gp.opts == nil {
		return gp.at(i)
	}
	for _, o := range gp.opts {
		if i >= o.size {
			i -= o.size
			continue
		}
		if !o.isSub {
			return o.value
		}
		m := map[string]any{"_name": o.name}
		if o.sub != nil {
			for k, v := range o.sub.at(i) {
				m[k] = v
			}
		}
		return m
	}
	return nil
}

func buildGrid(sp *space.Space, points int, prefix string) (*gridSpace, error) {
	g := &gridSpace{size: 1}
	if sp == nil {
		return g, nil
	}
	for _, p := range sp.Params {
		gp, err := gridParamOf(p, points, prefix)
		if err != nil {
			return nil, err
		}
		if gp.size == 0 {
			return nil, fmt.Errorf("grid: parameter %q has no values", prefix+p.Name)
		}
		if g.size > maxGrid/gp.size {
			return nil, fmt.Errorf("grid: the search space has more than %d points; use fewer values or another tuner", maxGrid)
		}
		g.size *= gp.size
		g.params = append(g.params, gp)
	}
	return g, nil
}

func gridParamOf(p space.Param, points int, prefix string) (gridParam, error) {
	name := prefix + p.Name
	gp := gridParam{name: p.Name}
	switch p.Kind {
	case space.Choice:
		gp.opts = []gridOption{}
		for _, o := range p.Options {
			if !space.IsNested(o) {
				gp.opts = append(gp.opts, gridOption{size: 1, value: o.Value})
				gp.size++
				continue
			}
			sub, err := buildGrid(o.Nested, points, name+"."+o.Name+".")
			if err != nil {
				return gp, err
			}
			if gp.size > maxGrid-sub.size {
				return gp, fmt.Errorf("grid: the search space has more than %d points; use fewer values or another tuner", maxGrid)
			}
			gp.opts = append(gp.opts, gridOption{size: sub.size, name: o.Name, sub: sub, isSub: true})
			gp.size += sub.size
		}
		return gp, nil
	case space.Randint:
		lo, hi, ok := space.IntRange(p)
		if !ok {
			return gp, fmt.Errorf("grid: parameter %q: randint %v has no integers", name, p.Args)
		}
		if hi-lo > maxGrid {
			return gp, fmt.Errorf("grid: parameter %q has more than %d values", name, maxGrid)
		}
		gp.size = int(hi - lo)
		gp.at = func(i int) float64 { return float64(lo + int64(i)) }
		gp.inv = func(f float64) int {
			if f != math.Trunc(f) || f < float64(lo) || f >= float64(hi) {
				return -1
			}
			return int(int64(f) - lo)
		}
		return gp, nil
	case space.Quniform, space.Qloguniform:
		if len(p.Args) < 3 || !(p.Args[2] > 0) || !(p.Args[0] <= p.Args[1]) {
			return gp, fmt.Errorf("grid: parameter %q: %s needs [low, high, q] with low <= high and q > 0", name, p.Kind)
		}
		low, high, q := p.Args[0], p.Args[1], p.Args[2]
		k0, k1 := math.RoundToEven(low/q), math.RoundToEven(high/q)
		if k1-k0+1 > maxGrid {
			return gp, fmt.Errorf("grid: parameter %q has more than %d values", name, maxGrid)
		}
		if low == high {
			gp.size = 1
			gp.at = func(int) float64 { return low }
			gp.inv = func(f float64) int { return searchValues(gp.at, 1, f, 0) }
			return gp, nil
		}
		gp.size = int(k1 - k0 + 1)
		at := func(i int) float64 { return space.Quantize(p, (k0+float64(i))*q) }
		gp.at = at
		size := gp.size
		gp.inv = func(f float64) int {
			// The nearest step, then its neighbours (clipped ends).
			return searchValues(at, size, f, int(math.RoundToEven(f/q)-k0))
		}
		return gp, nil
	}
	// Continuous or unbounded: grid_points values.
	if points == 0 {
		what := "continuous"
		if p.Kind == space.Qnormal || p.Kind == space.Qlognormal {
			what = "unbounded"
		}
		return gp, fmt.Errorf("grid: parameter %q is %s (%s); set grid_points = N in the tuner block to try N evenly spaced values of it", name, what, p.Kind)
	}
	if len(p.Args) < 2 {
		return gp, fmt.Errorf("grid: parameter %q: %s needs two arguments", name, p.Kind)
	}
	a, b := p.Args[0], p.Args[1]
	log := false
	switch p.Kind {
	case space.Uniform:
	case space.Loguniform:
		if !(a > 0) {
			return gp, fmt.Errorf("grid: parameter %q: loguniform needs low > 0", name)
		}
		a, b, log = math.Log(a), math.Log(b), true
	case space.Normal, space.Qnormal, space.Lognormal, space.Qlognormal:
		a, b = a-2*b, a+2*b
		log = p.Kind == space.Lognormal || p.Kind == space.Qlognormal
	default:
		return gp, fmt.Errorf("grid: parameter %q has unknown kind %q", name, p.Kind)
	}
	vals := make([]float64, 0, points)
	for i := 0; i < points; i++ {
		x := (a + b) / 2
		if points > 1 {
			x = a + float64(i)*(b-a)/float64(points-1)
			if i == points-1 {
				x = b
			}
		}
		if log {
			x = math.Exp(x)
		}
		switch p.Kind {
		case space.Uniform, space.Loguniform:
			if points > 1 && i == 0 {
				x = p.Args[0]
			} else if points > 1 && i == points-1 {
				x = p.Args[1]
			}
		}
		x = space.Quantize(p, x)
		if n := len(vals); n > 0 && vals[n-1] == x {
			continue
		}
		vals = append(vals, x)
	}
	gp.size = len(vals)
	gp.at = func(i int) float64 { return vals[i] }
	gp.inv = func(f float64) int { return searchValues(gp.at, len(vals), f, -1) }
	return gp, nil
}

// searchValues finds f among at(0..size-1): around guess when guess >= 0
// (values in order, guess near the index), else everywhere (few values).
func searchValues(at func(int) float64, size int, f float64, guess int) int {
	if guess < 0 {
		for i := 0; i < size; i++ {
			if at(i) == f {
				return i
			}
		}
		return -1
	}
	for _, i := range []int{guess, guess - 1, guess + 1} {
		if i >= 0 && i < size && at(i) == f {
			return i
		}
	}
	return -1
}

// indexOf is the grid index of a history point, or -1 when the point is
// not one of the grid's (values off the grid, missing or extra names).
// It computes no key of any grid point, so marking the history as used
// costs a few lookups a trial.
func (g *gridSpace) indexOf(p map[string]any) int {
	if len(p) != len(g.params) {
		return -1
	}
	idx := 0
	for j := range g.params {
		gp := &g.params[j]
		v, ok := p[gp.name]
		if !ok {
			return -1
		}
		i := gp.indexOf(v)
		if i < 0 {
			return -1
		}
		idx = idx*gp.size + i
	}
	return idx
}

func (gp *gridParam) indexOf(v any) int {
	if gp.opts == nil {
		f, ok := space.ToFloat(v)
		if !ok {
			return -1
		}
		return gp.inv(f)
	}
	off := 0
	for _, o := range gp.opts {
		if !o.isSub {
			if sameValue(o.value, v) {
				return off
			}
			off += o.size
			continue
		}
		m, ok := v.(map[string]any)
		if ps, isParams := v.(space.Params); isParams {
			m, ok = map[string]any(ps), true
		}
		if ok && m["_name"] == o.name {
			if o.sub == nil {
				if len(m) == 1 {
					return off
				}
				return -1
			}
			rest := make(map[string]any, len(m)-1)
			for k, x := range m {
				if k != "_name" {
					rest[k] = x
				}
			}
			if i := o.sub.indexOf(rest); i >= 0 {
				return off + i
			}
			return -1
		}
		off += o.size
	}
	return -1
}

// sameValue compares a choice option with a history value as pointKey
// does (numbers by value whatever their Go type).
func sameValue(a, b any) bool {
	if fa, ok := space.ToFloat(a); ok {
		fb, ok := space.ToFloat(b)
		return ok && fa == fb
	}
	if sa, ok := a.(string); ok {
		sb, ok := b.(string)
		return ok && sa == sb
	}
	return string(appendKey(nil, a)) == string(appendKey(nil, b))
}
