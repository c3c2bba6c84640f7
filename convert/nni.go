package convert

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/trialform/trialform/tuner/space"
	"go.yaml.in/yaml/v3"
)

// NNI converts an NNI experiment config (config.yml), in the v1 schema
// (trainingServicePlatform, trial, ...Config) or the v2 schema
// (trialCommand, trainingService).
func NNI(data []byte, opt Options) (*Result, error) {
	return run(opt, data, func(c *conv, root *yaml.Node) *hfile {
		c.canon = true
		return c.nni(root)
	})
}

// reasons for NNI fields trialform has no place for.
var nniReasons = map[string]string{
	"authorName":                 "trialform does not record an author",
	"nniManagerIp":               "trials never connect back to trialform; it reads their results itself",
	"logDir":                     "trialform keeps logs in .trialform/trials/ beside the configuration",
	"logLevel":                   "trialform has no log level",
	"logCollection":              "trialform reads trial logs from the platform itself",
	"debug":                      "trialform has no debug mode",
	"versionCheck":               "trialform has no version check",
	"multiThread":                "not needed: the tuner runs inside plan",
	"multiPhase":                 "trialform runs one parameter set per trial",
	"experimentWorkingDirectory": "trialform keeps its state in .trialform/ beside the configuration",
	"tunerGpuIndices":            "tuners run on the CPU inside plan",
	"experimentType":             "trialform does hyperparameter tuning only",
	"sharedStorage":              "trialform has no shared storage setting; use the platform's nfs block",
	"useActiveGpu":               "trialform schedules on the listed GPUs whether or not a display uses them",
	"reuseMode":                  "trialform starts one process, Job or object per trial",
	"includeIntermediateResults": "the tuner uses final results; assessors read intermediate ones",
}

func (c *conv) nni(root *yaml.Node) *hfile {
	o := c.obj(root, "")
	v1 := o.has("trainingServicePlatform") || o.has("trial") || o.has("searchSpacePath") || o.has("maxTrialNum") || o.has("maxExecDuration")
	f := &hfile{}
	schemaName := "NNI v2 schema"
	if v1 {
		schemaName = "NNI v1 schema"
	}
	f.header = header("nni", c.file, schemaName)
	vs := &vars{}

	name := stem(c.file)
	if s, ok := o.str("experimentName"); ok && s != "" {
		name = s
	}
	name = ident(name, "nni")
	exp := newBlock("experiment", name)
	trial := newBlock("trial")

	// Search space.
	var sp *space.Space // nil: nni_file
	spaceFile := ""
	var spaceNode *yaml.Node
	var rawSpace any // the JSON document, for BatchTuner
	for _, k := range []string{"searchSpaceFile", "searchSpacePath"} {
		if n, ok := o.scalar(k); ok {
			spaceFile, spaceNode = n.Value, n
		}
	}
	if n := o.take("searchSpace"); n != nil {
		spaceNode = n
		rawSpace = c.goValue(n)
		if !isBatchSpace(rawSpace) {
			sp = c.nniSpaceFromYAML(n, "searchSpace")
		}
	}
	spaceVar := ""
	if spaceFile != "" && isPlaceholder(spaceFile) {
		// "<the_generated_search_space_path>": NNI's examples that
		// generate the space (nnictl ss_gen) leave its path to fill in.
		k := k0(o, "searchSpaceFile", "searchSpacePath")
		spaceVar = c.declare("search_space_file", fmt.Sprintf("%s from %s, a placeholder there (%s): the NNI search space file's path; give it with -var or TRIALFORM_VAR_search_space_file", k, c.file, spaceFile))
		c.warn(spaceNode, k, "placeholder %s: written as nni_file = var.%s, a variable without a default; give the search space file's path with -var '%s=...' or TRIALFORM_VAR_%s", spaceFile, spaceVar, spaceVar, spaceVar)
		spaceFile = ""
	}
	if spaceFile != "" && c.opt.ReadFile != nil {
		if data, err := c.opt.ReadFile(spaceFile); err == nil {
			var doc any
			if json.Unmarshal(data, &doc) == nil {
				rawSpace = doc
			}
		}
	}
	if spaceFile != "" && c.opt.Inline && !isBatchSpace(rawSpace) {
		sp = c.readSpaceFile(spaceNode, "searchSpaceFile", spaceFile)
	}
	ua, _ := o.boolean("useAnnotation")
	if ua && spaceNode == nil {
		c.failf(o.keyNode("useAnnotation"), "useAnnotation: true: the search space is in NNI annotations (@nni.variable) in the trial code, which trialform does not read, and the config names no search space file: write it as search_space.json (NNI's `nnictl ss_gen` generates it from the annotations) and set searchSpaceFile, then make the trial code read its parameters with nni.get_next_parameter()")
	}
	if ua {
		c.notConverted(exp, o.keyNode("useAnnotation"), "useAnnotation", "trialform does not read NNI annotations in trial code: the code must read its parameters with nni.get_next_parameter() (annotated code runs with its default values)")
	}
	if spaceNode == nil {
		c.failf(root, "no search space: set searchSpaceFile (v2) or searchSpacePath (v1); trialform needs one")
	}

	// Budget.
	if n, ok := o.integer(o.pick("maxTrialNumber", "maxTrialNum"), 1); ok {
		exp.set("max_trials", n)
	} else {
		exp.set("max_trials", 100)
		exp.comment("NNI's config set no trial limit; trialform needs one: adjust max_trials")
		c.warn(root, "maxTrialNumber", "not set; NNI runs until maxExperimentDuration, trialform needs a budget: max_trials = 100 written, adjust it")
	}
	if n, ok := o.integer("trialConcurrency", 1); ok {
		exp.set("concurrency", n)
	}
	if k := o.pick("maxExperimentDuration", "maxExecDuration"); k != "" {
		if n, ok := o.scalar(k); ok {
			exp.set("max_duration", c.duration(n, k))
			// NNI stops proposing at the deadline and lets the running
			// trials finish; trialform's default tears them down.
			exp.set("on_max_duration", "finish")
		}
	}
	if n, ok := o.scalar("maxTrialDuration"); ok {
		trial.set("max_duration", c.duration(n, "maxTrialDuration"))
	}

	// Tuner and assessor.
	goal := ""
	tb, tgoal := c.nniTuner(o, exp, rawSpace, spaceFile != "" && sp == nil)
	if tgoal != "" {
		goal = tgoal
	}
	ab, agoal := c.nniAssessor(o, exp)
	if goal == "" {
		goal = agoal
	} else if agoal != "" && agoal != goal && ab != nil {
		// trialform's assessor judges the experiment's one objective.
		msg := fmt.Sprintf("%s differs from the tuner's optimize_mode: the tuner's %s is kept (trialform's assessor follows the objective's goal); NNI's assessor stopped the trials that did worst for %s", agoal, goal, agoal)
		c.warn(c.goalNode, "assessor.classArgs.optimize_mode", "%s", msg)
		ab.comment("assessor.classArgs.optimize_mode: " + msg)
	}
	if goal == "" {
		goal = "maximize"
	}
	batch := tb != nil && tb.labels[0] == "batch"
	if batch {
		sp = c.batchSpace(tb, rawSpace, spaceNode)
	}

	// Trial command (v2 at the top; v1 in trial).
	if n, ok := o.scalar("trialCommand"); ok {
		trial.raw("command", c.command(n, "trialCommand"))
	}
	if s, ok := o.str("trialCodeDirectory"); ok {
		trial.set("code_dir", c.rebase(s))
	}
	if n, ok := o.integer("trialGpuNumber", 0); ok {
		if n > 0 {
			trial.set("gpus", n)
		}
		c.gpuZero = n == 0
	}

	// Platforms.
	var plats []*block
	if v1 {
		plats = c.nniV1Platform(o, trial, vs)
	} else {
		plats = c.nniV2Platforms(o, trial, vs)
	}
	c.nniGPUMeaning(plats, trial)
	// A local platform with nothing but comments is the embedded default:
	// its comments go to the experiment.
	if len(plats) == 1 && plats[0].labels[0] == "local" && onlyComments(plats[0]) {
		for _, it := range plats[0].items {
			it.tail = true
			exp.items = append(exp.items, it)
		}
		plats = nil
	}
	if !trial.has("command") {
		c.failf(root, "no trial command: set trialCommand (v2) or trial.command (v1)")
	}
	// NNI's code directory defaults to the config file's directory; when
	// the output is written elsewhere, that directory must be named, as an
	// explicit "codeDir: ." is.
	if !trial.has("code_dir") && c.opt.BaseDir != "" && c.opt.BaseDir != "." {
		trial.comment("NNI's default code directory: the directory of " + path.Base(c.file))
		trial.set("code_dir", c.rebase("."))
	}

	// Write.
	for _, vb := range c.vars.blocks {
		f.add(vb)
	}
	for _, p := range plats {
		f.add(p)
	}
	keptFile := ""
	if sp != nil {
		if at, val, ok := mixedChoice(sp, nil); ok {
			what := fmt.Sprintf("param %q mixes a plain option (%s) with nested ones ({\"_name\": ...}); NNI gives the trial the plain value itself, which trialform's option blocks cannot write", strings.Join(at, "."), jsonText(val))
			if spaceFile == "" {
				c.failf(plainOption(spaceNode, at), "searchSpace: %s: save the search space as search_space.json and set searchSpaceFile: search_space.json (nni_file reads it as NNI does)", what)
			}
			c.warn(spaceNode, k0(o, "searchSpaceFile", "searchSpacePath"), "not written inline (-inline): %s; nni_file keeps it", what)
			sp = nil
			keptFile = "not written as param blocks (-inline): " + what
		}
	}
	sb := f.add(newBlock("search_space", name))
	if keptFile != "" {
		sb.comment(keptFile)
	}
	switch {
	case spaceVar != "":
		sb.raw("nni_file", "var."+spaceVar)
	case sp != nil:
		spaceParams(sb, sp)
	default:
		sb.set("nni_file", c.rebase(spaceFile))
	}
	e := f.add(newBlock("experiment", name))
	if len(plats) > 0 {
		p := plats[0]
		e.raw("platform", "platform."+p.labels[0]+"."+p.labels[1])
		if len(plats) > 1 {
			e.comment("NNI ran this experiment on several training services; trialform runs an experiment on one platform: the other platform blocks above are declared but unused")
			c.warn(root, "trainingService", "a list of %d training services: the experiment runs on the first, %s; the others are written but unused", len(plats), p.labels[0])
		}
	}
	e.raw("search_space", "search_space."+name)
	gridSpace := sp
	if gridSpace == nil && rawSpace != nil {
		if data, err := json.Marshal(rawSpace); err == nil {
			gridSpace, _ = space.ParseNNI(data)
		}
	}
	c.fitGrid(exp, tb, gridSpace, o.node)
	e.items = append(e.items, exp.items...)
	ob := e.add(newBlock("objective"))
	ob.set("metric", "default")
	ob.set("goal", goal)
	if tb != nil {
		e.add(tb)
	}
	if ab != nil {
		e.add(ab)
	}
	e.add(trial)
	o.done(e, nniReasons)
	return f
}

func onlyComments(b *block) bool {
	for _, it := range b.items {
		if it.comment == "" {
			return false
		}
	}
	return true
}

// isBatchSpace recognises BatchTuner's search space: one choice whose
// options are parameter sets ({"combine_params": {"_type": "choice",
// "_value": [{...}, ...]}}).
func isBatchSpace(doc any) bool {
	m, ok := doc.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	for _, v := range m {
		p, ok := v.(map[string]any)
		if !ok || p["_type"] != "choice" {
			return false
		}
		vals, ok := p["_value"].([]any)
		if !ok || len(vals) == 0 {
			return false
		}
		for _, x := range vals {
			o, ok := x.(map[string]any)
			if !ok {
				return false
			}
			if _, named := o["_name"]; named {
				return false
			}
		}
	}
	return true
}

// batchSpace turns BatchTuner's parameter sets into the batch tuner's
// params and a space of one choice per parameter.
func (c *conv) batchSpace(tb *block, doc any, n *yaml.Node) *space.Space {
	if !isBatchSpace(doc) {
		c.failf(n, "BatchTuner: the search space must be {\"combine_params\": {\"_type\": \"choice\", \"_value\": [{...}, ...]}} (read it next to the config so convert can turn it into the batch tuner's params)")
	}
	var sets []any
	for _, v := range doc.(map[string]any) {
		sets = v.(map[string]any)["_value"].([]any)
	}
	sp := &space.Space{}
	index := map[string]int{}
	for _, s := range sets {
		m := s.(map[string]any)
		for _, k := range sortedKeys(m) {
			val := m[k]
			switch val.(type) {
			case string, float64, bool:
			default:
				c.failf(n, "BatchTuner: parameter %q has a value that is not a string, number or bool", k)
			}
			i, ok := index[k]
			if !ok {
				i = len(sp.Params)
				index[k] = i
				sp.Params = append(sp.Params, space.Param{Name: k, Kind: space.Choice})
			}
			seen := false
			for _, o := range sp.Params[i].Options {
				if space.EqualValues(o.Value, val) {
					seen = true
				}
			}
			if !seen {
				sp.Params[i].Options = append(sp.Params[i].Options, space.Option{Value: val})
			}
		}
	}
	tb.set("params", sets)
	tb.comment("the batch tuner's search space is one choice per parameter, holding every value the sets use")
	return sp
}

// nniTuner converts tuner (or v1's advisor) to a tuner block; it returns
// the goal from optimize_mode.
func (c *conv) nniTuner(o *obj, exp *block, rawSpace any, spaceIsFile bool) (*block, string) {
	key := o.pick("tuner", "advisor")
	if key == "" {
		return nil, ""
	}
	if o.has("tuner") && o.has("advisor") {
		c.failf(o.keyNode("advisor"), "both tuner and advisor are set; NNI takes one")
	}
	t := o.sub(key)
	nameKey := t.pick("name", "builtinTunerName", "builtinAdvisorName")
	nniName, _ := t.str(nameKey)
	tm, ok := nniTuners[strings.ToLower(nniName)]
	b := newBlock("tuner", "auto")
	if nniName == "" {
		ok = false
		why := "trialform cannot run NNI's custom tuner classes; auto is used: " + autoWhat
		for _, k := range []string{"className", "classFileName", "codeDir", "codeDirectory", "classArgs"} {
			if t.has(k) && k != "classArgs" {
				t.skip(b, k, "%s", why)
			}
		}
	} else if !ok {
		c.notConverted(b, t.keyNode(nameKey), t.field(nameKey), "trialform has no %q tuner; auto is used: %s", nniName, autoWhat)
	} else {
		b.labels[0] = tm.name
		if !tm.exact {
			c.notConverted(b, t.keyNode(nameKey), t.field(nameKey), "%s: %s", nniName, tm.note)
		}
		if tm.name == "tpe" {
			b.set("multivariate", false) // NNI's TPE models each parameter on its own
		}
	}
	goal := c.nniClassArgs(t.sub("classArgs"), b, func(k string, n *yaml.Node) string {
		if k == "no_resampling" && b.labels[0] == "metis" && n.Kind == yaml.ScalarNode && (n.Value == "true" || n.Value == "false") {
			b.set("resample", n.Value == "false") // NNI's flag is the negation
			return ""
		}
		if k == "tpe_args" && b.labels[0] == "tpe" && n.Kind == yaml.MappingNode {
			c.nniTPEArgs(n, "tuner.classArgs.tpe_args", b)
			return ""
		}
		names := nniSettingNames[b.labels[0]]
		to, mapped := names[k]
		if mapped && settingOK(b.labels[0], to) && n.Kind == yaml.ScalarNode {
			b.set(to, c.goValue(n))
			return ""
		}
		why := fmt.Sprintf("the %s tuner has no such setting", b.labels[0])
		if k == "parallel_optimize" || k == "constant_liar_type" {
			why = "trialform's tuners always count running trials as pending (constant liar)"
		}
		if w, ok := nniSettingWhy[k]; ok {
			why = w
		}
		return why
	})
	// What trialform's tuners need that NNI defaults.
	switch b.labels[0] {
	case "hyperband":
		if !b.has("max_budget") {
			b.set("max_budget", 60)
			b.comment("NNI's default R")
		}
	case "bohb":
		if !b.has("max_budget") {
			b.set("max_budget", 3)
			b.comment("NNI's default max_budget")
		}
	}
	t.done(b, map[string]string{"gpuIndices": "tuners run on the CPU inside plan", "includeIntermediateResults": nniReasons["includeIntermediateResults"]})
	return b, goal
}

// nniTPEArgs converts NNI's TPE classArgs.tpe_args (hyperopt's names;
// Katib's n_startup_trials and n_ei_candidates map the same way).
func (c *conv) nniTPEArgs(n *yaml.Node, field string, b *block) {
	names := map[string]string{"n_startup_jobs": "startup_trials", "n_ei_candidates": "candidates", "prior_weight": "prior_weight"}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, deref(n.Content[i+1])
		if to, ok := names[k]; ok && v.Kind == yaml.ScalarNode && settingOK("tpe", to) {
			b.set(to, c.goValue(v))
			continue
		}
		why := "trialform's tpe has no such setting (it has startup_trials, candidates, prior_weight)"
		if k == "constant_liar_type" {
			why = "trialform's tuners always count running trials as pending (constant liar)"
		}
		c.notConverted(b, n.Content[i], field+"."+k, "%s", why)
	}
}

// nniAssessors maps NNI's builtin assessors.
var nniAssessors = map[string]string{"medianstop": "medianstop", "curvefitting": "curvefitting"}

func (c *conv) nniAssessor(o *obj, exp *block) (*block, string) {
	if !o.has("assessor") {
		o.ignore("assessor")
		return nil, ""
	}
	a := o.sub("assessor")
	nameKey := a.pick("name", "builtinAssessorName")
	nniName, _ := a.str(nameKey)
	name, ok := nniAssessors[strings.ToLower(nniName)]
	if !ok {
		c.notConverted(exp, a.keyNode(nameKey), "assessor", "trialform has no %q assessor (it has medianstop and curvefitting)", nniName)
		a.ignore(a.keys...)
		return nil, ""
	}
	b := newBlock("assessor", name)
	settings := map[string]string{"start_step": "start_step", "epoch_num": "epoch_num", "threshold": "threshold", "gap": "gap"}
	goal := c.nniClassArgs(a.sub("classArgs"), b, func(k string, n *yaml.Node) string {
		if to, ok := settings[k]; ok && assessorSettingOK(name, to) {
			b.set(to, c.goValue(n))
			return ""
		}
		return fmt.Sprintf("the %s assessor has no such setting", name)
	})
	if name == "curvefitting" && !b.has("epoch_num") {
		c.failf(a.node, "assessor Curvefitting needs classArgs.epoch_num (the step count of a full trial)")
	}
	a.done(b, nil)
	return b, goal
}

// nniClassArgs converts a tuner's or assessor's classArgs into b:
// optimize_mode is returned as the goal, every other key goes to setting,
// which sets it on b and returns "" or returns why it is not converted.
func (c *conv) nniClassArgs(args *obj, b *block, setting func(k string, n *yaml.Node) string) string {
	goal := ""
	for _, k := range args.keys {
		n := args.take(k)
		if n == nil {
			continue
		}
		if k == "optimize_mode" {
			goal = c.goalFrom(n, args.field(k))
			c.goalNode = n
			continue
		}
		if why := setting(k, n); why != "" {
			c.notConverted(b, args.keyNode(k), args.field(k), "%s", why)
		}
	}
	return goal
}

// ---- platforms ----

// nniV1Platform converts trainingServicePlatform with trial and the
// matching ...Config section.
func (c *conv) nniV1Platform(o *obj, trial *block, vs *vars) []*block {
	kind, _ := o.str("trainingServicePlatform")
	if kind == "" {
		kind = "local"
	}
	t := o.sub("trial")
	if n, ok := t.scalar("command"); ok {
		trial.raw("command", c.command(n, t.field("command")))
	}
	var plats []*block
	switch kind {
	case "local":
		c.nniTrialResources(t, trial)
		if p := c.nniLocal(o.sub("localConfig")); p != nil {
			plats = append(plats, p)
		}
	case "remote":
		c.nniTrialResources(t, trial)
		p := newBlock("platform", "remote", "default")
		rc := o.sub("remoteConfig")
		rc.done(p, map[string]string{"reuse": nniReasons["reuseMode"]})
		c.nniMachines(p, o, "machineList", vs)
		plats = append(plats, p)
	case "kubeflow":
		p := newBlock("platform", "kubeflow", "default")
		kc := o.sub("kubeflowConfig")
		c.nniKubeflow(p, kc, t, trial, vs)
		plats = append(plats, p)
	case "frameworkcontroller":
		p := newBlock("platform", "frameworkcontroller", "default")
		fc := o.sub("frameworkcontrollerConfig")
		c.nniFramework(p, fc, t, trial, vs)
		plats = append(plats, p)
	case "adl":
		p := newBlock("platform", "adaptdl", "default")
		c.nniAdl(p, t, trial)
		plats = append(plats, p)
	case "pai", "openpai", "dlts", "aml":
		name, cfg := kind, kind+"Config"
		if kind == "pai" || kind == "openpai" {
			name, cfg = "openpai", "paiConfig"
		}
		p := newBlock("platform", name, "default")
		c.nniTrialResources(t, trial)
		co := o.sub(cfg)
		c.nniCloud(name, p, co, t)
		co.done(p, cloudReasons)
		plats = append(plats, p)
	case "hybrid":
		c.failf(o.keyNode("trainingServicePlatform"), "trainingServicePlatform: hybrid: trialform runs an experiment on one platform; convert the v2 form (trainingService: a list) or pick one platform")
	default:
		c.failf(o.keyNode("trainingServicePlatform"), "trainingServicePlatform %q is not one trialform knows (local, remote, kubeflow, frameworkcontroller, adl, pai, dlts, aml)", kind)
	}
	if s, ok := t.str("codeDir"); ok && !trial.has("code_dir") && kind != "adl" {
		trial.set("code_dir", c.rebase(s))
	}
	t.done(trial, nil)
	for _, k := range []string{"localConfig", "remoteConfig", "machineList", "kubeflowConfig", "frameworkcontrollerConfig", "paiConfig", "dltsConfig", "amlConfig"} {
		o.skip(trial, k, "belongs to another trainingServicePlatform than %q", kind)
	}
	return plats
}

// nniTrialResources takes v1 trial.codeDir and trial.gpuNum into the
// trial block.
func (c *conv) nniTrialResources(t *obj, trial *block) {
	if s, ok := t.str("codeDir"); ok {
		trial.set("code_dir", c.rebase(s))
	}
	if n, ok := t.integer("gpuNum", 0); ok {
		if n > 0 {
			trial.set("gpus", n)
		}
		c.gpuZero = n == 0
	}
}

// nniGPUMeaning keeps what NNI's local and remote training services do
// with the trial's GPU number: 0 hides every GPU from the trial (an empty
// CUDA_VISIBLE_DEVICES; unset leaves it alone), and a remote machine
// without gpuIndices gives trials GPUs out of all it has, where
// trialform's remote platform schedules only gpu_indices. (The local
// platform finds the machine's GPUs itself.) Elsewhere 0 is what no GPU
// resource means already.
func (c *conv) nniGPUMeaning(plats []*block, trial *block) {
	kind := "local"
	if len(plats) > 0 {
		kind = plats[0].labels[0]
	}
	if kind != "local" && kind != "remote" {
		return
	}
	if c.gpuZero {
		trial.comment("NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES")
		trial.set("env", map[string]any{"CUDA_VISIBLE_DEVICES": ""})
	}
	if kind != "remote" || !trial.has("gpus") {
		return
	}
	i := 0
	for _, it := range plats[0].items {
		if it.blk == nil || it.blk.typ != "machine" {
			continue
		}
		if !it.blk.has("gpu_indices") {
			field := fmt.Sprintf("%s[%d].gpuIndices", c.machineListField, i)
			c.warn(c.machineNodes[i], field, "unset: NNI gave trials GPUs out of every GPU of the machine; trialform's remote platform gives GPUs only out of gpu_indices, so a trial with gpus > 0 does not start there: list the machine's GPUs in gpu_indices")
			it.blk.comment("NNI gave trials GPUs out of every GPU this machine has; trialform's remote platform only out of gpu_indices: list them (gpu_indices = [0, 1, ...]), or trials with gpus > 0 do not start here")
		}
		i++
	}
}

// nniGPUs takes a local or remote machine's gpuIndices and
// maxTrialNumberPerGpu (v1 maxTrialNumPerGpu) into b.
func (c *conv) nniGPUs(o *obj, b *block) {
	if k := o.pick("gpuIndices"); k != "" {
		if idx := c.gpuIndices(o, k); idx != nil {
			b.set("gpu_indices", idx)
		}
	}
	if k := o.pick("maxTrialNumberPerGpu", "maxTrialNumPerGpu"); k != "" {
		if n, ok := o.integer(k, 1); ok {
			b.set("max_trials_per_gpu", n)
		}
	}
}

func (c *conv) nniLocal(lc *obj) *block {
	p := newBlock("platform", "local", "default")
	c.nniGPUs(lc, p)
	lc.done(p, nniReasons)
	if len(p.items) == 0 {
		return nil
	}
	return p
}

// gpuIndices reads "0,1", [0, 1] or 0.
func (c *conv) gpuIndices(o *obj, k string) []any {
	var out []any
	for _, it := range o.list(k) {
		if it.Kind != yaml.ScalarNode {
			c.failf(it, "%s must be GPU indices like \"0,1\" or [0, 1]", o.field(k))
		}
		for _, part := range strings.Split(it.Value, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 {
				c.failf(it, "%s: %q is not a GPU index", o.field(k), part)
			}
			out = append(out, i)
		}
	}
	return out
}

// nniMachines converts machineList (v1 ip/username/passwd/sshKeyPath, v2
// host/user/password/sshKeyFile).
func (c *conv) nniMachines(p *block, o *obj, key string, vs *vars) {
	c.machineListField = o.field(key)
	for i, n := range o.list(key) {
		c.machineNodes = append(c.machineNodes, n)
		m := c.obj(n, fmt.Sprintf("%s[%d]", o.field(key), i))
		mb := p.add(newBlock("machine"))
		if hn, ok := m.scalar(m.pick("host", "ip")); ok {
			c.setStr(mb, "host", hn, m.field(m.pick("host", "ip")), fmt.Sprintf("remote_host_%d", i+1))
		} else {
			c.failf(n, "%s needs host", m.path)
		}
		if n, ok := m.integer("port", 1); ok {
			mb.set("port", n)
		}
		if un, ok := m.scalar(m.pick("user", "username")); ok {
			c.setStr(mb, "user", un, m.field(m.pick("user", "username")), fmt.Sprintf("remote_user_%d", i+1))
		}
		if k := m.pick("sshKeyFile", "sshKeyPath"); k != "" {
			if s, ok := m.str(k); ok {
				mb.set("ssh_key_file", s)
			}
		}
		if k := m.pick("password", "passwd"); k != "" && m.has(k) {
			m.take(k)
			mb.raw("password", c.secret(vs, mb, m.keyNode(k), m.field(k), fmt.Sprintf("remote_password_%d", i+1)))
		}
		c.nniGPUs(m, mb)
		if s, ok := m.str("pythonPath"); ok {
			mb.set("python_path", s)
		}
		m.skip(mb, "passphrase", "keys with a passphrase go through the SSH agent in trialform")
		m.done(mb, nniReasons)
	}
}

// nniSize turns NNI's memory sizes ("8g", "512mb", 8192 as MB) into a
// Kubernetes quantity.
func (c *conv) nniSize(n *yaml.Node, field string, mbKey bool) string {
	s := strings.TrimSpace(strings.ToLower(n.Value))
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return memoryMB(f)
	}
	m := regexp.MustCompile(`^([0-9.]+)\s*([kmgt])(i?b?)$`).FindStringSubmatch(s)
	if m == nil {
		c.failf(n, "%s = %q is not a memory size like \"8g\" or \"512mb\"", field, n.Value)
	}
	return m[1] + strings.ToUpper(m[2]) + "i"
}

// role converts one kubeflow replica type or frameworkcontroller task role;
// the role's command becomes the trial's command when the trial has none.
func (c *conv) nniRole(r *obj, rb *block, countKeys []string, countName string, trial *block, image *string) {
	if k := r.pick(countKeys...); k != "" {
		if n, ok := r.integer(k, 1); ok {
			rb.set(countName, n)
		}
	}
	if k := r.pick("cpuNumber", "cpuNum"); k != "" {
		if f, ok := r.num(k); ok {
			rb.set("cpu", f)
		}
	}
	if k := r.pick("memorySize", "memoryMB"); k != "" {
		if n, ok := r.scalar(k); ok {
			rb.set("memory", c.nniSize(n, r.field(k), k == "memoryMB"))
		}
	}
	if k := r.pick("gpuNumber", "gpuNum"); k != "" {
		if n, ok := r.integer(k, 0); ok {
			rb.set("gpu", n)
		}
	}
	if k := r.pick("dockerImage", "image"); k != "" {
		if s, ok := r.str(k); ok {
			if *image == "" {
				*image = s
			} else if s != *image {
				rb.set("image", s)
			}
		}
	}
	if n, ok := r.scalar("command"); ok {
		if expr := c.command(n, r.field("command")); !trial.has("command") {
			trial.raw("command", expr)
		} else if expr != trialCommand(trial) {
			rb.raw("command", expr)
		}
	}
	if s, ok := r.str("codeDirectory"); ok && !trial.has("code_dir") {
		trial.set("code_dir", c.rebase(s))
	}
	r.skip(rb, "privateRegistryAuthPath", "use image_pull_secrets on the platform (a Kubernetes secret)")
	r.done(rb, nniReasons)
}

func trialCommand(trial *block) string {
	for _, it := range trial.items {
		if it.name == "command" {
			return it.raw
		}
	}
	return ""
}

// nniStorage converts v1 nfs / v2 storage to an nfs block.
func (c *conv) nniStorage(p *block, kc *obj) {
	if k := kc.pick("storage"); k != "" {
		n := kc.take(k)
		if n != nil && n.Kind == yaml.ScalarNode {
			if n.Value != "nfs" {
				c.notConverted(p, n, kc.field(k), "trialform mounts NFS only (%s)", n.Value)
			}
		} else if n != nil {
			st := c.obj(n, kc.field(k))
			typ, _ := st.str("storageType")
			switch {
			case typ != "" && typ != "nfs":
				c.notConverted(p, st.keyNode("storageType"), st.field("storageType"), "trialform mounts NFS only (%s)", typ)
				st.ignore(st.keys...)
			case typ == "" && !st.has("server") && !st.has("path"):
				// NNI's config_hybrid.yml lists every field empty.
				c.notConverted(p, kc.keyNode(k), kc.field(k), "no storageType and no NFS server: an empty template; add an nfs block (server, path, mount_path) if the jobs need shared storage")
				st.ignore(st.keys...)
			default:
				c.nfsBlock(p, st)
			}
		}
	}
	if kc.has("nfs") {
		c.nfsBlock(p, kc.sub("nfs"))
	}
}

func (c *conv) nfsBlock(p *block, st *obj) {
	nb := p.child("nfs")
	for _, k := range []string{"server", "path"} {
		if n, ok := st.scalar(k); ok {
			c.setStr(nb, k, n, st.field(k), "nfs_"+k)
			continue
		}
		// trialform's nfs block needs both: a variable asks for it.
		name := c.declare("nfs_"+k, fmt.Sprintf("%s: not set in %s, and an nfs block needs it: give it with -var or TRIALFORM_VAR_nfs_%s", st.field(k), c.file, k))
		c.warn(st.node, st.field(k), "not set; an nfs block needs it: written as variable %q without a default", name)
		nb.raw(k, "var."+name)
	}
	mount := "/nfs"
	if s, ok := st.str(st.pick("containerMountPath", "mountPath")); ok {
		mount = s
	} else {
		nb.tailComment("mount_path: where trials see the share (NNI chose it itself)")
	}
	nb.set("mount_path", mount)
	if s, ok := st.str(st.pick("localMountPath")); ok {
		nb.set("local_path", s)
	}
	st.done(nb, nil)
}

func (c *conv) nniKubeflow(p *block, kc *obj, t *obj, trial *block, vs *vars) {
	op, _ := kc.str("operator")
	switch op {
	case "tf-operator", "tfjob", "":
		p.set("operator", "tfjob")
	case "pytorch-operator", "pytorchjob":
		p.set("operator", "pytorchjob")
	default:
		c.failf(kc.keyNode("operator"), "kubeflow operator %q: trialform runs tf-operator (TFJob) and pytorch-operator (PyTorchJob)", op)
	}
	kc.skip(p, "apiVersion", "trialform uses kubeflow.org/v1")
	if s, ok := kc.str("namespace"); ok {
		p.set("namespace", s)
	}
	c.nniStorage(p, kc)
	image := ""
	roles := kc // v2: roles in the training service
	if len(t.keys) > 0 {
		roles = t // v1: roles in trial
		if s, ok := t.str("codeDir"); ok {
			trial.set("code_dir", c.rebase(s))
		}
	}
	order := []string{"master", "worker", "ps"}
	if op != "pytorch-operator" && op != "pytorchjob" {
		order = []string{"worker", "ps", "master"}
	}
	for _, role := range order {
		if !roles.has(role) {
			roles.ignore(role)
			continue
		}
		r := roles.sub(role)
		rb := p.add(newBlock(role))
		c.nniRole(r, rb, []string{"replicas"}, "replicas", trial, &image)
	}
	if image != "" {
		p.set("image", image)
	}
	if kc.has("configPath") {
		c.failf(kc.keyNode("configPath"), "%s: the trial's roles are in that file; convert reads one file: write the task roles into the config", kc.field("configPath"))
	}
	kc.done(p, map[string]string{"keyVault": "trialform mounts NFS only", "azureStorage": "trialform mounts NFS only", "reuseMode": nniReasons["reuseMode"], "reuse": nniReasons["reuseMode"]})
}

func (c *conv) nniFramework(p *block, fc *obj, t *obj, trial *block, vs *vars) {
	if s, ok := fc.str("namespace"); ok {
		p.set("namespace", s)
	}
	if s, ok := fc.str("serviceAccountName"); ok {
		p.set("service_account", s)
	}
	if fc.has("configPath") {
		c.failf(fc.keyNode("configPath"), "%s: the task roles are in that file; convert reads one file: write taskRoles into the config", fc.field("configPath"))
	}
	c.nniStorage(p, fc)
	roles := fc
	if len(t.keys) > 0 {
		roles = t
		if s, ok := t.str("codeDir"); ok {
			trial.set("code_dir", c.rebase(s))
		}
	}
	image := ""
	for i, n := range roles.list("taskRoles") {
		r := c.obj(n, fmt.Sprintf("%s[%d]", roles.field("taskRoles"), i))
		name, _ := r.str("name")
		rb := p.add(newBlock("task_role", ident(name, fmt.Sprintf("role%d", i+1))))
		if k := r.pick("frameworkAttemptCompletionPolicy"); k != "" {
			pol := r.sub(k)
			pb := rb.add(newBlock("framework_attempt_completion_policy"))
			if n, ok := pol.integer("minFailedTaskCount", -1); ok {
				pb.set("min_failed_task_count", n)
			}
			if n, ok := pol.integer("minSucceededTaskCount", -1); ok {
				pb.set("min_succeeded_task_count", n)
			}
			pol.done(pb, nil)
		}
		c.nniRole(r, rb, []string{"taskNumber", "taskNum"}, "task_number", trial, &image)
	}
	if image != "" {
		p.set("image", image)
	}
	fc.done(p, map[string]string{"reuseMode": nniReasons["reuseMode"], "reuse": nniReasons["reuseMode"], "configPath": "trialform writes the Framework object itself"})
}

// nniAdl converts the adl platform (its fields are in trial).
func (c *conv) nniAdl(p *block, t *obj, trial *block) {
	if b, ok := t.boolean("adaptive"); ok {
		p.set("adaptive", b)
	}
	if n, ok := t.scalar(t.pick("image", "dockerImage")); ok {
		c.setStr(p, "image", n, t.field(t.pick("image", "dockerImage")), "image")
	}
	var secrets []string
	for i, n := range t.list("imagePullSecrets") {
		so := c.obj(n, fmt.Sprintf("trial.imagePullSecrets[%d]", i))
		if s, ok := so.str("name"); ok {
			secrets = append(secrets, s)
		}
		so.done(p, nil)
	}
	if secrets != nil {
		p.set("image_pull_secrets", secrets)
	}
	if s, ok := t.str("namespace"); ok {
		p.set("namespace", s)
	}
	if s, ok := t.str("codeDir"); ok {
		if s != "." && s != "" {
			p.set("code_dir", s)
		} else {
			p.comment("trial.codeDir \".\" (the image's working directory): trialform ships this directory instead; set code_dir to run where the code is in the image")
		}
	}
	res := newBlock("resources")
	if n, ok := t.num("cpuNum"); ok {
		res.set("cpu", n)
	}
	if n, ok := t.scalar("memorySize"); ok {
		res.set("memory", n.Value)
	}
	if n, ok := t.integer("gpuNum", 0); ok {
		res.set("gpu", n)
	}
	if len(res.items) > 0 {
		p.add(res)
	}
	if t.has("nfs") {
		c.nfsBlock(p, t.sub("nfs"))
	}
	if t.has("checkpoint") {
		ck := t.sub("checkpoint")
		cb := p.add(newBlock("checkpoint"))
		if s, ok := ck.str("storageClass"); ok {
			cb.set("storage_class", s)
		}
		if s, ok := ck.str("storageSize"); ok {
			cb.set("size", s)
		}
		ck.done(cb, nil)
	}
}

// nniV2Platforms converts trainingService: one mapping or a list.
func (c *conv) nniV2Platforms(o *obj, trial *block, vs *vars) []*block {
	items := o.list("trainingService")
	if len(items) == 0 {
		return nil
	}
	var out []*block
	seen := map[string]bool{}
	for i, n := range items {
		path := "trainingService"
		if len(items) > 1 {
			path = fmt.Sprintf("trainingService[%d]", i)
		}
		ts := c.obj(n, path)
		kind, _ := ts.str("platform")
		var p *block
		switch kind {
		case "local":
			p = c.nniLocal(ts)
			if p == nil && len(items) > 1 {
				p = newBlock("platform", "local", "default")
			}
		case "remote":
			p = newBlock("platform", "remote", "default")
			c.nniMachines(p, ts, "machineList", vs)
			ts.done(p, nniReasons)
		case "kubeflow":
			p = newBlock("platform", "kubeflow", "default")
			c.nniKubeflow(p, ts, c.obj(nil, "trial"), trial, vs)
		case "frameworkcontroller":
			p = newBlock("platform", "frameworkcontroller", "default")
			c.nniFramework(p, ts, c.obj(nil, "trial"), trial, vs)
		case "adl":
			p = newBlock("platform", "adaptdl", "default")
			c.nniAdl(p, ts, trial)
			ts.done(p, nniReasons)
		case "openpai", "pai", "dlts", "dlc", "aml":
			if kind == "pai" {
				kind = "openpai"
			}
			p = newBlock("platform", kind, "default")
			ts.ignore("platform")
			c.nniCloud(kind, p, ts)
			ts.done(p, cloudReasons)
		case "":
			c.failf(n, "%s needs platform (local, remote, openpai, aml, dlc, kubeflow, frameworkcontroller, adl)", path)
		default:
			c.failf(ts.keyNode("platform"), "%s.platform %q is not one trialform knows (local, remote, openpai, aml, dlc, kubeflow, frameworkcontroller, adl)", path, kind)
		}
		if p == nil {
			continue
		}
		if seen[kind] {
			c.failf(n, "%s: a second %s training service; trialform's experiment runs on one platform", path, kind)
		}
		seen[kind] = true
		out = append(out, p)
	}
	return out
}

// mixedChoice finds a choice whose options mix plain values with nested
// ones ({"_name": ...}), depth first. It returns the path to it (param,
// option, param, ...) and its first plain value.
func mixedChoice(sp *space.Space, at []string) ([]string, any, bool) {
	for _, p := range sp.Params {
		here := append(append([]string(nil), at...), p.Name)
		var plain any
		hasPlain, hasNested := false, false
		for _, o := range p.Options {
			if space.IsNested(o) {
				hasNested = true
			} else if !hasPlain {
				plain, hasPlain = o.Value, true
			}
		}
		if hasPlain && hasNested {
			return here, plain, true
		}
		for _, o := range p.Options {
			if o.Nested != nil {
				if path, v, ok := mixedChoice(o.Nested, append(here, o.Name)); ok {
					return path, v, true
				}
			}
		}
	}
	return nil, nil, false
}

// plainOption finds, in an inline YAML search space, the first plain
// option of the choice at path (as mixedChoice gives it), for its line;
// it falls back to the closest node found.
func plainOption(n *yaml.Node, path []string) *yaml.Node {
	for i := 0; i < len(path); i += 2 {
		p := mapValue(n, path[i])
		if p == nil {
			return n
		}
		vals := mapValue(p, "_value")
		if vals == nil || vals.Kind != yaml.SequenceNode {
			return p
		}
		if i+1 == len(path) {
			for _, it := range vals.Content {
				if deref(it).Kind != yaml.MappingNode {
					return it
				}
			}
			return vals
		}
		next := vals
		for _, it := range vals.Content {
			if name := mapValue(it, "_name"); name != nil && name.Value == path[i+1] {
				next = deref(it)
			}
		}
		if next == vals {
			return vals
		}
		n = next
	}
	return n
}

// mapValue is the value of key k in mapping n (nil when absent).
func mapValue(n *yaml.Node, k string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

// jsonText writes v as JSON for a message.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// k0 is the first of keys that o has, else the first.
func k0(o *obj, keys ...string) string {
	if k := o.pick(keys...); k != "" {
		return k
	}
	return keys[0]
}
