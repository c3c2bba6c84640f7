// Package schema turns the *.hcl files of a directory into a typed Config:
// variables (-var, -var-file, TRIALFORM_VAR_name), locals, the go-cty stdlib
// functions, references between blocks (with cycle errors), and static
// validation. Every user mistake is an hcl.Diagnostic with a source range.
// It never touches a platform and never runs a tuner.
package schema

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/trialform/trialform/tuner"
	"github.com/trialform/trialform/tuner/space"
	"github.com/zclconf/go-cty/cty"
)

// Config is one whole configuration (all *.hcl files of one directory).
type Config struct {
	Dir   string            // absolute directory the files were read from
	Files map[string][]byte // file name (as shown in diagnostics) -> source, for snippets and fmt
	// Snippets replaces sources of Files in diagnostics' snippets: the
	// -var-files of a configuration with sensitive variables, their
	// values hidden (a syntax error must not print a secret).
	Snippets    map[string][]byte
	Platforms   map[string]*Platform    // by "KIND.NAME"
	Spaces      map[string]*SearchSpace // by name
	Experiments map[string]*Experiment  // by name
	// Moved holds the moved blocks, resolved (From is not declared, To is),
	// in source order.
	Moved []*Moved
	// Backend is the backend block; nil when there is none (the local
	// backend, as before there were others).
	Backend *Backend

	// UnknownVars names the required variables that had no value and were
	// validated as unknown (LoadOptions.UnknownVariables), sorted.
	// Experiments, Spaces and Platforms then lack what depends on them;
	// Declared counts every block.
	UnknownVars []string
	// GivenVars holds the values of the variables that are not sensitive
	// and were given (-var, -var-file, TRIALFORM_VAR_name, a saved plan),
	// not left to their default: what a saved plan keeps, so that
	// `apply PLANFILE` uses the values the plan was made with.
	GivenVars map[string]cty.Value
	// Declared counts the experiment, search_space and platform blocks;
	// ImplicitLocal is true when no block declares local.default (the
	// built-in one is there).
	Declared struct {
		Experiments, Spaces, Platforms int
		ImplicitLocal                  bool
	}

	// sensitiveVals are the sensitive variables' values, as text (see
	// Secrets).
	sensitiveVals []string
	// sensitiveVars names the variables declared sensitive.
	sensitiveVars map[string]bool
}

// SensitiveVars names the variables declared sensitive = true (nil
// Config: none).
func (c *Config) SensitiveVars() map[string]bool {
	out := map[string]bool{}
	if c != nil {
		for k := range c.sensitiveVars {
			out[k] = true
		}
	}
	return out
}

// Platform is a platform "KIND" "NAME" block, decoded through the platform
// registry (LoadOptions.Platforms).
type Platform struct {
	Kind string
	Name string
	// Config is the kind's configuration struct (what its registry.Kind's
	// Config returned), decoded and checked; nil for a kind not implemented
	// yet, and for the implicit local.default (the kind's defaults).
	Config any
	// Attrs holds every attribute of the block, evaluated, by name (nested
	// blocks as []map[string]any, labels under "_labels"): what
	// platform.KIND.NAME shows, and a fingerprint of the block.
	Attrs map[string]any
	// Secrets are the values in the block that come from sensitive
	// variables (a remote machine's password), for output that must not
	// show them.
	Secrets   []string
	DeclRange hcl.Range
}

// Key is "KIND.NAME".
func (p *Platform) Key() string { return p.Kind + "." + p.Name }

// SearchSpace is a search_space block, with params inline or from nni_file.
type SearchSpace struct {
	Name      string
	Space     *space.Space
	NNIFile   string // absolute path when the space came from an NNI JSON file
	DeclRange hcl.Range
}

// Experiment is an experiment block, fully evaluated.
type Experiment struct {
	Name        string
	Platform    *Platform
	SearchSpace *SearchSpace
	// Objective is the first (or only) objective block: the one value
	// single-objective tuners, the best trial and assessors read.
	Objective Objective
	// Objectives is every objective block in order (Objectives[0] ==
	// Objective); more than one makes a multi-objective experiment
	// whose trials are ranked by Pareto dominance.
	Objectives []Objective
	Tuner      TunerSpec
	Assessor   *AssessorSpec // nil = none

	MaxTrials       int
	Concurrency     int
	MaxFailedTrials int           // 0 = no limit
	MaxDuration     time.Duration // 0 = none
	// OnMaxDuration says what happens at MaxDuration: OnMaxDurationStop
	// (the default) or OnMaxDurationFinish.
	OnMaxDuration string
	// Paused stops the experiment's running trials (kept in the state,
	// resumed when Paused is false again) and proposes no new trials.
	Paused bool

	Trial TrialSpec

	DeclRange hcl.Range
}

// What happens when an experiment reaches its max_duration.
const (
	// OnMaxDurationStop tears the running trials down (CANCELED).
	OnMaxDurationStop = "stop"
	// OnMaxDurationFinish starts no new trials and lets the running ones
	// finish (NNI's maxExperimentDuration).
	OnMaxDurationFinish = "finish"
)

// Objective is the objective block.
type Objective struct {
	Metric string // key of the final result; "default" for a plain number
	Goal   string // "maximize" | "minimize"
	// Strategy is how a trial's objective value is taken from what it
	// reported: "" (strategy = "final", the default) is its final result;
	// StrategyMin, StrategyMax and StrategyLatest (Katib's
	// metricStrategies) are the least, the greatest or the last of every
	// value of the metric it reported, intermediate and final alike.
	// Empty stays out of the spec hash, so states from before it keep
	// their generation.
	Strategy string `json:",omitempty"`
}

// MultiObjective reports whether the experiment has several objectives.
func (e *Experiment) MultiObjective() bool { return len(e.Objectives) > 1 }

// WatchedObjective is the objective the assessor watches: the one its
// objective attribute names, else the first.
func (e *Experiment) WatchedObjective() Objective {
	if e.Assessor != nil && e.Assessor.Objective != "" {
		for _, o := range e.Objectives {
			if o.Metric == e.Assessor.Objective {
				return o
			}
		}
	}
	return e.Objective
}

// StrategyName is the strategy as written: "final" when Strategy is empty.
func (o Objective) StrategyName() string {
	if o.Strategy == "" {
		return StrategyFinal
	}
	return o.Strategy
}

// Objective strategies (objective { strategy }).
const (
	StrategyFinal  = "final"
	StrategyMin    = "min"
	StrategyMax    = "max"
	StrategyLatest = "latest"
)

// TunerSpec is a tuner "NAME" { ... } block.
type TunerSpec struct {
	Name     string
	Seed     int64          // "seed" attribute, default 0
	Settings map[string]any // every attribute (including seed), JSON-compatible values
	Range    hcl.Range
	// Kind is the tuner's declaration in the registry Load was given, and
	// Config its settings struct decoded from the block.
	Kind   *tuner.Kind
	Config any
}

// New builds the tuner for sp.
func (t *TunerSpec) New(sp *space.Space) (tuner.Tuner, error) {
	if t.Kind == nil || t.Config == nil {
		return nil, fmt.Errorf("tuner %q was not decoded by schema.Load (see Resolve)", t.Name)
	}
	return t.Kind.New(t.Config, sp)
}

// Params are the params the tuner adds to every trial.
func (t *TunerSpec) Params() []string {
	if t.Kind == nil {
		return nil
	}
	return t.Kind.Params
}

// Resolve sets Kind and Config from reg and Settings, for a TunerSpec
// built in code rather than loaded (tests, tools).
func (t *TunerSpec) Resolve(reg *tuner.Registry) error {
	if t.Kind = reg.Lookup(t.Name); t.Kind == nil {
		return fmt.Errorf("unknown tuner %q", t.Name)
	}
	cfg, err := t.Kind.Decode(t.Settings)
	t.Config = cfg
	return err
}

// AssessorSpec is an assessor "NAME" { ... } block.
type AssessorSpec struct {
	Name     string
	Settings map[string]any
	// Objective is the metric of the objective the assessor watches
	// (its objective attribute, kept out of Settings); "" = the first
	// objective. An experiment with several objectives must name it.
	Objective string
	Range     hcl.Range
	// Kind and Config: as TunerSpec's.
	Kind   *tuner.AssessorKind
	Config any
}

// New builds the assessor.
func (a *AssessorSpec) New() (tuner.Assessor, error) {
	if a.Kind == nil || a.Config == nil {
		return nil, fmt.Errorf("assessor %q was not decoded by schema.Load (see Resolve)", a.Name)
	}
	return a.Kind.New(a.Config)
}

// Resolve is TunerSpec.Resolve for an assessor.
func (a *AssessorSpec) Resolve(reg *tuner.Registry) error {
	if a.Kind = reg.LookupAssessor(a.Name); a.Kind == nil {
		return fmt.Errorf("unknown assessor %q", a.Name)
	}
	cfg, err := a.Kind.Decode(a.Settings)
	a.Config = cfg
	return err
}

// TrialSpec is the trial block.
//
// Command is a template: the literal text with ${param.X} placeholders
// kept as Segments so the planner can substitute concrete, shell-quoted
// values per trial (see Render). Exactly one of Command and Args is set.
type TrialSpec struct {
	CodeDir string // absolute
	// CodeDirInConfig is CodeDir relative to the configuration directory
	// when it lies inside it ("." by default), else "": what defines the
	// trial is the same in every working copy of the configuration,
	// wherever each is checked out (two working copies sharing a state
	// backend must not see a new generation in each other's paths).
	CodeDirInConfig string
	Command         *Template
	Args            []*Template
	Env             map[string]string
	// SensitiveEnv names the Env entries whose values come from a
	// sensitive variable: never printed, never saved in the state.
	SensitiveEnv map[string]bool
	MaxDuration  time.Duration // 0 = none
	GPUs         int
	MetricRegex  string // optional user regexp with (?P<name>) and (?P<value>) groups
	Range        hcl.Range
}

// Template is a string with parameter placeholders.
type Template struct {
	Segments []Segment
	Range    hcl.Range
	// paramRanges gives the source range of each param segment (by index)
	// for diagnostics.
	paramRanges map[int]hcl.Range
}

// Segment is literal text (Param == "") or a parameter reference.
type Segment struct {
	Literal string
	Param   string
}
