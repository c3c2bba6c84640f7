package tuner

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/tuner/space"
)

// Kind is one tuner's declaration, as a platform kind is declared in
// providers/registry: its name, its settings as a tagged struct (read and
// decoded by internal/decl, so schema reports every mistake at its
// attribute and docs/tuners.md's reference is generated from it), a
// constructor, and the capabilities schema and plan act on.
type Kind struct {
	Name string
	// Summary says what it does (docs/tuners.md's tuner reference).
	Summary string
	// Spaces says which search spaces it handles.
	Spaces string
	// Settings returns a new settings struct (a pointer) holding the
	// defaults; the tuner block's attributes are decoded into it.
	Settings func() any
	// New builds the tuner from what Settings returned, decoded. It
	// returns a *decl.AttrError to have a mistake reported at one setting,
	// any other error for the block, and refuses a space it cannot handle.
	New func(settings any, sp *space.Space) (Tuner, error)

	// Params are the params the tuner adds to every trial it proposes
	// (hyperband's TRIAL_BUDGET), usable in the trial's templates.
	Params []string
	// Finite is set by a tuner that proposes the points of a finite set,
	// each once: validate refuses a max_trials larger than the set.
	Finite *Finite
	// MultiObjective says the tuner handles several objectives
	// (Request.Goals): it reads Observation.Values, or no values at all.
	// validate refuses any other tuner for an experiment with several.
	MultiObjective bool
}

// Finite is the capability of a tuner whose suggestions run out (grid).
type Finite struct {
	// Size is how many points the tuner proposes in sp with these
	// (decoded) settings; unlimited is true when it starts over once they
	// are used (grid's repeat = true).
	Size func(settings any, sp *space.Space) (n int, unlimited bool, err error)
	// Noun and Unit name the set and its members in messages: "The grid
	// of search_space "s" has 4 points".
	Noun, Unit string
	// Listed says the set is listed in the tuner's settings (batch's
	// params), not made from the search space: "The params list of
	// tuner "batch" has 3 parameter sets".
	Listed bool
	// More says how to allow more trials than the set has.
	More string
}

// AssessorKind is one assessor's declaration.
type AssessorKind struct {
	Name     string
	Summary  string
	Settings func() any
	New      func(settings any) (Assessor, error)
}

// Registry is the explicit list of tuners and assessors that schema,
// plan and the command line are given (Builtin is trialform's).
type Registry struct {
	tuners    []*Kind
	assessors []*AssessorKind
}

// NewRegistry builds a registry; a name given twice, or settings whose
// tags do not parse, panic (a programming error any test finds).
func NewRegistry(tuners []Kind, assessors []AssessorKind) *Registry {
	r := &Registry{}
	seen := map[string]bool{}
	for i := range tuners {
		k := tuners[i]
		if k.Name == "" || seen["t "+k.Name] || k.Settings == nil || k.New == nil {
			panic(fmt.Sprintf("tuner: kind %q is nameless, declared twice or lacks Settings or New", k.Name))
		}
		seen["t "+k.Name] = true
		if _, err := decl.SchemaOf(k.Settings()); err != nil {
			panic(fmt.Sprintf("tuner %s: %v", k.Name, err))
		}
		r.tuners = append(r.tuners, &k)
	}
	for i := range assessors {
		a := assessors[i]
		if a.Name == "" || seen["a "+a.Name] || a.Settings == nil || a.New == nil {
			panic(fmt.Sprintf("tuner: assessor %q is nameless, declared twice or lacks Settings or New", a.Name))
		}
		seen["a "+a.Name] = true
		if _, err := decl.SchemaOf(a.Settings()); err != nil {
			panic(fmt.Sprintf("assessor %s: %v", a.Name, err))
		}
		r.assessors = append(r.assessors, &a)
	}
	return r
}

// Lookup returns the tuner called name, or nil.
func (r *Registry) Lookup(name string) *Kind {
	for _, k := range r.Kinds() {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// Kinds returns the tuners in the list's order.
func (r *Registry) Kinds() []*Kind {
	if r == nil {
		return nil
	}
	return append([]*Kind(nil), r.tuners...)
}

// Names returns the tuner names, sorted.
func (r *Registry) Names() []string {
	var out []string
	for _, k := range r.Kinds() {
		out = append(out, k.Name)
	}
	sort.Strings(out)
	return out
}

// MultiObjectiveNames lists the tuners that handle several objectives,
// sorted.
func (r *Registry) MultiObjectiveNames() []string {
	var out []string
	for _, n := range r.Names() {
		if r.Lookup(n).MultiObjective {
			out = append(out, n)
		}
	}
	return out
}

// LookupAssessor returns the assessor called name, or nil.
func (r *Registry) LookupAssessor(name string) *AssessorKind {
	for _, a := range r.Assessors() {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Assessors returns the assessors in the list's order.
func (r *Registry) Assessors() []*AssessorKind {
	if r == nil {
		return nil
	}
	return append([]*AssessorKind(nil), r.assessors...)
}

// AssessorNames returns the assessor names, sorted.
func (r *Registry) AssessorNames() []string {
	var out []string
	for _, a := range r.Assessors() {
		out = append(out, a.Name)
	}
	sort.Strings(out)
	return out
}

// Schema is the tuner's settings schema.
func (k *Kind) Schema() *decl.Schema { return mustSchema(k.Settings()) }

// Schema is the assessor's settings schema.
func (a *AssessorKind) Schema() *decl.Schema { return mustSchema(a.Settings()) }

func mustSchema(cfg any) *decl.Schema {
	s, err := decl.SchemaOf(cfg)
	if err != nil {
		panic(err) // NewRegistry refused it
	}
	return s
}

// Decode decodes settings held as Go values (a plan's, a benchmark's)
// into a new settings struct, checking them as schema does.
func (k *Kind) Decode(settings map[string]any) (any, error) {
	cfg := k.Settings()
	if err := mustSchema(cfg).DecodeGo(settings, cfg, settingLabel); err != nil {
		return nil, fmt.Errorf("tuner %q: %w", k.Name, err)
	}
	return cfg, nil
}

// Decode is Kind.Decode for an assessor.
func (a *AssessorKind) Decode(settings map[string]any) (any, error) {
	cfg := a.Settings()
	if err := mustSchema(cfg).DecodeGo(settings, cfg, settingLabel); err != nil {
		return nil, fmt.Errorf("assessor %q: %w", a.Name, err)
	}
	return cfg, nil
}

// named puts `tuner "NAME": ` before a constructor's AttrError (its other
// errors name the tuner themselves).
func named(what, name string, err error) error {
	var ae *decl.AttrError
	if errors.As(err, &ae) {
		return fmt.Errorf("%s %q: %w", what, name, err)
	}
	return err
}

func settingLabel(name string) string { return fmt.Sprintf("setting %q", name) }

// New builds the tuner called name from settings held as Go values.
func (r *Registry) New(name string, settings map[string]any, sp *space.Space) (Tuner, error) {
	k := r.Lookup(name)
	if k == nil {
		return nil, fmt.Errorf("unknown tuner %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	cfg, err := k.Decode(settings)
	if err != nil {
		return nil, err
	}
	t, err := k.New(cfg, sp)
	return t, named("tuner", name, err)
}

// NewAssessor builds the assessor called name from settings held as Go
// values.
func (r *Registry) NewAssessor(name string, settings map[string]any) (Assessor, error) {
	a := r.LookupAssessor(name)
	if a == nil {
		return nil, fmt.Errorf("unknown assessor %q (known: %s)", name, strings.Join(r.AssessorNames(), ", "))
	}
	cfg, err := a.Decode(settings)
	if err != nil {
		return nil, err
	}
	as, err := a.New(cfg)
	return as, named("assessor", name, err)
}

// Builtin is the registry of trialform's tuners and assessors, in the
// order docs/tuners.md lists them. Adding a tuner is one file and one line
// here.
func Builtin() *Registry {
	return NewRegistry([]Kind{
		autoKind(),
		randomKind(),
		gridKind(),
		tpeKind(),
		cmaesKind(),
		gpKind(),
		smacKind(),
		metisKind(),
		annealKind(),
		evolutionKind(),
		nsga2Kind(),
		motpeKind(),
		mogpKind(),
		batchKind(),
		hyperbandKind(),
		bohbKind(),
		pbtKind(),
	}, []AssessorKind{
		medianStopKind(),
		curveFittingKind(),
	})
}

// Seeded is the seed setting every randomised tuner embeds.
type Seeded struct {
	Seed *int `hcl:"seed,optional" default:"the experiment's seed" doc:"random seed"`
}

// seeder is the random stream's seed: the tuner block's seed when it has
// one, the request's Seed otherwise (schema fills both from the same
// attribute, so they agree in practice).
func (s Seeded) seeder() seeder {
	if s.Seed == nil {
		return seeder{}
	}
	return seeder{seed: int64(*s.Seed), hasSeed: true}
}
