package schema

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/internal/fsread"
)

// variable is one variable block and the value it ends up with.
type variable struct {
	name    string
	block   *hcl.Block
	typ     cty.Type // cty.DynamicPseudoType when no type is declared
	typed   bool
	hasDef  bool
	bad     bool // the declaration itself is broken
	value   cty.Value
	hasVal  bool
	valFrom string // where the value came from, for messages
	// sensitive: declared with sensitive = true; the value is marked and
	// never printed.
	sensitive bool
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "default"}, {Name: "type"}, {Name: "description"}, {Name: "sensitive"}},
}

// decodeVariables decodes the variable blocks and applies values in
// precedence order: default < TRIALFORM_VAR_name < -var-file (in order) <
// -var (in order).
func (l *loader) decodeVariables(opts LoadOptions) {
	for _, name := range l.varNames {
		v := l.vars[name]
		v.typ = cty.DynamicPseudoType
		content, diags := bodyContent(v.block.Body, variableSchema)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() {
			v.bad = true
			continue
		}
		if a, ok := content.Attributes["sensitive"]; ok {
			sv, diags := a.Expr.Value(nil)
			l.diags = append(l.diags, diags...)
			if !diags.HasErrors() && (sv.IsNull() || sv.Type() != cty.Bool) {
				l.errorf(a.Expr.Range().Ptr(), "Invalid sensitive", "sensitive of variable %q must be true or false.", name)
			} else if !diags.HasErrors() {
				v.sensitive = sv.True()
			}
			if v.sensitive {
				if l.cfg.sensitiveVars == nil {
					l.cfg.sensitiveVars = map[string]bool{}
				}
				l.cfg.sensitiveVars[name] = true
			}
		}
		if a, ok := content.Attributes["type"]; ok {
			ty, diags := typeexpr.TypeConstraint(a.Expr)
			l.diags = append(l.diags, diags...)
			if diags.HasErrors() {
				v.bad = true
				continue
			}
			v.typ, v.typed = ty, true
		}
		if a, ok := content.Attributes["description"]; ok {
			dv, diags := a.Expr.Value(nil)
			l.diags = append(l.diags, diags...)
			if !diags.HasErrors() && (dv.IsNull() || dv.Type() != cty.String) {
				l.errorf(a.Expr.Range().Ptr(), "Invalid description", "The description of variable %q must be a string.", name)
			}
		}
		if a, ok := content.Attributes["default"]; ok {
			dv, diags := a.Expr.Value(nil)
			l.diags = append(l.diags, diags...)
			if diags.HasErrors() {
				v.bad = true
				continue
			}
			cv, err := convertVar(dv, v.typ)
			if err != nil {
				l.errorf(a.Expr.Range().Ptr(), "Invalid default value for variable",
					"The default of variable %q does not fit its type %s: %s.", name, typeexpr.TypeString(v.typ), err)
				v.bad = true
				continue
			}
			v.value, v.hasVal, v.hasDef, v.valFrom = cv, true, true, "its default"
		}
	}

	// TRIALFORM_VAR_name: undeclared names are ignored (they may be meant
	// for another configuration).
	for _, kv := range opts.Environ {
		if !strings.HasPrefix(kv, EnvPrefix) {
			continue
		}
		name, raw, _ := strings.Cut(strings.TrimPrefix(kv, EnvPrefix), "=")
		v, ok := l.vars[name]
		if !ok || v.bad {
			continue
		}
		l.setRaw(v, raw, "environment variable "+EnvPrefix+name)
	}

	for _, path := range opts.VarFiles {
		l.readVarFile(path)
	}

	for _, name := range slices.Sorted(maps.Keys(opts.SavedVars)) {
		v, declared := l.vars[name]
		if !declared || v.bad || v.sensitive {
			continue // the plan check says what changed
		}
		cv, err := convertVar(opts.SavedVars[name], v.typ)
		if err != nil {
			l.errorf(nil, "Invalid value for variable",
				"The saved plan's value for variable %q is not suitable: %s (the variable's type changed since the plan was made: run plan again).", name, err)
			v.hasVal, v.bad = true, true
			continue
		}
		v.value, v.hasVal, v.valFrom = cv, true, "the saved plan"
	}

	for _, arg := range opts.Vars {
		name, raw, ok := strings.Cut(arg, "=")
		if !ok || name == "" {
			l.errorf(nil, "Invalid -var option",
				"The given -var option %q is not correctly specified. It must be a variable name and value separated by an equals sign, like -var 'max_trials=20'.", arg)
			continue
		}
		v, declared := l.vars[name]
		if !declared {
			l.errorf(nil, "Value for undeclared variable",
				"A variable named %q was given with -var, but the configuration does not declare it.%s Declare it with a variable %q {} block, or remove the option.",
				name, didyoumean.Sentence(name, l.varNames, "%q"), name)
			continue
		}
		if v.bad {
			continue
		}
		l.setRaw(v, raw, "-var "+name)
	}

	for _, name := range l.varNames {
		v := l.vars[name]
		switch {
		case v.bad:
			// already reported; dependents see an unknown value
		case !v.hasVal && l.unknownVars:
			l.cfg.UnknownVars = append(l.cfg.UnknownVars, name)
			val := cty.UnknownVal(v.typ)
			if v.sensitive {
				val = val.Mark(sensitiveMark)
			}
			l.varVals[name] = val
		case !v.hasVal:
			l.errorf(v.block.DefRange.Ptr(), "No value for required variable",
				"The variable %q has no default, so it needs a value: use -var '%s=...', a -var-file that sets %s, or the environment variable %s%s.",
				name, name, name, EnvPrefix, name)
		case v.sensitive:
			l.varVals[name] = v.value.Mark(sensitiveMark)
			l.cfg.sensitiveVals = append(l.cfg.sensitiveVals, sensitiveTexts(v.value, true)...)
			l.checkSensitiveLength(v)
		default:
			l.varVals[name] = v.value
			if v.valFrom != "its default" {
				if l.cfg.GivenVars == nil {
					l.cfg.GivenVars = map[string]cty.Value{}
				}
				l.cfg.GivenVars[name] = v.value
			}
		}
	}
	l.varsChanged()
}

// convertVar converts a given value to the declared type (any: as is).
func convertVar(val cty.Value, ty cty.Type) (cty.Value, error) {
	if ty == cty.DynamicPseudoType {
		return val, nil
	}
	cv, err := convert.Convert(val, ty)
	if err != nil {
		return cty.NilVal, fmt.Errorf("%s is required", typeexpr.TypeString(ty))
	}
	return cv, nil
}

// setRaw applies a -var or environment value. A variable typed string
// (or number, bool) takes the text, converted to its type. One typed as a
// collection, an object or `any` takes it as an HCL expression (when it
// parses and evaluates without references; else as text). An untyped one
// takes a plain literal (20, 0.5, -3, true, ["a", "b"], {k = 1}) as that
// value and anything else — with an operator, a call, a reference — as
// text, so an id such as 0000-1111 stays that text, never a subtraction.
func (l *loader) setRaw(v *variable, raw, from string) {
	val := cty.StringVal(raw)
	if !v.typ.IsPrimitiveType() {
		expr, diags := hclsyntax.ParseExpression([]byte(raw), from, hcl.InitialPos)
		if !diags.HasErrors() && (v.typed || plainLiteral(expr)) {
			if pv, diags := expr.Value(nil); !diags.HasErrors() && pv.IsWhollyKnown() {
				val = pv
			}
		}
	}
	cv, err := convertVar(val, v.typ)
	if err != nil {
		// The value is not shown, sensitive or not: the environment is
		// where secrets come from, and whether a variable is sensitive is
		// the configuration's say (under the controller, a commit's).
		l.errorf(nil, "Invalid value for variable",
			"The value given for variable %q by %s is not suitable: %s.", v.name, from, err)
		v.hasVal = true // do not also report it as missing
		v.bad = true
		return
	}
	v.value, v.hasVal, v.valFrom = cv, true, from
}

// readVarFile applies one -var-file (HCL attributes name = value).
func (l *loader) readVarFile(path string) {
	src, err := fsread.ReadFile(path, fsread.MaxConfig)
	if err != nil {
		l.errorf(nil, "Cannot read variables file", "Reading -var-file %s: %s.", path, err)
		return
	}
	l.cfg.Files[path] = src
	if r := l.hideVarFileValues(src); r != nil {
		if l.cfg.Snippets == nil {
			l.cfg.Snippets = map[string][]byte{}
		}
		l.cfg.Snippets[path] = r
	}
	f, diags := parseConfig(src, path)
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() {
		return
	}
	attrs, diags := f.Body.JustAttributes()
	l.diags = append(l.diags, diags...)
	for _, a := range sortedAttrs(attrs) {
		v, declared := l.vars[a.Name]
		if !declared {
			l.errorf(a.NameRange.Ptr(), "Value for undeclared variable",
				"The variable file sets %q, but the configuration does not declare a variable of that name.%s",
				a.Name, didyoumean.Sentence(a.Name, l.varNames, "%q"))
			continue
		}
		val, diags := a.Expr.Value(nil)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() || v.bad {
			continue
		}
		cv, err := convertVar(val, v.typ)
		if err != nil {
			l.errorf(a.Expr.Range().Ptr(), "Invalid value for variable",
				"The value given for variable %q is not suitable: %s.", a.Name, err)
			v.hasVal, v.bad = true, true
			continue
		}
		v.value, v.hasVal, v.valFrom = cv, true, path
	}
}

// plainLiteral reports whether expr is a literal as a person writes a
// value: a number (negative too), a bool, a quoted string without
// interpolation, or a list or object of those.
func plainLiteral(expr hclsyntax.Expression) bool {
	switch e := expr.(type) {
	case *hclsyntax.LiteralValueExpr:
		return true
	case *hclsyntax.UnaryOpExpr:
		_, ok := e.Val.(*hclsyntax.LiteralValueExpr)
		return e.Op == hclsyntax.OpNegate && ok
	case *hclsyntax.TemplateExpr:
		return e.IsStringLiteral()
	case *hclsyntax.TupleConsExpr:
		for _, item := range e.Exprs {
			if !plainLiteral(item) {
				return false
			}
		}
		return true
	case *hclsyntax.ObjectConsExpr:
		for _, item := range e.Items {
			if !plainLiteral(item.ValueExpr) {
				return false
			}
			if k, ok := item.KeyExpr.(*hclsyntax.ObjectConsKeyExpr); !ok || (hcl.ExprAsKeyword(k.Wrapped) == "" && !plainLiteral(k.Wrapped)) {
				return false
			}
		}
		return true
	}
	return false
}

// varFileLine matches the start of a variable file's `NAME = value` line.
var varFileLine = regexp.MustCompile(`^[ \t]*([A-Za-z_][A-Za-z0-9_-]*)[ \t]*=`)

// hideVarFileValues returns src for diagnostics' snippets, or nil when it
// can be shown as it is (no variable is sensitive). The value of a
// sensitive variable reads (sensitive value), and so does that of a name
// the configuration does not declare (a misspelt secret), with every line
// of the value up to the next `NAME =` line; read line by line, as a file
// with a syntax error cannot be parsed. Line numbers stay as they were.
func (l *loader) hideVarFileValues(src []byte) []byte {
	// Under the controller (Within) the variable files are the
	// operator's, and which variables are sensitive is a commit's say:
	// every value is hidden.
	all := l.within != ""
	secret := all
	for _, v := range l.vars {
		secret = secret || v.sensitive
	}
	if !secret {
		return nil
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	hiding := false
	for i, ln := range lines {
		nl := ""
		if bytes.HasSuffix(ln, []byte("\n")) {
			nl = "\n"
		}
		if m := varFileLine.FindSubmatchIndex(ln); m != nil {
			v, declared := l.vars[string(ln[m[2]:m[3]])]
			hiding = all || !declared || v.sensitive
			if hiding {
				lines[i] = append(ln[:m[1]:m[1]], " "+SensitiveText+nl...)
			}
			continue
		}
		if hiding {
			lines[i] = []byte(nl)
		}
	}
	return bytes.Join(lines, nil)
}
