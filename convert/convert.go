// Package convert turns experiment definitions of other tools (NNI's
// config.yml in its v1 and v2 schemas, Katib v1beta1 Experiments,
// Polyaxon v0/v1 and v1.1+ polyaxonfiles) into one trialform HCL file.
//
// It is pure: it reads only the bytes it is handed and, through
// Options.ReadFile, the files the definition points at (a search space,
// a Polyaxon pathRef). It never writes; the convert command does.
//
// Nothing is dropped silently: every field is mapped to HCL or becomes a
// "# not converted: FIELD: WHY" comment in the output and a Warning.
// Malformed input is an *Error naming the file and line.
package convert

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"go.yaml.in/yaml/v3"
)

// Options say where the input is and how to write the output.
type Options struct {
	// Filename is the input's name as messages show it.
	Filename string
	// BaseDir is the input's directory as seen from the output file's
	// directory ("" or "." when side by side); relative paths of the
	// input (code directories, search space files) are rebased on it.
	BaseDir string
	// Inline writes a search space file as HCL param blocks instead of
	// nni_file (it needs ReadFile).
	Inline bool
	// ReadFile reads a file the input names, relative to the input's
	// directory. Nil: no file can be read.
	ReadFile func(rel string) ([]byte, error)
}

// Result is one converted file.
type Result struct {
	HCL      []byte    // fmt-clean HCL
	Warnings []Warning // one per field that was not converted or only approximately
}

// Warning is a field that was not converted, or converted approximately.
type Warning struct {
	File  string
	Line  int // 0 when unknown
	Field string
	Msg   string
}

func (w Warning) String() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", w.File, w.Line, w.Field, w.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", w.File, w.Field, w.Msg)
}

// Error is a problem that stops the conversion, at a line of the input.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// conv holds the state of one conversion.
type conv struct {
	opt      Options
	file     string
	warnings []Warning
	// vars are the variables the output declares (secrets, placeholders).
	vars vars
	// placeholderVars: the variable declared for each placeholder met in
	// a command ("{your_data_dir}" -> "data_dir").
	placeholderVars map[string]string
	// paramNotes: comments written at the top of a param block, by the
	// param's name (noteParams).
	paramNotes map[string][]string
	// gpuZero: NNI's trialGpuNumber (v1 trial.gpuNum) is 0, not unset.
	gpuZero bool
	// goalNode: the last optimize_mode read (nniClassArgs).
	goalNode *yaml.Node
	// machineListField and machineNodes: NNI's machineList, as read.
	machineListField string
	machineNodes     []*yaml.Node
	// canon: keys match ignoring case and underscores, as NNI's v2
	// schema reads them (trialCommand = trial_command).
	canon bool
}

func (c *conv) key(k string) string {
	if !c.canon {
		return k
	}
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(k))
}

// fail stops the conversion with an error at node n (recovered by run).
type failure struct{ err *Error }

func (c *conv) failf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	panic(failure{&Error{File: c.file, Line: line, Msg: fmt.Sprintf(format, args...)}})
}

// run parses data as YAML and calls f on the document's root, turning a
// failf into an error. Any other panic is a bug and is not recovered.
func run(opt Options, data []byte, f func(c *conv, root *yaml.Node) *hfile) (res *Result, err error) {
	name := opt.Filename
	if name == "" {
		name = "input"
	}
	c := &conv{opt: opt, file: name}
	root, err := parseYAML(name, data)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			if fl, ok := r.(failure); ok {
				res, err = nil, fl.err
				return
			}
			panic(r)
		}
	}()
	hf := f(c, root)
	src, werr := hf.render()
	// Nothing is dropped silently: a "not converted" warning whose comment
	// no block took is written at the top of the file.
	var missing []string
	for _, w := range c.warnings {
		if why, ok := strings.CutPrefix(w.Msg, "not converted: "); ok && werr == nil && !strings.Contains(string(src), "# not converted: "+w.Field+":") {
			missing = append(missing, "not converted: "+w.Field+": "+why)
		}
	}
	if len(missing) > 0 {
		hf.header = append(hf.header, missing...)
		src, werr = hf.render()
	}
	if werr != nil {
		return nil, &Error{File: name, Msg: "internal error: the HCL written does not parse: " + werr.Error()}
	}
	// By file (the input first, then a Polyaxon pathRef's component), then
	// by line.
	sort.SliceStable(c.warnings, func(i, j int) bool {
		a, b := c.warnings[i], c.warnings[j]
		if a.File != b.File {
			return a.File == name || (b.File != name && a.File < b.File)
		}
		return a.Line < b.Line
	})
	return &Result{HCL: src, Warnings: c.warnings}, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML returns the root mapping of the first document; errors name
// file:line.
func parseYAML(name string, data []byte) (*yaml.Node, error) {
	if err := checkText(name, data); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &Error{File: name, Line: line, Msg: "invalid YAML: " + m[2]}
		}
		return nil, &Error{File: name, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{File: name, Line: 1, Msg: "the file is empty; it should hold a YAML mapping"}
	}
	if err := checkAliases(name, doc.Content[0]); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: root.Line, Msg: "the document must be a YAML mapping (key: value lines)"}
	}
	return root, nil
}

// warn records a warning; the caller writes the matching comment.
func (c *conv) warn(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	c.warnings = append(c.warnings, Warning{File: c.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// notConverted records the field as not converted and adds the comment
// to b.
func (c *conv) notConverted(b *block, n *yaml.Node, field, format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	c.warn(n, field, "not converted: %s", why)
	b.tailComment(fmt.Sprintf("not converted: %s: %s", field, why))
}

// ---- YAML access ----

// obj is a YAML mapping whose keys are taken one by one; what is left is
// reported by done.
type obj struct {
	c    *conv
	path string // "trial.worker" ("" at the root)
	node *yaml.Node
	keys []string
	vals map[string]*yaml.Node
	knod map[string]*yaml.Node
	used map[string]bool
}

func (c *conv) obj(n *yaml.Node, path string) *obj {
	o := &obj{c: c, path: path, node: n, vals: map[string]*yaml.Node{}, knod: map[string]*yaml.Node{}, used: map[string]bool{}}
	if n == nil || isNull(n) {
		return o
	}
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		c.failf(n, "%s must be a mapping (key: value lines), not %s", orRoot(path), kindName(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "<<" && k.Tag == "!!merge" {
			// a YAML merge key: take the merged mapping's keys too
			m := c.obj(v, path)
			for _, mk := range m.keys {
				ck := c.key(mk)
				if _, dup := o.vals[ck]; !dup {
					o.keys = append(o.keys, mk)
					o.vals[ck], o.knod[ck] = m.vals[ck], m.knod[ck]
				}
			}
			continue
		}
		ck := c.key(k.Value)
		if _, dup := o.vals[ck]; dup {
			c.failf(k, "%s is set twice; keep one", o.field(k.Value))
		}
		o.keys = append(o.keys, k.Value)
		o.vals[ck] = v
		o.knod[ck] = k
	}
	return o
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func orRoot(p string) string {
	if p == "" {
		return "the document"
	}
	return p
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func (o *obj) field(k string) string {
	if o.path == "" {
		return k
	}
	return o.path + "." + k
}

// has says whether key is set (and not null).
func (o *obj) has(k string) bool {
	v, ok := o.vals[o.c.key(k)]
	return ok && !isNull(v)
}

// take marks key used and returns its value node (nil when absent or
// null).
func (o *obj) take(k string) *yaml.Node {
	k = o.c.key(k)
	o.used[k] = true
	v := o.vals[k]
	if isNull(v) {
		return nil
	}
	return deref(v)
}

// line of a key (its key node), 0 when absent.
func (o *obj) keyNode(k string) *yaml.Node {
	if n, ok := o.knod[o.c.key(k)]; ok {
		return n
	}
	return o.node
}

func (o *obj) sub(k string) *obj { return o.c.obj(o.take(k), o.field(k)) }

// placeholder recognises NNI's "{your_value}" templates, which YAML reads
// as a one-key flow mapping.
func placeholder(n *yaml.Node) (string, bool) {
	if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0 && len(n.Content) == 2 && isNull(n.Content[1]) {
		return "{" + n.Content[0].Value + "}", true
	}
	return "", false
}

func (o *obj) scalar(k string) (*yaml.Node, bool) {
	v := o.take(k)
	if v == nil {
		return nil, false
	}
	if p, ok := placeholder(v); ok {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p, Line: v.Line, Column: v.Column}, true
	}
	if v.Kind != yaml.ScalarNode {
		o.c.failf(v, "%s must be a single value, not %s", o.field(k), kindName(v))
	}
	return v, true
}

// str is a string field ("" and false when absent).
func (o *obj) str(k string) (string, bool) {
	v, ok := o.scalar(k)
	if !ok {
		return "", false
	}
	return v.Value, true
}

// num is a numeric field; numbers written as strings ("0.01", Katib's
// habit) are accepted.
func (o *obj) num(k string) (float64, bool) {
	v, ok := o.scalar(k)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v.Value), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		o.c.failf(v, "%s must be a number, not %q", o.field(k), v.Value)
	}
	return f, true
}

// integer is a whole-number field >= min.
func (o *obj) integer(k string, min int64) (int64, bool) {
	f, ok := o.num(k)
	if !ok {
		return 0, false
	}
	if f != math.Trunc(f) || f < float64(min) || f > 1<<53 {
		o.c.failf(o.vals[o.c.key(k)], "%s must be a whole number of at least %d, not %v", o.field(k), min, f)
	}
	return int64(f), true
}

func (o *obj) boolean(k string) (bool, bool) {
	v, ok := o.scalar(k)
	if !ok {
		return false, false
	}
	switch strings.ToLower(v.Value) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	o.c.failf(v, "%s must be true or false, not %q", o.field(k), v.Value)
	return false, false
}

// list returns the items of a list field (a single value counts as a list
// of one).
func (o *obj) list(k string) []*yaml.Node {
	v := o.take(k)
	if v == nil {
		return nil
	}
	if v.Kind == yaml.SequenceNode {
		out := make([]*yaml.Node, len(v.Content))
		for i, it := range v.Content {
			out[i] = deref(it)
		}
		return out
	}
	return []*yaml.Node{v}
}

// strList is a list of strings.
func (o *obj) strList(k string) []string {
	var out []string
	for _, it := range o.list(k) {
		if it.Kind != yaml.ScalarNode {
			o.c.failf(it, "%s must be a list of strings", o.field(k))
		}
		out = append(out, it.Value)
	}
	return out
}

// skip marks a key as not converted, with the reason.
func (o *obj) skip(b *block, k, format string, args ...any) {
	if _, ok := o.vals[o.c.key(k)]; !ok || o.used[o.c.key(k)] {
		return
	}
	o.used[o.c.key(k)] = true
	o.c.notConverted(b, o.keyNode(k), o.field(k), format, args...)
}

// ignore marks keys as handled without a comment (fields whose meaning is
// carried by another, e.g. a version marker).
func (o *obj) ignore(keys ...string) {
	for _, k := range keys {
		o.used[o.c.key(k)] = true
	}
}

// pick returns the first of keys that is set, "" when none is.
func (o *obj) pick(keys ...string) string {
	for _, k := range keys {
		if _, ok := o.vals[o.c.key(k)]; ok {
			return k
		}
	}
	return ""
}

// unused lists the keys not taken yet, as written.
func (o *obj) unused() []string {
	var out []string
	for _, k := range o.keys {
		if !o.used[o.c.key(k)] {
			out = append(out, k)
		}
	}
	return out
}

// done reports every key not taken as not converted; reasons gives
// specific reasons by key, others get a generic one.
func (o *obj) done(b *block, reasons map[string]string) {
	canon := map[string]string{}
	for k, v := range reasons {
		canon[o.c.key(k)] = v
	}
	for _, k := range o.keys {
		if o.used[o.c.key(k)] {
			continue
		}
		o.used[o.c.key(k)] = true
		why, ok := canon[o.c.key(k)]
		if !ok {
			why = "trialform has no equivalent setting"
		}
		o.c.notConverted(b, o.keyNode(k), o.field(k), "%s", why)
	}
}

// goValue turns a YAML node into a JSON-like Go value (map[string]any,
// []any, string, float64, bool, nil).
func (c *conv) goValue(n *yaml.Node) any {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = c.goValue(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		out := []any{}
		for _, it := range n.Content {
			out = append(out, c.goValue(it))
		}
		return out
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil
		case "!!bool":
			b, _ := strconv.ParseBool(strings.ToLower(n.Value))
			return b
		case "!!int", "!!float":
			if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
		return n.Value
	}
	return nil
}

// ---- output model ----

// block is an HCL block being built: attributes, nested blocks and
// comments in order.
type block struct {
	typ    string
	labels []string
	items  []item
}

type item struct {
	comment string
	tail    bool // a comment written after the attributes and blocks
	name    string
	val     *cty.Value
	raw     string // an expression written as is (a reference, a template)
	blk     *block
}

func newBlock(typ string, labels ...string) *block { return &block{typ: typ, labels: labels} }

func (b *block) comment(s string) {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
	b.items = append(b.items, item{comment: s})
}

// tailComment adds a comment written at the end of the block.
func (b *block) tailComment(s string) {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
	b.items = append(b.items, item{comment: s, tail: true})
}

// set sets an attribute to a Go value (string, number, bool, lists and
// maps of them). Setting it again replaces it.
func (b *block) set(name string, v any) {
	cv := ctyValue(v)
	for i := range b.items {
		if b.items[i].name == name {
			b.items[i].val, b.items[i].raw = &cv, ""
			return
		}
	}
	b.items = append(b.items, item{name: name, val: &cv})
}

// raw sets an attribute to an expression written as is.
func (b *block) raw(name, expr string) {
	for i := range b.items {
		if b.items[i].name == name {
			b.items[i].val, b.items[i].raw = nil, expr
			return
		}
	}
	b.items = append(b.items, item{name: name, raw: expr})
}

// unset removes an attribute.
func (b *block) unset(name string) {
	for i := range b.items {
		if b.items[i].name == name {
			b.items = append(b.items[:i], b.items[i+1:]...)
			return
		}
	}
}

func (b *block) has(name string) bool {
	for _, it := range b.items {
		if it.name == name {
			return true
		}
	}
	return false
}

func (b *block) add(child *block) *block {
	b.items = append(b.items, item{blk: child})
	return child
}

// child returns the first nested block of type typ, creating it.
func (b *block) child(typ string, labels ...string) *block {
	for _, it := range b.items {
		if it.blk != nil && it.blk.typ == typ && strings.Join(it.blk.labels, "\x00") == strings.Join(labels, "\x00") {
			return it.blk
		}
	}
	return b.add(newBlock(typ, labels...))
}

func ctyValue(v any) cty.Value {
	switch x := v.(type) {
	case cty.Value:
		return x
	case string:
		return cty.StringVal(x)
	case bool:
		return cty.BoolVal(x)
	case int:
		return cty.NumberIntVal(int64(x))
	case int64:
		return cty.NumberIntVal(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return cty.NumberIntVal(int64(x))
		}
		return cty.NumberFloatVal(x)
	case []string:
		if len(x) == 0 {
			return cty.ListValEmpty(cty.String)
		}
		vals := make([]cty.Value, len(x))
		for i, s := range x {
			vals[i] = cty.StringVal(s)
		}
		return cty.TupleVal(vals)
	case []any:
		if len(x) == 0 {
			return cty.EmptyTupleVal
		}
		vals := make([]cty.Value, len(x))
		for i, s := range x {
			vals[i] = ctyValue(s)
		}
		return cty.TupleVal(vals)
	case map[string]string:
		m := map[string]cty.Value{}
		for k, s := range x {
			m[k] = cty.StringVal(s)
		}
		if len(m) == 0 {
			return cty.EmptyObjectVal
		}
		return cty.ObjectVal(m)
	case map[string]any:
		m := map[string]cty.Value{}
		for k, s := range x {
			m[k] = ctyValue(s)
		}
		if len(m) == 0 {
			return cty.EmptyObjectVal
		}
		return cty.ObjectVal(m)
	case nil:
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return cty.StringVal(fmt.Sprint(v))
}

// hfile is the whole output: a header, then blocks in order.
type hfile struct {
	header []string
	blocks []*block
}

func (f *hfile) add(b *block) *block { f.blocks = append(f.blocks, b); return b }

func (f *hfile) render() ([]byte, error) {
	wf := hclwrite.NewEmptyFile()
	body := wf.Body()
	for _, h := range f.header {
		body.AppendUnstructuredTokens(commentTokens(h))
	}
	for i, b := range f.blocks {
		if i > 0 || len(f.header) > 0 {
			body.AppendNewline()
		}
		writeBlock(body, b)
	}
	src := hclwrite.Format(emptyBlock.ReplaceAll(wf.Bytes(), []byte("{}\n")))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		src = append(src, '\n')
	}
	if _, diags := hclsyntax.ParseConfig(src, "converted.hcl", hcl.InitialPos); diags.HasErrors() {
		return nil, diags
	}
	return src, nil
}

// emptyBlock is a block with nothing inside, written on one line.
var emptyBlock = regexp.MustCompile(`\{\n[ \t]*\}\n`)

func commentTokens(s string) hclwrite.Tokens {
	line := "#"
	if s != "" {
		line += " " + s
	}
	return hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(line + "\n")}}
}

func writeBlock(parent *hclwrite.Body, b *block) {
	wb := parent.AppendNewBlock(b.typ, b.labels)
	body := wb.Body()
	// Attributes (with their comments) first, then nested blocks, then
	// the "not converted" comments.
	var attrs, blocks, tail []item
	for _, it := range b.items {
		switch {
		case it.tail:
			tail = append(tail, it)
		case it.blk != nil:
			blocks = append(blocks, it)
		default:
			attrs = append(attrs, it)
		}
	}
	for _, it := range append(append(attrs, blocks...), tail...) {
		switch {
		case it.comment != "":
			body.AppendUnstructuredTokens(commentTokens(it.comment))
		case it.blk != nil:
			writeBlock(body, it.blk)
		case it.raw != "":
			body.SetAttributeRaw(it.name, hclwrite.Tokens{{Type: hclsyntax.TokenIdent, Bytes: []byte(it.raw)}})
		case it.val != nil:
			body.SetAttributeValue(it.name, *it.val)
		}
	}
}

// ---- strings and templates ----

// quoted writes s as an HCL string literal.
func quoted(s string) string {
	toks := hclwrite.TokensForValue(cty.StringVal(s))
	return string(toks.Bytes())
}

// tmplPart is a piece of a template: literal text or an expression to
// interpolate (param.x, var.x, jsonencode(var.y)).
type tmplPart struct {
	lit  string
	expr string
}

// template writes the parts as one HCL quoted template.
func template(parts []tmplPart) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, p := range parts {
		if p.expr != "" {
			sb.WriteString("${" + p.expr + "}")
			continue
		}
		q := quoted(p.lit)
		sb.WriteString(q[1 : len(q)-1])
	}
	sb.WriteByte('"')
	return sb.String()
}

// ident makes a name usable as an HCL block label that references can
// name (experiment.NAME): letters, digits, _ and -, starting with a
// letter.
func ident(s, fallback string) string {
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	out := strings.Trim(sb.String(), "_-")
	if out == "" {
		out = fallback
	}
	if c := out[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		out = "x" + out
	}
	return out
}

// stem is a file name without directory and extension.
func stem(name string) string {
	base := path.Base(strings.ReplaceAll(name, "\\", "/"))
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return base
}

// rebase makes a path of the input relative to the output's directory.
func (c *conv) rebase(p string) string {
	if p == "" || path.IsAbs(p) || strings.HasPrefix(p, "~") || c.opt.BaseDir == "" || c.opt.BaseDir == "." {
		return p
	}
	return path.Clean(path.Join(c.opt.BaseDir, p))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fmtNum writes a number as briefly as it can be read back.
func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
