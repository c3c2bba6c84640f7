package schema

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// The platforms that create one custom resource per trial take the
// kubernetes platform's settings plus their own (NNI's field names in
// snake_case): kubeflow (TFJob/PyTorchJob) replica types with replicas,
// adaptdl's adaptive scaling, frameworkcontroller's task roles with
// task_number and their framework attempt completion policy.

// roleAttrs are the settings of a kubeflow replica type or a
// frameworkcontroller task role; count is "replicas" or "task_number".
func roleAttrs(count string) map[string]kubeType {
	return map[string]kubeType{
		count:     {cty.Number, "a whole number >= 1"},
		"cpu":     {cty.DynamicPseudoType, `a number or a quantity string ("500m")`},
		"memory":  {cty.String, `a quantity string ("8Gi")`},
		"gpu":     {cty.Number, "a whole number"},
		"image":   {cty.String, "a string (a container image)"},
		"command": {cty.String, "a string (a shell command line run instead of the trial's command)"},
	}
}

// crdPlatform is the schema of one CRD kind.
func crdPlatform(kind string) (map[string]kubeType, map[string]*blockSchema) {
	attrs := map[string]kubeType{}
	for k, v := range kubernetesPlatform.attrs {
		attrs[k] = v
	}
	blocks := commonBlocks()
	switch kind {
	case "kubeflow":
		attrs["operator"] = kubeType{cty.String, `"tfjob" or "pytorchjob"`}
		for _, r := range []string{"worker", "ps", "master"} {
			blocks[r] = &blockSchema{attrs: roleAttrs("replicas")}
		}
	case "adaptdl":
		attrs["adaptive"] = kubeType{cty.Bool, "true or false"}
		attrs["min_replicas"] = kubeType{cty.Number, "a whole number >= 0"}
		attrs["max_replicas"] = kubeType{cty.Number, "a whole number >= 1"}
	case "frameworkcontroller":
		blocks["task_role"] = &blockSchema{attrs: roleAttrs("task_number"), label: "name", many: true,
			blocks: map[string]*blockSchema{"framework_attempt_completion_policy": {attrs: map[string]kubeType{
				"min_failed_task_count":    {cty.Number, "a whole number >= -1 (-1: off)"},
				"min_succeeded_task_count": {cty.Number, "a whole number >= -1 (-1: off)"},
			}}}}
	}
	return attrs, blocks
}

// checkCRDPlatform checks a platform "kubeflow", "adaptdl" or
// "frameworkcontroller" block: unknown settings, types, and what each
// kind needs (kubeflow's operator and its roles, a task role).
func (l *loader) checkCRDPlatform(kind string, def hcl.Range, body *hclsyntax.Body, vals map[string]cty.Value) {
	attrs, blocks := crdPlatform(kind)
	l.checkPlatformBody(body, vals, kind, attrs, blocks)
	declRange := func() *hcl.Range { return &def }
	whole := func(a *hclsyntax.Attribute, v cty.Value, min int64, what string) {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
			return
		}
		if i, ok := wholeNumber(v); !ok || i < min {
			l.errorf(a.Expr.Range().Ptr(), "Invalid value", "%s must be %s.", a.Name, what)
		}
	}
	// attrVal is an attribute of b and its value in vals (as permissive
	// evaluated it).
	attrVal := func(b *hclsyntax.Body, vals map[string]cty.Value, name string) (*hclsyntax.Attribute, cty.Value) {
		a, ok := b.Attributes[name]
		v, ok2 := vals[name]
		if !ok || !ok2 {
			return nil, cty.NilVal
		}
		return a, v
	}
	// blockVals are the values of the i-th block of type typ.
	blockVals := func(vals map[string]cty.Value, typ string, i int) map[string]cty.Value {
		out := map[string]cty.Value{}
		if t, ok := vals[typ]; ok && t.Type().IsTupleType() && t.LengthInt() > i {
			v := t.Index(cty.NumberIntVal(int64(i)))
			if v.Type().IsObjectType() {
				for k := range v.Type().AttributeTypes() {
					out[k] = v.GetAttr(k)
				}
			}
		}
		return out
	}
	index := map[string]int{}
	// checkRole checks the numbers of a role block and returns its values.
	checkRole := func(blk *hclsyntax.Block, count string) map[string]cty.Value {
		bv := blockVals(vals, blk.Type, index[blk.Type])
		index[blk.Type]++
		if a, v := attrVal(blk.Body, bv, count); a != nil {
			whole(a, v, 1, "a whole number >= 1")
		}
		if a, v := attrVal(blk.Body, bv, "gpu"); a != nil {
			whole(a, v, 0, "a whole number >= 0")
		}
		for j, inner := range blk.Body.Blocks {
			iv := blockVals(bv, inner.Type, j)
			for _, n := range []string{"min_failed_task_count", "min_succeeded_task_count"} {
				if a, v := attrVal(inner.Body, iv, n); a != nil {
					whole(a, v, -1, "a whole number >= -1 (-1: off)")
				}
			}
		}
		return bv
	}
	switch kind {
	case "kubeflow":
		op := ""
		if a, v := attrVal(body, vals, "operator"); a != nil && v.IsKnown() && !v.IsNull() {
			if sv, err := convert.Convert(v, cty.String); err == nil {
				op = sv.AsString()
				if op != "tfjob" && op != "pytorchjob" {
					l.errorf(a.Expr.Range().Ptr(), "Invalid value", `operator = %q: the kubeflow platform runs "tfjob" (TFJob) or "pytorchjob" (PyTorchJob).%s`,
						op, didYouMean(op, []string{"tfjob", "pytorchjob"}, "%q"))
				}
			}
		} else if _, ok := body.Attributes["operator"]; !ok {
			l.errorf(declRange(), "Missing required argument", `A kubeflow platform needs operator = "tfjob" or "pytorchjob".`)
		}
		roles := map[string]bool{}
		for _, blk := range body.Blocks {
			r := blk.DefRange()
			switch blk.Type {
			case "worker", "ps", "master":
				roles[blk.Type] = true
			default:
				continue
			}
			bv := checkRole(blk, "replicas")
			switch {
			case blk.Type == "ps" && op == "pytorchjob":
				l.errorf(&r, "Unsupported block type", `A ps block is for operator "tfjob"; a PyTorchJob has master and worker.`)
			case blk.Type == "master" && op == "tfjob":
				l.errorf(&r, "Unsupported block type", `A master block is for operator "pytorchjob"; a TFJob has worker and ps.`)
			case blk.Type == "master":
				if a, v := attrVal(blk.Body, bv, "replicas"); a != nil && v.IsKnown() && v.Type() == cty.Number {
					if i, ok := wholeNumber(v); ok && i != 1 {
						l.errorf(a.Expr.Range().Ptr(), "Invalid value", "master.replicas must be 1: a PyTorchJob has one master.")
					}
				}
			}
		}
		if !roles["worker"] && !(op == "pytorchjob" && roles["master"]) {
			l.errorf(declRange(), "Missing required block", `A kubeflow platform needs a worker block: worker { replicas = 1 }.`)
		}
	case "adaptdl":
		for _, n := range []string{"min_replicas", "max_replicas"} {
			if a, v := attrVal(body, vals, n); a != nil {
				min := int64(0)
				if n == "max_replicas" {
					min = 1
				}
				whole(a, v, min, attrs[n].what)
			}
		}
	case "frameworkcontroller":
		seen := map[string]hcl.Range{}
		for _, blk := range body.Blocks {
			if blk.Type != "task_role" {
				continue
			}
			checkRole(blk, "task_number")
			r := blk.DefRange()
			if len(blk.Labels) == 1 {
				if first, dup := seen[blk.Labels[0]]; dup {
					l.errorf(&r, "Duplicate block", "task_role %q is declared twice; the first is at %s.", blk.Labels[0], first.String())
				}
				seen[blk.Labels[0]] = r
			}
		}
		if len(seen) == 0 {
			l.errorf(declRange(), "Missing required block", `A frameworkcontroller platform needs a task_role block: task_role "worker" { task_number = 1 }.`)
		}
	}
}
