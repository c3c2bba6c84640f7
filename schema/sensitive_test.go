package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loadSensitiveSrc(t *testing.T, src string, env ...string) (*Config, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners, Environ: env})
	if diags.HasErrors() {
		return nil, diags.Error()
	}
	return cfg, ""
}

const sensitiveBase = `
variable "tok" {
  sensitive = true
}
locals {
  hdr = "Bearer ${upper(var.tok)}"
}
search_space "s" {
  param "x" { choice = ["a"] }
}
`

// TestSensitiveTravels: sensitivity goes through locals and functions into
// trial.env, and is refused wherever the value would be shown or saved,
// without the value in the message.
func TestSensitiveTravels(t *testing.T) {
	cfg, errs := loadSensitiveSrc(t, sensitiveBase+`
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "true"
    env     = { A = local.hdr, B = "plain" }
  }
}
`, "TRIALFORM_VAR_tok=zzsecretzz")
	if cfg == nil {
		t.Fatal(errs)
	}
	tr := cfg.Experiments["e"].Trial
	if tr.Env["A"] != "Bearer ZZSECRETZZ" || !tr.SensitiveEnv["A"] || tr.SensitiveEnv["B"] {
		t.Errorf("env %v, sensitive %v", tr.Env, tr.SensitiveEnv)
	}
	// the variable's own value and the env value derived from it
	if s := cfg.Secrets(); len(s) != 2 || s[0] != "zzsecretzz" || s[1] != "Bearer ZZSECRETZZ" {
		t.Errorf("Secrets() = %q", s)
	}
	for _, bad := range []string{
		`max_trials = strlen(var.tok)` + "\n  trial { command = \"true\" }",
		"max_trials = 1\n  trial { command = \"echo ${local.hdr}\" }",
		"max_trials = 1\n  trial {\n    command = \"true\"\n    metric_regex = var.tok\n  }",
	} {
		_, errs := loadSensitiveSrc(t, sensitiveBase+"experiment \"e\" {\n  search_space = search_space.s\n  "+bad+"\n}\n", "TRIALFORM_VAR_tok=zzsecretzz")
		if !strings.Contains(errs, "Sensitive value not allowed here") || strings.Contains(strings.ToLower(errs), "zzsecretzz") {
			t.Errorf("%s:\n%s", bad, errs)
		}
	}
}

// TestSensitiveEnvRefusedOffMachine: a platform that writes trial.env into
// objects others can read refuses a sensitive value there, and the advice
// fits the platform (a cloud service has no Kubernetes Secret).
func TestSensitiveEnvRefusedOffMachine(t *testing.T) {
	for _, c := range []struct{ platform, want, not string }{
		{"platform \"kubernetes\" \"k\" {\n  namespace = \"ml\"\n}\n", "Kubernetes Secret", "secret store"},
		{"platform \"openpai\" \"k\" {\n  host = \"pai.example.com\"\n  username = \"u\"\n  token = \"t\"\n  local_storage_mount_point = \"/mnt/a\"\n  container_storage_mount_point = \"/mnt/b\"\n  docker_image = \"img\"\n}\n", "the job definition", "Kubernetes"},
	} {
		kind := strings.Fields(c.platform)[1]
		_, errs := loadSensitiveSrc(t, sensitiveBase+c.platform+`
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  platform     = platform.`+strings.Trim(kind, `"`)+`.k
  trial {
    command = "true"
    env     = { A = local.hdr }
  }
}
`, "TRIALFORM_VAR_tok=zzsecretzz")
		if !strings.Contains(errs, "Sensitive value not supported on this platform") || !strings.Contains(errs, c.want) || strings.Contains(errs, c.not) || strings.Contains(strings.ToLower(errs), "zzsecretzz") {
			t.Errorf("%s: %s", kind, errs)
		}
	}
}
