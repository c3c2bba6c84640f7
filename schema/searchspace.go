package schema

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/trialform/trialform/tuner/space"
	"github.com/zclconf/go-cty/cty"

	"github.com/trialform/trialform/internal/fsread"
)

var spaceSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "nni_file"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "param", LabelNames: []string{"name"}}},
}

var paramSchema = func() *hcl.BodySchema {
	s := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "option", LabelNames: []string{"name"}}}}
	for _, k := range space.Kinds {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: string(k)})
	}
	return s
}()

var optionSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "param", LabelNames: []string{"name"}}},
}

func kindNames() string {
	s := make([]string, len(space.Kinds))
	for i, k := range space.Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// evalSpace decodes a search_space block, from param blocks or nni_file.
func (l *loader) evalSpace(b *hcl.Block) {
	name := b.Labels[0]
	before := l.failures()
	content, diags := bodyContent(b.Body, spaceSchema)
	l.diags = append(l.diags, diags...)
	ss := &SearchSpace{Name: name, DeclRange: b.DefRange}
	a, hasFile := content.Attributes["nni_file"]
	switch {
	case hasFile && len(content.Blocks) > 0:
		l.errorf(a.Range.Ptr(), "Conflicting search space definition",
			"search_space %q has both nni_file and param blocks; use one or the other.", name)
		return
	case hasFile:
		path, ok := l.str(a)
		if !ok {
			return
		}
		abs := path
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(l.cfg.Dir, path)
		}
		err := l.confined(abs)
		var data []byte
		if err == nil {
			data, err = fsread.ReadFile(abs, fsread.MaxConfig)
		}
		if err != nil {
			l.errorf(a.Expr.Range().Ptr(), "Cannot read NNI search space file",
				"Reading %s (relative to the configuration directory): %s.", path, err)
			return
		}
		sp, err := space.ParseNNI(data)
		if err != nil {
			l.errorf(a.Expr.Range().Ptr(), "Invalid NNI search space file", "%s: %s.", path, err)
			return
		}
		if len(sp.Params) == 0 {
			l.errorf(a.Expr.Range().Ptr(), "Empty search space",
				"The NNI search space file %s has no parameters; add some, e.g. {\"lr\": {\"_type\": \"loguniform\", \"_value\": [1e-4, 0.1]}}.", path)
			return
		}
		ss.Space, ss.NNIFile = sp, abs
	case len(content.Blocks) == 0:
		l.errorf(b.DefRange.Ptr(), "Empty search space",
			"search_space %q has no params; add param blocks, e.g. param \"lr\" { loguniform = [1e-4, 1e-1] }, or nni_file = \"search_space.json\".", name)
		return
	default:
		ss.Space = l.decodeParams(content.Blocks)
	}
	if l.failures() > before {
		return
	}
	l.cfg.Spaces[name] = ss
	names := make([]cty.Value, len(ss.Space.Params))
	for i, p := range ss.Space.Params {
		names[i] = cty.StringVal(p.Name)
	}
	params := cty.ListValEmpty(cty.String)
	if len(names) > 0 {
		params = cty.ListVal(names)
	}
	l.spaceVals[name] = cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(name), "params": params})
}

// decodeParams decodes a list of param blocks (one level of a space).
func (l *loader) decodeParams(blocks hcl.Blocks) *space.Space {
	sp := &space.Space{}
	first := map[string]*hcl.Block{}
	for _, pb := range blocks {
		name := pb.Labels[0]
		if prev, dup := first[name]; dup {
			l.errorf(pb.DefRange.Ptr(), "Duplicate param",
				"param %q is declared twice; first at %s. Param names must be unique in a search space; rename or remove one.",
				name, posString(prev.DefRange))
			continue
		}
		first[name] = pb
		if name == "" {
			l.errorf(pb.LabelRanges[0].Ptr(), "Invalid param name", "A param needs a non-empty name.")
			continue
		}
		if p, ok := l.decodeParam(pb); ok {
			sp.Params = append(sp.Params, p)
		}
	}
	return sp
}

func (l *loader) decodeParam(pb *hcl.Block) (space.Param, bool) {
	name := pb.Labels[0]
	p := space.Param{Name: name}
	content, diags := bodyContent(pb.Body, paramSchema)
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() {
		return p, false
	}
	var dist *hcl.Attribute
	for _, a := range sortedAttrs(content.Attributes) {
		if dist != nil {
			l.errorf(a.Range.Ptr(), "Conflicting distributions",
				"param %q sets both %s and %s; a param has exactly one distribution.", name, dist.Name, a.Name)
			return p, false
		}
		dist = a
	}
	if dist != nil && len(content.Blocks) > 0 {
		l.errorf(content.Blocks[0].DefRange.Ptr(), "Conflicting distributions",
			"param %q sets %s and has option blocks; use option blocks only for a nested choice.", name, dist.Name)
		return p, false
	}
	if dist == nil && len(content.Blocks) == 0 {
		l.errorf(pb.DefRange.Ptr(), "Missing distribution",
			"param %q needs exactly one of %s (e.g. uniform = [0, 1]), or option blocks for a nested choice.", name, kindNames())
		return p, false
	}
	rng := pb.DefRange
	if dist == nil {
		// Nested choice: option "NAME" { param ... }.
		p.Kind = space.Choice
		seen := map[string]*hcl.Block{}
		ok := true
		for _, ob := range content.Blocks {
			oname := ob.Labels[0]
			if prev, dup := seen[oname]; dup {
				l.errorf(ob.DefRange.Ptr(), "Duplicate option",
					"option %q of param %q is declared twice; first at %s.", oname, name, posString(prev.DefRange))
				ok = false
				continue
			}
			seen[oname] = ob
			oc, diags := bodyContent(ob.Body, optionSchema)
			l.diags = append(l.diags, diags...)
			if diags.HasErrors() {
				ok = false
				continue
			}
			before := l.failures()
			sub := l.decodeParams(oc.Blocks)
			if l.failures() > before {
				ok = false
				continue
			}
			p.Options = append(p.Options, space.Option{Name: oname, Nested: sub})
		}
		if !ok {
			return p, false
		}
	} else {
		p.Kind = space.Kind(dist.Name)
		rng = dist.Range
		v, ok := l.value(dist.Expr)
		if !ok {
			return p, false
		}
		if v.IsNull() || !(v.Type().IsTupleType() || v.Type().IsListType() || v.Type().IsSetType()) {
			l.errorf(dist.Expr.Range().Ptr(), "Invalid param value", "%s of param %q must be a list, like %s.", dist.Name, name, example(p.Kind))
			return p, false
		}
		i, dupChoice := 0, false
		for it := v.ElementIterator(); it.Next(); i++ {
			_, ev := it.Element()
			if p.Kind == space.Choice {
				g, err := choiceValue(ev)
				if err != nil {
					l.errorf(dist.Expr.Range().Ptr(), "Invalid param value", "option %d of param %q: %s.", i+1, name, err)
					return p, false
				}
				if j := choiceIndex(p.Options, g); j >= 0 {
					at := dist.Expr.Range()
					if tc, ok := dist.Expr.(*hclsyntax.TupleConsExpr); ok && i < len(tc.Exprs) {
						at = tc.Exprs[i].Range()
					}
					hint := ""
					if ev.Type() == cty.Number {
						hint = ` (1 and 1.0 are the same number; 1 and "1" differ)`
					}
					l.errorf(&at, "Duplicate choice value",
						"choice of param %q lists %s twice: options %d and %d%s. Each value may be listed once (the grid tuner would run it twice, and the others draw it twice as often); remove one.",
						name, choiceText(ev), j+1, i+1, hint)
					dupChoice = true
				}
				p.Options = append(p.Options, space.Option{Value: g})
				continue
			}
			if ev.IsNull() || ev.Type() != cty.Number {
				l.errorf(dist.Expr.Range().Ptr(), "Invalid param value",
					"%s of param %q must be a list of numbers, like %s; item %d is not a number.", dist.Name, name, example(p.Kind), i+1)
				return p, false
			}
			f, _ := ev.AsBigFloat().Float64()
			p.Args = append(p.Args, f)
		}
		if dupChoice {
			return p, false
		}
	}
	// Nested spaces were validated block by block; check this level only.
	shallow := p
	shallow.Options = make([]space.Option, len(p.Options))
	for i, o := range p.Options {
		shallow.Options[i] = o
		if o.Nested != nil {
			shallow.Options[i].Nested = &space.Space{}
		}
	}
	if err := shallow.Validate(); err != nil {
		l.errorf(&rng, "Invalid param", "param %q: %s.", name, err)
		return p, false
	}
	return p, true
}

func choiceValue(v cty.Value) (any, error) {
	if v.IsNull() {
		return nil, fmt.Errorf("null is not an option")
	}
	switch v.Type() {
	case cty.String, cty.Number, cty.Bool:
		return toGo(v)
	}
	return nil, fmt.Errorf("options must be strings, numbers or bools, not %s; for structured options use option blocks", v.Type().FriendlyName())
}

// choiceIndex is the index of the first option whose value equals v
// (numbers by value, 1 and 1.0 alike; values of different types differ),
// or -1.
func choiceIndex(opts []space.Option, v any) int {
	for j, o := range opts {
		if o.Nested == nil && space.EqualValues(o.Value, v) {
			return j
		}
	}
	return -1
}

// choiceText writes a choice value as in HCL: a string quoted.
func choiceText(v cty.Value) string {
	switch v.Type() {
	case cty.String:
		return strconv.Quote(v.AsString())
	case cty.Number:
		return v.AsBigFloat().Text('g', -1)
	}
	if v.True() {
		return "true"
	}
	return "false"
}

func example(k space.Kind) string {
	switch k {
	case space.Choice:
		return `["a", "b"]`
	case space.Randint:
		return "[1, 10]"
	case space.Uniform:
		return "[0, 1]"
	case space.Quniform:
		return "[32, 256, 32]"
	case space.Loguniform:
		return "[1e-4, 1e-1]"
	case space.Qloguniform:
		return "[1, 1000, 1]"
	case space.Normal, space.Lognormal:
		return "[0, 1]"
	}
	return "[0, 1, 0.1]"
}
