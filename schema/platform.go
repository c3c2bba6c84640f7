package schema

import (
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/providers/registry"
)

// evalPlatform decodes a platform block through the registry: the kind's
// configuration struct says which attributes and nested blocks it takes
// and their types; unknown names get a did-you-mean, every mistake a
// source range; then the struct's Check, if it has one, checks the rest.
// A kind that takes any settings (not implemented yet) keeps them in Attrs
// only.
func (l *loader) evalPlatform(b *hcl.Block) {
	p := &Platform{Kind: b.Labels[0], Name: b.Labels[1], Attrs: map[string]any{}, DeclRange: b.DefRange}
	before, beforeErrs, beforeUnknown := l.failures(), l.errorCount(), l.incomplete
	body := b.Body.(*hclsyntax.Body)
	l.sensitiveAttrs = sensitiveAttrs(l.platforms.Lookup(p.Kind))
	ctyAttrs, _ := l.permissive(body)
	l.sensitiveAttrs = nil
	// Sensitive values (a password) are decoded as plain strings and
	// listed in p.Secrets; platform.KIND.NAME keeps them marked.
	plain := map[string]cty.Value{}
	for k, v := range ctyAttrs {
		p.Secrets = append(p.Secrets, sensitiveStrings(v)...)
		plain[k], _ = v.UnmarkDeep()
	}
	kind := l.platforms.Lookup(p.Kind)
	var cfg any
	// Names and the values that are known are checked even when some
	// value is unknown (validate without a variable's value); decoding
	// and the kind's own checks need every value.
	if kind != nil && kind.Config != nil && l.errorCount() == beforeErrs {
		cfg = kind.Config()
		s, err := decl.SchemaOf(cfg)
		if err != nil {
			l.errorf(b.DefRange.Ptr(), "Invalid platform kind", "platform kind %q: %s.", p.Kind, err)
			return
		}
		w := decl.NewWhere(p.Name, b.DefRange)
		l.checkBody(body, plain, s, "platform \""+p.Kind+"\"", "a "+p.Kind+" platform", "", w)
		if l.incomplete > beforeUnknown {
			return
		}
		// Decode what converts (checkBody reported what does not) and
		// let the kind check the rest, so one run shows every mistake.
		if err := s.Decode(plain, cfg, ParseDuration); err != nil && l.failures() == before {
			l.errorf(b.DefRange.Ptr(), "Invalid platform setting", "%s.", err)
		}
		if c, ok := cfg.(decl.Checker); ok {
			l.diags = append(l.diags, c.Check(w)...)
		}
	}
	if l.failures() > before {
		return
	}
	for k, v := range plain {
		g, err := toGo(v)
		if err != nil {
			l.errorf(b.DefRange.Ptr(), "Invalid platform setting", "%s: %s.", k, err)
			return
		}
		p.Attrs[k] = g
	}
	p.Config = cfg
	l.cfg.Platforms[p.Key()] = p
	l.platVals[p.Key()] = platformValue(p, ctyAttrs)
}

// checkBody checks the attributes and nested blocks of body against s
// (vals holds their values, as permissive evaluated them) and records
// their ranges in w under prefix. name is how an attribute's message
// calls the body ("platform \"kubernetes\"", "resources"), where how a
// block's does ("a kubernetes platform").
func (l *loader) checkBody(body *hclsyntax.Body, vals map[string]cty.Value, s *decl.Schema, name, where, prefix string, w *decl.Where) {
	l.checkAttrs(body, vals, s, name, prefix, w)
	seen := map[string]hcl.Range{}
	index := map[string]int{}
	for _, blk := range body.Blocks {
		bs := s.BlockNamed(blk.Type)
		r := blk.DefRange()
		if bs == nil {
			if len(s.Blocks) == 0 {
				l.errorf(&r, "Unsupported block type", "A %s block has no nested blocks.", strings.TrimPrefix(where, "a "))
				continue
			}
			l.errorf(&r, "Unsupported block type", "Blocks of type %q are not expected in %s; it takes %s.%s",
				blk.Type, where, joinQuoted(s.BlockNames()), didyoumean.Sentence(blk.Type, s.BlockNames(), "%q"))
			continue
		}
		i := index[blk.Type]
		index[blk.Type]++
		sub := bs.Schema
		switch {
		case sub.Label == "" && len(blk.Labels) > 0:
			l.errorf(&r, "Extraneous label", "A %s block takes no labels.", blk.Type)
		case sub.Label != "" && len(blk.Labels) != 1:
			l.errorf(&r, "Missing name", "A %s block takes one label, its %s: %s \"worker\" { ... }.", blk.Type, sub.Label, blk.Type)
		}
		if first, dup := seen[blk.Type]; dup && !bs.Many {
			l.errorf(&r, "Duplicate block", "Only one %s block is allowed; the first is at %s.", blk.Type, first.String())
			continue
		}
		seen[blk.Type] = r
		path := prefix + blk.Type + "." + strconv.Itoa(i)
		w.Set(path, r)
		subVals := map[string]cty.Value{}
		if t, ok := vals[blk.Type]; ok && t.Type().IsTupleType() && t.LengthInt() > i {
			v := t.Index(cty.NumberIntVal(int64(i)))
			if v.Type().IsObjectType() {
				for k := range v.Type().AttributeTypes() {
					subVals[k] = v.GetAttr(k)
				}
			}
		}
		l.checkBody(blk.Body, subVals, sub, blk.Type, "a "+blk.Type+" block", path+".", w)
		if req := sub.RequiredAttrs(); len(req) > 0 {
			for _, n := range req {
				if _, ok := blk.Body.Attributes[n]; !ok {
					l.errorf(&r, "Missing required argument", "An %s block needs %q (%s).", blk.Type, n, joinAnd(req))
				}
			}
		}
	}
	for _, bs := range s.Blocks {
		if bs.Required && index[bs.Name] == 0 {
			l.errorf(w.Range(strings.TrimSuffix(prefix, ".")), "Missing required block", "%s needs a %s block.", where, bs.Name)
		}
	}
}

// checkAttrs checks the attributes of body: known names, types, whole
// numbers and their least value.
func (l *loader) checkAttrs(body *hclsyntax.Body, vals map[string]cty.Value, s *decl.Schema, where, prefix string, w *decl.Where) {
	names := s.AttrNames()
	attrs := make([]*hclsyntax.Attribute, 0, len(body.Attributes))
	for _, a := range body.Attributes {
		attrs = append(attrs, a)
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].SrcRange.Start.Byte < attrs[j].SrcRange.Start.Byte })
	for _, a := range attrs {
		r := a.NameRange
		at := s.AttrNamed(a.Name)
		if at == nil {
			hint := didyoumean.Sentence(a.Name, append(append([]string{}, names...), s.BlockNames()...), "%q")
			l.errorf(&r, "Unsupported argument", "An argument named %q is not expected in %s; it takes %s.%s", a.Name, where, joinQuoted(names), hint)
			continue
		}
		w.Set(prefix+a.Name, a.Expr.Range())
		v, ok := vals[a.Name]
		if !ok {
			continue
		}
		if p := at.Check(v, a.Name, ParseDuration); p != nil {
			l.errorf(a.Expr.Range().Ptr(), p.Summary, "%s", p.Detail)
		}
	}
	for _, n := range s.RequiredAttrs() {
		if _, ok := body.Attributes[n]; !ok && prefix == "" {
			l.errorf(w.Range(""), "Missing required argument", "%s needs %q.", where, n)
		}
	}
}

// joinAnd is "a, b and c".
func joinAnd(s []string) string {
	if len(s) < 2 {
		return joinQuoted(s)
	}
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " and "
		default:
			out += ", "
		}
		out += x
	}
	return out
}

func joinQuoted(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += `"` + x + `"`
	}
	return out
}

// platformValue is what platform.KIND.NAME evaluates to: the attributes
// plus kind and name.
func platformValue(p *Platform, attrs map[string]cty.Value) cty.Value {
	m := map[string]cty.Value{}
	for k, v := range attrs {
		m[k] = v
	}
	m["kind"] = cty.StringVal(p.Kind)
	m["name"] = cty.StringVal(p.Name)
	return cty.ObjectVal(m)
}

// permissive evaluates every attribute and nested block of a body; nested
// blocks become a tuple of objects under their type name.
func (l *loader) permissive(body *hclsyntax.Body) (map[string]cty.Value, bool) {
	out := map[string]cty.Value{}
	ok := true
	attrs := make([]*hclsyntax.Attribute, 0, len(body.Attributes))
	for _, a := range body.Attributes {
		attrs = append(attrs, a)
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].SrcRange.Start.Byte < attrs[j].SrcRange.Start.Byte })
	for _, a := range attrs {
		var v cty.Value
		var good bool
		if a.Name == "password" || l.sensitiveAttrs[a.Name] {
			l.withSensitive(func() { v, good = l.value(a.Expr) })
		} else {
			v, good = l.value(a.Expr)
		}
		if !good {
			ok = false
			continue
		}
		out[a.Name] = v
	}
	blocks := map[string][]cty.Value{}
	var types []string
	for _, blk := range body.Blocks {
		if _, clash := body.Attributes[blk.Type]; clash {
			r := blk.DefRange()
			l.errorf(&r, "Duplicate argument", "%q is set both as an argument and as a block; use one form.", blk.Type)
			ok = false
			continue
		}
		sub, good := l.permissive(blk.Body)
		if !good {
			ok = false
			continue
		}
		if len(blk.Labels) > 0 {
			labels := make([]cty.Value, len(blk.Labels))
			for i, s := range blk.Labels {
				labels[i] = cty.StringVal(s)
			}
			sub["_labels"] = cty.TupleVal(labels)
		}
		if _, seen := blocks[blk.Type]; !seen {
			types = append(types, blk.Type)
		}
		blocks[blk.Type] = append(blocks[blk.Type], cty.ObjectVal(sub))
	}
	for _, t := range types {
		out[t] = cty.TupleVal(blocks[t])
	}
	return out, ok
}

// sensitiveAttrs names the attributes of kind's blocks that may hold a
// sensitive value (registry tag sensitive:"true").
func sensitiveAttrs(kind *registry.Kind) map[string]bool {
	if kind == nil || kind.Config == nil {
		return nil
	}
	s, err := decl.SchemaOf(kind.Config())
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, a := range s.Attrs {
		if a.Sensitive {
			out[a.Name] = true
		}
	}
	return out
}
