package schema

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
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
const SensitiveText = "(sensitive value)"

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

// Secrets lists the sensitive values the configuration hands to platforms
// (sensitive trial.env values, remote machine passwords), for output that
// must not show them (trialform logs).
func (c *Config) Secrets() []string {
	var out []string
	for _, e := range c.Experiments {
		for k := range e.Trial.SensitiveEnv {
			out = append(out, e.Trial.Env[k])
		}
	}
	for _, p := range c.Platforms {
		out = append(out, p.Secrets...)
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
