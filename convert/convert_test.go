package convert

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner"
)

var update = flag.Bool("update", false, "rewrite the golden HCL files (or set UPDATE_GOLDEN=1)")

func updating() bool { return *update || os.Getenv("UPDATE_GOLDEN") != "" }

var tools = map[string]func([]byte, Options) (*Result, error){"nni": NNI, "katib": Katib, "polyaxon": Polyaxon}

// tcase is one real config: its tool, the file, and its golden file.
type tcase struct {
	tool, path, golden string
}

func (c tcase) name() string { return strings.TrimSuffix(filepath.Base(c.golden), ".hcl") }

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}

func seedCases(t *testing.T) []tcase {
	var out []tcase
	for _, p := range glob(t, "testdata/seeds/*/*.yml") {
		tool := "nni"
		if strings.HasPrefix(filepath.Base(p), "polyaxonfile") {
			tool = "polyaxon"
		}
		out = append(out, tcase{tool, p, filepath.Join("testdata/golden/seeds", filepath.Base(filepath.Dir(p))+".hcl")})
	}
	return out
}

func corpusCases(t *testing.T) []tcase {
	var out []tcase
	for _, p := range glob(t, "testdata/corpus/nni/*/config*.yml") {
		out = append(out, tcase{"nni", p, filepath.Join("testdata/golden/nni", filepath.Base(filepath.Dir(p))+".hcl")})
	}
	for _, p := range glob(t, "testdata/corpus/katib/*.yaml") {
		out = append(out, tcase{"katib", p, filepath.Join("testdata/golden/katib", strings.TrimSuffix(filepath.Base(p), ".yaml")+".hcl")})
	}
	for _, p := range append(glob(t, "testdata/corpus/polyaxon/*.yml"), glob(t, "testdata/corpus/polyaxon/*/polyaxonfile*.y*ml")...) {
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p), ".yml"), ".yaml")
		if d := filepath.Base(filepath.Dir(p)); d != "polyaxon" {
			name = d + "_" + name
		}
		out = append(out, tcase{"polyaxon", p, filepath.Join("testdata/golden/polyaxon", name+".hcl")})
	}
	return out
}

func readerFor(dir string) func(string) ([]byte, error) {
	return func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, rel)) }
}

func convertCase(t *testing.T, c tcase) *Result {
	t.Helper()
	data, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tools[c.tool](data, Options{Filename: filepath.Base(c.path), ReadFile: readerFor(filepath.Dir(c.path))})
	if err != nil {
		t.Fatalf("convert %s %s: %v", c.tool, c.path, err)
	}
	return res
}

// validate writes the HCL beside copies of the input's files and loads it
// with schema: it must have no errors. Variables without a default (the
// secrets) are given with -var, as a user would.
func validate(t *testing.T, c tcase, res *Result) *schema.Config {
	t.Helper()
	dir := t.TempDir()
	entries, _ := os.ReadDir(filepath.Dir(c.path))
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".yml") || strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(filepath.Dir(c.path), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), res.HCL, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := schema.Load(dir, schema.LoadOptions{Platforms: testPlatforms, Tuners: tuner.Builtin(), Vars: requiredVars(t, res.HCL)})
	if diags.HasErrors() {
		var b strings.Builder
		schema.WriteDiagnostics(&b, cfg.HCLFiles(), diags, 0, false)
		t.Fatalf("the HCL converted from %s does not validate:\n%s\n%s", c.path, b.String(), res.HCL)
	}
	return cfg
}

// requiredVars gives every variable without a default a value.
func requiredVars(t *testing.T, src []byte) []string {
	f, diags := hclsyntax.ParseConfig(src, "main.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse: %v", diags)
	}
	var out []string
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type == "variable" {
			if _, ok := b.Body.Attributes["default"]; !ok {
				val := "x"
				switch {
				case strings.HasSuffix(b.Labels[0], "_mount_point"):
					val = "/x" // a path where the platform wants an absolute one
				case strings.HasSuffix(b.Labels[0], "_subscription_id"):
					val = "00000000-0000-0000-0000-000000000000" // a GUID
				case strings.HasSuffix(b.Labels[0], "_workspace_name"):
					val = "ws-x" // 3 characters at least
				}
				if ta, ok := b.Body.Attributes["type"]; ok {
					switch string(ta.Expr.Range().SliceBytes(src)) {
					case "number":
						val = "1"
					case "bool":
						val = "true"
					}
				}
				out = append(out, b.Labels[0]+"="+val)
			}
		}
	}
	return out
}

// checkResult checks what every conversion must hold: fmt-clean HCL,
// and a comment for each field that was not converted.
func checkResult(t *testing.T, c tcase, res *Result) {
	t.Helper()
	if got := schema.FormatSource(res.HCL); !bytes.Equal(got, res.HCL) {
		t.Errorf("%s: the HCL is not fmt-clean", c.path)
	}
	for _, w := range res.Warnings {
		if _, err := os.Stat(filepath.Join(filepath.Dir(c.path), w.File)); err != nil {
			t.Errorf("%s: warning names file %q", c.path, w.File)
		}
		if strings.HasPrefix(w.Msg, "not converted:") && !bytes.Contains(res.HCL, []byte("# not converted: "+w.Field+":")) {
			t.Errorf("%s: warning %q has no comment in the HCL", c.path, w)
		}
	}
}

func golden(t *testing.T, c tcase, got []byte) {
	t.Helper()
	if updating() {
		os.MkdirAll(filepath.Dir(c.golden), 0o755)
		if err := os.WriteFile(c.golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(c.golden)
	if err != nil {
		t.Fatalf("%v (run go test ./convert -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: the HCL differs from %s (go test ./convert -update rewrites it):\n%s", c.path, c.golden, schema.UnifiedDiff(c.golden, want, got))
	}
}

// The configs of the seed documents convert, match their golden files and
// validate.
func TestSeeds(t *testing.T) {
	cases := seedCases(t)
	if len(cases) != 5 {
		t.Fatalf("want the 5 seed configs, found %d", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			res := convertCase(t, c)
			checkResult(t, c, res)
			golden(t, c, res.HCL)
			validate(t, c, res)
		})
	}
}

// Real configs of NNI's, Katib's and Polyaxon's examples convert with no
// error, match their golden files and validate.
func TestCorpus(t *testing.T) {
	cases := corpusCases(t)
	if len(cases) < 30 {
		t.Fatalf("the corpus has %d configs; want at least 30", len(cases))
	}
	per := map[string]int{}
	for _, c := range cases {
		per[c.tool]++
		t.Run(c.tool+"/"+c.name(), func(t *testing.T) {
			res := convertCase(t, c)
			checkResult(t, c, res)
			golden(t, c, res.HCL)
			validate(t, c, res)
		})
	}
	t.Logf("corpus: %v", per)
}

func TestBadYAMLNamesFileAndLine(t *testing.T) {
	tests := []struct {
		tool, src, want string
	}{
		{"nni", "trialCommand: python3 x.py\nsearchSpace: a: b\n", "config.yml:2: invalid YAML: mapping values are not allowed in this context"},
		{"nni", "a: b\n\tc: d\n", "config.yml:2: invalid YAML"},
		{"nni", "- a\n- b\n", "config.yml:1: the document must be a YAML mapping"},
		{"nni", "", "config.yml:1: the file is empty"},
		{"nni", "searchSpaceFile: s.json\ntrialCommand: x\ntrialConcurrency: many\n", "config.yml:3: trialConcurrency must be a number, not \"many\""},
		{"nni", "searchSpaceFile: s.json\ntrialCommand: x\nmaxTrialNumber: 2.5\n", "config.yml:3: maxTrialNumber must be a whole number"},
		{"nni", "searchSpaceFile: s.json\ntrialCommand: x\nmaxExperimentDuration: soon\n", `config.yml:3: maxExperimentDuration = "soon" is not a duration`},
		{"nni", "searchSpaceFile: s.json\ntrialCommand: x\ntuner:\n  name: TPE\n  classArgs:\n    optimize_mode: up\n", "config.yml:6: tuner.classArgs.optimize_mode must be maximize or minimize"},
		{"nni", "searchSpaceFile: s.json\ntrialCommand: x\ntrainingService:\n  platform: slurm\n", `config.yml:4: trainingService.platform "slurm" is not one trialform knows`},
		{"nni", "trialCommand: x\n", "config.yml:1: no search space"},
		{"nni", "searchSpace:\n  lr: {_type: uniform, _value: [1]}\ntrialCommand: x\n", `config.yml:2: searchSpace: param "lr"`},
		{"nni", "trialCommand: x\ntrialCommand: y\n", "config.yml:2: trialCommand is set twice"},
		{"katib", "kind: Experiment\nspec:\n  objective: {type: minimize, objectiveMetricName: loss}\n  algorithm: {algorithmName: darts}\n", `config.yml:4: algorithm "darts" is neural architecture search`},
		{"katib", "kind: Experiment\nspec:\n  objective: {type: best, objectiveMetricName: loss}\n", `config.yml:3: spec.objective.type must be maximize or minimize, not "best"`},
		{"katib", "kind: Experiment\nspec:\n  objective:\n    type: minimize\n    objectiveMetricName: loss\n    metricStrategies:\n      - name: loss\n        value: median\n", `config.yml:8: spec.objective.metricStrategies[0].value must be min, max or latest, not "median"`},
		{"katib", "kind: Job\n", `config.yml:1: kind "Job": convert katib reads a Katib Experiment`},
		{"polyaxon", "version: 1\nkind: group\nhptuning:\n  matrix:\n    lr:\n      uniform: a:b\n", `config.yml:6: hptuning.matrix.lr.uniform: "a" is not a number`},
		{"polyaxon", "version: 1.1\nkind: operation\nurlRef: https://x/y.yml\n", "config.yml:3: urlRef: convert does not download components"},
		{"polyaxon", "version: 1\nkind: notebook\n", `config.yml:2: kind "notebook"`},
		// yaml.v3 names no line for these two
		{"nni", "trialCommand: x\nsearchSpace:\n  a: \"caf\xe9\"\n", "config.yml:3: column 10: byte 0xE9 is not UTF-8 text"},
		{"katib", "kind: Experiment\nspec:\n  x: \"\x01\"\n", "config.yml:3: column 7: the control character U+0001 is not allowed in YAML"},
		// an alias inside its own anchor never ends (it used to overflow the stack)
		{"nni", "trialCommand: x\nsearchSpace: &a {x: *a}\n", "config.yml:2: the alias *a is inside its own anchor &a"},
	}
	for _, tt := range tests {
		_, err := tools[tt.tool]([]byte(tt.src), Options{Filename: "config.yml"})
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%s %q: err = %v, want an *Error", tt.tool, tt.src, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), tt.want) && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %q:\n got %q\nwant %q", tt.tool, tt.src, err, tt.want)
		}
		if ce.Line == 0 {
			t.Errorf("%s %q: no line in %q", tt.tool, tt.src, err)
		}
	}
}

// fuzz runs a converter on arbitrary input: it must not panic, and what
// it returns is either an *Error or HCL that parses.
func fuzz(f *testing.F, tool string, seeds []string) {
	for _, p := range seeds {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := tools[tool](data, Options{Filename: "f.yml", Inline: true, ReadFile: func(string) ([]byte, error) { return data, nil }})
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if _, diags := hclsyntax.ParseConfig(res.HCL, "f.hcl", hcl.InitialPos); diags.HasErrors() {
			t.Fatalf("the HCL does not parse: %v\n%s", diags, res.HCL)
		}
	})
}

func seedFiles(pattern ...string) []string {
	var out []string
	for _, p := range pattern {
		m, _ := filepath.Glob(p)
		out = append(out, m...)
	}
	return out
}

func FuzzNNI(f *testing.F) {
	fuzz(f, "nni", seedFiles("testdata/seeds/0*_*/config.yml", "testdata/corpus/nni/*/config*.yml"))
}

func FuzzKatib(f *testing.F) {
	fuzz(f, "katib", seedFiles("testdata/corpus/katib/*.yaml"))
}

func FuzzPolyaxon(f *testing.F) {
	fuzz(f, "polyaxon", seedFiles("testdata/seeds/004_*/polyaxonfile.yml", "testdata/corpus/polyaxon/*.yml", "testdata/corpus/polyaxon/*/*.y*ml"))
}

// An alias bomb is refused at the alias that takes the expansion past the
// limit, for each tool, wherever the aliases are; converting used to
// expand it (a 700-byte one took 4.4 GB).
func TestAliasBombRefused(t *testing.T) {
	// 12 levels of 3: 3^12 = 531441 values, about five times the limit,
	// so that without the check the conversion still ends.
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x]\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1)
	}
	bomb := b.String()
	for _, tt := range []struct {
		tool, src string
		line      int // of a9's aliases: those up to there stand for 132840 values
	}{
		{"nni", bomb + "trialCommand: x\nsearchSpace: {lr: {_type: choice, _value: *a12}}\n", 10},
		{"katib", "kind: Experiment\n" + bomb + "spec: {parameters: *a12}\n", 11},
		{"polyaxon", "version: 1.1\nkind: component\n" + bomb + "run: {kind: job, container: {image: x, command: *a12}}\n", 12},
	} {
		_, err := tools[tt.tool]([]byte(tt.src), Options{Filename: "bomb.yml"})
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "YAML aliases") {
			t.Errorf("%s: err = %v, want the alias limit", tt.tool, err)
			continue
		}
		if ce.Line != tt.line {
			t.Errorf("%s: error at line %d, want %d: %v", tt.tool, ce.Line, tt.line, err)
		}
	}
	// Aliases used as real configurations use them are fine.
	src := "searchSpaceFile: s.json\ntrialCommand: x\nx: &res {cpu: 1, memory: 2g}\ny: *res\nz: *res\n"
	if _, err := NNI([]byte(src), Options{Filename: "ok.yml"}); err != nil {
		t.Errorf("a few aliases: %v", err)
	}
}

// A choice that mixes plain options with nested ones ("none" beside
// {"_name": ...}) cannot be written as option blocks: inline it is an
// error at the plain option's line, from a file with -inline it stays
// nni_file. It was written as option "" {} with rc 0.
func TestNNIMixedChoice(t *testing.T) {
	inline := `trialCommand: python3 x.py
searchSpace:
  opt:
    _type: choice
    _value:
      - {_name: sgd, lr: {_type: uniform, _value: [0.1, 1]}}
      - {_name: adam, beta: {_type: choice, _value: [{_name: fixed}, 0.9]}}
`
	_, err := NNI([]byte(inline), Options{Filename: "config.yml"})
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 7 || !strings.Contains(ce.Msg, `param "opt.adam.beta" mixes a plain option (0.9) with nested ones`) {
		t.Errorf("nested mixed choice: err = %v, want config.yml:7 naming opt.adam.beta", err)
	}
	top := "trialCommand: x\nsearchSpace:\n  opt:\n    _type: choice\n    _value:\n      - none\n      - {_name: sgd}\n"
	if _, err := NNI([]byte(top), Options{Filename: "config.yml"}); !errors.As(err, &ce) || ce.Line != 6 || !strings.Contains(ce.Msg, `("none")`) {
		t.Errorf("mixed choice: err = %v, want config.yml:6 naming \"none\"", err)
	}

	file := `{"opt": {"_type": "choice", "_value": ["none", {"_name": "sgd", "lr": {"_type": "uniform", "_value": [0.1, 1]}}]}}`
	res, err := NNI([]byte("searchSpaceFile: space.json\ntrialCommand: x\nmaxTrialNumber: 2\n"), Options{
		Filename: "config.yml", Inline: true,
		ReadFile: func(string) ([]byte, error) { return []byte(file), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(res.HCL, []byte(`nni_file = "space.json"`)) || bytes.Contains(res.HCL, []byte(`option ""`)) {
		t.Errorf("-inline of a mixed choice: want nni_file kept:\n%s", res.HCL)
	}
	found := false
	for _, w := range res.Warnings {
		found = found || strings.Contains(w.Msg, "nni_file keeps it")
	}
	if !found {
		t.Errorf("no warning: %v", res.Warnings)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "space.json"), []byte(file), 0o644)
	os.WriteFile(filepath.Join(dir, "config.yml"), nil, 0o644)
	validate(t, tcase{tool: "nni", path: filepath.Join(dir, "config.yml")}, res)
}
