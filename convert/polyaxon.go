package convert

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/trialform/trialform/tuner"
	"github.com/trialform/trialform/tuner/space"
	"go.yaml.in/yaml/v3"
)

// Polyaxon converts a polyaxonfile: v0/v1 (kind: experiment or group,
// hptuning, build, run.cmd) or v1.1+ (kind: operation with a matrix and a
// component, or kind: component).
func Polyaxon(data []byte, opt Options) (*Result, error) {
	return run(opt, data, func(c *conv, root *yaml.Node) *hfile { return c.polyaxon(root) })
}

// pxState is what a polyaxonfile conversion collects.
type pxState struct {
	name     string
	vars     []*block
	varKind  map[string]string // variable -> "scalar" or "any"
	matrix   map[string]bool   // params of the search space
	sp       *space.Space
	budget   string // hyperband's resource param, replaced by TRIAL_BUDGET
	exp      *block
	tuner    *block
	objMet   string
	objGoal  string
	platform *block
	trial    *block
	single   bool // no matrix: one run with the variables as one-value choices
}

var pxReasons = map[string]string{
	"version":            "the polyaxonfile version only tells the schema",
	"framework":          "trialform runs any command; the framework is not needed",
	"tags":               "trialform has no tags",
	"logging":            "trialform keeps trial logs in its own files",
	"description":        "trialform has no description on experiments",
	"name":               "",
	"project":            "trialform has no projects; the directory is the project",
	"profile":            "trialform has no run profiles",
	"queue":              "trialform has no queues; concurrency limits running trials",
	"cache":              "trialform never reuses a trial's result for another trial",
	"plugins":            "trialform has no plugins",
	"termination":        "use max_duration and max_failed_trials",
	"owner":              "trialform has no owners",
	"isPreset":           "trialform has no presets",
	"hooks":              "trialform has no hooks",
	"presets":            "trialform has no presets",
	"schedule":           "trialform has no schedules; run apply when you want",
	"dependencies":       "trialform has no pipelines",
	"trigger":            "trialform has no pipelines",
	"conditions":         "trialform has no pipelines",
	"skipOnUpstreamSkip": "trialform has no pipelines",
	"outputs":            "trialform records the metrics a trial reports",
	"contexts":           "trialform has no contexts",
}

func (c *conv) polyaxon(root *yaml.Node) *hfile {
	o := c.obj(root, "")
	kind, _ := o.str("kind")
	version := ""
	if n, ok := o.scalar("version"); ok {
		version = n.Value
	}
	st := &pxState{varKind: map[string]string{}, matrix: map[string]bool{}, exp: newBlock("experiment"), trial: newBlock("trial")}
	st.name = stem(c.file)
	if s, ok := o.str("name"); ok && s != "" {
		st.name = s
	}
	schemaName := "Polyaxon v1.1+ polyaxonfile"
	switch kind {
	case "experiment", "group":
		schemaName = "Polyaxon v0/v1 polyaxonfile"
		c.pxV0(o, st, kind)
	case "operation":
		c.pxOperation(o, st)
	case "component":
		st.single = true
		c.pxComponent(o, st)
	case "":
		c.failf(root, "kind is missing: a polyaxonfile has kind experiment, group, operation or component")
	default:
		c.failf(o.keyNode("kind"), "kind %q: convert polyaxon reads kind experiment or group (v0/v1) and operation or component (v1.1+)", kind)
	}
	_ = version
	st.name = ident(st.name, "polyaxon")
	f := &hfile{header: header("polyaxon", c.file, schemaName)}
	f.header = append(f.header, "Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,",
		"print `trialform: {\"loss\": 0.3}` lines, or lines that metric_regex matches.")
	c.warn(nil, "metrics", "trialform does not read Polyaxon's tracking client; trials must report results as NNI does, with `trialform:` lines or lines metric_regex matches")
	o.done(st.exp, pxReasons)
	return c.pxWrite(f, st)
}

// pxWrite assembles the file.
func (c *conv) pxWrite(f *hfile, st *pxState) *hfile {
	for _, v := range st.vars {
		f.add(v)
	}
	for _, v := range c.vars.blocks {
		f.add(v)
	}
	if st.platform == nil {
		c.failf(nil, "no image: set build.image (v0/v1) or the component's run.container.image (v1.1)")
	}
	f.add(st.platform)
	sb := f.add(newBlock("search_space", st.name))
	if st.single {
		n := 0
		for _, v := range st.vars {
			name := v.labels[0]
			if st.varKind[name] != "scalar" {
				continue
			}
			pb := sb.add(newBlock("param", name))
			pb.raw("choice", "[var."+name+"]")
			n++
		}
		if n == 0 {
			sb.comment("a single run: trialform needs one param, this one only numbers the run")
			sb.add(newBlock("param", "run")).set("choice", []any{1})
		} else {
			sb.comment("a single run: each param is its variable's one value")
		}
		if !st.exp.has("max_trials") {
			st.exp.set("max_trials", 1)
		}
	} else {
		spaceParams(sb, st.sp)
		c.noteParams(sb)
	}
	e := f.add(newBlock("experiment", st.name))
	e.raw("platform", "platform."+st.platform.labels[0]+"."+st.platform.labels[1])
	e.raw("search_space", "search_space."+st.name)
	if !st.exp.has("max_trials") {
		st.exp.set("max_trials", 100)
		st.exp.comment("the polyaxonfile set no number of runs; trialform needs a budget: adjust max_trials")
		c.warn(nil, "max_trials", "no number of runs given; max_trials = 100 written, adjust it")
	}
	if !st.single {
		c.fitGrid(st.exp, st.tuner, st.sp, nil)
	}
	e.items = append(e.items, st.exp.items...)
	ob := e.add(newBlock("objective"))
	metric, goal := st.objMet, st.objGoal
	var missing, assumed []string
	if metric == "" {
		metric = "default"
		missing, assumed = append(missing, "metric"), append(assumed, `metric "default" (NNI's final result)`)
	}
	if goal == "" {
		goal = "maximize"
		missing, assumed = append(missing, "goal"), append(assumed, `goal "maximize"`)
	}
	if len(assumed) > 0 {
		// random, grid and mapping run their sets whatever the results;
		// trialform's objective needs both.
		what := strings.Join(assumed, " and ")
		ob.comment("the polyaxonfile names no " + strings.Join(missing, " or ") + " to optimize: " + what + " assumed; set what the trials report")
		c.warn(nil, "objective", "the polyaxonfile names none: %s assumed; set what the trials report", what)
	}
	ob.set("metric", metric)
	ob.set("goal", goal)
	if st.tuner != nil {
		e.add(st.tuner)
	}
	e.add(st.trial)
	if !st.trial.has("command") && !st.trial.has("args") {
		c.failf(nil, "no command: set run.cmd (v0/v1) or the container's command (v1.1)")
	}
	return f
}

// ---- v0/v1 ----

func (c *conv) pxV0(o *obj, st *pxState, kind string) {
	// Variables: params / declarations, typed inputs.
	for _, k := range []string{"params", "declarations"} {
		if o.has(k) {
			c.pxParams(o.sub(k), st)
		}
	}
	if o.has("inputs") {
		c.pxInputs(o, "inputs", st)
	}
	o.skip(st.exp, "outputs", "trialform records the metrics a trial reports")
	if o.has("hptuning") {
		c.pxHPTuning(o.sub("hptuning"), st)
	} else {
		st.single = true
		if kind == "group" {
			c.failf(o.node, "kind: group needs hptuning with a matrix")
		}
	}
	st.platform = newBlock("platform", "kubernetes", "default")
	if o.has("build") {
		b := o.sub("build")
		if s, ok := b.str("image"); ok {
			st.platform.set("image", s)
		}
		if steps := b.strList("build_steps"); len(steps) > 0 {
			c.warn(b.keyNode("build_steps"), "build.build_steps", "not converted: trialform does not build images; build one with these steps (listed as comments)")
			st.platform.tailComment("not converted: build.build_steps: trialform does not build images; build an image from " + attr(st.platform, "image") + " with:")
			for _, s := range steps {
				st.platform.tailComment("  RUN " + s)
			}
		}
		b.done(st.platform, map[string]string{"dockerfile": "trialform does not build images; build it and set image", "env_vars": "set them in trial.env", "lang_env": "set it in trial.env"})
	}
	if o.has("environment") {
		c.pxEnvironmentV0(o.sub("environment"), st)
	}
	if o.has("run") {
		r := o.sub("run")
		var cmds []string
		for _, n := range r.list("cmd") {
			if n.Kind != yaml.ScalarNode {
				c.failf(n, "run.cmd must be a command line or a list of them")
			}
			cmds = append(cmds, n.Value)
		}
		if len(cmds) > 0 {
			cmd := strings.Join(cmds, " && ")
			st.trial.raw("command", template(c.pxTemplate(continuation.ReplaceAllString(cmd, " "), st, r.keyNode("cmd"))))
		}
		r.done(st.trial, nil)
	}
}

// continuation is a line continuation folded by YAML into "\ ".
var continuation = regexp.MustCompile(`\s*\\\s+`)

func (c *conv) pxEnvironmentV0(env *obj, st *pxState) {
	p := st.platform
	if env.has("node_selector") {
		p.set("node_selector", stringMap(c.goValue(env.take("node_selector"))))
	}
	if env.has("tolerations") {
		p.set("tolerations", c.goValue(env.take("tolerations")))
	}
	if env.has("resources") {
		rs := env.sub("resources")
		rb := p.child("resources")
		for _, k := range []string{"cpu", "memory", "gpu"} {
			if !rs.has(k) {
				continue
			}
			r := rs.sub(k)
			var val any
			lim, okL := r.scalar("limits")
			req, okR := r.scalar("requests")
			switch {
			case okL:
				val = c.goValue(lim)
				if okR && req.Value != lim.Value {
					c.warn(req, r.field("requests"), "differs from limits; trialform sets requests = limits (%s)", lim.Value)
				}
			case okR:
				val = c.goValue(req)
			}
			if k == "memory" {
				if f, ok := val.(float64); ok {
					val = memoryMB(f) // Polyaxon v0 counts memory in MB
				}
			}
			if val != nil {
				rb.set(k, val)
			}
			r.done(rb, nil)
		}
		rs.done(rb, nil)
	}
	env.skip(p, "affinity", "trialform sets node_selector and tolerations only")
	env.skip(p, "replicas", "trialform runs one pod per trial on the kubernetes platform; use the kubeflow platform for distributed training")
	env.done(p, map[string]string{"persistence": "mount data with the platform's nfs block", "outputs": "trialform keeps a trial's outputs in NNI_OUTPUT_DIR", "secrets": "trialform sets env values only", "config_maps": "trialform sets env values only"})
}

func stringMap(v any) map[string]string {
	out := map[string]string{}
	if m, ok := v.(map[string]any); ok {
		for k, x := range m {
			if f, ok := x.(float64); ok {
				out[k] = fmtNum(f)
			} else {
				out[k] = fmt.Sprint(x)
			}
		}
	}
	return out
}

// pxParams turns params/declarations into variables with defaults.
func (c *conv) pxParams(p *obj, st *pxState) {
	for _, k := range p.keys {
		c.pxValue(st, k, p.take(k), "", "from "+p.field(k), p.field(k))
	}
}

func orNull(n *yaml.Node) *yaml.Node {
	if n == nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return n
}

// pxRuntimeTmpl finds a value Polyaxon fills in when the run starts
// ("{{ context }}", "{{ globals.run_outputs_path }}").
var pxRuntimeTmpl = regexp.MustCompile(`\{\{.*?\}\}`)

// pxValue declares variable name with the value n as its default, or,
// when n is a template Polyaxon fills in at run time, without a default
// and with a warning: trialform cannot fill it in, and the text would be
// a wrong default (of a number variable, an invalid one).
func (c *conv) pxValue(st *pxState, name string, n *yaml.Node, typ, desc, field string) {
	v := c.goValue(orNull(n))
	s, ok := v.(string)
	if !ok || !pxRuntimeTmpl.MatchString(s) {
		c.pxVariable(st, name, v, typ, desc)
		return
	}
	why := fmt.Sprintf("%s, a Polyaxon template there (%s) filled in when the run starts: give its value with -var or TRIALFORM_VAR_%s", field, s, name)
	c.warn(n, field, "%s is a template Polyaxon fills in when the run starts, which trialform cannot do: variable %q is written without a default; give its value with -var '%s=...' or TRIALFORM_VAR_%s", s, name, name, name)
	for _, vb := range st.vars {
		if vb.labels[0] == name {
			vb.unset("default")
			vb.set("description", why)
			return
		}
	}
	if typ == "" {
		typ = "string"
	}
	c.pxVariable(st, name, nil, typ, why)
}

// pxVariable declares a variable with a default.
func (c *conv) pxVariable(st *pxState, name string, def any, typ, desc string) {
	for _, v := range st.vars {
		if v.labels[0] == name {
			v.set("default", def)
			return
		}
	}
	vb := newBlock("variable", name)
	if typ != "" {
		vb.raw("type", typ)
	}
	if def != nil {
		vb.set("default", def)
	}
	if desc != "" {
		vb.set("description", desc)
	}
	switch def.(type) {
	case string, float64, bool:
		st.varKind[name] = "scalar"
	case nil:
		if typ == "number" || typ == "string" || typ == "bool" {
			st.varKind[name] = "scalar"
		} else {
			st.varKind[name] = "any"
		}
	default:
		st.varKind[name] = "any"
	}
	st.vars = append(st.vars, vb)
}

// pxInputs turns typed inputs into variables.
func (c *conv) pxInputs(o *obj, key string, st *pxState) {
	for i, n := range o.list(key) {
		in := c.obj(n, fmt.Sprintf("%s[%d]", o.field(key), i))
		name, _ := in.str("name")
		if name == "" {
			c.failf(n, "%s needs a name", in.path)
		}
		typ, _ := in.str("type")
		hclType := map[string]string{"int": "number", "float": "number", "str": "string", "bool": "bool", "dict": "any", "list": "any"}[typ]
		if hclType == "" {
			hclType = "any"
			if typ != "" {
				c.warn(in.keyNode("type"), in.field("type"), "%q written as type any", typ)
			}
		}
		var def any
		var defNode *yaml.Node
		defField := ""
		if k := in.pick("value", "default"); k != "" {
			if dn := in.take(k); dn != nil {
				def, defNode, defField = c.goValue(dn), dn, in.field(k)
			}
		}
		desc, _ := in.str("description")
		in.ignore("is_optional", "isOptional", "isList", "is_list", "options", "delay", "toInit", "connection")
		if _, ok := st.matrix[name]; ok || (st.budget != "" && name == st.budget) {
			// A matrix param, or hyperband's resource (TRIAL_BUDGET):
			// the tuner gives its value.
			in.done(st.exp, nil)
			continue
		}
		if s, ok := def.(string); ok && pxRuntimeTmpl.MatchString(s) {
			c.pxValue(st, name, defNode, hclType, desc, defField)
			in.done(st.exp, nil)
			continue
		}
		if def == nil {
			opt := false
			if k := in.pick("isOptional", "is_optional"); k != "" {
				opt, _ = in.boolean(k)
			}
			if opt {
				def = map[string]any{"int": 0.0, "float": 0.0, "str": "", "bool": false}[typ]
			}
		}
		c.pxVariable(st, name, def, hclType, desc)
		in.done(st.exp, nil)
	}
}

// pxHPTuning converts v0/v1 hptuning.
func (c *conv) pxHPTuning(h *obj, st *pxState) {
	if n, ok := h.integer("concurrency", 1); ok {
		st.exp.set("concurrency", n)
	}
	var seed *float64
	if f, ok := h.num("seed"); ok {
		seed = &f
	}
	if !h.has("matrix") {
		c.failf(h.node, "hptuning needs a matrix")
	}
	st.sp = c.pxMatrix(h.sub("matrix"), st, false)
	switch {
	case h.has("grid_search"):
		g := h.sub("grid_search")
		st.tuner = newBlock("tuner", "grid")
		if n, ok := g.integer("n_experiments", 1); ok {
			st.exp.set("max_trials", n)
		} else {
			st.exp.set("max_trials", 1<<20)
		}
		g.done(st.tuner, nil)
	case h.has("random_search"):
		r := h.sub("random_search")
		st.tuner = newBlock("tuner", "random")
		if n, ok := r.integer("n_experiments", 1); ok {
			st.exp.set("max_trials", n)
		}
		r.done(st.tuner, nil)
	case h.has("hyperband"):
		hb := h.sub("hyperband")
		c.pxHyperband(hb, st, "max_iter", "eta", "resource", "metric")
		hb.done(st.tuner, map[string]string{"resume": "trialform starts each rung's trials afresh with TRIAL_BUDGET"})
	case h.has("bo"):
		bo := h.sub("bo")
		st.tuner = newBlock("tuner", "auto")
		c.notConverted(st.tuner, h.keyNode("bo"), "hptuning.bo", "auto is the nearest: %s; tuner \"gp\" is a Gaussian process throughout", autoWhat)
		n1, _ := bo.integer("n_initial_trials", 0)
		n2, _ := bo.integer("n_iterations", 0)
		if n1+n2 > 0 {
			st.exp.set("max_trials", n1+n2)
		}
		c.pxMetric(bo, "metric", st)
		bo.done(st.tuner, map[string]string{"utility_function": "auto has no acquisition function setting"})
	default:
		st.tuner = newBlock("tuner", "random")
		st.tuner.comment("Polyaxon's default search: random")
	}
	if seed != nil && settingOK(st.tuner.labels[0], "seed") {
		st.tuner.set("seed", *seed)
	}
	if h.has("early_stopping") {
		for i, n := range h.list("early_stopping") {
			es := c.obj(n, fmt.Sprintf("hptuning.early_stopping[%d]", i))
			if st.objMet == "" {
				if s, ok := es.str("metric"); ok {
					st.objMet = s
				}
				if s, ok := es.scalar("optimization"); ok {
					st.objGoal = c.goalFrom(s, es.field("optimization"))
				}
			}
			c.notConverted(st.exp, n, es.path, "trialform has no stop-at-a-metric-value rule; its assessors (medianstop, curvefitting) stop trials that do worse than the others")
			es.ignore(es.keys...)
		}
	}
	h.done(st.exp, nil)
}

// pxHyperband converts hyperband (v0 max_iter / v1.1 maxIterations).
func (c *conv) pxHyperband(hb *obj, st *pxState, maxKey, etaKey, resKey, metricKey string) {
	st.tuner = newBlock("tuner", "hyperband")
	st.tuner.comment("Polyaxon's hyperband: the same algorithm; a trial's budget is the param TRIAL_BUDGET")
	if f, ok := hb.num(maxKey); ok {
		st.tuner.set("max_budget", f)
	} else {
		c.failf(hb.node, "hyperband needs %s", maxKey)
	}
	if f, ok := hb.num(etaKey); ok {
		st.tuner.set("eta", f)
	}
	if hb.has(resKey) {
		r := hb.sub(resKey)
		if s, ok := r.str("name"); ok {
			st.budget = s
		}
		r.ignore("type")
		r.done(st.tuner, nil)
	}
	c.pxMetric(hb, metricKey, st)
	if st.budget != "" && st.sp != nil {
		var kept []space.Param
		for _, p := range st.sp.Params {
			if p.Name != st.budget {
				kept = append(kept, p)
			}
		}
		st.sp.Params = kept
	}
	// Polyaxon runs every bracket once (s = s_max..0, successive halving
	// in each), then stops: one round of trialform's schedule, the same
	// brackets and rungs.
	maxB, _ := hb.num(maxKey)
	eta := 3.0
	if f, ok := hb.num(etaKey); ok {
		eta = f
	}
	n, ok := 0, false
	if maxB >= 1 && eta >= 2 && eta == math.Trunc(eta) && !st.exp.has("max_trials") {
		var err error
		n, err = tuner.HyperbandRound(maxB, 1, int(eta))
		ok = err == nil // too large a round: max_trials is left to the user
	}
	if ok {
		st.exp.comment(fmt.Sprintf("hyperband: Polyaxon runs every bracket once; for %s %v and eta %v that is %d runs, every rung's trial counted", maxKey, maxB, eta, n))
		st.exp.set("max_trials", n)
	} else {
		st.exp.comment("hyperband: trialform counts every rung's trial in max_trials")
	}
}

func (c *conv) pxMetric(o *obj, key string, st *pxState) {
	if !o.has(key) {
		return
	}
	m := o.sub(key)
	if s, ok := m.str("name"); ok {
		st.objMet = s
	}
	if n, ok := m.scalar("optimization"); ok {
		st.objGoal = c.goalFrom(n, m.field("optimization"))
	}
	m.done(st.exp, nil)
}

// pxMatrix converts the matrix (v0: {name: {values: ...}}; v1.1:
// {name: {kind: choice, value: ...}}).
func (c *conv) pxMatrix(m *obj, st *pxState, v11 bool) *space.Space {
	sp := &space.Space{}
	for _, name := range m.keys {
		po := m.sub(name)
		kind := ""
		var val *yaml.Node
		if v11 {
			kind, _ = po.str("kind")
			val = po.take("value")
		} else {
			for _, k := range po.keys {
				if kind != "" {
					c.failf(po.keyNode(k), "%s has more than one distribution", po.path)
				}
				kind, val = k, po.take(k)
			}
		}
		if kind == "" || val == nil {
			c.failf(po.node, "%s needs a distribution with a value", po.path)
		}
		st.matrix[name] = true
		sp.Params = append(sp.Params, c.pxDist(po, name, kind, val))
		po.done(st.exp, nil)
	}
	if len(sp.Params) == 0 {
		c.failf(m.node, "the matrix is empty")
	}
	return sp
}

// pxDist converts one distribution.
func (c *conv) pxDist(po *obj, name, kind string, val *yaml.Node) space.Param {
	p := space.Param{Name: name}
	field := po.path + "." + kind
	// nums reads the distribution's numbers named names, the last
	// optional; logspace's optional base is a fourth.
	nums := func(names ...string) []float64 {
		var out []float64
		switch val.Kind {
		case yaml.ScalarNode:
			for _, s := range strings.Split(val.Value, ":") {
				f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
				if err != nil {
					c.failf(val, "%s: %q is not a number", field, s)
				}
				out = append(out, f)
			}
		case yaml.SequenceNode:
			for _, it := range val.Content {
				f, err := strconv.ParseFloat(deref(it).Value, 64)
				if err != nil {
					c.failf(it, "%s: %q is not a number", field, deref(it).Value)
				}
				out = append(out, f)
			}
		case yaml.MappingNode:
			mo := c.obj(val, field)
			for _, n := range names {
				f, ok := mo.num(n)
				if !ok {
					if n == "base" {
						break // optional
					}
					c.failf(val, "%s needs %s", field, strings.Join(names, ", "))
				}
				out = append(out, f)
			}
			// What is not converted is written at the top of the param.
			tmp := newBlock("param")
			mo.done(tmp, nil)
			for _, it := range tmp.items {
				if it.comment != "" {
					c.noteParam(name, it.comment)
				}
			}
		}
		if len(out) < len(names)-1 || len(out) > len(names) {
			c.failf(val, "%s takes %s", field, strings.Join(names, ":"))
		}
		return out
	}
	choice := func(vals []any) space.Param {
		p.Kind = space.Choice
		for _, v := range vals {
			p.Options = append(p.Options, space.Option{Value: v})
		}
		return p
	}
	switch kind {
	case "values", "choice":
		var vals []any
		for _, it := range seqItems(val) {
			v := c.goValue(it)
			switch v.(type) {
			case string, float64, bool:
			default:
				c.failf(it, "%s: trialform's choice options are strings, numbers or bools", field)
			}
			vals = append(vals, v)
		}
		return choice(vals)
	case "pvalues", "pchoice":
		var vals []any
		for _, it := range seqItems(val) {
			pair := seqItems(it)
			if len(pair) != 2 {
				c.failf(it, "%s: each item is [value, probability]", field)
			}
			vals = append(vals, c.goValue(pair[0]))
		}
		c.warn(val, field, "approximately converted: the probabilities are dropped; trialform's choice is uniform")
		return choice(vals)
	case "range":
		a := nums("start", "stop", "step")
		if len(a) == 2 {
			a = append(a, 1)
		}
		if a[2] == 0 || (a[1]-a[0])/a[2] > 10000 {
			c.failf(val, "%s: a range needs a step that gives at most 10000 values", field)
		}
		var vals []any
		for x := a[0]; (a[2] > 0 && x < a[1]-1e-12) || (a[2] < 0 && x > a[1]+1e-12); x += a[2] {
			vals = append(vals, round12(x))
		}
		return choice(vals)
	case "linspace", "logspace", "geomspace":
		var a []float64
		base := 10.0
		if kind == "logspace" {
			// numpy's logspace: base ** linspace(start, stop, num).
			a = nums("start", "stop", "num", "base")
			if len(a) == 4 {
				base = a[3]
			}
		} else {
			a = nums("start", "stop", "num")
		}
		if len(a) < 3 || a[2] < 1 || a[2] > 10000 || a[2] != math.Trunc(a[2]) {
			c.failf(val, "%s takes start:stop:num with a whole num", field)
		}
		n := int(a[2])
		var vals []any
		for i := 0; i < n; i++ {
			t := 0.0
			if n > 1 {
				t = float64(i) / float64(n-1)
			}
			var x float64
			switch kind {
			case "linspace":
				x = a[0] + t*(a[1]-a[0])
			case "logspace":
				x = math.Pow(base, a[0]+t*(a[1]-a[0]))
			default:
				if a[0] <= 0 || a[1] <= 0 {
					c.failf(val, "%s needs start and stop > 0", field)
				}
				x = math.Exp(math.Log(a[0]) + t*(math.Log(a[1])-math.Log(a[0])))
			}
			vals = append(vals, round12(x))
		}
		return choice(vals)
	case "uniform":
		p.Kind, p.Args = space.Uniform, nums("low", "high")
	case "quniform":
		return c.pxQuniform(p, val, field, nums("low", "high", "q"))
	case "loguniform", "qloguniform":
		a := nums("low", "high", "q")
		if kind == "loguniform" {
			a = nums("low", "high")
		}
		a[0], a[1] = round12(math.Exp(a[0])), round12(math.Exp(a[1]))
		p.Kind, p.Args = space.Kind(kind), a
		c.warn(val, field, "Polyaxon's %s draws exp(uniform(low, high)); written as NNI's %s over [e^low, e^high]", kind, kind)
		if kind == "qloguniform" {
			c.pxFloorDiffers(name, val, field, a[2])
		}
	case "normal":
		p.Kind, p.Args = space.Normal, nums("loc", "scale")
	case "qnormal":
		// Polyaxon: floor(N(loc, scale)/q)*q; NNI: round(N/q)*q. With
		// loc lowered by q/2 the rounding is the floor: exact.
		a := nums("loc", "scale", "q")
		c.noteParam(name, fmt.Sprintf("Polyaxon's qnormal [%v, %v, %v] floors to multiples of q, NNI's rounds: loc is lowered by q/2 to give the same values", a[0], a[1], a[2]))
		a[0] = round12(a[0] - a[2]/2)
		p.Kind, p.Args = space.Qnormal, a
	case "lognormal":
		p.Kind, p.Args = space.Lognormal, nums("loc", "scale")
	case "qlognormal":
		p.Kind, p.Args = space.Qlognormal, nums("loc", "scale", "q")
		c.pxFloorDiffers(name, val, field, p.Args[2])
	default:
		c.failf(val, "%s: distribution %q has no trialform equivalent (values, pvalues, range, linspace, logspace, geomspace, uniform, quniform, loguniform, qloguniform, normal, qnormal, lognormal, qlognormal)", po.path, kind)
	}
	if err := p.Validate(); err != nil {
		c.failf(val, "%s: %v", field, err)
	}
	return p
}

// pxFloorDiffers warns that a q-distribution NNI cannot shift floors in
// Polyaxon and rounds in trialform.
func (c *conv) pxFloorDiffers(name string, val *yaml.Node, field string, q float64) {
	msg := fmt.Sprintf("approximately converted: Polyaxon floors to multiples of q (np.round(x // q) * q), NNI rounds (round(x / q) * q): a value x in [k*q + q/2, (k+1)*q) gives (k+1)*q here, k*q in Polyaxon (q = %v)", q)
	c.warn(val, field, "%s", msg)
	c.noteParam(name, msg)
}

// pxQuniform converts Polyaxon's quniform [a, b, q], floor(U(a, b)/q)*q:
// the multiples of q from floor(a/q)*q up to below b. NNI's quniform [a -
// q/2, b - q/2, q], round(U/q)*q clipped to its bounds, gives the same
// values with the same probabilities when the clipping changes none: a
// no more than q/2 past a multiple of q, b a multiple or at least q/2
// past one. Otherwise the values are listed (their ends are likelier in
// Polyaxon, as the warning says).
func (c *conv) pxQuniform(p space.Param, val *yaml.Node, field string, a []float64) space.Param {
	lo, hi, q := a[0], a[1], a[2]
	if len(a) < 3 || q <= 0 || hi <= lo {
		p.Kind, p.Args = space.Quniform, a
		return p
	}
	frac := func(x float64) float64 {
		r := x/q - math.Floor(x/q)
		if r < 1e-9 || r > 1-1e-9 {
			return 0
		}
		return r
	}
	first, n := math.Floor(lo/q+1e-9), 0
	if fb := frac(hi); fb == 0 {
		n = int(math.Round(hi/q) - first)
	} else {
		n = int(math.Floor(hi/q) - first + 1)
	}
	if fa, fb := frac(lo), frac(hi); fa <= 0.5 && (fb == 0 || fb >= 0.5) || n > maxSteppedList {
		c.noteParam(p.Name, fmt.Sprintf("Polyaxon's quniform [%v, %v, %v] floors to multiples of q, NNI's rounds: the bounds are lowered by q/2 to give the same values", lo, hi, q))
		p.Kind, p.Args = space.Quniform, []float64{round12(lo - q/2), round12(hi - q/2), q}
		if n > maxSteppedList {
			c.warn(val, field, "approximately converted: Polyaxon gives the multiples of %v from %v to below %v; quniform [%v, %v, %v] clips its lowest or highest value", q, round12(first*q), hi, p.Args[0], p.Args[1], q)
		}
		return p
	}
	p.Kind = space.Choice
	var vals []string
	for k := 0; k < n; k++ {
		v := round12((first + float64(k)) * q)
		p.Options = append(p.Options, space.Option{Value: v})
		vals = append(vals, fmtNum(v))
	}
	pFirst := (math.Min((first+1)*q, hi) - lo) / (hi - lo)
	pLast := (hi - math.Max((first+float64(n-1))*q, lo)) / (hi - lo)
	msg := fmt.Sprintf("approximately converted: Polyaxon's quniform floors U(%v, %v) to multiples of %v: %s, giving %v with probability %.4g and %v with probability %.4g (the others %.4g each); this choice gives each 1/%d",
		lo, hi, q, strings.Join(vals, ", "), vals[0], pFirst, vals[n-1], pLast, q/(hi-lo), n)
	c.warn(val, field, "%s", msg)
	c.noteParam(p.Name, msg)
	return p
}

func seqItems(n *yaml.Node) []*yaml.Node {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		return []*yaml.Node{n}
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, it := range n.Content {
		out[i] = deref(it)
	}
	return out
}

var pxTmpl = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}`)

// pxTemplate turns {{ name }} into ${param.name} (matrix params, the
// budget) or ${var.name} (other variables); anything else stays as text
// with a warning.
func (c *conv) pxTemplate(s string, st *pxState, n *yaml.Node) []tmplPart {
	var parts []tmplPart
	last := 0
	for _, m := range pxTmpl.FindAllStringSubmatchIndex(s, -1) {
		ref := s[m[2]:m[3]]
		head, rest, _ := strings.Cut(ref, ".")
		var expr string
		switch {
		case st.budget != "" && ref == st.budget:
			expr = "param.TRIAL_BUDGET"
		case st.matrix[ref]:
			expr = "param." + ref
		case st.single && st.varKind[ref] == "scalar":
			expr = "param." + ref
		case st.varKind[head] == "scalar" && rest == "":
			expr = "var." + ref
		case st.varKind[head] != "":
			expr = "jsonencode(var." + ref + ")"
			c.warn(n, "{{ "+ref+" }}", "written as ${%s}: JSON, where Polyaxon wrote Python's repr", expr)
		default:
			c.warn(n, "{{ "+ref+" }}", "not converted: not a param or variable of this file; it stays as text")
			continue
		}
		if m[0] > last {
			parts = append(parts, tmplPart{lit: s[last:m[0]]})
		}
		parts = append(parts, tmplPart{expr: expr})
		last = m[1]
	}
	if last < len(s) || len(parts) == 0 {
		parts = append(parts, tmplPart{lit: s[last:]})
	}
	return parts
}

// ---- v1.1+ ----

func (c *conv) pxOperation(o *obj, st *pxState) {
	var comp *obj
	switch {
	case o.has("component"):
		comp = o.sub("component")
	case o.has("pathRef"):
		ref, _ := o.str("pathRef")
		if c.opt.ReadFile == nil {
			c.failf(o.keyNode("pathRef"), "pathRef %q: the component file cannot be read here", ref)
		}
		data, err := c.opt.ReadFile(ref)
		if err != nil {
			c.failf(o.keyNode("pathRef"), "pathRef: %v", err)
		}
		// Its warnings and errors name it as the user sees it: beside
		// this file.
		name := ref
		if !path.IsAbs(ref) {
			name = path.Join(path.Dir(strings.ReplaceAll(c.file, "\\", "/")), ref)
		}
		sub := &conv{opt: c.opt, file: path.Clean(name), canon: c.canon}
		root, perr := parseYAML(sub.file, data)
		if perr != nil {
			panic(failure{perr.(*Error)})
		}
		comp = sub.obj(root, "")
		defer func() { c.warnings = append(c.warnings, sub.warnings...) }()
		comp.c = sub
		if s, ok := comp.str("name"); ok && st.name == stem(c.file) {
			st.name = s
		}
		comp.ignore("kind", "version")
	case o.has("urlRef"), o.has("hubRef"):
		k := o.pick("urlRef", "hubRef")
		c.failf(o.keyNode(k), "%s: convert does not download components; save the component next to this file and use pathRef", k)
	default:
		c.failf(o.node, "an operation needs a component, a pathRef, a urlRef or a hubRef")
	}
	if o.has("matrix") {
		m := o.sub("matrix")
		kind, _ := m.str("kind")
		if n, ok := m.integer("concurrency", 1); ok {
			st.exp.set("concurrency", n)
		}
		var seed *float64
		if f, ok := m.num("seed"); ok {
			seed = &f
		}
		switch kind {
		case "random", "grid":
			st.sp = c.pxMatrix(m.sub("params"), st, true)
			st.tuner = newBlock("tuner", kind)
			if n, ok := m.integer("numRuns", 1); ok {
				st.exp.set("max_trials", n)
			} else if kind == "grid" {
				st.exp.set("max_trials", 1<<20)
			}
		case "hyperband":
			st.sp = c.pxMatrix(m.sub("params"), st, true)
			c.pxHyperband(m, st, "maxIterations", "eta", "resource", "metric")
			m.skip(st.tuner, "resume", "trialform starts each rung's trials afresh with TRIAL_BUDGET")
		case "bayes":
			st.sp = c.pxMatrix(m.sub("params"), st, true)
			st.tuner = newBlock("tuner", "auto")
			c.notConverted(st.tuner, m.keyNode("kind"), "matrix.kind", "bayes: auto is the nearest: %s; tuner \"gp\" is a Gaussian process throughout", autoWhat)
			n1, _ := m.integer("numInitialRuns", 0)
			n2, _ := m.integer("maxIterations", 0)
			if n1+n2 > 0 {
				st.exp.set("max_trials", n1+n2)
			}
			c.pxMetric(m, "metric", st)
			m.skip(st.tuner, "utilityFunction", "auto has no acquisition function setting")
		case "hyperopt":
			st.sp = c.pxMatrix(m.sub("params"), st, true)
			alg, _ := m.str("algorithm")
			name := map[string]string{"tpe": "tpe", "rand": "random", "anneal": "anneal", "": "tpe"}[alg]
			if name == "" {
				c.failf(m.keyNode("algorithm"), "matrix.algorithm %q: hyperopt's algorithms are tpe, rand and anneal", alg)
			}
			st.tuner = newBlock("tuner", name)
			st.tuner.comment(fmt.Sprintf("Polyaxon's hyperopt %s: the same algorithm", alg))
			if name == "tpe" {
				st.tuner.set("multivariate", false) // hyperopt's TPE models each parameter on its own
			}
			if n, ok := m.integer("numRuns", 1); ok {
				st.exp.set("max_trials", n)
			}
			c.pxMetric(m, "metric", st)
		case "mapping":
			c.pxMapping(m, st)
		case "":
			c.failf(m.node, "matrix needs a kind (random, grid, hyperband, bayes, hyperopt, mapping)")
		default:
			c.failf(m.keyNode("kind"), "matrix kind %q: trialform converts random, grid, hyperband, bayes, hyperopt and mapping", kind)
		}
		if seed != nil && settingOK(st.tuner.labels[0], "seed") {
			st.tuner.set("seed", *seed)
		}
		if m.has("earlyStopping") {
			for i, n := range m.list("earlyStopping") {
				es := c.obj(n, fmt.Sprintf("matrix.earlyStopping[%d]", i))
				if k, _ := es.str("kind"); k == "failure_early_stopping" {
					pct, _ := es.num("percent")
					c.notConverted(st.exp, n, es.path, "failure_early_stopping stops the sweep once %v%% of its runs failed; trialform's nearest is max_failed_trials, a number of failed trials (about %v%% of max_trials), which it does not set for you", pct, pct)
					es.ignore(es.keys...)
					continue
				}
				c.notConverted(st.exp, n, es.path, "trialform has no stop-at-a-metric-value rule; its assessors (medianstop, curvefitting) stop trials that do worse than the others")
				es.ignore(es.keys...)
			}
		}
		m.done(st.exp, nil)
	} else {
		st.single = true
	}
	// comp.c: what the component holds is reported at its own file and
	// lines (a pathRef's is another file).
	comp.c.pxComponent(comp, st)
	// Operation params override the component's input defaults.
	if o.has("params") {
		ps := o.sub("params")
		for _, k := range ps.keys {
			po := ps.sub(k)
			if v := po.take("value"); v != nil {
				c.pxValue(st, k, v, "", "", po.field("value"))
			}
			po.done(st.exp, nil)
		}
	}
}

// pxMapping converts matrix kind mapping: the listed parameter sets, run
// in order (trialform's batch tuner).
func (c *conv) pxMapping(m *obj, st *pxState) {
	sets := c.goValue(orNull(m.take("values")))
	list, ok := sets.([]any)
	if !ok || len(list) == 0 {
		c.failf(m.node, "matrix.values must be a list of parameter sets")
	}
	sp := &space.Space{}
	index := map[string]int{}
	for _, s := range list {
		mm, ok := s.(map[string]any)
		if !ok {
			c.failf(m.node, "matrix.values must be a list of parameter sets (mappings)")
		}
		keys := make([]string, 0, len(mm))
		for k := range mm {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := mm[k]
			switch v.(type) {
			case string, float64, bool:
			default:
				c.failf(m.node, "matrix.values: %s must be a string, number or bool", k)
			}
			i, seen := index[k]
			if !seen {
				i = len(sp.Params)
				index[k] = i
				sp.Params = append(sp.Params, space.Param{Name: k, Kind: space.Choice})
				st.matrix[k] = true
			}
			dup := false
			for _, o := range sp.Params[i].Options {
				if space.EqualValues(o.Value, v) {
					dup = true
				}
			}
			if !dup {
				sp.Params[i].Options = append(sp.Params[i].Options, space.Option{Value: v})
			}
		}
	}
	st.sp = sp
	st.tuner = newBlock("tuner", "batch")
	st.tuner.comment("Polyaxon's mapping: the listed parameter sets, in order")
	st.tuner.set("params", list)
	st.exp.set("max_trials", len(list))
}

// pxComponent converts a v1.1 component: inputs and run.
func (c *conv) pxComponent(comp *obj, st *pxState) {
	if comp.has("inputs") {
		c.pxInputs(comp, "inputs", st)
	}
	if s, ok := comp.str("name"); ok && s != "" && st.name == stem(c.file) {
		st.name = s
	}
	if !comp.has("run") {
		c.failf(comp.node, "the component has no run section")
	}
	r := comp.sub("run")
	kind, _ := r.str("kind")
	switch kind {
	case "job", "":
		st.platform = newBlock("platform", "kubernetes", "default")
		c.pxContainer(r, st, st.platform, true)
		c.pxEnvironment(r, st)
	case "tfjob", "pytorchjob":
		st.platform = newBlock("platform", "kubeflow", "default")
		st.platform.set("operator", kind)
		roles := []string{"chief", "worker", "ps"}
		if kind == "pytorchjob" {
			roles = []string{"master", "worker"}
		}
		first := true
		for _, role := range roles {
			if !r.has(role) {
				continue
			}
			ro := r.sub(role)
			if role == "chief" {
				c.notConverted(st.platform, r.keyNode(role), ro.path, "trialform's TFJob has worker and ps replicas; worker 0 reports the results")
				ro.ignore(ro.keys...)
				continue
			}
			rb := st.platform.add(newBlock(role))
			if n, ok := ro.integer("replicas", 1); ok {
				rb.set("replicas", n)
			}
			c.pxContainer(ro, st, rb, first)
			if first {
				c.pxEnvironment(ro, st)
			}
			first = false
			ro.done(rb, map[string]string{"init": "trialform ships code_dir to the trial; put the code there", "restartPolicy": "replicas run with restartPolicy Never"})
		}
		r.done(st.platform, map[string]string{"cleanPodPolicy": "trialform sets it (Running)", "schedulingPolicy": "trialform sets no scheduling policy"})
	default:
		c.failf(r.keyNode("kind"), "run.kind %q: trialform converts job (kubernetes platform), tfjob and pytorchjob (kubeflow platform)", kind)
	}
	r.done(st.platform, map[string]string{
		"init":        "trialform ships code_dir to the trial; put the code there (git and artifacts init containers are not run)",
		"connections": "trialform has no connections; mount data with the platform's nfs block",
		"volumes":     "mount data with the platform's nfs block",
		"sidecars":    "trialform runs one container per trial pod",
	})
	comp.done(st.exp, pxReasons)
}

// pxContainer converts a v1.1 container into the platform (image,
// resources) and the trial (command, args, env). For a kubeflow role
// (first = false after the first role) only differing images go to rb.
func (c *conv) pxContainer(r *obj, st *pxState, rb *block, first bool) {
	if !r.has("container") {
		c.failf(r.node, "%s has no container", orRoot(r.path))
	}
	ct := r.sub("container")
	if s, ok := ct.str("image"); ok {
		if first {
			st.platform.set("image", s)
		} else if s != attr(st.platform, "image") {
			rb.set("image", s)
		}
	}
	argv := append(ct.strList("command"), ct.strList("args")...)
	if first && len(argv) > 0 {
		items := make([]string, len(argv))
		for i, a := range argv {
			items[i] = template(c.pxTemplate(a, st, ct.node))
		}
		st.trial.raw("args", "["+strings.Join(items, ", ")+"]")
	}
	ct.skip(rb, "workingDir", "trialform runs the trial in a copy of code_dir (this directory by default); put the code there")
	ct.ignore("name")
	env := map[string]string{}
	for i, n := range ct.list("env") {
		eo := c.obj(n, fmt.Sprintf("%s.env[%d]", ct.path, i))
		k, _ := eo.str("name")
		if v, ok := eo.str("value"); ok {
			env[k] = v
		}
		eo.done(st.trial, nil)
	}
	if len(env) > 0 && first {
		st.trial.set("env", env)
	}
	if ct.has("resources") {
		rs := ct.sub("resources")
		limits := c.goValue(orEmpty(rs.take("limits")))
		requests := c.goValue(orEmpty(rs.take("requests")))
		target := rb
		if rb == st.platform {
			target = st.platform.child("resources")
		}
		for _, k := range []string{"cpu", "memory", "nvidia.com/gpu"} {
			v := pick(limits, requests, k)
			if v == nil {
				continue
			}
			name := map[string]string{"cpu": "cpu", "memory": "memory", "nvidia.com/gpu": "gpu"}[k]
			if name == "memory" {
				v = fmt.Sprint(v)
			}
			if s, ok := v.(string); ok && name != "memory" {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					v = f
				}
			}
			target.set(name, v)
		}
		rs.done(target, nil)
	}
	ct.done(rb, map[string]string{"imagePullPolicy": "the cluster's default pull policy applies", "volumeMounts": "mount data with the platform's nfs block"})
}

func (c *conv) pxEnvironment(r *obj, st *pxState) {
	if !r.has("environment") {
		return
	}
	env := r.sub("environment")
	p := st.platform
	if env.has("nodeSelector") {
		p.set("node_selector", stringMap(c.goValue(env.take("nodeSelector"))))
	}
	if env.has("tolerations") {
		p.set("tolerations", c.goValue(env.take("tolerations")))
	}
	if s, ok := env.str("serviceAccountName"); ok {
		p.set("service_account", s)
	}
	if l := env.strList("imagePullSecrets"); len(l) > 0 {
		p.set("image_pull_secrets", l)
	}
	env.done(p, map[string]string{"affinity": "trialform sets node_selector and tolerations only", "restartPolicy": "trialform runs trials with restartPolicy Never"})
}
