package schema

import (
	"reflect"
	"strings"
	"testing"
)

func TestKubernetesPlatform(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"main.hcl": `
platform "kubernetes" "gpu" {
  namespace          = "ml"
  image              = "python:3.11"
  image_pull_secrets = ["regcred"]
  node_selector      = { "kubernetes.io/hostname" = "gpu-a" }
  tolerations        = [{ key = "gpu", operator = "Exists", effect = "NoSchedule" }]
  resources {
    cpu    = 2
    memory = "8Gi"
    gpu    = 1
  }
  nfs {
    server     = "10.20.41.55"
    path       = "/"
    mount_path = "/nfs"
  }
  checkpoint {
    storage_class = "dfs"
    size          = "1Gi"
  }
}
`,
	})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	p := cfg.Platforms["kubernetes.gpu"]
	if p == nil {
		t.Fatal("no kubernetes.gpu")
	}
	if got := p.Attrs["resources"]; !reflect.DeepEqual(got, []any{map[string]any{"cpu": 2.0, "memory": "8Gi", "gpu": 1.0}}) {
		t.Errorf("resources = %#v", got)
	}
	if got := p.Attrs["nfs"].([]any)[0].(map[string]any)["mount_path"]; got != "/nfs" {
		t.Errorf("nfs = %#v", p.Attrs["nfs"])
	}
}

func TestKubernetesPlatformErrors(t *testing.T) {
	for _, tt := range []struct{ body, pos, want string }{
		{`namespce = "ml"`, "main.hcl:3,", `Unsupported argument: An argument named "namespce" is not expected in platform "kubernetes"`},
		{`namespce = "ml"`, "main.hcl:3,", `Did you mean "namespace"?`},
		{`image = ["a"]`, "main.hcl:3,", `Incorrect attribute value type: Inappropriate value for image: a string`},
		{"resources {\n  gpus = 1\n}", "main.hcl:4,", `Unsupported argument: An argument named "gpus" is not expected in resources`},
		{"resources {\n  gpu = 1\n}\nresources {\n  cpu = 1\n}", "main.hcl:6,", `Duplicate block: Only one resources block is allowed; the first is at main.hcl:3`},
		{"nfs {\n  server = \"a\"\n}", "main.hcl:3,", `Missing required argument: An nfs block needs "path"`},
		{"volume {\n}", "main.hcl:3,", `Unsupported block type: Blocks of type "volume" are not expected`},
		{`metrics_interval = "often"`, "main.hcl:3,", `Invalid duration: metrics_interval = "often" is not a duration: write it like "5s"`},
	} {
		dir := writeConfig(t, map[string]string{"main.hcl": "\nplatform \"kubernetes\" \"k\" {\n" + tt.body + "\n}\n"})
		_, diags := Load(dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
		var got []string
		found := false
		for _, d := range diags {
			g := describe(d)
			got = append(got, g)
			if strings.HasPrefix(g, tt.pos) && strings.Contains(g, tt.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: diagnostics %q, want one at %s with %q", tt.body, got, tt.pos, tt.want)
		}
	}
}

// TestReadmeKubernetesBlock loads the platform block of the kubernetes
// platform's page.
func TestReadmeKubernetesBlock(t *testing.T) {
	dir := writeConfig(t, map[string]string{"main.hcl": readmeHCL(t, "The kubernetes platform")})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	if p := cfg.Platforms["kubernetes.gpu"]; p == nil || p.Attrs["namespace"] != "ml" {
		t.Fatalf("README kubernetes block loaded wrong: %+v", p)
	}
}
