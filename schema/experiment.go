package schema

import (
	"errors"
	"fmt"
	"github.com/trialform/trialform/internal/duration"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/tuner/space"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

var experimentSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "platform"},
		{Name: "search_space", Required: true},
		{Name: "max_trials", Required: true},
		{Name: "concurrency"},
		{Name: "max_failed_trials"},
		{Name: "max_duration"},
		{Name: "on_max_duration"},
		{Name: "paused"},
	},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "objective"},
		{Type: "tuner", LabelNames: []string{"name"}},
		{Type: "assessor", LabelNames: []string{"name"}},
		{Type: "trial"},
	},
}

var objectiveSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "metric"}, {Name: "goal"}, {Name: "strategy"}},
}

var trialSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "code_dir"}, {Name: "command"}, {Name: "args"}, {Name: "env"},
		{Name: "max_duration"}, {Name: "gpus"}, {Name: "metric_regex"},
	},
}

// DefaultTuner is the tuner of an experiment without a tuner block.
const DefaultTuner = "auto"

// MaxExperimentName bounds an experiment name's length (a Kubernetes label
// value holds 63 characters).
const MaxExperimentName = 63

// evalExperiment decodes an experiment block.
func (l *loader) evalExperiment(b *hcl.Block) {
	name := b.Labels[0]
	before := l.failures()
	content, diags := bodyContent(b.Body, experimentSchema)
	l.diags = append(l.diags, diags...)
	e := &Experiment{
		Name: name, DeclRange: b.DefRange,
		Objective:   Objective{Metric: "default", Goal: "maximize"},
		Tuner:       TunerSpec{Name: DefaultTuner, Settings: map[string]any{}, Range: b.DefRange},
		Concurrency: 1, OnMaxDuration: OnMaxDurationStop,
	}
	// One block of each type at most; trial exactly once.
	single := map[string]*hcl.Block{}
	var objectives []*hcl.Block
	for _, blk := range content.Blocks {
		if blk.Type == "objective" {
			// Several objective blocks make a multi-objective experiment.
			objectives = append(objectives, blk)
			continue
		}
		if prev, dup := single[blk.Type]; dup {
			l.errorf(blk.DefRange.Ptr(), fmt.Sprintf("Duplicate %s block", blk.Type),
				"An experiment has at most one %s block; the first is at %s.", blk.Type, posString(prev.DefRange))
			continue
		}
		single[blk.Type] = blk
	}

	// platform (default local.default)
	platVal := l.platVals["local.default"]
	if a, ok := content.Attributes["platform"]; ok {
		// Only the platform's kind and name are read here; a sensitive
		// password inside it stays with the platform.
		var v cty.Value
		var ok bool
		l.withSensitive(func() { v, ok = l.value(a.Expr) })
		if ok {
			kind, k1 := objString(v, "kind")
			pname, k2 := objString(v, "name")
			p := l.cfg.Platforms[kind+"."+pname]
			if !k1 || !k2 || p == nil {
				l.errorf(a.Expr.Range().Ptr(), "Invalid platform reference",
					"platform must be a reference to a platform block, like platform.local.default.")
			} else {
				e.Platform, platVal = p, v
			}
		}
	} else {
		e.Platform = l.cfg.Platforms["local.default"]
	}

	// search_space (required)
	spaceVal := cty.DynamicVal
	if a, ok := content.Attributes["search_space"]; ok {
		if v, ok := l.value(a.Expr); ok {
			sname, k1 := objString(v, "name")
			_, isPlatform := objString(v, "kind")
			hasParams := v.Type().IsObjectType() && v.Type().HasAttribute("params")
			ss := l.cfg.Spaces[sname]
			if !k1 || isPlatform || !hasParams || ss == nil {
				l.errorf(a.Expr.Range().Ptr(), "Invalid search space reference",
					"search_space must be a reference to a search_space block, like search_space.%s.", firstOr(l.spaceNames, "NAME"))
			} else {
				e.SearchSpace, spaceVal = ss, v
			}
		}
	}

	ints := []struct {
		attr string
		min  int64
		dst  *int
	}{{"max_trials", 1, &e.MaxTrials}, {"concurrency", 1, &e.Concurrency}, {"max_failed_trials", 0, &e.MaxFailedTrials}}
	for _, it := range ints {
		if a, ok := content.Attributes[it.attr]; ok {
			if i, ok := l.integer(a, it.min); ok {
				*it.dst = int(i)
			}
		}
	}
	if a, ok := content.Attributes["max_duration"]; ok {
		e.MaxDuration, _ = l.duration(a)
	}
	if a, ok := content.Attributes["on_max_duration"]; ok {
		if s, ok := l.str(a); ok {
			switch s {
			case OnMaxDurationStop, OnMaxDurationFinish:
				e.OnMaxDuration = s
				if _, set := content.Attributes["max_duration"]; !set {
					l.diags = append(l.diags, &hcl.Diagnostic{
						Severity: hcl.DiagWarning, Subject: a.Expr.Range().Ptr(),
						Summary: "on_max_duration without max_duration",
						Detail:  "on_max_duration says what happens when the experiment reaches its max_duration, and this experiment has none; set max_duration or remove on_max_duration.",
					})
				}
			default:
				l.errorf(a.Expr.Range().Ptr(), "Invalid on_max_duration",
					"on_max_duration must be %q (tear the running trials down at the deadline) or %q (start no new trials and let the running ones finish, as NNI does), got %q.",
					OnMaxDurationStop, OnMaxDurationFinish, s)
			}
		}
	}
	if a, ok := content.Attributes["paused"]; ok {
		if v, ok := l.typed(a, cty.Bool, "a bool (true or false)"); ok {
			e.Paused = v.True()
		}
	}

	l.decodeObjectives(objectives, e)
	// The tuner's and the assessor's settings are checked against their
	// declarations, each mistake at its attribute.
	tunerWhere := decl.NewWhere(e.Tuner.Name, b.DefRange)
	e.Tuner.Kind = l.tuners.Lookup(e.Tuner.Name)
	if blk := single["tuner"]; blk != nil {
		e.Tuner = TunerSpec{Name: blk.Labels[0], Range: blk.DefRange, Kind: l.tuners.Lookup(blk.Labels[0])}
		var sch *decl.Schema
		if e.Tuner.Kind != nil {
			e.Tuner.Config, sch = e.Tuner.Kind.Settings(), e.Tuner.Kind.Schema()
		}
		e.Tuner.Settings, e.Tuner.Seed, tunerWhere = l.decodeSettings(blk, "tuner", sch, e.Tuner.Config)
	} else if e.Tuner.Kind != nil {
		e.Tuner.Config = e.Tuner.Kind.Settings()
	}
	var assessorWhere *decl.Where
	if blk := single["assessor"]; blk != nil {
		as := &AssessorSpec{Name: blk.Labels[0], Range: blk.DefRange, Kind: l.tuners.LookupAssessor(blk.Labels[0])}
		var sch *decl.Schema
		if as.Kind != nil {
			as.Config, sch = as.Kind.Settings(), as.Kind.Schema()
		}
		as.Settings, _, assessorWhere = l.decodeSettings(blk, "assessor", sch, as.Config)
		l.assessorObjective(blk, as, e)
		e.Assessor = as
	}
	if blk := single["trial"]; blk != nil {
		// Some tuners add params (hyperband's TRIAL_BUDGET, pbt's
		// checkpoint dirs) that templates may use.
		l.tunerParams = e.Tuner.Params()
		l.decodeTrial(blk, e)
		if len(e.Trial.SensitiveEnv) > 0 && e.Platform != nil && e.Platform.Kind != "local" && e.Platform.Kind != "remote" {
			where, fix := sensitiveEnvAdvice(e.Platform.Kind)
			l.errorf(blk.DefRange.Ptr(), "Sensitive value not supported on this platform",
				"trial.env holds a sensitive value, which the %s platform would write into %s. %s", e.Platform.Kind, where, fix)
		}
		l.tunerParams = nil
	} else {
		l.errorf(b.DefRange.Ptr(), "Missing trial block",
			"experiment %q needs a trial block saying how to run a trial, e.g. trial { command = \"python3 main.py --lr ${param.lr}\" }.", name)
	}

	// The tuner must exist and accept its settings and the space.
	if e.Tuner.Kind == nil {
		names := l.tuners.Names()
		hint := nniTunerHint(e.Tuner.Name)
		if hint == "" {
			hint = didyoumean.Sentence(e.Tuner.Name, names, "%q")
		}
		l.errorf(e.Tuner.Range.Ptr(), "Unknown tuner", "Unknown tuner %q; known: %s.%s", e.Tuner.Name, joinNames(names), hint)
	} else if e.MultiObjective() && !e.Tuner.Kind.MultiObjective {
		l.errorf(e.Tuner.Range.Ptr(), "Tuner cannot handle several objectives",
			"Experiment %q has %d objective blocks and tuner %q optimises one objective. Tuners for several objectives: %s (auto picks mogp, or motpe in a space with nested choices); or keep one objective block and report the other metrics as extra keys of the final result.",
			name, len(e.Objectives), e.Tuner.Name, joinNames(l.tuners.MultiObjectiveNames()))
	} else if l.failures() == before && e.SearchSpace != nil {
		if _, err := e.Tuner.New(e.SearchSpace.Space); err != nil {
			l.settingsError(err, "tuner", e.Tuner.Range, tunerWhere)
		} else if f := e.Tuner.Kind.Finite; f != nil {
			// A tuner whose suggestions run out (grid) cannot fill a
			// larger budget.
			if n, unlimited, err := f.Size(e.Tuner.Config, e.SearchSpace.Space); err == nil && !unlimited && e.MaxTrials > n {
				of := fmt.Sprintf("search_space %q", e.SearchSpace.Name)
				if f.Listed {
					of = fmt.Sprintf("tuner %q", e.Tuner.Name)
				}
				l.errorf(e.Tuner.Range.Ptr(), upperFirst(f.Noun)+" smaller than max_trials",
					"The %s of %s has %d %s but max_trials is %d; lower max_trials to %d, %s.",
					f.Noun, of, n, f.Unit, e.MaxTrials, n, f.More)
			}
		}
	}

	if e.Assessor != nil {
		if e.Assessor.Kind == nil {
			names := l.tuners.AssessorNames()
			hint := nniAssessorHint(e.Assessor.Name)
			if hint == "" {
				hint = didyoumean.Sentence(e.Assessor.Name, names, "%q")
			}
			l.errorf(e.Assessor.Range.Ptr(), "Unknown assessor", "Unknown assessor %q; known: %s.%s", e.Assessor.Name, joinNames(names), hint)
		} else if l.failures() == before {
			if _, err := e.Assessor.New(); err != nil {
				l.settingsError(err, "assessor", e.Assessor.Range, assessorWhere)
			}
		}
	}

	if l.failures() > before || e.Platform == nil || e.SearchSpace == nil {
		return
	}
	l.cfg.Experiments[name] = e
	l.expVals[name] = experimentValue(e, platVal, spaceVal)
}

func firstOr(names []string, def string) string {
	if len(names) > 0 {
		return names[0]
	}
	return def
}

// objString reads a known string attribute of an object value.
func objString(v cty.Value, attr string) (string, bool) {
	if v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute(attr) {
		return "", false
	}
	a := v.GetAttr(attr)
	if a.IsNull() || !a.IsKnown() || a.Type() != cty.String {
		return "", false
	}
	return a.AsString(), true
}

// duration evaluates a duration string: Go syntax ("90m", "2h30m") or days
// ("1d", "2d12h").
func (l *loader) duration(a *hcl.Attribute) (time.Duration, bool) {
	s, ok := l.str(a)
	if !ok {
		return 0, false
	}
	d, err := ParseDuration(s)
	if err != nil {
		l.errorf(a.Expr.Range().Ptr(), "Invalid duration",
			"%s %q: %s. Use a Go duration like \"90m\" or \"2h30m\", or days like \"1d\".", a.Name, s, err)
		return 0, false
	}
	return d, true
}

// ParseDuration parses a Go duration, also accepting a leading number of
// days ("1d", "1.5d", "2d12h"). Negative durations are an error.
func ParseDuration(s string) (time.Duration, error) { return duration.Parse(s) }

// decodeObjectives decodes the experiment's objective blocks: none is one
// objective (metric "default", maximize), one keeps its single-objective
// meaning, several make a multi-objective experiment (distinct metrics,
// each taken from the final result).
func (l *loader) decodeObjectives(blocks []*hcl.Block, e *Experiment) {
	if len(blocks) == 0 {
		e.Objectives = []Objective{e.Objective}
		return
	}
	seen := map[string]hcl.Range{}
	for _, blk := range blocks {
		o := Objective{Metric: "default", Goal: "maximize"}
		l.decodeObjective(blk, &o)
		if prev, dup := seen[o.Metric]; dup {
			l.errorf(blk.DefRange.Ptr(), "Duplicate objective metric",
				"Two objective blocks name metric %q (the first at %s); each objective of an experiment needs its own metric.", o.Metric, posString(prev))
			continue
		}
		seen[o.Metric] = blk.DefRange
		if len(blocks) > 1 && o.Strategy != "" {
			l.errorf(blk.DefRange.Ptr(), "Strategy with several objectives",
				"Objective %q sets strategy = %q, but an experiment with several objectives takes every objective from the trial's final result; remove strategy or keep one objective block.", o.Metric, o.Strategy)
		}
		e.Objectives = append(e.Objectives, o)
	}
	if len(e.Objectives) > 0 {
		e.Objective = e.Objectives[0]
	}
}

// assessorObjective reads an assessor block's objective attribute (the
// metric of the objective it watches) out of its settings. With several
// objectives it is required: an assessor judges one learning curve.
func (l *loader) assessorObjective(blk *hcl.Block, as *AssessorSpec, e *Experiment) {
	metrics := make([]string, len(e.Objectives))
	for i, o := range e.Objectives {
		metrics[i] = o.Metric
	}
	v, set := as.Settings["objective"]
	if !set {
		if len(e.Objectives) > 1 {
			l.errorf(blk.DefRange.Ptr(), "Assessor needs an objective",
				"Experiment %q has several objectives and assessor %q judges one learning curve; name the objective it watches, e.g. objective = %q (one of %s).",
				e.Name, as.Name, metrics[0], quoteNames(metrics))
		}
		return
	}
	delete(as.Settings, "objective")
	s, ok := v.(string)
	rng := blk.DefRange
	if attrs, diags := blk.Body.JustAttributes(); !diags.HasErrors() && attrs["objective"] != nil {
		rng = attrs["objective"].Expr.Range()
	}
	if !ok || !slices.Contains(metrics, s) {
		l.errorf(rng.Ptr(), "Invalid assessor objective",
			"objective must name the metric of one of the experiment's objectives: %s, got %s.", quoteNames(metrics), settingString(v))
		return
	}
	as.Objective = s
}

// settingString shows a setting's value as written: strings quoted.
func settingString(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

func quoteNames(ns []string) string {
	q := make([]string, len(ns))
	for i, n := range ns {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func (l *loader) decodeObjective(blk *hcl.Block, o *Objective) {
	content, diags := bodyContent(blk.Body, objectiveSchema)
	l.diags = append(l.diags, diags...)
	if a, ok := content.Attributes["metric"]; ok {
		if s, ok := l.str(a); ok {
			if s == "" {
				l.errorf(a.Expr.Range().Ptr(), "Invalid metric", "metric must not be empty; use \"default\" for a final result that is a plain number.")
			} else {
				o.Metric = s
			}
		}
	}
	if a, ok := content.Attributes["goal"]; ok {
		if s, ok := l.str(a); ok {
			if s != "maximize" && s != "minimize" {
				l.errorf(a.Expr.Range().Ptr(), "Invalid goal", "goal must be \"maximize\" or \"minimize\", got %q.", s)
			} else {
				o.Goal = s
			}
		}
	}
	if a, ok := content.Attributes["strategy"]; ok {
		if s, ok := l.str(a); ok {
			switch s {
			case StrategyFinal:
				o.Strategy = ""
			case StrategyMin, StrategyMax, StrategyLatest:
				o.Strategy = s
			default:
				l.errorf(a.Expr.Range().Ptr(), "Invalid strategy",
					"strategy must be \"final\" (the trial's final result, the default), \"min\", \"max\" or \"latest\" (the least, greatest or last value of the metric the trial reported, intermediate results included, as Katib's metricStrategies), got %q.%s",
					s, didyoumean.Sentence(s, []string{StrategyFinal, StrategyMin, StrategyMax, StrategyLatest}, "%q"))
			}
		}
	}
}

// decodeSettings reads a tuner or assessor block (what: "tuner"): every
// attribute checked against the declared settings s (unknown names with
// the closest one, types, ranges: each at its attribute), then decoded
// into cfg. It returns the attributes as JSON-compatible values (numbers
// as float64), the seed (a whole number) and where each attribute is. An
// unknown tuner (s nil) is reported by the caller.
func (l *loader) decodeSettings(blk *hcl.Block, what string, s *decl.Schema, cfg any) (map[string]any, int64, *decl.Where) {
	out := map[string]any{}
	var seed int64
	w := decl.NewWhere(blk.Labels[0], blk.DefRange)
	body, ok := blk.Body.(*hclsyntax.Body)
	if !ok {
		return out, 0, w
	}
	before := l.failures()
	checked := *body
	checked.Attributes = hclsyntax.Attributes{}
	vals := map[string]cty.Value{}
	attrs := hcl.Attributes{}
	for n, a := range body.Attributes {
		attrs[n] = a.AsHCLAttribute()
	}
	for _, a := range sortedAttrs(attrs) {
		if l.checkOptimizeMode(a) || l.checkForeignSetting(a, s, fmt.Sprintf("%s %q", what, blk.Labels[0])) {
			continue
		}
		// An assessor's objective names the objective it watches
		// (assessorObjective checks it); it is no setting of the assessor.
		reserved := what == "assessor" && a.Name == "objective"
		if !reserved {
			checked.Attributes[a.Name] = body.Attributes[a.Name]
		}
		v, ok := l.value(a.Expr)
		if !ok {
			continue
		}
		if !reserved {
			vals[a.Name], _ = v.UnmarkDeep()
		}
		if a.Name == "seed" {
			if i, whole := wholeNumber(v); whole {
				seed = i
			}
		}
		g, err := toGo(v)
		if err != nil {
			l.errorf(a.Expr.Range().Ptr(), "Invalid setting", "%s: %s.", a.Name, err)
			continue
		}
		out[a.Name] = g
	}
	if s == nil {
		return out, seed, w
	}
	name := blk.Labels[0]
	l.checkBody(&checked, vals, s, fmt.Sprintf("%s %q", what, name), fmt.Sprintf("a %s %s", name, what), "", w)
	if l.failures() == before {
		if err := s.Decode(vals, cfg, ParseDuration); err != nil {
			l.settingsError(err, what, blk.DefRange, w)
		}
	}
	return out, seed, w
}

// settingsError reports what a tuner's or an assessor's constructor
// refused: at the setting it names (a *decl.AttrError), else at the
// block.
func (l *loader) settingsError(err error, what string, block hcl.Range, w *decl.Where) {
	var ae *decl.AttrError
	if errors.As(err, &ae) {
		l.errorf(w.Range(ae.Attr), ae.Summary, "%s", ae.Detail)
		return
	}
	l.errorf(block.Ptr(), "Invalid "+what+" settings", "%s.", err)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (l *loader) decodeTrial(blk *hcl.Block, e *Experiment) {
	t := &e.Trial
	t.Range = blk.DefRange
	content, diags := bodyContent(blk.Body, trialSchema)
	l.diags = append(l.diags, diags...)

	t.CodeDir = l.cfg.Dir
	if a, ok := content.Attributes["code_dir"]; ok {
		if s, ok := l.str(a); ok {
			dir := s
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(l.cfg.Dir, dir)
			}
			dir = filepath.Clean(dir)
			fi, err := os.Stat(dir)
			switch {
			case errors.Is(err, syscall.ELOOP):
				l.errorf(a.Expr.Range().Ptr(), "Invalid code directory",
					"code_dir %q (%s) is a symbolic link loop: a link in the path points, directly or through other links, back to itself. Point the link at a real directory.", s, dir)
			case err != nil && !errors.Is(err, fs.ErrNotExist):
				l.errorf(a.Expr.Range().Ptr(), "Unreadable code directory",
					"code_dir %q (%s) cannot be read: %v.", s, dir, errors.Unwrap(err))
			case err != nil:
				l.errorf(a.Expr.Range().Ptr(), "Missing code directory",
					"code_dir %q does not exist (looked for %s). Create it or fix the path; a relative code_dir is relative to the configuration directory.", s, dir)
			case !fi.IsDir():
				l.errorf(a.Expr.Range().Ptr(), "Invalid code directory", "code_dir %q (%s) is not a directory.", s, dir)
			default:
				// Every trial gets a copy of it: under the controller, only
				// what is committed (not the controller's own files: its
				// service account token, its git credentials).
				if err := l.confined(dir); err != nil {
					l.errorf(a.Expr.Range().Ptr(), "Code directory outside the repository", "code_dir %q: %s.", s, err)
					break
				}
				t.CodeDir = dir
			}
		}
	}
	if rel, err := filepath.Rel(l.cfg.Dir, t.CodeDir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		t.CodeDirInConfig = filepath.ToSlash(rel)
	}

	cmd, hasCmd := content.Attributes["command"]
	args, hasArgs := content.Attributes["args"]
	switch {
	case hasCmd && hasArgs:
		l.errorf(args.Range.Ptr(), "Conflicting trial command",
			"A trial has either command (run by /bin/sh) or args (run without a shell), not both.")
	case !hasCmd && !hasArgs:
		l.errorf(blk.DefRange.Ptr(), "Missing trial command",
			"The trial block needs command = \"...\" (a shell command line) or args = [...] (an argv run without a shell).")
	case hasCmd:
		if tpl, ok := l.template(cmd.Expr.(hclsyntax.Expression), e.SearchSpace); ok {
			if strings.TrimSpace(tpl.String()) == "" {
				l.errorf(cmd.Expr.Range().Ptr(), "Empty command", "The trial command is empty.")
			} else if l.checkShellTemplate(tpl, e.SearchSpace) {
				t.Command = tpl
			}
		}
	default:
		t.Args = l.argsTemplates(args, e.SearchSpace)
	}

	if a, ok := content.Attributes["env"]; ok {
		var v cty.Value
		var ok bool
		l.withSensitive(func() { v, ok = l.typed(a, cty.Map(cty.String), "a map of strings") })
		if ok {
			t.Env = map[string]string{}
			v, whole := v.Unmark()
			for k, ev := range v.AsValueMap() {
				if len(whole) > 0 || isSensitive(ev) {
					if t.SensitiveEnv == nil {
						t.SensitiveEnv = map[string]bool{}
					}
					t.SensitiveEnv[k] = true
					ev, _ = ev.UnmarkDeep()
				}
				if k == "" || strings.ContainsAny(k, "=\x00") {
					l.errorf(a.Expr.Range().Ptr(), "Invalid environment variable name", "%q cannot be an environment variable name.", k)
					continue
				}
				if ev.IsNull() {
					l.errorf(a.Expr.Range().Ptr(), "Invalid environment value", "env %q is null; give a string.", k)
					continue
				}
				if strings.IndexByte(ev.AsString(), 0) >= 0 {
					l.errorf(a.Expr.Range().Ptr(), "Invalid environment value", "env %q holds a NUL byte, which no environment variable can carry; remove it.", k)
					continue
				}
				t.Env[k] = ev.AsString()
			}
		}
	}
	if a, ok := content.Attributes["max_duration"]; ok {
		t.MaxDuration, _ = l.duration(a)
	}
	if a, ok := content.Attributes["gpus"]; ok {
		if i, ok := l.integer(a, 0); ok {
			t.GPUs = int(i)
		}
	}
	if a, ok := content.Attributes["metric_regex"]; ok {
		if s, ok := l.str(a); ok {
			re, err := regexp.Compile(s)
			if err != nil {
				l.errorf(a.Expr.Range().Ptr(), "Invalid metric_regex", "metric_regex does not compile: %s.", err)
			} else if re.SubexpIndex("name") < 0 || re.SubexpIndex("value") < 0 {
				l.errorf(a.Expr.Range().Ptr(), "Invalid metric_regex",
					"metric_regex needs the named groups (?P<name>...) and (?P<value>...), e.g. \"(?P<name>\\\\w+)=(?P<value>[-+]?[0-9.]+)\".")
			} else {
				t.MetricRegex = s
			}
		}
	}
}

// argsTemplates decodes trial.args: a list whose items are templates, or
// any expression giving a list of strings (then without params).
func (l *loader) argsTemplates(a *hcl.Attribute, ss *SearchSpace) []*Template {
	if tup, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
		if len(tup.Exprs) == 0 {
			l.errorf(a.Expr.Range().Ptr(), "Empty args", "args must hold at least the program to run.")
			return nil
		}
		var out []*Template
		ok := true
		for _, item := range tup.Exprs {
			tpl, good := l.template(item, ss)
			if good && tpl != nil {
				good = l.checkArgLength(tpl, ss, func(_ int, v string) string { return v })
			}
			ok = ok && good
			out = append(out, tpl)
		}
		if !ok {
			return nil
		}
		return out
	}
	v, ok := l.typed(a, cty.List(cty.String), "a list of strings")
	if !ok {
		return nil
	}
	if v.LengthInt() == 0 {
		l.errorf(a.Expr.Range().Ptr(), "Empty args", "args must hold at least the program to run.")
		return nil
	}
	var out []*Template
	for _, ev := range v.AsValueSlice() {
		if ev.IsNull() {
			l.errorf(a.Expr.Range().Ptr(), "Invalid args", "args must not hold null.")
			return nil
		}
		out = append(out, &Template{Segments: []Segment{{Literal: ev.AsString()}}, Range: a.Expr.Range()})
	}
	return out
}

// template builds a Template from a string template expression: parts that
// are exactly param.NAME become param segments, everything else is
// evaluated to text.
func (l *loader) template(expr hclsyntax.Expression, ss *SearchSpace) (*Template, bool) {
	t := &Template{Range: expr.Range()}
	ok := true
	for _, part := range templateParts(expr) {
		if name, rng, isParam := paramPart(part); isParam {
			if ss != nil && !spaceHas(ss, name) && !slices.Contains(l.tunerParams, name) {
				var names []string
				for _, p := range ss.Space.Params {
					names = append(names, p.Name)
				}
				l.errorf(&rng, "Undefined param",
					"undefined param %q; the search space %q has: %s.%s", name, ss.Name, joinNames(names), didyoumean.Sentence(name, names, "param.%s"))
				ok = false
				continue
			}
			if t.paramRanges == nil {
				t.paramRanges = map[int]hcl.Range{}
			}
			t.paramRanges[len(t.Segments)] = rng
			t.Segments = append(t.Segments, Segment{Param: name})
			continue
		}
		v, good := l.value(part)
		if !good {
			ok = false
			continue
		}
		if v.IsNull() {
			l.errorf(part.Range().Ptr(), "Invalid template value", "This part of the template is null; it must give a string.")
			ok = false
			continue
		}
		sv, err := convert.Convert(v, cty.String)
		if err != nil {
			l.errorf(part.Range().Ptr(), "Invalid template value",
				"This part of the template is %s; it must give a string, number or bool.", v.Type().FriendlyName())
			ok = false
			continue
		}
		s := sv.AsString()
		if n := len(t.Segments); n > 0 && t.Segments[n-1].Param == "" {
			t.Segments[n-1].Literal += s
		} else if s != "" {
			t.Segments = append(t.Segments, Segment{Literal: s})
		}
	}
	if len(t.Segments) == 0 {
		t.Segments = []Segment{{Literal: ""}}
	}
	return t, ok
}

func spaceHas(ss *SearchSpace, name string) bool {
	for _, p := range ss.Space.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

// experimentValue is what experiment.NAME evaluates to.
func experimentValue(e *Experiment, platVal, spaceVal cty.Value) cty.Value {
	durVal := func(d time.Duration) cty.Value {
		if d == 0 {
			return cty.NullVal(cty.String)
		}
		return cty.StringVal(d.String())
	}
	env := map[string]cty.Value{}
	for k, v := range e.Trial.Env {
		env[k] = cty.StringVal(v)
		if e.Trial.SensitiveEnv[k] {
			env[k] = env[k].Mark(sensitiveMark)
		}
	}
	envVal := cty.MapValEmpty(cty.String)
	if len(env) > 0 {
		envVal = cty.MapVal(env)
	}
	tunerAttrs := map[string]cty.Value{"name": cty.StringVal(e.Tuner.Name), "seed": cty.NumberIntVal(e.Tuner.Seed)}
	return cty.ObjectVal(map[string]cty.Value{
		"name":              cty.StringVal(e.Name),
		"platform":          platVal,
		"search_space":      spaceVal,
		"max_trials":        cty.NumberIntVal(int64(e.MaxTrials)),
		"concurrency":       cty.NumberIntVal(int64(e.Concurrency)),
		"max_failed_trials": cty.NumberIntVal(int64(e.MaxFailedTrials)),
		"max_duration":      durVal(e.MaxDuration),
		"on_max_duration":   cty.StringVal(e.OnMaxDuration),
		"paused":            cty.BoolVal(e.Paused),
		"objective": cty.ObjectVal(map[string]cty.Value{
			"metric": cty.StringVal(e.Objective.Metric), "goal": cty.StringVal(e.Objective.Goal),
			"strategy": cty.StringVal(e.Objective.StrategyName()),
		}),
		"tuner": cty.ObjectVal(tunerAttrs),
		"trial": cty.ObjectVal(map[string]cty.Value{
			"code_dir":     cty.StringVal(e.Trial.CodeDir),
			"env":          envVal,
			"max_duration": durVal(e.Trial.MaxDuration),
			"gpus":         cty.NumberIntVal(int64(e.Trial.GPUs)),
			"metric_regex": cty.StringVal(e.Trial.MetricRegex),
		}),
	})
}

// checkShellTemplate checks that trial.command parses as shell and that
// every ${param.X} stands where its value can be quoted (see ShellQuoting),
// and that no choice value of such a param cannot be written where it
// stands (a line break in a here-document).
func (l *loader) checkShellTemplate(tpl *Template, ss *SearchSpace) bool {
	quoting, docs, err := tpl.shellQuoting()
	if err != nil {
		rng := tpl.Range
		var up *UnsafePlaceError
		if errors.As(err, &up) {
			if r, ok := tpl.paramRanges[up.Segment]; ok {
				rng = r
			}
			l.errorf(&rng, "Unsafe parameter position",
				"%s. Move it into a plain word (--%s=${param.%s}), into \"...\" or '...', or use args = [...] to run the trial without a shell.",
				err, up.Param, up.Param)
			return false
		}
		l.errorf(&rng, "Invalid trial command", "%s. Fix the command, or use args = [...] to run the trial without a shell.", err)
		return false
	}
	if ss == nil {
		return true
	}
	ok := true
	for i, s := range tpl.Segments {
		if s.Param == "" {
			continue
		}
		for _, p := range ss.Space.Params {
			if p.Name != s.Param {
				continue
			}
			for _, o := range p.Options {
				str, isStr := o.Value.(string)
				if !isStr {
					continue
				}
				if _, err := quoting[i].quote(str); err != nil {
					rng := tpl.paramRanges[i]
					l.errorf(&rng, "Unsafe parameter value", "choice value %q of param %q: %s. Use args = [...], or pass it another way.", str, s.Param, err)
					ok = false
				}
			}
		}
	}
	if ok {
		ok = l.checkHeredocLines(tpl, ss, quoting, docs)
	}
	if ok {
		ok = l.checkArgLength(tpl, ss, func(i int, v string) string {
			q, _ := quoting[i].quote(v)
			return q
		})
	}
	return ok
}

// checkArgLength refuses choice values that make the template (a command
// line, or one item of args) longer than one argument of a program may be
// (MaxArgLen): each param at its longest choice value, the others (numbers)
// as written. The trial would fail to start with "argument list too long".
func (l *loader) checkArgLength(tpl *Template, ss *SearchSpace, quote func(seg int, v string) string) bool {
	if ss == nil {
		return true
	}
	total, worst, worstLen := 0, -1, -1
	for i, seg := range tpl.Segments {
		if seg.Param == "" {
			total += len(seg.Literal)
			continue
		}
		longest := 0
		for _, p := range ss.Space.Params {
			if p.Name != seg.Param {
				continue
			}
			for _, o := range p.Options {
				if str, isStr := o.Value.(string); isStr {
					longest = max(longest, len(quote(i, str)))
				}
			}
		}
		total += longest
		if longest > worstLen {
			worst, worstLen = i, longest
		}
	}
	if total <= MaxArgLen || worst < 0 {
		return true
	}
	rng := tpl.paramRanges[worst]
	l.errorf(&rng, "Parameter value too long",
		"a choice value of param %q is %d bytes: with it this argument is %d bytes, over the %d a Linux program accepts in one argument, so the trial could not start. "+
			"Pass it another way: the trial reads every parameter from nni.get_next_parameter(), or choose a short key and map it to the long value in the trial.",
		tpl.Segments[worst].Param, worstLen, total, MaxArgLen)
	return false
}

// checkHeredocLines refuses choice values that would make their line of a
// here-document read as its delimiter (choice = ["a", "EOF"] alone on a
// line of a <<EOF body): the shell would end the document there and run
// the lines after it as commands. Each line is tried with every
// combination of the choice values standing in it (up to a bound; Render
// checks the values a trial actually gets in any case).
func (l *loader) checkHeredocLines(tpl *Template, ss *SearchSpace, quoting []Quoting, docs map[int]heredoc) bool {
	options := func(name string) []string {
		for _, p := range ss.Space.Params {
			if p.Name != name || len(p.Options) == 0 {
				continue
			}
			var vals []string
			for _, o := range p.Options {
				if space.IsNested(o) {
					return nil
				}
				vals = append(vals, space.FormatValue(o.Value))
			}
			return vals
		}
		return nil
	}
	done := map[int]bool{}
	for i := range tpl.Segments {
		d, inDoc := docs[i]
		if !inDoc || done[i] {
			continue
		}
		// The line holding segment i: from the last line break before it
		// to the first after it.
		first, last := i, i
		for first > 0 && !strings.Contains(tpl.Segments[first-1].Literal, "\n") {
			first--
		}
		for last < len(tpl.Segments)-1 && !strings.Contains(tpl.Segments[last+1].Literal, "\n") {
			last++
		}
		var head, tail string
		if first > 0 {
			lit := tpl.Segments[first-1].Literal
			head = lit[strings.LastIndexByte(lit, '\n')+1:]
		}
		if last < len(tpl.Segments)-1 {
			lit := tpl.Segments[last+1].Literal
			tail = lit[:strings.IndexByte(lit, '\n')]
		}
		// The choices of each param segment on the line, quoted for it.
		var segs []int
		var choices, raws [][]string
		combos := 1
		for k := first; k <= last; k++ {
			done[k] = true
			if tpl.Segments[k].Param == "" {
				continue
			}
			var quoted, raw []string
			for _, v := range options(tpl.Segments[k].Param) {
				if q, err := quoting[k].quote(v); err == nil {
					quoted = append(quoted, q)
					raw = append(raw, v)
				}
			}
			segs = append(segs, k)
			choices = append(choices, quoted)
			raws = append(raws, raw)
			combos *= len(quoted)
		}
		if combos == 0 || combos > 4096 {
			continue // not all choices (Render checks these)
		}
		pick := make([]int, len(segs))
		for {
			var b strings.Builder
			b.WriteString(head)
			n := 0
			var vals []string
			for k := first; k <= last; k++ {
				if tpl.Segments[k].Param == "" {
					b.WriteString(tpl.Segments[k].Literal)
					continue
				}
				v := choices[n][pick[n]]
				b.WriteString(v)
				vals = append(vals, fmt.Sprintf("%q of param %q", raws[n][pick[n]], tpl.Segments[k].Param))
				n++
			}
			b.WriteString(tail)
			if d.ends(b.String()) {
				rng := tpl.paramRanges[segs[0]]
				l.errorf(&rng, "Unsafe parameter value", "choice value %s: %s. Remove the value, or choose a delimiter that no value spells (such as <<END_OF_INPUT), or use args = [...].",
					strings.Join(vals, ", "), &DelimiterError{Line: b.String(), Delim: d.delim})
				return false
			}
			// The next combination.
			n = len(pick) - 1
			for n >= 0 {
				pick[n]++
				if pick[n] < len(choices[n]) {
					break
				}
				pick[n] = 0
				n--
			}
			if n < 0 {
				break
			}
		}
	}
	return true
}

// sensitiveEnvAdvice says where a platform would put a trial's environment
// and where a secret belongs instead.
func sensitiveEnvAdvice(kind string) (where, fix string) {
	switch kind {
	case "openpai", "dlc", "aml", "dlts":
		return "the job definition, which anyone who can list the service's jobs sees",
			"Keep the secret in the service's own secret store (a key vault, a credential the workspace holds) and read it from the trial instead."
	}
	return "objects anyone who can read them sees",
		"Keep the secret in a Kubernetes Secret and reference it from the platform's pod spec instead."
}
