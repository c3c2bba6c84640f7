package schema

import (
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// kubernetesPlatform lists what a platform "kubernetes" block may hold:
// attributes with the type each must convert to, and nested blocks (at
// most one each) with theirs. Values stay in Platform.Attrs for
// providers/kubernetes to decode; this only checks them, with the source
// range of each mistake.
var kubernetesPlatform = struct {
	attrs  map[string]kubeType
	blocks map[string]map[string]kubeType
}{
	attrs: map[string]kubeType{
		"kubeconfig":         {cty.String, "a string (a kubeconfig path)"},
		"context":            {cty.String, "a string (a kubeconfig context)"},
		"namespace":          {cty.String, "a string"},
		"image":              {cty.String, "a string (a container image)"},
		"image_pull_secrets": {cty.List(cty.String), "a list of secret names"},
		"service_account":    {cty.String, "a string"},
		"node_selector":      {cty.Map(cty.String), "a map of label values"},
		"tolerations":        {cty.DynamicPseudoType, "a list of objects {key, operator, value, effect, toleration_seconds}"},
		"code_dir":           {cty.String, "a string (where the code is in the image)"},
		"metrics_interval":   {cty.String, `a duration string ("5s")`},
	},
	blocks: map[string]map[string]kubeType{
		"resources": {
			"cpu":    {cty.DynamicPseudoType, `a number or a quantity string ("500m")`},
			"memory": {cty.String, `a quantity string ("8Gi")`},
			"gpu":    {cty.Number, "a whole number"},
		},
		"nfs": {
			"server":     {cty.String, "a string"},
			"path":       {cty.String, "a string"},
			"mount_path": {cty.String, "a string"},
			"local_path": {cty.String, "a string (where the share is mounted on this machine)"},
		},
		"checkpoint": {
			"storage_class": {cty.String, "a string"},
			"size":          {cty.String, `a quantity string ("1Gi")`},
		},
	},
}

type kubeType struct {
	ty   cty.Type
	what string
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkKubernetesPlatform reports unknown settings, repeated blocks and
// values of the wrong type in a platform "kubernetes" block.
func (l *loader) checkKubernetesPlatform(body *hclsyntax.Body, vals map[string]cty.Value) {
	l.checkPlatformBody(body, vals, "kubernetes", kubernetesPlatform.attrs, commonBlocks())
}

// commonBlocks are the nested blocks of every Kubernetes-based platform.
func commonBlocks() map[string]*blockSchema {
	out := map[string]*blockSchema{}
	for k, attrs := range kubernetesPlatform.blocks {
		out[k] = &blockSchema{attrs: attrs}
	}
	out["nfs"].required = []string{"server", "path", "mount_path"}
	return out
}

// blockSchema is what a nested block of a Kubernetes-based platform may
// hold.
type blockSchema struct {
	attrs    map[string]kubeType
	blocks   map[string]*blockSchema
	label    string   // the meaning of its one label ("" = no label)
	many     bool     // may be repeated
	required []string // required attributes
}

// checkPlatformBody checks a platform block of a Kubernetes-based kind
// against its attributes and nested blocks.
func (l *loader) checkPlatformBody(body *hclsyntax.Body, vals map[string]cty.Value, kind string, attrs map[string]kubeType, blocks map[string]*blockSchema) {
	l.checkKubeAttrs(body, vals, attrs, "platform \""+kind+"\"", keysOf(blocks))
	l.checkBlocks(body, vals, blocks, "a "+kind+" platform")
}

// checkBlocks checks the nested blocks of body (vals holds their values,
// a tuple of objects per block type, as permissive makes them).
func (l *loader) checkBlocks(body *hclsyntax.Body, vals map[string]cty.Value, blocks map[string]*blockSchema, where string) {
	seen := map[string]hcl.Range{}
	index := map[string]int{}
	for _, blk := range body.Blocks {
		schema, ok := blocks[blk.Type]
		r := blk.DefRange()
		if !ok {
			l.errorf(&r, "Unsupported block type", "Blocks of type %q are not expected in %s; it takes %s.%s",
				blk.Type, where, joinQuoted(keysOf(blocks)), didYouMean(blk.Type, keysOf(blocks), "%q"))
			continue
		}
		i := index[blk.Type]
		index[blk.Type]++
		switch {
		case schema.label == "" && len(blk.Labels) > 0:
			l.errorf(&r, "Extraneous label", "A %s block takes no labels.", blk.Type)
		case schema.label != "" && len(blk.Labels) != 1:
			l.errorf(&r, "Missing name", "A %s block takes one label, its %s: %s \"worker\" { ... }.", blk.Type, schema.label, blk.Type)
		}
		if first, dup := seen[blk.Type]; dup && !schema.many {
			l.errorf(&r, "Duplicate block", "Only one %s block is allowed; the first is at %s.", blk.Type, first.String())
			continue
		}
		seen[blk.Type] = r
		sub := map[string]cty.Value{}
		if t, ok := vals[blk.Type]; ok && t.Type().IsTupleType() && t.LengthInt() > i {
			v := t.Index(cty.NumberIntVal(int64(i)))
			if v.Type().IsObjectType() {
				for k := range v.Type().AttributeTypes() {
					sub[k] = v.GetAttr(k)
				}
			}
		}
		l.checkKubeAttrs(blk.Body, sub, schema.attrs, blk.Type, keysOf(schema.blocks))
		if len(schema.blocks) == 0 {
			for _, inner := range blk.Body.Blocks {
				ir := inner.DefRange()
				l.errorf(&ir, "Unsupported block type", "A %s block has no nested blocks.", blk.Type)
			}
		} else {
			l.checkBlocks(blk.Body, sub, schema.blocks, "a "+blk.Type+" block")
		}
		for _, req := range schema.required {
			if _, ok := blk.Body.Attributes[req]; !ok {
				l.errorf(&r, "Missing required argument", "An %s block needs %q (%s).", blk.Type, req, joinAnd(schema.required))
			}
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

func (l *loader) checkKubeAttrs(body *hclsyntax.Body, vals map[string]cty.Value, schema map[string]kubeType, where string, blocks []string) {
	names := keysOf(schema)
	for _, a := range body.Attributes {
		r := a.NameRange
		t, ok := schema[a.Name]
		if !ok {
			hint := didYouMean(a.Name, append(append([]string{}, names...), blocks...), "%q")
			l.errorf(&r, "Unsupported argument", "An argument named %q is not expected in %s; it takes %s.%s", a.Name, where, joinQuoted(names), hint)
			continue
		}
		v, ok := vals[a.Name]
		if !ok || !v.IsKnown() || v.IsNull() || t.ty == cty.DynamicPseudoType {
			continue
		}
		cv, err := convert.Convert(v, t.ty)
		if err != nil {
			l.errorf(a.Expr.Range().Ptr(), "Incorrect attribute value type", "Inappropriate value for %s: %s is required.", a.Name, t.what)
			continue
		}
		if strings.HasSuffix(a.Name, "_interval") {
			if d, err := time.ParseDuration(cv.AsString()); err != nil || d < 0 {
				l.errorf(a.Expr.Range().Ptr(), "Invalid duration", "%s = %q is not a duration: write it like \"5s\" or \"1m30s\".", a.Name, cv.AsString())
			}
		}
	}
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
