package kubernetes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/registry"
)

// The platforms that create one custom resource per trial take the
// kubernetes platform's settings plus their own (NNI's field names in
// snake_case): kubeflow (TFJob/PyTorchJob) replica types with replicas,
// adaptdl's adaptive scaling, frameworkcontroller's task roles with
// task_number and their framework attempt completion policy.

// ReplicaSettings is a kubeflow worker, ps or master block.
type ReplicaSettings struct {
	Replicas int `hcl:"replicas,optional" min:"1" type:"a whole number >= 1" doc:"pods of this replica type (default 1)"`
	RoleResources
}

// RoleResources are the settings of a role that override the platform's.
type RoleResources struct {
	CPU     any    `hcl:"cpu,optional" type:"a number or a quantity string (\"500m\")" doc:"CPU cores (default the platform's resources)"`
	Memory  string `hcl:"memory,optional" type:"a quantity string (\"8Gi\")" doc:"memory (default the platform's resources)"`
	GPU     int    `hcl:"gpu,optional" min:"0" type:"a whole number >= 0" doc:"GPUs per pod"`
	Image   string `hcl:"image,optional" type:"a string (a container image)" doc:"image (default the platform's)"`
	Command string `hcl:"command,optional" type:"a string (a shell command line run instead of the trial's command)" doc:"a command run instead of the trial's in these pods"`
}

// KubeflowSettings is a platform "kubeflow" block.
type KubeflowSettings struct {
	Settings
	Operator string           `hcl:"operator,optional" type:"\"tfjob\", \"pytorchjob\", \"xgboostjob\" or \"paddlejob\"" doc:"the job kind: TFJob, PyTorchJob, XGBoostJob or PaddleJob; required"`
	Worker   *ReplicaSettings `hcl:"worker,block" doc:"the worker replicas (required, except with a master)"`
	PS       *ReplicaSettings `hcl:"ps,block" doc:"TFJob parameter servers"`
	Master   *ReplicaSettings `hcl:"master,block" doc:"the PyTorchJob, XGBoostJob (required) or PaddleJob master (replicas = 1)"`
}

// AdaptDLSettings is a platform "adaptdl" block.
type AdaptDLSettings struct {
	Settings
	Adaptive    bool `hcl:"adaptive,optional" doc:"preemptible and rescalable between min_replicas and max_replicas"`
	MinReplicas int  `hcl:"min_replicas,optional" min:"0" type:"a whole number >= 0" doc:"least replicas (adaptive only)"`
	MaxReplicas int  `hcl:"max_replicas,optional" min:"1" type:"a whole number >= 1" doc:"most replicas (adaptive only)"`
}

// FrameworkControllerSettings is a platform "frameworkcontroller" block.
type FrameworkControllerSettings struct {
	Settings
	TaskRoles []TaskRoleSettings `hcl:"task_role,block" doc:"one task role, named by its label; at least one"`
}

// TaskRoleSettings is a task_role "NAME" block.
type TaskRoleSettings struct {
	Name       string `hcl:"name,label"`
	TaskNumber int    `hcl:"task_number,optional" min:"1" type:"a whole number >= 1" doc:"pods of this role (default 1)"`
	RoleResources
	Policy *CompletionPolicy `hcl:"framework_attempt_completion_policy,block" doc:"when the framework attempt ends"`
}

// CompletionPolicy is a framework_attempt_completion_policy block.
type CompletionPolicy struct {
	MinFailedTaskCount    *int `hcl:"min_failed_task_count,optional" min:"-1" type:"a whole number >= -1 (-1: off)" doc:"failed tasks that fail the attempt (default 1)"`
	MinSucceededTaskCount *int `hcl:"min_succeeded_task_count,optional" min:"-1" type:"a whole number >= -1 (-1: off)" doc:"succeeded tasks that end the attempt (default -1: off)"`
}

// Check checks what kubeflow needs: its operator, a worker, the roles
// the operator has, one master.
func (s *KubeflowSettings) Check(w *decl.Where) hcl.Diagnostics {
	diags := s.Settings.Check(w)
	op := s.Operator
	job, known := kubeflowJobs[op]
	quoted := `"` + strings.Join(KubeflowOperators, `", "`) + `"`
	switch {
	case !w.Has("operator"):
		diags = append(diags, w.Error("", "Missing required argument", `A kubeflow platform needs operator = "tfjob" (or one of %s).`, quoted))
	case op == "mpijob" || op == "mxjob":
		diags = append(diags, w.Error("operator", "Invalid value", `operator = %q: the kubeflow platform does not run MPIJob or MXJob (their launcher or scheduler roles); it runs %s.`, op, quoted))
	case !known:
		diags = append(diags, w.Error("operator", "Invalid value", `operator = %q: the kubeflow platform runs %s.%s`,
			op, quoted, didyoumean.Sentence(op, KubeflowOperators, "%q")))
	}
	has := func(role string) bool {
		if job == nil {
			return true // reported above
		}
		for _, r := range job.roles {
			if r == role {
				return true
			}
		}
		return false
	}
	for _, r := range []struct {
		name string
		rs   *ReplicaSettings
	}{{"worker", s.Worker}, {"ps", s.PS}, {"master", s.Master}} {
		if r.rs == nil {
			continue
		}
		diags = append(diags, checkQuantities(w, r.name+".0", r.rs.CPU, r.rs.Memory)...)
		switch {
		case !has(r.name):
			diags = append(diags, w.Error(r.name+".0", "Unsupported block type", `A %s block is not for operator %q: a %s has %s.`,
				r.name, op, job.kind, strings.Join(job.roles, " and ")))
		case r.name == "master" && r.rs.Replicas > 1:
			diags = append(diags, w.Error("master.0.replicas", "Invalid value", "master.replicas must be 1: a %s has one master.", job.kind))
		}
	}
	switch {
	case op == "xgboostjob" && s.Master == nil:
		diags = append(diags, w.Error("", "Missing required block", `An XGBoostJob needs a master block: master { }.`))
	case s.Worker == nil && !(has("master") && s.Master != nil):
		diags = append(diags, w.Error("", "Missing required block", `A kubeflow platform needs a worker block: worker { replicas = 1 }.`))
	}
	return diags
}

// Check checks adaptdl's replica bounds.
func (s *AdaptDLSettings) Check(w *decl.Where) hcl.Diagnostics {
	diags := s.Settings.Check(w)
	if s.MaxReplicas > 0 && s.MinReplicas > s.MaxReplicas {
		diags = append(diags, w.Error("min_replicas", "Invalid value", "min_replicas (%d) is more than max_replicas (%d).", s.MinReplicas, s.MaxReplicas))
	}
	if !s.Adaptive && (s.MinReplicas > 0 || s.MaxReplicas > 0) {
		p := "min_replicas"
		if !w.Has(p) {
			p = "max_replicas"
		}
		diags = append(diags, w.Error(p, "Invalid value", "min_replicas and max_replicas need adaptive = true."))
	}
	return diags
}

// Check checks frameworkcontroller's task roles: at least one, names
// given once.
func (s *FrameworkControllerSettings) Check(w *decl.Where) hcl.Diagnostics {
	diags := s.Settings.Check(w)
	seen := map[string]string{}
	for i, r := range s.TaskRoles {
		p := "task_role." + strconv.Itoa(i)
		diags = append(diags, checkQuantities(w, p, r.CPU, r.Memory)...)
		if first, dup := seen[r.Name]; dup {
			diags = append(diags, w.Error(p, "Duplicate block", "task_role %q is declared twice; the first is at %s.", r.Name, first))
		}
		seen[r.Name] = w.Range(p).String()
	}
	if len(s.TaskRoles) == 0 {
		diags = append(diags, w.Error("", "Missing required block", `A frameworkcontroller platform needs a task_role block: task_role "worker" { task_number = 1 }.`))
	}
	return diags
}

// CRDRegistrations are the entries of the CRD kinds in the platform
// registry.
func CRDRegistrations() []registry.Kind {
	build := func(cfg any, env registry.Env) (providers.Provider, error) {
		c, err := CRDConfigFrom(cfg, env.Dir)
		if err != nil {
			return nil, err
		}
		return NewCRD(c)
	}
	return []registry.Kind{
		{Name: KindKubeflow, Summary: "one Kubeflow training-operator job (TFJob, PyTorchJob, XGBoostJob or PaddleJob) per trial", Config: func() any { return &KubeflowSettings{} }, New: build, Extends: "kubernetes"},
		{Name: KindAdaptDL, Summary: "one AdaptDLJob per trial", Config: func() any { return &AdaptDLSettings{} }, New: build, Extends: "kubernetes"},
		{Name: KindFrameworkController, Summary: "one FrameworkController Framework per trial", Config: func() any { return &FrameworkControllerSettings{} }, New: build, Extends: "kubernetes"},
	}
}

// CRDConfigFrom turns the decoded settings of a CRD kind
// (*KubeflowSettings, *AdaptDLSettings or *FrameworkControllerSettings)
// into a CRDConfig; dir resolves a relative kubeconfig path.
func CRDConfigFrom(cfg any, dir string) (CRDConfig, error) {
	var c CRDConfig
	role := func(name string, replicas int, rr RoleResources) Role {
		r := Role{Name: name, Replicas: replicas, Memory: rr.Memory, GPU: rr.GPU, Image: rr.Image, Command: rr.Command,
			MinFailedTaskCount: 1, MinSucceededTaskCount: -1}
		if r.Replicas == 0 {
			r.Replicas = 1
		}
		if rr.CPU != nil {
			r.CPU = quantity(rr.CPU)
		}
		return r
	}
	var common *Settings
	switch s := cfg.(type) {
	case *KubeflowSettings:
		common = &s.Settings
		c.Kind, c.Operator = KindKubeflow, s.Operator
		for _, r := range []struct {
			name string
			rs   *ReplicaSettings
		}{{"master", s.Master}, {"worker", s.Worker}, {"ps", s.PS}} {
			if r.rs != nil {
				c.Roles = append(c.Roles, role(r.name, r.rs.Replicas, r.rs.RoleResources))
			}
		}
	case *AdaptDLSettings:
		common = &s.Settings
		c.Kind, c.Adaptive, c.MinReplicas, c.MaxReplicas = KindAdaptDL, s.Adaptive, s.MinReplicas, s.MaxReplicas
	case *FrameworkControllerSettings:
		common = &s.Settings
		c.Kind = KindFrameworkController
		for _, tr := range s.TaskRoles {
			r := role(tr.Name, tr.TaskNumber, tr.RoleResources)
			if p := tr.Policy; p != nil {
				if p.MinFailedTaskCount != nil {
					r.MinFailedTaskCount = *p.MinFailedTaskCount
				}
				if p.MinSucceededTaskCount != nil {
					r.MinSucceededTaskCount = *p.MinSucceededTaskCount
				}
			}
			c.Roles = append(c.Roles, r)
		}
	default:
		return c, providers.Permanent(fmt.Errorf("not the configuration of a CRD kind: %T", cfg))
	}
	base, err := ConfigFrom(common, dir)
	if err != nil {
		return c, err
	}
	c.Config = base
	return c, nil
}
