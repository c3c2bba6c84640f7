package convert

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/trialform/trialform/tuner/space"
	"go.yaml.in/yaml/v3"
)

// Katib converts a Katib v1beta1 Experiment.
func Katib(data []byte, opt Options) (*Result, error) {
	return run(opt, data, func(c *conv, root *yaml.Node) *hfile { return c.katib(root) })
}

// katibAlgorithms maps Katib's algorithmName to trialform tuners.
var katibAlgorithms = map[string]tunerMap{
	"random":               {"random", true, ""},
	"grid":                 {"grid", true, ""},
	"tpe":                  {"tpe", true, ""},
	"multivariate-tpe":     {"tpe", true, ""},
	"cmaes":                {"cmaes", true, ""},
	"hyperband":            {"hyperband", true, ""},
	"pbt":                  {"pbt", true, ""},
	"bayesianoptimization": {"auto", false, "auto is the nearest: " + autoWhat + "; tuner \"gp\" is a Gaussian process throughout"},
	"sobol":                {"random", false, "trialform has no Sobol sequence; random is the nearest"},
	"anneal":               {"anneal", true, ""},
}

// katibSettings maps algorithmSettings names, per trialform tuner.
var katibSettings = map[string]map[string]string{
	"random":    {"random_state": "seed"},
	"grid":      {},
	"tpe":       {"random_state": "seed", "n_startup_trials": "startup_trials", "n_ei_candidates": "candidates"},
	"cmaes":     {"random_state": "seed"},
	"hyperband": {"eta": "eta", "r_l": "max_budget"},
	"pbt":       {"n_population": "population_size", "truncation_threshold": "factor", "resample_probability": "resample_probability", "suggestion_trial_dir": "checkpoint_dir"},
	"auto":      {"random_state": "seed"},
	"anneal":    {"random_state": "seed"},
}

func (c *conv) katib(root *yaml.Node) *hfile {
	o := c.obj(root, "")
	if k, _ := o.str("kind"); k != "Experiment" {
		c.failf(o.keyNode("kind"), "kind %q: convert katib reads a Katib Experiment (kind: Experiment)", k)
	}
	if v, _ := o.str("apiVersion"); v != "kubeflow.org/v1beta1" {
		c.warn(o.keyNode("apiVersion"), "apiVersion", "%q: read as kubeflow.org/v1beta1", v)
	}
	f := &hfile{header: header("katib", c.file, "Katib v1beta1 Experiment")}
	md := o.sub("metadata")
	name := stem(c.file)
	if s, ok := md.str("name"); ok && s != "" {
		name = s
	}
	name = ident(name, "katib")
	exp := newBlock("experiment", name)
	namespace, _ := md.str("namespace")
	md.done(exp, map[string]string{"labels": "trialform labels its objects itself", "annotations": "trialform annotates its objects itself"})
	spec := o.sub("spec")

	// Objective.
	ob := newBlock("objective")
	obj := spec.sub("objective")
	metric, _ := obj.str("objectiveMetricName")
	if metric == "" {
		c.failf(spec.keyNode("objective"), "spec.objective.objectiveMetricName is required")
	}
	ob.set("metric", metric)
	typ, _ := obj.str("type")
	switch typ {
	case "maximize", "minimize":
		ob.set("goal", typ)
	default:
		c.failf(obj.keyNode("type"), "spec.objective.type must be maximize or minimize, not %q", typ)
	}
	obj.skip(ob, "goal", "trialform has no target value that ends the experiment; it runs max_trials")
	// Katib's additional metrics are recorded, not optimised: they stay
	// extra metrics here too, never extra objective blocks (which would
	// change the search from one objective to a Pareto front).
	obj.skip(ob, "additionalMetricNames", "trialform records every metric a trial reports; only the objective is tuned, these stay extra metrics (an objective block for one would make it a second objective)")
	c.katibStrategy(obj, ob, metric, typ)
	obj.done(ob, nil)

	// Algorithm.
	alg := spec.sub("algorithm")
	algName, _ := alg.str("algorithmName")
	tm, ok := katibAlgorithms[algName]
	switch {
	case algName == "enas" || algName == "darts":
		c.failf(alg.keyNode("algorithmName"), "algorithm %q is neural architecture search; trialform tunes hyperparameters only", algName)
	case !ok:
		c.failf(alg.keyNode("algorithmName"), "algorithm %q: trialform maps random, grid, tpe, multivariate-tpe, cmaes, hyperband, pbt, bayesianoptimization, sobol and anneal", algName)
	}
	tb := newBlock("tuner", tm.name)
	if tm.exact {
		tb.comment(fmt.Sprintf("Katib algorithm %q: the same algorithm", algName))
	} else {
		c.notConverted(tb, alg.keyNode("algorithmName"), "spec.algorithm.algorithmName", "%s: %s", algName, tm.note)
	}
	if tm.name == "pbt" {
		c.warn(alg.node, "spec.algorithm.algorithmName", "pbt: a trial gets its checkpoint directories as the params load_checkpoint_dir and save_checkpoint_dir (NNI's names); change the trial command to use ${param.load_checkpoint_dir} and ${param.save_checkpoint_dir}")
		tb.comment("trials get the params load_checkpoint_dir and save_checkpoint_dir: use them in the trial command")
	}
	switch algName {
	case "multivariate-tpe":
		tb.set("multivariate", true)
	case "tpe":
		tb.set("multivariate", false) // Optuna's TPESampler models each parameter on its own
	}
	resource := ""
	for i, n := range alg.list("algorithmSettings") {
		s := c.obj(n, fmt.Sprintf("spec.algorithm.algorithmSettings[%d]", i))
		k, _ := s.str("name")
		v, _ := s.scalar("value")
		s.done(tb, nil)
		if v == nil {
			continue
		}
		if tm.name == "hyperband" && k == "resource_name" {
			resource = v.Value
			continue
		}
		to, mapped := katibSettings[tm.name][k]
		if mapped && settingOK(tm.name, to) {
			tb.set(to, settingValue(v.Value))
			continue
		}
		field := fmt.Sprintf("spec.algorithm.algorithmSettings[%s]", k)
		switch k {
		case "restart_strategy":
			c.notConverted(tb, n, field, "trialform's cmaes always restarts with IPOP")
		case "sigma":
			c.notConverted(tb, n, field, "trialform's sigma0 is a fraction of each parameter's range, not a standard deviation; default 0.25 kept")
		default:
			c.notConverted(tb, n, field, "the %s tuner has no such setting", tm.name)
		}
	}
	alg.done(tb, nil)

	// Search space.
	sp := &space.Space{}
	refs := map[string]string{} // param name -> what ${param.X} it becomes
	for i, n := range spec.list("parameters") {
		p := c.obj(n, fmt.Sprintf("spec.parameters[%d]", i))
		pname, _ := p.str("name")
		if pname == "" {
			c.failf(n, "%s needs a name", p.path)
		}
		if pname == resource {
			refs[pname] = "TRIAL_BUDGET"
			p.ignore(p.keys...)
			continue
		}
		refs[pname] = pname
		sp.Params = append(sp.Params, c.katibParam(p, pname, algName, tb))
	}
	if len(sp.Params) == 0 {
		c.failf(spec.keyNode("parameters"), "spec.parameters is empty; trialform needs at least one parameter to tune")
	}
	if tm.name == "hyperband" {
		if resource == "" {
			c.failf(alg.node, "hyperband needs the algorithm setting resource_name (the parameter that holds a trial's budget)")
		}
		tb.comment(fmt.Sprintf("the budget parameter %q is trialform's TRIAL_BUDGET; its value is given by the tuner", resource))
		if !tb.has("max_budget") {
			tb.set("max_budget", 81)
			c.warn(alg.node, "spec.algorithm.algorithmSettings[r_l]", "not set: max_budget = 81 written, adjust it")
		}
	}

	// Budget.
	if n, ok := spec.integer("maxTrialCount", 1); ok {
		exp.set("max_trials", n)
	} else {
		exp.set("max_trials", 100)
		exp.comment("Katib's Experiment set no maxTrialCount; trialform needs a budget: adjust max_trials")
		c.warn(spec.node, "spec.maxTrialCount", "not set; max_trials = 100 written, adjust it")
	}
	if n, ok := spec.integer("parallelTrialCount", 1); ok {
		exp.set("concurrency", n)
	} else {
		// Katib's webhook defaults it (DefaultTrialParallelCount);
		// trialform's default concurrency is 1.
		exp.comment("Katib's default parallelTrialCount: 3 trials at a time")
		exp.set("concurrency", 3)
	}
	if n, ok := spec.integer("maxFailedTrialCount", 0); ok {
		// Katib (v0.14 on, status_util.go) fails the Experiment once at
		// least one trial failed and failed >= maxFailedTrialCount, so 0
		// ends it at the first failure; trialform's 0 is no limit.
		if n == 0 {
			exp.comment("Katib's maxFailedTrialCount: 0 fails the experiment at the first failed trial; trialform's 0 would be no limit")
			n = 1
		}
		exp.set("max_failed_trials", n)
	}
	spec.skip(exp, "resumePolicy", "trialform always resumes: state and platform are re-read on every plan")

	// Early stopping.
	var ab *block
	if spec.has("earlyStopping") {
		es := spec.sub("earlyStopping")
		an, _ := es.str("algorithmName")
		if an != "medianstop" {
			c.notConverted(exp, es.keyNode("algorithmName"), "spec.earlyStopping.algorithmName", "trialform has no %q early stopping; it has medianstop and curvefitting", an)
			es.ignore(es.keys...)
		} else {
			ab = newBlock("assessor", "medianstop")
			ab.comment("Katib's medianstop: the same rule")
			for i, n := range es.list("algorithmSettings") {
				s := c.obj(n, fmt.Sprintf("spec.earlyStopping.algorithmSettings[%d]", i))
				k, _ := s.str("name")
				v, _ := s.scalar("value")
				s.done(ab, nil)
				if v == nil {
					continue
				}
				switch k {
				case "min_trials_required":
					ab.set("min_trials", settingValue(v.Value))
				case "start_step":
					ab.set("start_step", settingValue(v.Value))
				default:
					c.notConverted(ab, n, fmt.Sprintf("spec.earlyStopping.algorithmSettings[%s]", k), "medianstop has no such setting")
				}
			}
			es.done(ab, nil)
			// Katib's medianstop service defaults (medianstop/service.py);
			// trialform's are 1 and 1.
			for _, d := range []struct {
				attr, katib string
				v           int
			}{{"min_trials", "min_trials_required", 3}, {"start_step", "start_step", 4}} {
				if !ab.has(d.attr) {
					ab.comment(fmt.Sprintf("Katib's default %s: %d", d.katib, d.v))
					ab.set(d.attr, d.v)
				}
			}
		}
	}

	// Trial template and platform.
	trial := newBlock("trial")
	plat := c.katibTrial(spec.sub("trialTemplate"), trial, refs, namespace)

	// Metrics collector.
	mc := spec.sub("metricsCollectorSpec")
	kind := "StdOut"
	if mc.has("collector") {
		col := mc.sub("collector")
		if s, ok := col.str("kind"); ok {
			kind = s
		}
		col.done(trial, nil)
	}
	trial.set("metric_regex", metricRegex)
	if kind != "StdOut" {
		c.notConverted(trial, mc.keyNode("collector"), "spec.metricsCollectorSpec.collector.kind", "%s: trialform reads metrics from the trial's output; print lines like \"%s=0.93\" (metric_regex), or report them as NNI does", kind, metric)
	}
	mc.skip(trial, "source", "trialform's metric_regex reads name=value lines; adapt metric_regex to your format")
	mc.done(trial, nil)
	spec.done(exp, nil)
	o.done(exp, nil)

	for _, v := range c.vars.blocks {
		f.add(v)
	}
	f.add(plat)
	sb := f.add(newBlock("search_space", name))
	spaceParams(sb, sp)
	c.noteParams(sb)
	e := f.add(newBlock("experiment", name))
	e.raw("platform", "platform."+plat.labels[0]+"."+plat.labels[1])
	e.raw("search_space", "search_space."+name)
	c.fitGrid(exp, tb, sp, spec.node)
	e.items = append(e.items, exp.items...)
	e.add(ob)
	e.add(tb)
	if ab != nil {
		e.add(ab)
	}
	e.add(trial)
	return f
}

// settingValue reads an algorithm setting's string as a number or bool
// where it is one.
func settingValue(s string) any {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	if b, err := strconv.ParseBool(s); err == nil {
		return b
	}
	return s
}

// katibParam converts one parameter's feasibleSpace.
func (c *conv) katibParam(p *obj, name, alg string, tb *block) space.Param {
	grid := alg == "grid"
	typ, _ := p.str("parameterType")
	fs := p.sub("feasibleSpace")
	p.done(tb, nil)
	out := space.Param{Name: name}
	dist, _ := fs.str("distribution")
	switch typ {
	case "categorical", "discrete":
		out.Kind = space.Choice
		for _, v := range fs.strList("list") {
			var val any = v
			if typ == "discrete" {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					val = f
				}
			}
			out.Options = append(out.Options, space.Option{Value: val})
		}
		if len(out.Options) == 0 {
			c.failf(fs.node, "%s.feasibleSpace.list is empty", p.path)
		}
		fs.skip(tb, "distribution", "a choice is uniform in trialform")
		fs.done(tb, nil)
		return out
	case "int", "double":
	default:
		c.failf(p.keyNode("parameterType"), "%s.parameterType must be int, double, categorical or discrete, not %q", p.path, typ)
	}
	lo, ok1 := fs.num("min")
	hi, ok2 := fs.num("max")
	if !ok1 || !ok2 {
		c.failf(fs.node, "%s.feasibleSpace needs min and max", p.path)
	}
	step, hasStep := fs.num("step")
	if typ == "int" && !hasStep {
		step, hasStep = 1, true
	}
	fs.done(tb, nil)
	if hasStep && step <= 0 {
		c.failf(fs.node, "%s.feasibleSpace.step must be > 0", p.path)
	}
	if hi < lo {
		c.failf(fs.node, "%s.feasibleSpace: max < min", p.path)
	}
	field := p.path + ".feasibleSpace"
	switch dist {
	case "", "uniform":
		// Katib's points are min, min+step, ... <= max (Optuna's
		// IntDistribution and FloatDistribution with a step, goptuna
		// alike). NNI's quniform, round(x/step)*step clipped to [min,
		// max], gives the same points only when min and max are whole
		// multiples of step; otherwise the exact list is written.
		offGrid := hasStep && !(onGrid(lo, step) && onGrid(hi, step))
		n := 0
		if hasStep {
			n = int(math.Floor((hi-lo)/step+1e-9)) + 1
		}
		switch {
		case hasStep && (grid || offGrid) && n <= maxSteppedList && alg != "cmaes":
			out.Kind = space.Choice
			for i := 0; i < n; i++ {
				out.Options = append(out.Options, space.Option{Value: round12(lo + float64(i)*step)})
			}
			if offGrid && !grid && (alg == "random" || alg == "tpe") {
				// Katib runs random and tpe with hyperopt, whose
				// quniform is round(U(min, max)/step)*step, not clipped.
				note := fmt.Sprintf("Katib's %s (hyperopt's quniform, round(U(min, max)/step)*step) would draw %s instead: the list is Katib's documented grid, as its Optuna-based algorithms propose it",
					alg, hyperoptPoints(lo, hi, step))
				c.noteParam(name, note)
				c.warn(fs.node, field, "%s", note)
			}
		case hasStep && (grid || offGrid):
			// Too many points to list, or cmaes (a choice is no number
			// to it): quniform is the nearest.
			why := fmt.Sprintf("its %d points are too many to list", n)
			if alg == "cmaes" {
				why = "cmaes models numbers only, not a choice of them"
			}
			out.Kind, out.Args = space.Quniform, []float64{lo, hi, step}
			note := fmt.Sprintf("approximately converted: Katib proposes %v, %v, ... <= %v; quniform [%v, %v, %v] (%s) gives multiples of %v clipped to [%v, %v] instead",
				lo, round12(lo+step), hi, lo, hi, step, why, step, lo, hi)
			c.warn(fs.node, field, "%s", note)
			c.noteParam(name, note)
		case typ == "int" && step == 1:
			out.Kind, out.Args = space.Randint, []float64{lo, hi + 1}
		case hasStep:
			out.Kind, out.Args = space.Quniform, []float64{lo, hi, step}
		default:
			out.Kind, out.Args = space.Uniform, []float64{lo, hi}
		}
	case "logUniform":
		if lo <= 0 {
			c.failf(fs.node, "%s: logUniform needs min > 0", field)
		}
		if hasStep {
			out.Kind, out.Args = space.Qloguniform, []float64{lo, hi, step}
		} else {
			out.Kind, out.Args = space.Loguniform, []float64{lo, hi}
		}
	case "normal", "logNormal":
		a, b := lo, hi
		if dist == "logNormal" {
			if lo <= 0 {
				c.failf(fs.node, "%s: logNormal needs min > 0", field)
			}
			a, b = math.Log(lo), math.Log(hi)
		}
		mu, sigma := round12((a+b)/2), round12((b-a)/6)
		if sigma <= 0 {
			sigma = 1
		}
		kind := map[string]space.Kind{"normal": space.Normal, "logNormal": space.Lognormal}[dist]
		out.Kind, out.Args = kind, []float64{mu, sigma}
		if hasStep {
			out.Kind = map[string]space.Kind{"normal": space.Qnormal, "logNormal": space.Qlognormal}[dist]
			out.Args = append(out.Args, step)
		}
		c.warn(fs.node, field, "approximately converted: %s over [min, max] became mu = %v, sigma = %v (the range is ±3 sigma); unlike Katib, values are not clipped to [min, max]", dist, mu, sigma)
	default:
		c.failf(fs.keyNode("distribution"), "%s.distribution %q: expected uniform, logUniform, normal or logNormal", field, dist)
	}
	return out
}

// maxSteppedList is the most points a stepped Katib range is written
// out as.
const maxSteppedList = 1000

// hyperoptPoints lists the values hyperopt's quniform(lo, hi, q) can
// give: round(x/q)*q for x in [lo, hi].
func hyperoptPoints(lo, hi, q float64) string {
	a, b := math.RoundToEven(lo/q), math.RoundToEven(hi/q)
	var pts []string
	for k := a; k <= b; k++ {
		if len(pts) == 6 && k < b {
			pts = append(pts, "...")
			k = b
		}
		pts = append(pts, fmtNum(round12(k*q)))
	}
	return strings.Join(pts, ", ")
}

// onGrid says whether lo is a whole multiple of step (then NNI's
// quniform gives Katib's points).
func onGrid(lo, step float64) bool {
	r := lo / step
	return math.Abs(r-math.Round(r)) < 1e-9
}

func round12(f float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 12, 64), 64)
	return r
}

// katibTrial converts trialTemplate: a batch Job becomes the kubernetes
// platform, a TFJob or PyTorchJob the kubeflow platform.
func (c *conv) katibTrial(tt *obj, trial *block, refs map[string]string, namespace string) *block {
	primary, _ := tt.str("primaryContainerName")
	params := map[string]string{} // trialParameters name -> param name
	for i, n := range tt.list("trialParameters") {
		p := c.obj(n, fmt.Sprintf("spec.trialTemplate.trialParameters[%d]", i))
		pn, _ := p.str("name")
		ref, _ := p.str("reference")
		p.ignore("description")
		p.done(trial, nil)
		if to, ok := refs[ref]; ok {
			params[pn] = to
		} else {
			c.notConverted(trial, n, p.path, "reference %q is not a parameter (Katib's metadata references have no trialform equivalent); ${trialParameters.%s} stays as text", ref, pn)
		}
	}
	tt.skip(trial, "retain", "trialform keeps ended trials' objects until destroy")
	tt.skip(trial, "successCondition", "trialform reads the Job's or operator's own conditions")
	tt.skip(trial, "failureCondition", "trialform reads the Job's or operator's own conditions")
	if tt.has("configMap") {
		c.failf(tt.keyNode("configMap"), "spec.trialTemplate.configMap: convert reads one file; put the trial template's trialSpec into the Experiment")
	}
	if !tt.has("trialSpec") {
		c.failf(tt.node, "spec.trialTemplate.trialSpec is missing")
	}
	ts := tt.sub("trialSpec")
	kind, _ := ts.str("kind")
	api, _ := ts.str("apiVersion")
	ts.ignore("metadata")
	var p *block
	switch {
	case kind == "Job" && strings.HasPrefix(api, "batch/"):
		p = newBlock("platform", "kubernetes", "default")
		if namespace != "" {
			p.set("namespace", namespace)
		}
		js := ts.sub("spec")
		tmpl := js.sub("template")
		tmpl.ignore("metadata")
		c.katibPod(tmpl.sub("spec"), p, trial, nil, primary, params, true)
		tmpl.done(p, nil)
		js.done(p, map[string]string{"backoffLimit": "trialform decides about retries (resume)", "activeDeadlineSeconds": "use trial.max_duration"})
	case kind == "TFJob" || kind == "PyTorchJob":
		p = newBlock("platform", "kubeflow", "default")
		if namespace != "" {
			p.set("namespace", namespace)
		}
		js := ts.sub("spec")
		key, op, order := "tfReplicaSpecs", "tfjob", []string{"Chief", "Master", "Worker", "PS"}
		if kind == "PyTorchJob" {
			key, op, order = "pytorchReplicaSpecs", "pytorchjob", []string{"Master", "Worker"}
		}
		p.set("operator", op)
		rs := js.sub(key)
		image := ""
		for _, role := range order {
			if !rs.has(role) {
				rs.ignore(role)
				continue
			}
			r := rs.sub(role)
			lower := strings.ToLower(role)
			if role == "Chief" || (role == "Master" && kind == "TFJob") {
				c.notConverted(p, rs.keyNode(role), r.path, "trialform's TFJob has worker and ps replicas; worker 0 reports the results")
				r.ignore(r.keys...)
				continue
			}
			rb := p.add(newBlock(lower))
			if n, ok := r.integer("replicas", 1); ok {
				rb.set("replicas", n)
			}
			r.skip(rb, "restartPolicy", "replicas run with restartPolicy Never; trialform decides about resumes")
			tmpl := r.sub("template")
			tmpl.ignore("metadata")
			c.katibPod(tmpl.sub("spec"), p, trial, rb, primary, params, image == "")
			if img := attr(rb, "image"); img != "" && image == "" {
				image = img
			}
			tmpl.done(rb, nil)
			r.done(rb, nil)
		}
		rs.done(p, nil)
		js.done(p, map[string]string{"runPolicy": "trialform sets the run policy itself (no retries, cleanPodPolicy Running)"})
	default:
		c.failf(ts.node, "trialSpec %s %s: trialform converts a batch/v1 Job (kubernetes platform) or a kubeflow.org TFJob or PyTorchJob (kubeflow platform)", api, kind)
	}
	ts.done(p, nil)
	tt.done(trial, nil)
	if !trial.has("args") && !trial.has("command") {
		c.failf(tt.node, "the trial container has no command or args; trialform needs the command that runs a trial")
	}
	return p
}

// attr returns a string attribute set on b ("" when none).
func attr(b *block, name string) string {
	for _, it := range b.items {
		if it.name == name && it.val != nil && it.val.Type().FriendlyName() == "string" {
			return it.val.AsString()
		}
	}
	return ""
}

// katibPod converts a pod spec: the primary container's image, command,
// env and resources; for a kubeflow role (role != nil) the settings go
// to the role block and only the first role gives the trial command.
func (c *conv) katibPod(ps *obj, p, trial, role *block, primary string, params map[string]string, first bool) {
	target := p
	if role != nil {
		target = role
	}
	containers := ps.list("containers")
	var ctr *obj
	for i, n := range containers {
		co := c.obj(n, fmt.Sprintf("%s.containers[%d]", ps.path, i))
		cn, _ := co.str("name")
		if ctr == nil && (cn == primary || primary == "" || len(containers) == 1 || (role != nil && i == 0)) {
			ctr = co
			continue
		}
		c.notConverted(target, n, co.path, "trialform runs one container per trial pod (%q is not the primary container)", cn)
		co.ignore(co.keys...)
	}
	if ctr == nil {
		c.failf(ps.node, "%s has no container named %q (primaryContainerName)", ps.path, primary)
	}
	if s, ok := ctr.str("image"); ok {
		if role == nil || first {
			p.set("image", s)
		} else if s != attr(p, "image") {
			role.set("image", s)
		}
	}
	argv := append(ctr.strList("command"), ctr.strList("args")...)
	if len(argv) > 0 {
		items := make([]string, len(argv))
		for i, a := range argv {
			items[i] = template(c.katibTemplate(a, params))
		}
		expr := "[" + strings.Join(items, ", ") + "]"
		if !trial.has("args") {
			trial.raw("args", expr)
		} else if role != nil {
			for _, it := range trial.items {
				if it.name == "args" && it.raw != expr {
					c.notConverted(role, ctr.node, ctr.path+".command", "this role runs another command than the trial's; set command = \"...\" in this block (a shell line; parameters are not substituted there)")
				}
			}
		}
	}
	if s, ok := ctr.str("workingDir"); ok && role == nil {
		p.set("code_dir", s)
	}
	env := map[string]string{}
	for i, n := range ctr.list("env") {
		eo := c.obj(n, fmt.Sprintf("%s.env[%d]", ctr.path, i))
		k, _ := eo.str("name")
		if v, ok := eo.str("value"); ok {
			env[k] = v
		}
		eo.skip(trial, "valueFrom", "trialform sets env values only; a value from a secret or field is not read")
		eo.done(trial, nil)
	}
	if len(env) > 0 {
		trial.set("env", env)
	}
	if ctr.has("resources") {
		rs := ctr.sub("resources")
		limits := c.goValue(orEmpty(rs.take("limits")))
		requests := c.goValue(orEmpty(rs.take("requests")))
		rb := target
		if role == nil {
			rb = p.child("resources")
		}
		for _, k := range []string{"cpu", "memory", "nvidia.com/gpu"} {
			v := pick(limits, requests, k)
			if v == nil {
				continue
			}
			name := map[string]string{"cpu": "cpu", "memory": "memory", "nvidia.com/gpu": "gpu"}[k]
			if name == "gpu" {
				if f, err := strconv.ParseFloat(fmt.Sprint(v), 64); err == nil {
					v = f
				}
			}
			if name == "memory" {
				v = fmt.Sprint(v)
			}
			if s, ok := v.(string); ok && name == "cpu" {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					v = f
				}
			}
			rb.set(name, v)
		}
		if lm, ok := limits.(map[string]any); ok {
			if rm, ok := requests.(map[string]any); ok {
				for k, v := range rm {
					if lv, ok := lm[k]; ok && fmt.Sprint(lv) != fmt.Sprint(v) {
						c.warn(rs.node, rs.path+".requests."+k, "differs from the limit; trialform sets requests = limits (%v)", lv)
					}
				}
			}
		}
		rs.done(rb, nil)
	}
	ctr.ignore("name")
	ctr.done(target, map[string]string{"volumeMounts": "mount data with the platform's nfs block", "imagePullPolicy": "the cluster's default pull policy applies"})
	if role == nil || first {
		if s, ok := ps.str("serviceAccountName"); ok {
			p.set("service_account", s)
		}
		if ps.has("nodeSelector") {
			p.set("node_selector", c.goValue(ps.take("nodeSelector")))
		}
		if ps.has("tolerations") {
			p.set("tolerations", c.goValue(ps.take("tolerations")))
		}
		var secrets []string
		for _, n := range ps.list("imagePullSecrets") {
			so := c.obj(n, ps.path+".imagePullSecrets")
			if s, ok := so.str("name"); ok {
				secrets = append(secrets, s)
			}
			so.done(p, nil)
		}
		if secrets != nil {
			p.set("image_pull_secrets", secrets)
		}
	}
	ps.skip(target, "restartPolicy", "trialform runs trials with restartPolicy Never and decides about resumes itself")
	ps.done(target, map[string]string{"volumes": "mount data with the platform's nfs block"})
}

func orEmpty(n *yaml.Node) *yaml.Node {
	if n == nil {
		return &yaml.Node{Kind: yaml.MappingNode}
	}
	return n
}

func pick(a, b any, k string) any {
	if m, ok := a.(map[string]any); ok {
		if v, ok := m[k]; ok {
			return v
		}
	}
	if m, ok := b.(map[string]any); ok {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

// katibTemplate splits a string with ${trialParameters.x} into template
// parts.
func (c *conv) katibTemplate(s string, params map[string]string) []tmplPart {
	var parts []tmplPart
	last := 0
	for _, m := range katibParamRef.FindAllStringSubmatchIndex(s, -1) {
		name := s[m[2]:m[3]]
		to, ok := params[name]
		if !ok {
			continue
		}
		if m[0] > last {
			parts = append(parts, tmplPart{lit: s[last:m[0]]})
		}
		parts = append(parts, tmplPart{expr: "param." + to})
		last = m[1]
	}
	if last < len(s) || len(parts) == 0 {
		parts = append(parts, tmplPart{lit: s[last:]})
	}
	return parts
}

// katibStrategy writes the objective's strategy: the metricStrategies
// entry of the objective metric, else Katib's default for the objective
// type (min when minimizing, max when maximizing: the best value any
// report of the trial gave, not its last).
func (c *conv) katibStrategy(obj *obj, ob *block, metric, typ string) {
	strategy := map[string]string{"minimize": "min", "maximize": "max"}[typ]
	explicit := false
	field := obj.field("metricStrategies")
	for i, it := range obj.list("metricStrategies") {
		mo := c.obj(it, fmt.Sprintf("%s[%d]", field, i))
		name, _ := mo.str("name")
		value, _ := mo.str("value")
		mo.done(ob, nil)
		if name != metric {
			c.notConverted(ob, it, fmt.Sprintf("%s[%d]", field, i),
				"strategy %q of %q: trialform takes a strategy for the objective only; every metric a trial reports is recorded as it came", value, name)
			continue
		}
		switch value {
		case "min", "max", "latest":
			strategy, explicit = value, true
		default:
			c.failf(mo.keyNode("value"), "%s[%d].value must be min, max or latest, not %q", field, i, value)
		}
	}
	if strategy == "" {
		return
	}
	if !explicit {
		word := map[string]string{"min": "least", "max": "greatest"}[strategy]
		ob.comment(fmt.Sprintf("Katib's default without metricStrategies: the %s value the trial reported", word))
	}
	ob.set("strategy", strategy)
}
