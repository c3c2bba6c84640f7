package schema

import (
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/internal/didyoumean"
)

// The backend block: where the state lives (`backend "pg" { ... }`), at
// most one per configuration. Its settings are decoded with the same
// typed machinery as a platform's (providers/registry's tags: names,
// types, did-you-mean, source ranges). They may use variables (var.NAME)
// and nothing else, so that commands which do not load the whole
// configuration (show, trials, ui) can still read it (LoadBackend). A
// credential may come from a sensitive variable only in the settings its
// kind tags sensitive:"true"; such values are kept apart (Backend.Secrets)
// and never recorded (Backend.Settings leaves them out).
//
// The schema imports no state package: the kinds come in LoadOptions
// (state/backends lists them, internal/command converts).

// BackendKind is a backend kind as the schema sees it.
type BackendKind struct {
	Name    string
	Summary string
	// Config returns a new pointer to the kind's settings struct, or nil
	// when the block takes no settings.
	Config func() any
}

// LocalBackendKind is the default kind, known even when LoadOptions lists
// no backends.
var LocalBackendKind = BackendKind{Name: "local", Summary: "the .trialform directory of this working copy (the default)"}

// Backend is the backend block, decoded.
type Backend struct {
	Kind string
	// Config is what the kind's Config returned, decoded and checked (nil
	// for a kind without settings).
	Config any
	// Settings are the block's attributes that are not credentials (their
	// kind does not tag them sensitive and their value does not come from
	// a sensitive variable), evaluated: what `trialform init` records and
	// compares.
	Settings map[string]any
	// Secrets are the values in the block that come from sensitive
	// variables, for output that must not show them.
	Secrets   []string
	DeclRange hcl.Range
}

// BackendName is the kind of b; "local" for nil (no block).
func (b *Backend) BackendName() string {
	if b == nil {
		return LocalBackendKind.Name
	}
	return b.Kind
}

func (l *loader) backendKinds() []BackendKind {
	if len(l.backends) == 0 {
		return []BackendKind{LocalBackendKind}
	}
	return l.backends
}

func (l *loader) backendKind(name string) *BackendKind {
	for i, k := range l.backendKinds() {
		if k.Name == name {
			return &l.backendKinds()[i]
		}
	}
	return nil
}

func (l *loader) backendNames() []string {
	var out []string
	for _, k := range l.backendKinds() {
		out = append(out, k.Name)
	}
	sort.Strings(out)
	return out
}

// declareBackend records the backend block, refusing a second one and an
// unknown kind.
func (l *loader) declareBackend(b *hcl.Block) {
	if l.backendDecl != nil {
		l.errorf(&b.DefRange, "Duplicate backend block",
			"A configuration has at most one backend block; the first is at %s, this one at %s. Remove one of them.",
			posString(l.backendDecl.DefRange), posString(b.DefRange))
		return
	}
	kind := b.Labels[0]
	if l.backendKind(kind) == nil {
		known := l.backendNames()
		l.errorf(&b.LabelRanges[0], "Unknown backend kind",
			"Unknown backend kind %q; known kinds: %s.%s", kind, strings.Join(known, ", "), didyoumean.Sentence(kind, known, "%q"))
		l.backendDecl = b // one error, not a duplicate one too
		l.backendBad = true
		return
	}
	l.backendDecl = b
}

// decodeBackend evaluates the backend block with the variables (nothing
// else is in scope) and decodes it through its kind's settings struct.
func (l *loader) decodeBackend() {
	b := l.backendDecl
	if b == nil || l.backendBad {
		return
	}
	kind := l.backendKind(b.Labels[0])
	body := b.Body.(*hclsyntax.Body)
	var s *decl.Schema
	var cfg any
	if kind.Config != nil {
		cfg = kind.Config()
		var err error
		if s, err = decl.SchemaOf(cfg); err != nil {
			l.errorf(b.DefRange.Ptr(), "Invalid backend kind", "backend kind %q: %s.", kind.Name, err)
			return
		}
	} else {
		s = &decl.Schema{}
	}
	sensitive := map[string]bool{}
	for _, a := range s.Attrs {
		if a.Sensitive {
			sensitive[a.Name] = true
		}
	}
	before, beforeUnknown := l.errorCount(), l.incomplete
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": l.varObject()}, Functions: functions}
	attrs := make([]*hclsyntax.Attribute, 0, len(body.Attributes))
	for _, a := range body.Attributes {
		attrs = append(attrs, a)
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].SrcRange.Start.Byte < attrs[j].SrcRange.Start.Byte })
	be := &Backend{Kind: kind.Name, Settings: map[string]any{}, DeclRange: b.DefRange}
	vals := map[string]cty.Value{}
	for _, a := range attrs {
		if !l.backendRefsOK(a.Expr) {
			continue
		}
		v, diags := a.Expr.Value(ctx)
		l.addEvalDiags(diags)
		if diags.HasErrors() {
			continue
		}
		if !v.IsWhollyKnown() {
			l.incomplete++
			for _, tr := range a.Expr.Variables() {
				if len(tr) > 1 {
					if at, ok := tr[1].(hcl.TraverseAttr); ok && l.unknownVarNamed(at.Name) && l.backendOnly {
						l.errorf(a.Expr.Range().Ptr(), "No value for required variable",
							"The backend setting %s uses variable %q, which has no value: set the environment variable %s%s (or -var '%s=...' where the command takes it).",
							a.Name, at.Name, EnvPrefix, at.Name, at.Name)
					}
				}
			}
			continue
		}
		secret := isSensitive(v)
		if secret && !sensitive[a.Name] {
			l.errorf(a.Expr.Range().Ptr(), "Sensitive value not allowed here",
				"This value comes from a sensitive variable, but %s is not a credential setting of a %s backend, so trialform would record it with the working copy's backend settings. %s",
				a.Name, kind.Name, credentialNames(kind.Name, sensitive))
			continue
		}
		be.Secrets = append(be.Secrets, sensitiveStrings(v)...)
		plain, _ := v.UnmarkDeep()
		if ic, ok := cfg.(InlineCredentialChecker); ok && !secret && sensitive[a.Name] && plain.Type() == cty.String && plain.IsKnown() && !plain.IsNull() {
			if what := ic.InlineCredential(a.Name, plain.AsString()); what != "" {
				l.errorf(a.Expr.Range().Ptr(), "Credential written in the configuration",
					"%s holds %s written in the configuration, not given through a sensitive variable: it would be committed with the HCL and shown with any error on this line. Give the whole setting through a sensitive variable (%s = var.NAME, with variable \"NAME\" { sensitive = true } set by %sNAME), or leave %s out of it and let the backend read it from the environment.",
					a.Name, what, a.Name, EnvPrefix, what)
				continue
			}
		}
		vals[a.Name] = plain
		if !secret && !sensitive[a.Name] {
			if g, err := toGo(plain); err == nil {
				be.Settings[a.Name] = g
			}
		}
	}
	w := decl.NewWhere("backend", b.DefRange)
	l.checkBody(body, vals, s, "backend \""+kind.Name+"\"", "a "+kind.Name+" backend", "", w)
	if l.errorCount() > before || l.incomplete > beforeUnknown {
		return
	}
	if cfg != nil {
		if err := s.Decode(vals, cfg, ParseDuration); err != nil {
			l.errorf(b.DefRange.Ptr(), "Invalid backend setting", "%s.", err)
			return
		}
		if c, ok := cfg.(decl.Checker); ok {
			l.diags = append(l.diags, c.Check(w)...)
			if l.errorCount() > before {
				return
			}
		}
	}
	be.Config = cfg
	l.cfg.Backend = be
}

// InlineCredentialChecker is implemented by a backend kind's settings whose
// credential settings may hold a credential among other things (pg's
// conn_str, which may hold a password or name the server only):
// InlineCredential says what credential the value holds ("a password"),
// or "" when it holds none. A credential setting whose value does not
// come from a sensitive variable and holds one is an error.
type InlineCredentialChecker interface {
	InlineCredential(setting, value string) string
}

// backendRefsOK reports whether expr refers to variables only (the one
// scope a backend block has), reporting any other reference.
func (l *loader) backendRefsOK(expr hcl.Expression) bool {
	ok := true
	for _, tr := range expr.Variables() {
		if root := tr.RootName(); root != "var" {
			r := tr.SourceRange()
			l.errorf(&r, "Reference not allowed in a backend block",
				"A backend block may use variables (var.NAME) only, not %s: commands that only read the state (show, trials, ui) read the backend block without evaluating the rest of the configuration.", root)
			ok = false
		}
	}
	return ok
}

// varObject is var as an object: the variables with a value, unknown for
// the others.
func (l *loader) varObject() cty.Value {
	m := map[string]cty.Value{}
	for _, n := range l.varNames {
		if v, ok := l.varVals[n]; ok {
			m[n] = v
		} else {
			m[n] = cty.DynamicVal
		}
	}
	return cty.ObjectVal(m)
}

func (l *loader) unknownVarNamed(name string) bool {
	for _, n := range l.cfg.UnknownVars {
		if n == name {
			return true
		}
	}
	return false
}

// credentialNames is how a message names the settings that may hold a
// sensitive value.
func credentialNames(kind string, sensitive map[string]bool) string {
	if len(sensitive) == 0 {
		return "A " + kind + " backend takes no credential in its block: it reads them from the environment."
	}
	var names []string
	for n := range sensitive {
		names = append(names, n)
	}
	sort.Strings(names)
	return "A sensitive value may go into " + joinQuoted(names) + "."
}

// LoadBackend reads only the backend block of the configuration in dir,
// with the variables' values (opts: defaults, TRIALFORM_VAR_NAME, and the
// -var/-var-file of commands that take them): for commands that do not
// otherwise load the configuration (show, trials, ui, init). A variable
// without a value is an error only where the backend block uses it.
//
// It returns nil and no diagnostics when dir has no *.hcl file or no
// backend block; files holds what was read, for diagnostics' snippets.
func LoadBackend(dir string, opts LoadOptions) (be *Backend, files map[string][]byte, diags hcl.Diagnostics) {
	l := newLoader(dir)
	l.prefix = opts.FilePrefix
	l.backends = opts.Backends
	l.backendOnly = true
	l.unknownVars = true
	if entries, err := readHCLNames(l.cfg.Dir); err == nil && len(entries) == 0 {
		return nil, nil, nil
	}
	if !l.parseDir() {
		l.scrubDiags()
		return nil, l.cfg.Files, l.diags
	}
	for _, body := range l.bodies {
		// The rest of the configuration's mistakes are the full load's
		// to report.
		content, _ := bodyContent(body, rootSchema)
		for _, b := range content.Blocks {
			switch b.Type {
			case "variable":
				l.declare(b)
			case "backend":
				l.declareBackend(b)
			}
		}
	}
	if l.backendDecl == nil {
		return nil, l.cfg.Files, nil
	}
	l.decodeVariables(opts)
	l.decodeBackend()
	l.scrubDiags()
	if l.diags.HasErrors() {
		return nil, l.cfg.Files, l.diags
	}
	return l.cfg.Backend, l.cfg.Files, l.diags
}
