package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner"
	"github.com/trialform/trialform/tuner/space"
	"go.yaml.in/yaml/v3"
)

// spaceParams writes the params of sp into b (a search_space block or a
// nested option).
func spaceParams(b *block, sp *space.Space) {
	for _, p := range sp.Params {
		pb := b.add(newBlock("param", p.Name))
		if p.Kind != space.Choice {
			args := make([]any, len(p.Args))
			for i, a := range p.Args {
				args[i] = a
			}
			pb.set(string(p.Kind), args)
			continue
		}
		nested := false
		for _, o := range p.Options {
			if space.IsNested(o) {
				nested = true
			}
		}
		if !nested {
			vals := make([]any, len(p.Options))
			for i, o := range p.Options {
				vals[i] = o.Value
			}
			pb.set("choice", vals)
			continue
		}
		for _, o := range p.Options {
			ob := pb.add(newBlock("option", o.Name))
			if o.Nested != nil {
				spaceParams(ob, o.Nested)
			}
		}
	}
}

// noteParam records a comment for the param block of the parameter name.
func (c *conv) noteParam(name, comment string) {
	if c.paramNotes == nil {
		c.paramNotes = map[string][]string{}
	}
	c.paramNotes[name] = append(c.paramNotes[name], comment)
}

// noteParams writes the comments noteParam recorded at the top of the
// param blocks of b (a search_space block spaceParams filled).
func (c *conv) noteParams(b *block) {
	for _, it := range b.items {
		if it.blk == nil || it.blk.typ != "param" || len(it.blk.labels) != 1 {
			continue
		}
		notes := c.paramNotes[it.blk.labels[0]]
		if len(notes) == 0 {
			continue
		}
		pb := newBlock("param")
		for _, n := range notes {
			pb.comment(n)
		}
		it.blk.items = append(pb.items, it.blk.items...)
	}
}

// nniSpaceFromYAML reads an inline NNI search space (v2 searchSpace).
func (c *conv) nniSpaceFromYAML(n *yaml.Node, field string) *space.Space {
	var buf bytes.Buffer
	c.orderedJSON(&buf, n)
	sp, err := space.ParseNNI(buf.Bytes())
	if err != nil {
		c.failf(n, "%s: %v", field, err)
	}
	if len(sp.Params) == 0 {
		c.failf(n, "%s is empty; a search space needs at least one parameter", field)
	}
	return sp
}

// orderedJSON writes a YAML node as JSON, keeping the order of mapping
// keys (a search space's order is part of what makes sampling
// deterministic).
func (c *conv) orderedJSON(b *bytes.Buffer, n *yaml.Node) {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			c.orderedJSON(b, n.Content[i+1])
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, it := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			c.orderedJSON(b, it)
		}
		b.WriteByte(']')
	default:
		v, err := json.Marshal(c.goValue(n))
		if err != nil {
			v = []byte("null")
		}
		b.Write(v)
	}
}

// readSpaceFile reads an NNI search_space.json the input names.
func (c *conv) readSpaceFile(n *yaml.Node, field, rel string) *space.Space {
	if c.opt.ReadFile == nil {
		c.failf(n, "%s: cannot read %s here; convert without -inline to keep it as nni_file", field, rel)
	}
	data, err := c.opt.ReadFile(rel)
	if err != nil {
		c.failf(n, "%s: %v", field, err)
	}
	sp, err := space.ParseNNI(data)
	if err != nil {
		c.failf(n, "%s: %s: %v", field, rel, err)
	}
	return sp
}

// duration converts NNI's and Katib's durations ("1h", "30m", "10s",
// "2d", a number of seconds) to trialform's form.
func (c *conv) duration(n *yaml.Node, field string) string {
	// NNI lower-cases the unit ("1H" is an hour).
	s := strings.ToLower(strings.TrimSpace(n.Value))
	if n.Tag == "!!int" || n.Tag == "!!float" {
		s += "s"
	}
	// NNI accepts "1 hour", "30 minutes" too.
	words := map[string]string{"seconds": "s", "second": "s", "sec": "s", "minutes": "m", "minute": "m", "min": "m",
		"hours": "h", "hour": "h", "days": "d", "day": "d"}
	if f := strings.Fields(s); len(f) == 2 {
		if u, ok := words[strings.ToLower(f[1])]; ok {
			s = f[0] + u
		}
	}
	if _, err := schema.ParseDuration(s); err != nil {
		c.failf(n, "%s = %q is not a duration; write it like \"1h\", \"30m\" or \"2d\"", field, n.Value)
	}
	return s
}

// tunerMap is how a tuning algorithm of another tool maps to trialform.
type tunerMap struct {
	name  string // trialform tuner
	exact bool   // the same algorithm (not just the nearest)
	note  string // what differs
}

// nniTuners maps NNI's builtin tuner and advisor names (lower case).
var nniTuners = map[string]tunerMap{
	"tpe":                  {"tpe", true, ""},
	"random":               {"random", true, ""},
	"randomsearch":         {"random", true, ""},
	"anneal":               {"anneal", true, ""},
	"evolution":            {"evolution", true, ""},
	"gridsearch":           {"grid", true, ""},
	"batchtuner":           {"batch", true, ""},
	"hyperband":            {"hyperband", true, ""},
	"bohb":                 {"bohb", true, ""},
	"pbttuner":             {"pbt", true, ""},
	"gptuner":              {"gp", true, ""},
	"gp":                   {"gp", true, ""},
	"metistuner":           {"metis", true, ""},
	"metis":                {"metis", true, ""},
	"smac":                 {"smac", true, ""},
	"dngo":                 {"gp", false, "DNGO (Bayesian linear regression on neural-network features) is not available in trialform; gp (Bayesian optimisation with a Gaussian process) is the nearest and is used"},
	"dngotuner":            {"gp", false, "DNGO (Bayesian linear regression on neural-network features) is not available in trialform; gp (Bayesian optimisation with a Gaussian process) is the nearest and is used"},
	"networkmorphism":      {"evolution", false, "trialform does not search network architectures; evolution is the nearest over the search space"},
	"ppotuner":             {"evolution", false, "trialform has no PPO tuner; evolution is the nearest"},
	"regularizedevolution": {"evolution", true, ""},
}

// nniSettingNames maps NNI classArgs names to trialform settings, per
// trialform tuner ("" = the goal, handled by the caller).
var nniSettingNames = map[string]map[string]string{
	"tpe":       {"seed": "seed"},
	"random":    {"seed": "seed"},
	"anneal":    {"seed": "seed"},
	"evolution": {"population_size": "population_size", "seed": "seed"},
	"grid":      {},
	"hyperband": {"R": "max_budget", "eta": "eta", "seed": "seed"},
	"bohb":      {"min_budget": "min_budget", "max_budget": "max_budget", "eta": "eta", "min_points_in_model": "startup_trials", "seed": "seed"},
	"pbt":       {"population_size": "population_size", "factor": "factor", "resample_probability": "resample_probability", "all_checkpoint_dir": "checkpoint_dir", "seed": "seed"},
	"auto":      {"seed": "seed"},
	"gp":        {"utility": "utility", "kappa": "kappa", "xi": "xi", "cold_start_num": "startup_trials", "seed": "seed"},
	"smac":      {"seed": "seed"},
	"metis":     {"cold_start_num": "startup_trials", "seed": "seed"},
}

// nniSettingWhy says why an NNI classArgs setting of a tuner that trialform
// has is not converted, where "no such setting" would not tell enough.
var nniSettingWhy = map[string]string{
	"nu":                            "trialform's gp always uses the Matern 5/2 kernel (NNI's nu = 2.5)",
	"alpha":                         "trialform's gp fits the noise level to the results",
	"selection_num_warm_up":         "trialform's gp maximises the acquisition over its own candidates, then by L-BFGS",
	"selection_num_starting_points": "trialform's gp and metis maximise the acquisition over their own candidates, then by L-BFGS",
	"config_dedup":                  "trialform's smac never proposes a point an earlier trial has",
	"exploration_probability":       "trialform's metis explores by expected improvement",
	"no_candidates":                 "trialform's metis proposes by expected improvement",
}

// settingOK says whether tuner name takes setting s.
func settingOK(name, s string) bool {
	k := tuners.Lookup(name)
	return k != nil && k.Schema().AttrNamed(s) != nil
}

// tuners are the tuners the converters write blocks for.
var tuners = tuner.Builtin()

// assessorSettingOK says whether assessor name takes setting s.
func assessorSettingOK(name, s string) bool {
	a := tuners.LookupAssessor(name)
	return a != nil && a.Schema().AttrNamed(s) != nil
}

// goalFrom reads optimize_mode / optimization values.
func (c *conv) goalFrom(n *yaml.Node, field string) string {
	switch strings.ToLower(strings.TrimSpace(n.Value)) {
	case "maximize", "max", "maximise":
		return "maximize"
	case "minimize", "min", "minimise":
		return "minimize"
	}
	c.failf(n, "%s must be maximize or minimize, not %q", field, n.Value)
	return ""
}

// variables the output declares (secrets, Polyaxon params); written
// before the other blocks.
type vars struct {
	blocks []*block
	names  map[string]bool
}

// secret declares a variable with no default for a secret the input held
// and returns its reference; the value itself is never written.
func (c *conv) secret(_ *vars, b *block, n *yaml.Node, field, name string) string {
	name = c.declare(name, fmt.Sprintf("%s from %s (a secret: give it with -var or TRIALFORM_VAR_%s)", field, c.file, name))
	c.warn(n, field, "a secret: written as variable %q without its value; set it with -var '%s=...' or TRIALFORM_VAR_%s", name, name, name)
	return "var." + name
}

// declare adds a string variable without a default and returns its name
// (made unique).
func (c *conv) declare(name, desc string) string {
	v := &c.vars
	if v.names == nil {
		v.names = map[string]bool{}
	}
	base := name
	for i := 2; v.names[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	v.names[name] = true
	if name != base {
		desc = strings.ReplaceAll(desc, "TRIALFORM_VAR_"+base, "TRIALFORM_VAR_"+name)
	}
	vb := newBlock("variable", name)
	vb.raw("type", "string")
	vb.set("description", desc)
	v.blocks = append(v.blocks, vb)
	return name
}

var placeholderRe = regexp.MustCompile(`^(\$\{[^{}]+\}|\{[^{}]+\}|<[^<>]+>)$`)

// isPlaceholder recognises a value left for the user to fill in:
// "${your token}", "{your_nfs_server_ip}", "<image_tag>".
func isPlaceholder(s string) bool { return placeholderRe.MatchString(strings.TrimSpace(s)) }

// setStr sets a string attribute; a placeholder becomes a variable
// without a default, so validate asks for the real value.
func (c *conv) setStr(b *block, attr string, n *yaml.Node, field, varName string) {
	if n == nil {
		return
	}
	val := n.Value
	if p, ok := placeholder(n); ok {
		val = p
	}
	if !isPlaceholder(val) {
		b.set(attr, val)
		return
	}
	name := c.declare(varName, fmt.Sprintf("%s from %s, a placeholder there (%s): give its value with -var or TRIALFORM_VAR_%s", field, c.file, val, varName))
	c.warn(n, field, "placeholder %s: written as variable %q without a default; give its value with -var '%s=...' or TRIALFORM_VAR_%s", val, name, name, name)
	b.raw(attr, "var."+name)
}

// embeddedPlaceholder finds a value left for the user to fill in inside a
// longer text, as NNI's examples write them ("--data_dir
// /root/data/{your_data_dir}"). Only "your..." names count: a command
// holds braces and angle brackets of its own (shell redirections,
// Python dicts, ${HOME}).
var embeddedPlaceholder = regexp.MustCompile(`\$\{(your[ _][^{}]*)\}|\{(your_[A-Za-z0-9_]+)\}|<(your_[A-Za-z0-9_]+)>`)

// command writes a trial command as an HCL string, each placeholder in it
// (see embeddedPlaceholder) a variable without a default, so that
// validate asks for it instead of the trial running with the
// placeholder's text.
func (c *conv) command(n *yaml.Node, field string) string {
	s := n.Value
	ms := embeddedPlaceholder.FindAllStringSubmatchIndex(s, -1)
	if len(ms) == 0 {
		return quoted(s)
	}
	var parts []tmplPart
	last := 0
	for _, m := range ms {
		ph := s[m[0]:m[1]]
		inner := ""
		for g := 1; g <= 3; g++ {
			if m[2*g] >= 0 {
				inner = s[m[2*g]:m[2*g+1]]
			}
		}
		name, ok := c.placeholderVars[ph]
		if !ok {
			base := strings.TrimPrefix(strings.ToLower(ident(inner, "value")), "your_")
			name = c.declare(base, fmt.Sprintf("%s from %s, a placeholder there (%s): give its value with -var or TRIALFORM_VAR_%s", field, c.file, ph, base))
			if c.placeholderVars == nil {
				c.placeholderVars = map[string]string{}
			}
			c.placeholderVars[ph] = name
			c.warn(n, field, "placeholder %s: written as ${var.%s}, a variable without a default; give its value with -var '%s=...' or TRIALFORM_VAR_%s", ph, name, name, name)
		}
		if m[0] > last {
			parts = append(parts, tmplPart{lit: s[last:m[0]]})
		}
		parts = append(parts, tmplPart{expr: "var." + name})
		last = m[1]
	}
	if last < len(s) {
		parts = append(parts, tmplPart{lit: s[last:]})
	}
	return template(parts)
}

// autoWhat says what the auto tuner does, as tuner/auto.go does it and the
// tuner list of docs/tuners.md says: where a conversion falls back on it, the
// comment says what the trials will get.
const autoWhat = "10 random trials, then a Gaussian process (TPE where the space has nested choices), then CMA-ES on the numeric parameters"

// isSecret says whether a field name holds a secret.
func isSecret(k string) bool {
	l := strings.ToLower(k)
	for _, s := range []string{"password", "passwd", "token", "secret", "passphrase", "accesskeyid"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// metricRegex reads Katib-style "name=value" lines.
const metricRegex = `(?P<name>[\w|-]+)\s*=\s*(?P<value>[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)`

// header lines of every output.
func header(tool, file, schemaName string) []string {
	return []string{
		fmt.Sprintf("Converted by `trialform convert %s` from %s (%s).", tool, file, schemaName),
		"Fields trialform has no place for are listed as \"not converted\" comments.",
	}
}

// quantity turns NNI's memoryMB into a Kubernetes quantity.
func memoryMB(f float64) string { return fmt.Sprintf("%dMi", int64(f)) }

var katibParamRef = regexp.MustCompile(`\$\{trialParameters\.([A-Za-z0-9_.-]+)\}`)

// fitGrid lowers max_trials to the grid's size for a grid tuner, or to
// the number of parameter sets for a batch tuner (the other tools stop
// when the grid or the list is exhausted; trialform's validate refuses a
// larger budget).
func (c *conv) fitGrid(exp, tb *block, sp *space.Space, n *yaml.Node) {
	if tb == nil {
		return
	}
	var size int
	var what, done string
	switch tb.labels[0] {
	case "grid":
		if sp == nil {
			return
		}
		var err error
		if size, err = tuner.GridSize(sp, &tuner.GridSettings{}); err != nil {
			return
		}
		what, done = fmt.Sprintf("the grid's %d points", size), "the grid is run once"
	case "batch":
		ok := false
		for _, it := range tb.items {
			if it.name == "params" && it.val != nil && it.val.CanIterateElements() {
				size, ok = it.val.LengthInt(), true
			}
		}
		if !ok {
			return
		}
		what, done = fmt.Sprintf("the batch tuner's %d parameter sets", size), "each set is run once"
	default:
		return
	}
	for i, it := range exp.items {
		if it.name != "max_trials" || it.val == nil {
			continue
		}
		f, _ := it.val.AsBigFloat().Float64()
		if int(f) > size {
			c.warn(n, "max_trials", "%d is more than %s; max_trials = %d written (%s)", int(f), what, size, done)
			v := ctyValue(size)
			exp.items[i].val = &v
		}
	}
}
