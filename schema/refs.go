package schema

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/trialform/trialform/internal/didyoumean"
)

// node is one thing that is evaluated as a whole: a local value, a
// platform, a search space or an experiment. Its references to other nodes
// order the evaluation.
type node struct {
	id    string // "local.x", "platform.local.default", "search_space.svm", "experiment.svm"
	deps  []dep
	state int // 0 not visited, 1 on the stack, 2 done
	eval  func()
}

type dep struct {
	id  string
	rng hcl.Range // the reference
}

type rangeKey struct {
	file string
	byte int
}

func keyOf(r hcl.Range) rangeKey { return rangeKey{r.Filename, r.Start.Byte} }

func (l *loader) addNode(n *node) {
	l.nodes[n.id] = n
	l.nodeOrder = append(l.nodeOrder, n)
}

// buildGraph makes a node per local, platform, search space and
// experiment, checks every reference in their expressions and records the
// dependencies.
func (l *loader) buildGraph() {
	for _, name := range l.localNames {
		a := l.localAttrs[name]
		n := &node{id: "local." + name}
		n.eval = func() { l.evalLocal(name, a) }
		l.addNode(n)
		l.collectRefs(n, []hclsyntax.Expression{a.Expr.(hclsyntax.Expression)})
	}
	for _, key := range l.platNames {
		b := l.platDecls[key]
		n := &node{id: "platform." + key}
		n.eval = func() { l.evalPlatform(b) }
		l.addNode(n)
		l.collectRefs(n, bodyExprs(b.Body.(*hclsyntax.Body)))
	}
	for _, name := range l.spaceNames {
		b := l.spaceDecls[name]
		n := &node{id: "search_space." + name}
		n.eval = func() { l.evalSpace(b) }
		l.addNode(n)
		l.collectRefs(n, bodyExprs(b.Body.(*hclsyntax.Body)))
	}
	for _, name := range l.expNames {
		b := l.expDecls[name]
		body := b.Body.(*hclsyntax.Body)
		n := &node{id: "experiment." + name}
		n.eval = func() { l.evalExperiment(b) }
		l.addNode(n)
		l.markTemplateParams(body)
		l.collectRefs(n, bodyExprs(body))
		if _, ok := body.Attributes["platform"]; !ok {
			n.deps = append(n.deps, dep{id: "platform.local.default", rng: b.DefRange})
		}
	}
}

// bodyExprs lists every expression of a body, nested blocks included, in
// source order.
func bodyExprs(b *hclsyntax.Body) []hclsyntax.Expression {
	var out []hclsyntax.Expression
	attrs := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		attrs = append(attrs, a)
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].SrcRange.Start.Byte < attrs[j].SrcRange.Start.Byte })
	for _, a := range attrs {
		out = append(out, a.Expr)
	}
	for _, blk := range b.Blocks {
		out = append(out, bodyExprs(blk.Body)...)
	}
	return out
}

// markTemplateParams records the ${param.NAME} parts of trial.command and
// trial.args, the only places a param may be used.
func (l *loader) markTemplateParams(body *hclsyntax.Body) {
	for _, blk := range body.Blocks {
		if blk.Type != "trial" {
			continue
		}
		var items []hclsyntax.Expression
		if a, ok := blk.Body.Attributes["command"]; ok {
			items = append(items, a.Expr)
		}
		if a, ok := blk.Body.Attributes["args"]; ok {
			if tup, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
				items = append(items, tup.Exprs...)
			}
		}
		// An attribute the trial block does not have (comand = "...") is
		// refused as unsupported, with a suggestion; its params are not
		// also called misused.
		for name, a := range blk.Body.Attributes {
			if !hasAttr(trialSchema, name) {
				items = append(items, a.Expr)
			}
		}
		for _, it := range items {
			for _, part := range templateParts(it) {
				if _, rng, ok := paramPart(part); ok {
					l.okParams[keyOf(rng)] = true
				}
			}
		}
	}
}

// templateParts splits a string template into the parts that are
// evaluated one by one; anything else is one part.
func templateParts(e hclsyntax.Expression) []hclsyntax.Expression {
	switch t := e.(type) {
	case *hclsyntax.TemplateExpr:
		return t.Parts
	case *hclsyntax.TemplateWrapExpr:
		return []hclsyntax.Expression{t.Wrapped}
	}
	return []hclsyntax.Expression{e}
}

// paramPart reports whether a template part is exactly param.NAME.
func paramPart(e hclsyntax.Expression) (string, hcl.Range, bool) {
	st, ok := e.(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(st.Traversal) != 2 || st.Traversal.RootName() != "param" {
		return "", hcl.Range{}, false
	}
	attr, ok := st.Traversal[1].(hcl.TraverseAttr)
	if !ok {
		return "", hcl.Range{}, false
	}
	return attr.Name, st.SrcRange, true
}

// stepName returns the name at step i of a traversal: ok=false when there
// is no such step, valid=false when the step is not a name.
func stepName(tr hcl.Traversal, i int) (name string, ok, valid bool) {
	if len(tr) <= i {
		return "", false, true
	}
	switch s := tr[i].(type) {
	case hcl.TraverseAttr:
		return s.Name, true, true
	case hcl.TraverseIndex:
		if s.Key.IsKnown() && !s.Key.IsNull() && s.Key.Type() == cty.String {
			return s.Key.AsString(), true, true
		}
	}
	return "", true, false
}

func (l *loader) badRef(tr hcl.Traversal, summary, format string, args ...any) {
	rng := tr.SourceRange()
	l.badRefs = append(l.badRefs, rng)
	l.errorf(&rng, summary, format, args...)
}

// collectRefs checks every reference of exprs and adds node dependencies.
func (l *loader) collectRefs(n *node, exprs []hclsyntax.Expression) {
	for _, e := range exprs {
		for _, tr := range hclsyntax.Variables(e) {
			l.checkRef(n, tr)
		}
	}
}

func (l *loader) checkRef(n *node, tr hcl.Traversal) {
	rng := tr.SourceRange()
	addDep := func(id string) { n.deps = append(n.deps, dep{id: id, rng: rng}) }
	root := tr.RootName()
	switch root {
	case "param":
		if !l.okParams[keyOf(rng)] {
			l.badRef(tr, "Invalid use of param",
				"param values can only be used as ${param.NAME} in trial.command or trial.args, as a whole interpolation (not inside functions, conditionals or other attributes).")
		}
	case "var", "local", "search_space", "experiment":
		name, has, valid := stepName(tr, 1)
		if !valid {
			l.badRef(tr, "Invalid reference", "A %s reference needs a name after the dot, like %s.NAME.", root, root)
			return
		}
		var names []string
		what := map[string]string{"var": "input variable", "local": "local value", "search_space": "search space", "experiment": "experiment"}[root]
		switch root {
		case "var":
			names = l.varNames
		case "local":
			names = l.localNames
		case "search_space":
			names = l.spaceNames
		case "experiment":
			names = l.expNames
		}
		if !has {
			if root != "var" {
				for _, nm := range names {
					addDep(root + "." + nm)
				}
			}
			return
		}
		found := false
		for _, nm := range names {
			found = found || nm == name
		}
		if !found {
			decl := map[string]string{
				"var":          fmt.Sprintf("Declare it with a variable %q {} block.", name),
				"local":        "Declare it in a locals block.",
				"search_space": fmt.Sprintf("Declare it with a search_space %q block.", name),
				"experiment":   fmt.Sprintf("Declare it with an experiment %q block.", name),
			}[root]
			l.badRef(tr, "Reference to undeclared "+what,
				"No %s named %q is declared.%s %s", what, name, didyoumean.Sentence(name, names, root+".%s"), decl)
			return
		}
		if root != "var" {
			addDep(root + "." + name)
		}
	case "platform":
		kind, has, valid := stepName(tr, 1)
		if !valid {
			l.badRef(tr, "Invalid reference", "A platform reference looks like platform.KIND.NAME, e.g. platform.local.default.")
			return
		}
		var all []string // "KIND.NAME", the implicit local.default included
		seen := map[string]bool{}
		for _, key := range append(append([]string{}, l.platNames...), "local.default") {
			if !seen[key] {
				seen[key] = true
				all = append(all, key)
			}
		}
		if !has {
			for _, key := range all {
				addDep("platform." + key)
			}
			return
		}
		name, hasName, valid := stepName(tr, 2)
		if !valid {
			l.badRef(tr, "Invalid reference", "A platform reference looks like platform.KIND.NAME, e.g. platform.local.default.")
			return
		}
		var ofKind []string
		for _, key := range all {
			if strings.HasPrefix(key, kind+".") {
				ofKind = append(ofKind, key)
			}
		}
		if !hasName {
			if len(ofKind) == 0 {
				l.badRef(tr, "Reference to undeclared platform", "No platform of kind %q is declared; declared platforms: %s.",
					kind, "platform."+strings.Join(all, ", platform."))
				return
			}
			for _, key := range ofKind {
				addDep("platform." + key)
			}
			return
		}
		key := kind + "." + name
		if !seen[key] {
			l.badRef(tr, "Reference to undeclared platform",
				"No platform %q %q is declared.%s Declared platforms: %s.", kind, name,
				didyoumean.Sentence(key, all, "platform.%s"), "platform."+strings.Join(all, ", platform."))
			return
		}
		addDep("platform." + key)
	}
	// Other roots are reported by HCL itself when the expression is
	// evaluated ("Unknown variable").
}

// evaluate visits every node depth-first in declaration order, so each is
// evaluated after what it references; reference cycles are errors.
func (l *loader) evaluate() {
	for _, n := range l.nodeOrder {
		l.visit(n, nil)
	}
}

func (l *loader) visit(n *node, stack []*node) {
	if n.state != 0 {
		return
	}
	n.state = 1
	stack = append(stack, n)
	for _, d := range n.deps {
		dn := l.nodes[d.id]
		if dn == nil {
			continue // the implicit platform, or a declaration that was rejected
		}
		if dn.state == 1 {
			var path []string
			for i := len(stack) - 1; i >= 0; i-- {
				path = append([]string{stack[i].id}, path...)
				if stack[i] == dn {
					break
				}
			}
			path = append(path, dn.id)
			r := d.rng
			l.errorf(&r, "Reference cycle",
				"These references form a cycle: %s. Replace one of the references with a value.", strings.Join(path, " -> "))
			continue
		}
		l.visit(dn, stack)
	}
	l.scope = n
	l.invalidate()
	n.eval()
	l.scope = nil
	l.invalidate()
	n.state = 2
}

func (l *loader) evalLocal(name string, a *hcl.Attribute) {
	// A local keeps the sensitivity of what it is computed from.
	l.withSensitive(func() {
		if v, ok := l.value(a.Expr); ok {
			l.localVals[name] = v
		}
	})
}

// hasAttr reports whether the schema has an attribute of that name.
func hasAttr(sch *hcl.BodySchema, name string) bool {
	for _, a := range sch.Attributes {
		if a.Name == name {
			return true
		}
	}
	return false
}
