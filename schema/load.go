package schema

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/internal/fsread"
	"github.com/trialform/trialform/providers/registry"
	"github.com/trialform/trialform/tuner"
)

// LoadOptions are the variable values given from outside the files.
type LoadOptions struct {
	Vars     []string // "-var name=value" in command-line order
	VarFiles []string // "-var-file" paths in order (HCL syntax, like terraform.tfvars)
	Environ  []string // os.Environ(); TRIALFORM_VAR_name=value are read from it
	// Platforms is the platform registry (providers/platforms.Registry()):
	// the kinds platform blocks may name and how each is decoded.
	Platforms *registry.Registry
	// Tuners is the tuner and assessor registry (tuner.Builtin()): the
	// names tuner and assessor blocks may give and how each is decoded.
	Tuners *tuner.Registry
	// UnknownVariables gives each required variable that has no value an
	// unknown value of its declared type instead of reporting it
	// (validate: Terraform's checks "regardless of any provided
	// variables"). What depends on it is checked as far as it can be;
	// plan and apply leave this unset and require the values.
	UnknownVariables bool
	// Backends are the state backend kinds a backend block may name
	// (state/backends, converted); nil: only "local".
	Backends []BackendKind
	// SavedVars are values a saved plan kept (Config.GivenVars of the
	// plan's configuration): they take the place of -var-files' and the
	// environment's, and a -var still overrides them.
	SavedVars map[string]cty.Value
	// Within, when set, is a directory every file the configuration
	// reads (its *.hcl files, nni_file, code_dir) must resolve into, symbolic links
	// followed: the controller reads a git checkout whose files anyone
	// who can commit controls (a link to /proc/self/environ would print
	// the controller's environment in a diagnostic's snippet).
	Within string
	// FilePrefix, when set, is prepended (with a slash) to the name of
	// each configuration file in Files, diagnostics and DeclRanges: the
	// controller names them by their path in its repository
	// ("experiments/main.hcl", with -path experiments), where the person
	// reading its log looks for them. Unset, a file is named by its name
	// within dir ("main.hcl"), as Terraform does. It names files only:
	// they are still read from dir.
	FilePrefix string
}

// EnvPrefix starts the environment variables that set input variables.
const EnvPrefix = "TRIALFORM_VAR_"

// Load reads every *.hcl file (sorted by name, not recursive) of dir into
// one Config, evaluating variables, locals, functions and references, and
// validating everything that can be checked without a platform.
//
// Load always returns a non-nil Config. When diags.HasErrors() only Dir and
// Files are set (every file that was read, -var-files included, so
// WriteDiagnostics can show snippets: use cfg.HCLFiles()); Platforms,
// Spaces and Experiments are nil and must not be used.
//
// Configuration files are named in Files and in diagnostics by their name
// within dir ("main.hcl"), as Terraform does, after opts.FilePrefix;
// -var-files by the path given.
func Load(dir string, opts LoadOptions) (*Config, hcl.Diagnostics) {
	l := newLoader(dir)
	l.prefix = opts.FilePrefix
	l.platforms, l.tuners = opts.Platforms, opts.Tuners
	l.backends, l.within = opts.Backends, opts.Within
	if l.platforms == nil {
		l.errorf(nil, "No platform registry", "schema.Load needs LoadOptions.Platforms (providers/platforms.Registry()); this is a bug in the caller.")
		return &Config{Dir: l.cfg.Dir, Files: l.cfg.Files, Snippets: l.cfg.Snippets}, l.diags
	}
	if l.tuners == nil {
		l.errorf(nil, "No tuner registry", "schema.Load needs LoadOptions.Tuners (tuner.Builtin()); this is a bug in the caller.")
		return &Config{Dir: l.cfg.Dir, Files: l.cfg.Files, Snippets: l.cfg.Snippets}, l.diags
	}
	l.load(opts)
	l.cfg.Declared.Experiments, l.cfg.Declared.Spaces, l.cfg.Declared.Platforms = len(l.expNames), len(l.spaceNames), len(l.platNames)
	_, declared := l.platDecls["local.default"]
	l.cfg.Declared.ImplicitLocal = !declared
	l.scrubDiags()
	if l.diags.HasErrors() {
		return &Config{Dir: l.cfg.Dir, Files: l.cfg.Files, Snippets: l.cfg.Snippets}, l.diags
	}
	return l.cfg, l.diags
}

// SnippetSources returns the sources diagnostics' snippets show: Files,
// with Snippets in place of theirs. It is safe on a nil Config.
func (c *Config) SnippetSources() map[string][]byte {
	out := map[string][]byte{}
	if c == nil {
		return out
	}
	for name, src := range c.Files {
		if r, ok := c.Snippets[name]; ok {
			src = r
		}
		out[name] = src
	}
	return out
}

// HCLFiles returns SnippetSources as WriteDiagnostics and DiagnosticsJSON
// take them. It is safe on a nil Config.
func (c *Config) HCLFiles() map[string]*hcl.File {
	out := map[string]*hcl.File{}
	for name, src := range c.SnippetSources() {
		f, _ := parseConfig(src, name)
		if f == nil {
			f = &hcl.File{}
		}
		f.Bytes = src
		out[name] = f
	}
	return out
}

// loader holds the state of one Load.
type loader struct {
	within      string   // LoadOptions.Within
	tunerParams []string // params the experiment's tuner adds, usable in templates
	dir         string   // as given, for messages
	prefix      string   // LoadOptions.FilePrefix
	platforms   *registry.Registry
	tuners      *tuner.Registry
	backends    []BackendKind
	// backendDecl is the backend block (nil: none); backendBad when its
	// kind is unknown (reported). backendOnly: LoadBackend.
	backendDecl *hcl.Block
	backendBad  bool
	backendOnly bool
	cfg         *Config
	diags       hcl.Diagnostics
	// own are diagnostics whose text is trialform's alone and holds no
	// value: scrubDiags leaves them as they are (masking a word of them
	// would point at the secret).
	own    map[*hcl.Diagnostic]bool
	files  []string // config file display names in order
	bodies []*hclsyntax.Body

	vars     map[string]*variable
	varNames []string

	localAttrs map[string]*hcl.Attribute
	localNames []string
	platDecls  map[string]*hcl.Block // "KIND.NAME"
	platNames  []string
	spaceDecls map[string]*hcl.Block
	spaceNames []string
	expDecls   map[string]*hcl.Block
	expNames   []string

	varVals map[string]cty.Value
	// allowSensitive > 0 while evaluating a place that may hold a
	// sensitive value (see sensitive.go).
	allowSensitive int
	// sensitiveAttrs names the attributes of the platform block being
	// evaluated that may hold a sensitive value.
	sensitiveAttrs map[string]bool
	localVals      map[string]cty.Value
	platVals       map[string]cty.Value // "KIND.NAME"
	spaceVals      map[string]cty.Value
	expVals        map[string]cty.Value
	ctxCache       *hcl.EvalContext
	// scope is the node being evaluated: its context holds only what it
	// references (see ctx); nil: every value.
	scope *node
	// varObj is var as an object, built once the variables are decoded.
	varObj cty.Value
	// ctxValues counts the values put into evaluation contexts (a test
	// checks that it grows with the configuration, not its square).
	ctxValues int

	nodes     map[string]*node
	nodeOrder []*node
	badRefs   []hcl.Range
	okParams  map[rangeKey]bool // param.NAME traversals allowed as template parts
	// incomplete counts values that could not be computed because
	// something they depend on failed (no diagnostic of their own).
	incomplete int
	// unknownVars: required variables without a value are unknown.
	unknownVars bool
}

func newLoader(dir string) *loader {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return &loader{
		dir: dir,
		cfg: &Config{Dir: abs, Files: map[string][]byte{}, Platforms: map[string]*Platform{},
			Spaces: map[string]*SearchSpace{}, Experiments: map[string]*Experiment{}},
		vars:       map[string]*variable{},
		localAttrs: map[string]*hcl.Attribute{},
		platDecls:  map[string]*hcl.Block{},
		spaceDecls: map[string]*hcl.Block{},
		expDecls:   map[string]*hcl.Block{},
		varVals:    map[string]cty.Value{},
		localVals:  map[string]cty.Value{},
		platVals:   map[string]cty.Value{},
		spaceVals:  map[string]cty.Value{},
		expVals:    map[string]cty.Value{},
		nodes:      map[string]*node{},
		okParams:   map[rangeKey]bool{},
	}
}

func (l *loader) errorf(rng *hcl.Range, summary, format string, args ...any) {
	l.diags = append(l.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng,
	})
}

func (l *loader) errorCount() int {
	n := 0
	for _, d := range l.diags {
		if d.Severity == hcl.DiagError {
			n++
		}
	}
	return n
}

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "platform", LabelNames: []string{"kind", "name"}},
		{Type: "search_space", LabelNames: []string{"name"}},
		{Type: "experiment", LabelNames: []string{"name"}},
		{Type: "moved"},
		{Type: "backend", LabelNames: []string{"kind"}},
	},
}

func (l *loader) load(opts LoadOptions) {
	l.unknownVars = opts.UnknownVariables
	if !l.parseDir() {
		return
	}
	var blocks []*hcl.Block
	for _, b := range l.bodies {
		content, diags := bodyContent(b, rootSchema)
		if len(content.Blocks) == 0 {
			for _, d := range diags {
				if d.Summary == "Unsupported argument" && d.Subject != nil {
					// Only NAME = value lines: a variables file.
					d.Detail += fmt.Sprintf(" %s holds only NAME = value lines, as a variables file does, but every *.hcl file of the directory is read as configuration: "+
						"give it another extension (%s.tfvars) and pass it with -var-file.", d.Subject.Filename, strings.TrimSuffix(filepath.Base(d.Subject.Filename), ".hcl"))
					break
				}
			}
		}
		l.diags = append(l.diags, diags...)
		blocks = append(blocks, content.Blocks...)
	}
	var moved []*hcl.Block
	for _, b := range blocks {
		if b.Type == "moved" {
			moved = append(moved, b)
			continue
		}
		l.declare(b)
	}
	l.decodeMoved(moved)
	l.decodeVariables(opts)
	l.decodeBackend()
	if _, ok := l.platDecls["local.default"]; !ok {
		first := hcl.Range{Filename: l.files[0], Start: hcl.InitialPos, End: hcl.InitialPos}
		p := &Platform{Kind: "local", Name: "default", Attrs: map[string]any{}, DeclRange: first}
		l.cfg.Platforms[p.Key()] = p
		l.platVals[p.Key()] = platformValue(p, nil)
	}
	l.buildGraph()
	l.evaluate()
}

// parseDir reads and parses the *.hcl files; false when nothing more can
// be done (no files, or syntax errors).
func (l *loader) parseDir() bool {
	names, err := readHCLNames(l.cfg.Dir)
	if err != nil {
		l.errorf(nil, "Cannot read configuration directory", "Reading %s: %s.", l.dir, err)
		return false
	}
	if len(names) == 0 {
		l.errorf(nil, "No configuration files", "The directory %s has no *.hcl files. Write the experiments in a file such as main.hcl, or run trialform in the directory that holds them (or with -chdir=DIR).", l.dir)
		return false
	}
	ok := true
	for _, n := range names {
		display := n
		if l.prefix != "" {
			display = path.Join(l.prefix, n)
		}
		if err := l.confined(filepath.Join(l.cfg.Dir, n)); err != nil {
			l.errorf(nil, "Configuration file outside the repository", "Reading %s: %s.", display, err)
			ok = false
			continue
		}
		src, err := fsread.ReadFile(filepath.Join(l.cfg.Dir, n), fsread.MaxConfig)
		if err != nil {
			l.errorf(nil, "Cannot read configuration file", "Reading %s: %s.", display, err)
			ok = false
			continue
		}
		l.cfg.Files[display] = src
		f, diags := parseConfig(src, display)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() {
			ok = false
			continue
		}
		l.files = append(l.files, display)
		l.bodies = append(l.bodies, f.Body.(*hclsyntax.Body))
	}
	return ok
}

// confined checks that path resolves inside LoadOptions.Within (when set).
func (l *loader) confined(path string) error {
	if l.within == "" {
		return nil
	}
	root, err := filepath.EvalSymlinks(l.within)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	if inside(filepath.Join(root, ".git"), real) {
		return fmt.Errorf("%s is in the git directory of the repository the controller reads (%s), not a committed file: its config and objects are the controller's; name a committed file or directory", real, l.within)
	}
	if !inside(root, real) {
		abs, _ := filepath.Abs(path)
		if clean, _ := filepath.EvalSymlinks(filepath.Dir(abs)); abs == real || !inside(root, filepath.Join(clean, filepath.Base(abs))) {
			return fmt.Errorf("%s is outside the repository the controller reads (%s): the controller reads only what is committed there", real, l.within)
		}
		return fmt.Errorf("it is a symbolic link to %s, outside the repository the controller reads (%s); commit the file itself", real, l.within)
	}
	return nil
}

// inside reports whether path is root or below it.
func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// readHCLNames lists the *.hcl files of dir, sorted.
func readHCLNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".hcl") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// declare records one top-level block, rejecting duplicates and unknown
// platform kinds.
func (l *loader) declare(b *hcl.Block) {
	dup := func(kind, name string, first *hcl.Block) {
		l.errorf(&b.DefRange, fmt.Sprintf("Duplicate %s", kind),
			"%s %q is declared twice; first at %s. Names must be unique in the configuration; rename or remove one.",
			kind, name, posString(first.DefRange))
	}
	switch b.Type {
	case "backend":
		l.declareBackend(b)
	case "variable":
		name := b.Labels[0]
		if prev, ok := l.vars[name]; ok {
			dup("variable", name, prev.block)
			return
		}
		if !hclsyntax.ValidIdentifier(name) {
			l.errorf(&b.LabelRanges[0], "Invalid variable name", "%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", name)
			return
		}
		l.vars[name] = &variable{name: name, block: b}
		l.varNames = append(l.varNames, name)
	case "locals":
		attrs, diags := b.Body.JustAttributes()
		l.diags = append(l.diags, diags...)
		for _, a := range sortedAttrs(attrs) {
			if prev, ok := l.localAttrs[a.Name]; ok {
				l.errorf(&a.NameRange, "Duplicate local value",
					"local value %q is declared twice; first at %s. Rename or remove one.", a.Name, posString(prev.Range))
				continue
			}
			l.localAttrs[a.Name] = a
			l.localNames = append(l.localNames, a.Name)
		}
	case "platform":
		kind, name := b.Labels[0], b.Labels[1]
		if l.platforms.Lookup(kind) == nil {
			known := l.platforms.Names()
			l.errorf(&b.LabelRanges[0], "Unknown platform kind",
				"Unknown platform kind %q; known kinds: %s.%s", kind, strings.Join(known, ", "),
				didyoumean.Sentence(kind, known, "%q"))
			return
		}
		l.warnNotYet(b)
		key := kind + "." + name
		if prev, ok := l.platDecls[key]; ok {
			l.errorf(&b.DefRange, "Duplicate platform",
				"platform %q %q is declared twice; first at %s. Names must be unique in the configuration; rename or remove one.",
				kind, name, posString(prev.DefRange))
			return
		}
		l.platDecls[key] = b
		l.platNames = append(l.platNames, key)
	case "search_space":
		name := b.Labels[0]
		if prev, ok := l.spaceDecls[name]; ok {
			dup("search_space", name, prev)
			return
		}
		l.spaceDecls[name] = b
		l.spaceNames = append(l.spaceNames, name)
	case "experiment":
		name := b.Labels[0]
		if prev, ok := l.expDecls[name]; ok {
			dup("experiment", name, prev)
			return
		}
		if !hclsyntax.ValidIdentifier(name) || len(name) > MaxExperimentName {
			shown := name
			if len(shown) > 80 {
				shown = shown[:80] + "..."
			}
			l.errorf(&b.LabelRanges[0], "Invalid experiment name",
				"%q is not a valid experiment name: use at most %d letters, digits, underscores and dashes, starting with a letter (it names directories, platform objects and addresses such as experiment.NAME).",
				shown, MaxExperimentName)
			return
		}
		l.expDecls[name] = b
		l.expNames = append(l.expNames, name)
	}
}

// sortedAttrs orders attributes as they appear in the source.
func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Range, out[j].Range
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
	return out
}

// ctx is the evaluation context with every value known so far; what is
// declared but not (successfully) evaluated is unknown, so expressions that
// use it become unknown instead of producing follow-on errors.
//
// While a node is evaluated (l.scope) the context holds only the locals,
// platforms, search spaces and experiments that node references (its
// dependencies, which list every name when an expression uses a whole
// namespace): a context of every value rebuilt after each node made a
// configuration of n locals cost n² (8,000 locals took 34 s).
func (l *loader) ctx() *hcl.EvalContext {
	if l.ctxCache != nil {
		return l.ctxCache
	}
	// The names the context holds, by root ("local": {"x"}, "platform":
	// {"KIND.NAME"}); nil: every declared one.
	var only map[string][]string
	if l.scope != nil {
		only = map[string][]string{}
		seen := map[string]bool{}
		for _, d := range l.scope.deps {
			if !seen[d.id] {
				seen[d.id] = true
				root, name, _ := strings.Cut(d.id, ".")
				only[root] = append(only[root], name)
			}
		}
	}
	obj := func(root string, vals map[string]cty.Value, names []string) cty.Value {
		if only != nil && root != "var" { // variables are not nodes: var holds every one
			names = only[root]
		}
		m := make(map[string]cty.Value, len(names))
		for _, n := range names {
			if v, ok := vals[n]; ok {
				m[n] = v
			} else {
				m[n] = cty.DynamicVal
			}
		}
		l.ctxValues += len(m)
		return cty.ObjectVal(m)
	}
	kinds := map[string]map[string]cty.Value{}
	add := func(key string, v cty.Value) {
		k, n, _ := strings.Cut(key, ".")
		if kinds[k] == nil {
			kinds[k] = map[string]cty.Value{}
		}
		if _, ok := kinds[k][n]; !ok {
			kinds[k][n] = v
			l.ctxValues++
		}
	}
	if only != nil {
		for _, key := range only["platform"] {
			if v, ok := l.platVals[key]; ok {
				add(key, v)
			} else {
				add(key, cty.DynamicVal)
			}
		}
	} else {
		for key, v := range l.platVals {
			add(key, v)
		}
		for _, key := range l.platNames {
			add(key, cty.DynamicVal)
		}
	}
	plat := map[string]cty.Value{}
	for k, m := range kinds {
		plat[k] = cty.ObjectVal(m)
	}
	if l.varObj == cty.NilVal {
		l.varObj = obj("var", l.varVals, l.varNames)
	}
	l.ctxCache = &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":          l.varObj,
			"local":        obj("local", l.localVals, l.localNames),
			"platform":     cty.ObjectVal(plat),
			"search_space": obj("search_space", l.spaceVals, l.spaceNames),
			"experiment":   obj("experiment", l.expVals, l.expNames),
			"param":        cty.DynamicVal, // only valid as ${param.NAME}; misuse is reported by the reference check
		},
		Functions: functions,
	}
	return l.ctxCache
}

// invalidate drops the cached context (a value was computed); the
// variables' object too when the variables changed (varsChanged).
func (l *loader) invalidate() { l.ctxCache = nil }

func (l *loader) varsChanged() { l.varObj = cty.NilVal; l.ctxCache = nil }

// value evaluates expr. ok is false when it failed (the error is already
// reported) or is not wholly known (something it depends on failed).
func (l *loader) value(expr hcl.Expression) (cty.Value, bool) {
	v, diags := expr.Value(l.ctx())
	l.addEvalDiags(diags)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		l.incomplete++
		return cty.DynamicVal, false
	}
	if l.refuseSensitive(v, expr.Range()) {
		return cty.DynamicVal, false
	}
	return v, true
}

// failures counts errors and values left unknown; a node whose count grew
// while it was decoded is not registered and evaluates to unknown.
func (l *loader) failures() int { return l.errorCount() + l.incomplete }

// addEvalDiags adds evaluation diagnostics, dropping those inside a
// reference already reported as undeclared or misused.
func (l *loader) addEvalDiags(diags hcl.Diagnostics) {
outer:
	for _, d := range diags {
		if d.Subject != nil {
			for _, br := range l.badRefs {
				if br.Filename == d.Subject.Filename && d.Subject.Start.Byte >= br.Start.Byte && d.Subject.End.Byte <= br.End.Byte {
					continue outer
				}
			}
		}
		l.diags = append(l.diags, d)
	}
}

// typed evaluates an attribute and converts it to ty; null is an error.
func (l *loader) typed(a *hcl.Attribute, ty cty.Type, what string) (cty.Value, bool) {
	v, ok := l.value(a.Expr)
	if !ok {
		return v, false
	}
	if v.IsNull() {
		l.errorf(a.Expr.Range().Ptr(), "Invalid value", "%s must not be null; it must be %s.", a.Name, what)
		return cty.DynamicVal, false
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		l.errorf(a.Expr.Range().Ptr(), "Incorrect attribute value type", "Inappropriate value for attribute %q: %s is required.", a.Name, what)
		return cty.DynamicVal, false
	}
	return cv, true
}

func (l *loader) str(a *hcl.Attribute) (string, bool) {
	v, ok := l.typed(a, cty.String, "a string")
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

// integer evaluates a whole number >= min.
func (l *loader) integer(a *hcl.Attribute, min int64) (int64, bool) {
	v, ok := l.typed(a, cty.Number, "a number")
	if !ok {
		return 0, false
	}
	i, whole := wholeNumber(v)
	if !whole {
		l.errorf(a.Expr.Range().Ptr(), "Invalid value", "%s must be a whole number, got %s.", a.Name, v.AsBigFloat().Text('g', -1))
		return 0, false
	}
	if i < min {
		l.errorf(a.Expr.Range().Ptr(), "Invalid value", "%s must be at least %d, got %d.", a.Name, min, i)
		return 0, false
	}
	return i, true
}
