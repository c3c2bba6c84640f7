package schema

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/trialform/trialform/internal/mask"
)

// Sensitive values, with Terraform's meaning: a variable declared with
// sensitive = true has its value marked (go-cty's value marks), the mark
// travels through every expression that uses it, and HCL's diagnostics
// never print a marked value. Where the loader turns a value into Go data
// it either refuses a marked value (most attributes: they are printed by
// plan and show, or saved in the state) or keeps the sensitivity beside it
// (trial.env, a remote machine's password), so that nothing downstream
// prints or saves it.

// valueMark is the type of the marks this package puts on values.
type valueMark string

// sensitiveMark marks a value derived from a sensitive variable.
const sensitiveMark = valueMark("sensitive")

// SensitiveText is what is shown in place of a sensitive value.
const SensitiveText = mask.Text

// isSensitive reports whether v or anything inside it is marked sensitive.
func isSensitive(v cty.Value) bool {
	return v.ContainsMarked()
}

// refuseSensitive reports a sensitive value used where it would be
// printed or saved; it returns true if it did.
func (l *loader) refuseSensitive(v cty.Value, rng hcl.Range) bool {
	if l.allowSensitive > 0 || !isSensitive(v) {
		return false
	}
	l.errorf(&rng, "Sensitive value not allowed here",
		"This value comes from a sensitive variable, and trialform would print it in plans or save it in the state if it were used here. "+
			"A sensitive value can go into trial.env (read it in the command as \"$NAME\") a remote machine's password, or a platform's credential attribute (token, password).")
	return true
}

// withSensitive runs f with sensitive values allowed (the caller keeps
// track of the sensitivity of what f evaluates).
func (l *loader) withSensitive(f func()) {
	l.allowSensitive++
	defer func() { l.allowSensitive-- }()
	f()
}

// Secrets lists the sensitive values of the configuration: the sensitive
// variables' values and what the configuration hands to platforms built
// from them (sensitive trial.env values, remote machine passwords,
// platform credentials), for output that must not show them (trialform
// logs, the dashboard, the masks apply records in the state).
func (c *Config) Secrets() []string {
	out := append([]string(nil), c.sensitiveVals...)
	for _, e := range c.Experiments {
		for k := range e.Trial.SensitiveEnv {
			out = append(out, e.Trial.Env[k])
		}
	}
	for _, p := range c.Platforms {
		out = append(out, p.Secrets...)
	}
	if c.Backend != nil {
		out = append(out, c.Backend.Secrets...)
	}
	return out
}

// sensitiveStrings are the strings in v that are marked sensitive.
func sensitiveStrings(v cty.Value) []string {
	var out []string
	_ = cty.Walk(v, func(_ cty.Path, x cty.Value) (bool, error) {
		if x.IsMarked() && x.IsKnown() && !x.IsNull() {
			u, _ := x.UnmarkDeep()
			if u.Type() == cty.String && u.AsString() != "" {
				out = append(out, u.AsString())
			}
		}
		return true, nil
	})
	return out
}

// sensitiveTexts are the texts of the primitive values in v that are
// marked sensitive (strings, and numbers as they print), or all of v's
// when all is true (v is a sensitive variable's unmarked value).
func sensitiveTexts(v cty.Value, all bool) []string {
	var out []string
	_ = cty.Walk(v, func(_ cty.Path, x cty.Value) (bool, error) {
		marked := all || x.IsMarked()
		x, _ = x.UnmarkDeep()
		if !marked || !x.IsKnown() || x.IsNull() {
			return true, nil
		}
		switch x.Type() {
		case cty.String:
			if x.AsString() != "" {
				out = append(out, x.AsString())
			}
		case cty.Number:
			out = append(out, x.AsBigFloat().Text('f', -1))
		}
		return true, nil
	})
	return out
}

// quoted matches a quoted string in a message, as Go's %q and HCL print
// one.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// checkSensitiveLength warns about a sensitive variable's value shorter
// than mask.MinLength (issue 25, item 16): masking can hide it in a
// trial's output only where it stands as a whole word, and there a short
// value also stands for ordinary words and numbers.
func (l *loader) checkSensitiveLength(v *variable) {
	for _, t := range sensitiveTexts(v.value, true) {
		if n := len([]rune(t)); n < mask.MinLength {
			rng := v.block.DefRange
			d := &hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Sensitive value too short to mask safely",
				Detail: fmt.Sprintf("The value of variable %q (from %s) has %d characters. trialform hides a sensitive value in a trial's output (logs, the dashboard) where it stands as a whole word; "+
					"a value shorter than %d characters stands for ordinary words and numbers there too, so hiding it hides them and tells a reader which word is the secret. "+
					"Use a value of at least %d characters, or drop sensitive = true if it is no secret.", v.name, v.valFrom, n, mask.MinLength, mask.MinLength),
				Subject: &rng,
			}
			if l.own == nil {
				l.own = map[*hcl.Diagnostic]bool{}
			}
			l.own[d] = true
			l.diags = append(l.diags, d)
			return
		}
	}
}

// scrubDiags removes sensitive values from every diagnostic's summary and
// detail: HCL's function errors (tonumber, parseint, formatdate, ...)
// quote the argument they could not use, and only type errors know to
// say "(sensitive value)". A quoted string that holds a sensitive value
// is replaced whole (it may be a value derived from it); any other
// occurrence where it stands as a token is masked. The sensitive values
// are the sensitive variables' and those of the expression a diagnostic
// names (and of a failed call's arguments), evaluated again.
func (l *loader) scrubDiags() {
	var vals []string
	for _, name := range l.varNames {
		if v := l.vars[name]; v.sensitive && v.hasVal {
			vals = append(vals, sensitiveTexts(v.value, true)...)
		}
	}
	for _, d := range l.diags {
		if l.own[d] {
			continue
		}
		set := mask.New(vals...)
		all := vals
		marked := false
		if d.Expression != nil && d.EvalContext != nil {
			exprs := []hcl.Expression{d.Expression}
			if call, ok := d.Expression.(*hclsyntax.FunctionCallExpr); ok {
				for _, a := range call.Args {
					exprs = append(exprs, a)
				}
			}
			for _, e := range exprs {
				v, _ := e.Value(d.EvalContext)
				texts := sensitiveTexts(v, false)
				marked = marked || len(texts) > 0
				set.Add(texts...)
				all = append(all[:len(all):len(all)], texts...)
			}
		}
		if set.Empty() {
			continue
		}
		d.Summary, d.Detail = scrubText(d.Summary, set, all), scrubText(d.Detail, set, all)
		if m := functionFailure.FindStringIndex(d.Detail); marked && m != nil && quotesPart(d.Detail[m[1]:], all) {
			// A function's own words on a value it could not use may
			// quote a piece of it (regex's pattern, formatdate's and
			// format's verbs), which no masking of the whole value finds.
			d.Detail = d.Detail[:m[1]] + "not shown, as it would quote part of a sensitive value; " +
				"check the values this call is given (try it with a value that is not sensitive)."
		}
	}
}

// quotesPart says whether msg holds a word of two or more characters, or
// a quoted string, that is part of one of vals.
func quotesPart(msg string, vals []string) bool {
	part := func(w string, min int) bool {
		if len(w) < min {
			return false
		}
		for _, v := range vals {
			if strings.Contains(v, w) {
				return true
			}
		}
		return false
	}
	for _, q := range quoted.FindAllString(msg, -1) {
		if part(q[1:len(q)-1], 1) {
			return true
		}
	}
	for _, w := range strings.Fields(msg) {
		if part(strings.Trim(w, `.,:;"'()`), 2) {
			return true
		}
	}
	return false
}

// functionFailure matches the start of the detail of HCL's diagnostics
// for a function call that failed or refused an argument.
var functionFailure = regexp.MustCompile(`^(?:Invalid value for "[^"]*" parameter|Call to function "[^"]*" failed): `)

// quotedChar matches a character quoted as Go's %q prints a rune
// ('s'), as JSON decoding errors name the byte they stopped at.
var quotedChar = regexp.MustCompile(`'(?:[^'\\]|\\.)+'`)

// scrubText hides set's secrets (vals, in clear) in a message (see
// scrubDiags); a quoted character that occurs in one is hidden too.
func scrubText(msg string, set *mask.Set, vals []string) string {
	msg = quotedChar.ReplaceAllStringFunc(msg, func(q string) string {
		c, err := strconv.Unquote(q)
		if err != nil || len([]rune(c)) != 1 {
			return q
		}
		for _, v := range vals {
			if strings.Contains(v, c) {
				return SensitiveText
			}
		}
		return q
	})
	msg = quoted.ReplaceAllStringFunc(msg, func(q string) string {
		inner, err := strconv.Unquote(q)
		if err != nil {
			inner = q[1 : len(q)-1]
		}
		if set.Within(inner) || set.Within(q[1:len(q)-1]) {
			return SensitiveText
		}
		return q
	})
	return set.String(msg)
}
