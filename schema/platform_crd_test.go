package schema

import (
	"reflect"
	"strings"
	"testing"
)

func TestCRDPlatforms(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"main.hcl": `
platform "kubeflow" "tf" {
  operator  = "tfjob"
  namespace = "ml"
  image     = "tensorflow/tensorflow:2.15.0"
  worker {
    replicas = 2
    cpu      = 2
    memory   = "8Gi"
    gpu      = 1
  }
  ps {
    replicas = 1
    command  = "python ps.py"
  }
}
platform "kubeflow" "pt" {
  operator = "pytorchjob"
  master {
    replicas = 1
  }
  worker {
    replicas = 2
  }
}
platform "adaptdl" "adl" {
  adaptive     = true
  max_replicas = 4
  resources {
    gpu = 1
  }
  checkpoint {
    storage_class = "dfs"
    size          = "1Gi"
  }
}
platform "frameworkcontroller" "fc" {
  task_role "worker" {
    task_number = 2
    memory      = "4Gi"
    framework_attempt_completion_policy {
      min_failed_task_count    = 1
      min_succeeded_task_count = -1
    }
  }
  task_role "ps" {
    task_number = 1
  }
}
`,
	})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	tf := cfg.Platforms["kubeflow.tf"]
	if tf == nil || tf.Attrs["operator"] != "tfjob" {
		t.Fatalf("kubeflow.tf = %+v", tf)
	}
	if got := tf.Attrs["worker"]; !reflect.DeepEqual(got, []any{map[string]any{"replicas": 2.0, "cpu": 2.0, "memory": "8Gi", "gpu": 1.0}}) {
		t.Errorf("worker = %#v", got)
	}
	fc := cfg.Platforms["frameworkcontroller.fc"]
	roles, _ := fc.Attrs["task_role"].([]any)
	if len(roles) != 2 || roles[0].(map[string]any)["_labels"].([]any)[0] != "worker" {
		t.Errorf("task_role = %#v", fc.Attrs["task_role"])
	}
	if cfg.Platforms["adaptdl.adl"].Attrs["adaptive"] != true {
		t.Errorf("adaptdl = %#v", cfg.Platforms["adaptdl.adl"].Attrs)
	}
}

func TestCRDPlatformErrors(t *testing.T) {
	for _, tt := range []struct{ kind, body, pos, want string }{
		{"kubeflow", "operator = \"tfjob\"\nworker {\n}\nnamespce = \"ml\"", "main.hcl:6,", `Unsupported argument: An argument named "namespce" is not expected in platform "kubeflow"`},
		{"kubeflow", "operator = \"mxjob\"\nworker {\n}", "main.hcl:3,", `Invalid value: operator = "mxjob": the kubeflow platform does not run MPIJob or MXJob`},
		{"kubeflow", "operator = \"xgboostjob\"\nworker {\n}", "main.hcl:", `An XGBoostJob needs a master block`},
		{"kubeflow", "operator = 3\nworker {\n}", "main.hcl:3,", `operator = "3"`},
		{"kubeflow", "worker {\n}", "main.hcl:2,", `Missing required argument: A kubeflow platform needs operator`},
		{"kubeflow", "operator = \"pytorchjob\"\nworker {\n}\nps {\n}", "main.hcl:6,", `A ps block is not for operator "pytorchjob": a PyTorchJob has master and worker.`},
		{"kubeflow", "operator = \"tfjob\"\nworker {\n}\nmaster {\n}", "main.hcl:6,", `A master block is not for operator "tfjob": a TFJob has worker and ps.`},
		{"kubeflow", "operator = \"tfjob\"\nworker {\n  replicas = 0\n}", "main.hcl:5,", `Invalid value: replicas must be a whole number >= 1`},
		{"kubeflow", "operator = \"tfjob\"\nworker {\n  replicas = 1.5\n}", "main.hcl:5,", `replicas must be a whole number >= 1`},
		{"kubeflow", "operator = \"tfjob\"\nworker {\n  gpus = 1\n}", "main.hcl:5,", `An argument named "gpus" is not expected in worker`},
		{"kubeflow", "operator = \"tfjob\"\nworker {\n  image = 1\n}\nworker {\n}", "main.hcl:7,", `Duplicate block: Only one worker block is allowed`},
		{"kubeflow", "operator = \"tfjob\"\nps {\n}", "main.hcl:2,", `Missing required block: A kubeflow platform needs a worker block`},
		{"kubeflow", "operator = \"pytorchjob\"\nmaster {\n  replicas = 2\n}", "main.hcl:5,", `master.replicas must be 1`},
		{"kubeflow", "operator = \"tfjob\"\nworker {\n}\nchief {\n}", "main.hcl:6,", `Blocks of type "chief" are not expected in a kubeflow platform`},
		{"adaptdl", "adaptive = \"yes\"", "main.hcl:3,", `Inappropriate value for adaptive: true or false`},
		{"adaptdl", "max_replicas = 0", "main.hcl:3,", `max_replicas must be a whole number >= 1`},
		{"adaptdl", "task_role \"w\" {\n}", "main.hcl:3,", `Blocks of type "task_role" are not expected in a adaptdl platform`},
		{"frameworkcontroller", "", "main.hcl:2,", `A frameworkcontroller platform needs a task_role block`},
		{"frameworkcontroller", "task_role {\n}", "main.hcl:3,", `Missing name: A task_role block takes one label`},
		{"frameworkcontroller", "task_role \"w\" {\n  task_number = 0\n}", "main.hcl:4,", `task_number must be a whole number >= 1`},
		{"frameworkcontroller", "task_role \"w\" {\n}\ntask_role \"w\" {\n}", "main.hcl:5,", `task_role "w" is declared twice`},
		{"frameworkcontroller", "task_role \"w\" {\n  framework_attempt_completion_policy {\n    min_failed_task_count = -2\n  }\n}", "main.hcl:5,", `min_failed_task_count must be a whole number >= -1`},
		{"frameworkcontroller", "task_role \"w\" {\n  framework_attempt_completion_policy {\n    min_failed = 1\n  }\n}", "main.hcl:5,", `An argument named "min_failed" is not expected in framework_attempt_completion_policy`},
		{"frameworkcontroller", "task_role \"w\" {\n  replicas = 2\n}", "main.hcl:4,", `An argument named "replicas" is not expected in task_role`},
	} {
		dir := writeConfig(t, map[string]string{"main.hcl": "\nplatform \"" + tt.kind + "\" \"k\" {\n" + tt.body + "\n}\n"})
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
			t.Errorf("%s %q: diagnostics %q, want one at %s with %q", tt.kind, tt.body, got, tt.pos, tt.want)
		}
	}
}

// TestReadmeCRDBlocks loads the platform blocks of the CRD
// platforms' page.
func TestReadmeCRDBlocks(t *testing.T) {
	dir := writeConfig(t, map[string]string{"main.hcl": readmeHCL(t, "CRD platforms")})
	cfg := mustLoad(t, dir, LoadOptions{Platforms: testPlatforms, Tuners: testTuners})
	for _, k := range []string{"kubeflow.tf", "adaptdl.adl", "frameworkcontroller.fc"} {
		if cfg.Platforms[k] == nil {
			t.Errorf("README CRD blocks: no %s", k)
		}
	}
}
