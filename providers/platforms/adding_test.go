package platforms

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/docs"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/local"
	"github.com/trialform/trialform/providers/registry"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner"
)

// slurmSettings is the README's "Adding a platform" example.
type slurmSettings struct {
	Partition string      `hcl:"partition,attr" doc:"partition the jobs are submitted to"`
	GPUs      int         `hcl:"gpus_per_job,optional" min:"0" doc:"GPUs per job (default 0)"`
	Login     *slurmLogin `hcl:"login,block" doc:"the login node, over SSH"`
}

type slurmLogin struct {
	Host string `hcl:"host,attr" doc:"host name or address"`
}

// TestAddingAPlatform: one registration more, and schema checks and
// decodes the new kind's blocks and the command package's Build makes its
// provider, with nothing else changed.
func TestAddingAPlatform(t *testing.T) {
	var built *slurmSettings
	slurm := registry.Kind{
		Name: "slurm", Summary: "one Slurm job per trial",
		Config: func() any { return &slurmSettings{} },
		New: func(cfg any, env registry.Env) (providers.Provider, error) {
			built = cfg.(*slurmSettings)
			// Any provider does for the test: the local one.
			return local.Registration().New(&local.Settings{MaxTrialsPerGPU: 1}, env)
		},
	}
	reg := registry.New(append(Kinds(), slurm)...)
	load := func(src string) (*schema.Config, string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, diags := schema.Load(dir, schema.LoadOptions{Platforms: reg, Tuners: tuner.Builtin()})
		var msgs []string
		for _, d := range diags {
			msgs = append(msgs, d.Subject.String()+": "+d.Summary+": "+d.Detail)
		}
		return cfg, strings.Join(msgs, "\n")
	}
	_, diags := load("platform \"slurm\" \"hpc\" {\n  partiton = \"gpu\"\n  login {\n    host = \"login1\"\n  }\n}\n")
	for _, want := range []string{`main.hcl:2,3-11: Unsupported argument`, `Did you mean "partition"?`, `main.hcl:1,1-23: Missing required argument: platform "slurm" needs "partition"`} {
		if !strings.Contains(diags, want) {
			t.Errorf("diagnostics %q lack %q", diags, want)
		}
	}
	if _, diags := load("platform \"slurm\" \"hpc\" {\n  partition = \"gpu\"\n  gpus_per_job = -1\n}\n"); !strings.Contains(diags, "main.hcl:3,18-20: Invalid value: gpus_per_job must be at least 0, got -1.") {
		t.Errorf("gpus_per_job = -1: %q", diags)
	}
	cfg, diags := load("platform \"slurm\" \"hpc\" {\n  partition = \"gpu\"\n  gpus_per_job = 2\n  login {\n    host = \"login1\"\n  }\n}\n")
	if diags != "" {
		t.Fatal(diags)
	}
	p, err := reg.Build("slurm", cfg.Platforms["slurm.hpc"].Config, registry.Env{Name: "hpc", Dir: cfg.Dir, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if built == nil || built.Partition != "gpu" || built.GPUs != 2 || built.Login == nil || built.Login.Host != "login1" {
		t.Errorf("the constructor got %+v", built)
	}
}

// CONTRIBUTING.md's example declares the same settings as the test above.
func TestReadmeAddingAPlatformExample(t *testing.T) {
	_, sec, err := docs.Section(filepath.Join("..", ".."), "Adding a platform")
	if err != nil {
		t.Fatal(err)
	}
	blocks := docs.Blocks(sec, "go")
	if len(blocks) == 0 {
		t.Fatal("no go block in the Adding a platform section")
	}
	src := blocks[0]
	f, err := parser.ParseFile(token.NewFileSet(), "README.go", src, 0)
	if err != nil {
		t.Fatalf("README's example is not Go: %v", err)
	}
	tags := map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		if st, ok := ts.Type.(*ast.StructType); ok {
			for _, fl := range st.Fields.List {
				tag, _ := strconv.Unquote(fl.Tag.Value)
				tags[ts.Name.Name] = append(tags[ts.Name.Name], tag)
			}
		}
		return false
	})
	for name, typ := range map[string]reflect.Type{"Settings": reflect.TypeOf(slurmSettings{}), "Login": reflect.TypeOf(slurmLogin{})} {
		var want []string
		for i := 0; i < typ.NumField(); i++ {
			want = append(want, string(typ.Field(i).Tag))
		}
		if !reflect.DeepEqual(tags[name], want) {
			t.Errorf("README's %s has tags %q, the test's %q", name, tags[name], want)
		}
	}
	if !strings.Contains(sec, "slurm.Registration(),") {
		t.Error("README does not show the registration line")
	}
}
