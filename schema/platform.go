package schema

import (
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

var localPlatformSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "gpu_indices"}, {Name: "max_trials_per_gpu"}},
}

// evalPlatform decodes a platform block. The local kind is checked
// strictly; other kinds keep every attribute (and nested blocks, as
// []map[string]any under the block type, labels under "_labels") in Attrs
// for their provider to decode.
func (l *loader) evalPlatform(b *hcl.Block) {
	p := &Platform{Kind: b.Labels[0], Name: b.Labels[1], Attrs: map[string]any{}, DeclRange: b.DefRange}
	before := l.failures()
	ctyAttrs := map[string]cty.Value{}
	if p.Kind == "local" {
		p.MaxTrialsPerGPU = 1
		content, diags := b.Body.Content(localPlatformSchema)
		l.diags = append(l.diags, diags...)
		if a, ok := content.Attributes["gpu_indices"]; ok {
			if v, ok := l.typed(a, cty.List(cty.Number), "a list of GPU indices (whole numbers)"); ok {
				p.GPUIndices = []int{}
				seen := map[int64]bool{}
				for it := v.ElementIterator(); it.Next(); {
					_, ev := it.Element()
					i, whole := wholeNumber(ev)
					if !whole || i < 0 {
						l.errorf(a.Expr.Range().Ptr(), "Invalid value", "gpu_indices must hold whole numbers >= 0 (GPU indices as nvidia-smi shows them).")
						break
					}
					if seen[i] {
						l.errorf(a.Expr.Range().Ptr(), "Invalid value", "gpu_indices lists GPU %d twice.", i)
						break
					}
					seen[i] = true
					p.GPUIndices = append(p.GPUIndices, int(i))
				}
				ctyAttrs["gpu_indices"] = v
			}
		}
		if a, ok := content.Attributes["max_trials_per_gpu"]; ok {
			if i, ok := l.integer(a, 1); ok {
				p.MaxTrialsPerGPU = int(i)
				ctyAttrs["max_trials_per_gpu"] = cty.NumberIntVal(i)
			}
		}
	} else {
		ctyAttrs, _ = l.permissive(b.Body.(*hclsyntax.Body))
		if p.Kind == "remote" {
			l.decodeRemote(b, p)
		}
		switch p.Kind {
		case "kubernetes":
			l.checkKubernetesPlatform(b.Body.(*hclsyntax.Body), ctyAttrs)
		case "kubeflow", "adaptdl", "frameworkcontroller":
			l.checkCRDPlatform(p.Kind, b.DefRange, b.Body.(*hclsyntax.Body), ctyAttrs)
		}
	}
	if l.failures() > before {
		return
	}
	for k, v := range ctyAttrs {
		v, _ = v.UnmarkDeep() // a password: the remote platform keeps it to itself
		g, err := toGo(v)
		if err != nil {
			l.errorf(b.DefRange.Ptr(), "Invalid platform setting", "%s: %s.", k, err)
			return
		}
		p.Attrs[k] = g
	}
	l.cfg.Platforms[p.Key()] = p
	l.platVals[p.Key()] = platformValue(p, ctyAttrs)
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
		if a.Name == "password" {
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
