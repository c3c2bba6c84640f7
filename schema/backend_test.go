package schema

import (
	"strings"
	"testing"
)

// fakePG stands for a shared backend's settings: a plain setting, a
// credential (sensitive) and a duration.
type fakePG struct {
	ConnStr  string `hcl:"conn_str,attr" doc:"where"`
	Schema   string `hcl:"schema_name,optional" doc:"schema"`
	Password string `hcl:"password,optional" sensitive:"true" doc:"the password"`
	Timeout  string `hcl:"timeout,optional" doc:"t"`
}

var testBackends = []BackendKind{
	LocalBackendKind,
	{Name: "pg", Summary: "PostgreSQL", Config: func() any { return &fakePG{} }},
	{Name: "kubernetes", Summary: "Secrets", Config: func() any {
		return &struct {
			Namespace string `hcl:"namespace,optional" doc:"ns"`
		}{}
	}},
}

const backendExp = `
search_space "s" {
  param "x" { uniform = [0, 1] }
}
experiment "e" {
  search_space = search_space.s
  objective {
    metric = "default"
    goal   = "maximize"
  }
  max_trials = 1
  trial {
    command = "echo ${param.x}"
  }
}
`

func loadBackendDiags(t *testing.T, files map[string]string, opts LoadOptions) (*Config, []string) {
	t.Helper()
	dir := writeConfig(t, files)
	opts.Platforms, opts.Tuners = testPlatforms, testTuners
	if opts.Backends == nil {
		opts.Backends = testBackends
	}
	cfg, diags := Load(dir, opts)
	var out []string
	for _, d := range diags {
		out = append(out, describe(d))
	}
	return cfg, out
}

func TestBackendBlock(t *testing.T) {
	cfg, diags := loadBackendDiags(t, map[string]string{"main.hcl": `
variable "pw" {
  sensitive = true
}
variable "db" {
  default = "trialform"
}
backend "pg" {
  conn_str    = "host=db.example dbname=${var.db}"
  password    = var.pw
}
` + backendExp}, LoadOptions{Vars: []string{"pw=hunter2-secret"}})
	if len(diags) > 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	b := cfg.Backend
	if b == nil || b.Kind != "pg" {
		t.Fatalf("Backend = %+v", b)
	}
	pg := b.Config.(*fakePG)
	if pg.ConnStr != "host=db.example dbname=trialform" || pg.Password != "hunter2-secret" {
		t.Errorf("decoded %+v", pg)
	}
	if _, ok := b.Settings["password"]; ok || b.Settings["conn_str"] != pg.ConnStr {
		t.Errorf("Settings (what init records) = %v: want conn_str and no password", b.Settings)
	}
	if !strings.Contains(strings.Join(cfg.Secrets(), "\n"), "hunter2-secret") {
		t.Errorf("Secrets() lacks the backend's password")
	}
}

func TestNoBackendBlockIsLocal(t *testing.T) {
	cfg, diags := loadBackendDiags(t, map[string]string{"main.hcl": backendExp}, LoadOptions{})
	if len(diags) > 0 || cfg.Backend != nil || cfg.Backend.BackendName() != "local" {
		t.Fatalf("diags %v, Backend %+v", diags, cfg.Backend)
	}
}

func TestBackendBlockErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		vars  []string
		want  []string
	}{
		{"two blocks", map[string]string{"a.hcl": `backend "local" {}` + "\n" + backendExp, "b.hcl": "\n\nbackend \"pg\" {\n  conn_str = \"x\"\n}\n"},
			nil, []string{`b.hcl:3,1-13: Duplicate backend block: A configuration has at most one backend block; the first is at a.hcl:1, this one at b.hcl:3.`}},
		{"unknown kind", map[string]string{"main.hcl": `backend "postgres" {}` + backendExp},
			nil, []string{`main.hcl:1,9-19: Unknown backend kind: Unknown backend kind "postgres"; known kinds: kubernetes, local, pg.`}},
		{"near kind", map[string]string{"main.hcl": `backend "kubernets" {}` + backendExp},
			nil, []string{`Did you mean "kubernetes"?`}},
		{"unknown setting", map[string]string{"main.hcl": "backend \"pg\" {\n  conn_str = \"x\"\n  pasword = \"y\"\n}\n" + backendExp},
			nil, []string{`main.hcl:3,3-10: Unsupported argument: An argument named "pasword" is not expected in backend "pg"; it takes "conn_str", "password", "schema_name", "timeout". Did you mean "password"?`}},
		{"missing setting", map[string]string{"main.hcl": "backend \"pg\" {\n}\n" + backendExp},
			nil, []string{`Missing required argument: backend "pg" needs "conn_str".`}},
		{"local takes none", map[string]string{"main.hcl": "backend \"local\" {\n  path = \"x\"\n}\n" + backendExp},
			nil, []string{`main.hcl:2,3-7: Unsupported argument: An argument named "path" is not expected in backend "local"`}},
		{"locals not in scope", map[string]string{"main.hcl": "locals { c = \"x\" }\nbackend \"pg\" {\n  conn_str = local.c\n}\n" + backendExp},
			nil, []string{`main.hcl:3,14-21: Reference not allowed in a backend block: A backend block may use variables (var.NAME) only, not local`}},
		{"secret in a plain setting", map[string]string{"main.hcl": "variable \"pw\" {\n  sensitive = true\n}\nbackend \"pg\" {\n  conn_str = \"password=${var.pw}\"\n}\n" + backendExp},
			[]string{"pw=s3cr3t-value"}, []string{`main.hcl:5,14-34: Sensitive value not allowed here: This value comes from a sensitive variable, but conn_str is not a credential setting of a pg backend`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := loadBackendDiags(t, tt.files, LoadOptions{Vars: tt.vars})
			got := strings.Join(diags, "\n")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("diagnostics lack %q:\n%s", w, got)
				}
			}
			if len(diags) != len(tt.want) {
				t.Errorf("%d diagnostics, want %d:\n%s", len(diags), len(tt.want), got)
			}
			if strings.Contains(got, "s3cr3t-value") {
				t.Errorf("a diagnostic shows the secret:\n%s", got)
			}
		})
	}
}

// LoadBackend reads the block alone: the rest of the configuration may
// be broken or need variables it has not got.
func TestLoadBackendAlone(t *testing.T) {
	dir := writeConfig(t, map[string]string{"main.hcl": `
variable "pw" {
  sensitive = true
}
variable "trials" {}
backend "pg" {
  conn_str = "host=x"
  password = var.pw
}
experiment "e" { max_trials = var.trials }
`})
	be, _, diags := LoadBackend(dir, LoadOptions{Backends: testBackends, Environ: []string{"TRIALFORM_VAR_pw=from-env-secret"}})
	if diags.HasErrors() || be == nil {
		t.Fatalf("LoadBackend: %v %+v", diags, be)
	}
	if be.Config.(*fakePG).Password != "from-env-secret" {
		t.Errorf("password %q", be.Config.(*fakePG).Password)
	}
	// Without the variable: the error names it and how to set it.
	_, _, diags = LoadBackend(dir, LoadOptions{Backends: testBackends})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), `uses variable "pw", which has no value: set the environment variable TRIALFORM_VAR_pw`) {
		t.Errorf("diags = %v", diags)
	}
	// No block, no files: nothing, and no error.
	for _, files := range []map[string]string{{"main.hcl": backendExp}, {}} {
		be, _, diags := LoadBackend(writeConfig(t, files), LoadOptions{Backends: testBackends})
		if be != nil || len(diags) > 0 {
			t.Errorf("%v: got %+v %v", files, be, diags)
		}
	}
}
