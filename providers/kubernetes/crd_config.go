package kubernetes

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trialform/trialform/providers"
)

// CRD platform kinds.
const (
	KindKubeflow            = "kubeflow"
	KindAdaptDL             = "adaptdl"
	KindFrameworkController = "frameworkcontroller"
)

// Serves reports whether this package runs the platform kind: kubernetes
// (Jobs) or a CRD kind.
func Serves(kind string) bool {
	return kind == "kubernetes" || kind == KindKubeflow || kind == KindAdaptDL || kind == KindFrameworkController
}

// FromAttrs builds the provider of a platform block of a kind Serves
// (schema.Platform.Attrs; base resolves a relative kubeconfig path).
func FromAttrs(kind string, attrs map[string]any, base string) (providers.Provider, error) {
	if kind == "kubernetes" {
		c, err := ConfigFromAttrs(attrs, base)
		if err != nil {
			return nil, err
		}
		return New(c)
	}
	c, err := CRDConfigFromAttrs(kind, attrs, base)
	if err != nil {
		return nil, err
	}
	return NewCRD(c)
}

// CRDConfig configures a platform that creates one custom resource per
// trial (platform "kubeflow", "adaptdl" or "frameworkcontroller"): the
// common kubernetes settings plus the kind's own.
type CRDConfig struct {
	Config
	Kind     string // KindKubeflow, KindAdaptDL or KindFrameworkController
	Operator string // kubeflow: "tfjob" or "pytorchjob"
	// Roles are kubeflow's replica types (worker, ps, master) or
	// frameworkcontroller's task roles, in order; the trial's metrics come
	// from the first pod of the first role (kubeflow: of the master when
	// there is one).
	Roles []Role
	// AdaptDL: Adaptive makes the job preemptible and rescalable between
	// MinReplicas and MaxReplicas (0 = the scheduler's default).
	Adaptive                 bool
	MinReplicas, MaxReplicas int
}

// Role is one kubeflow replica type or frameworkcontroller task role.
type Role struct {
	Name     string // "worker", "ps", "master", or the task role's name
	Replicas int    // replicas (kubeflow) or task_number (frameworkcontroller)
	// CPU, Memory and GPU override the platform's resources for this role.
	CPU, Memory string
	GPU         int
	Image       string // "" = the platform's image
	// Command, when set, runs instead of the trial's command in this
	// role's pods (with the same environment and parameter.cfg).
	Command string
	// MinFailedTaskCount and MinSucceededTaskCount are frameworkcontroller's
	// framework attempt completion policy for the role (-1 = off).
	MinFailedTaskCount, MinSucceededTaskCount int
}

// CRDConfigFromAttrs decodes a platform block of a CRD kind: the kind's
// own settings here, the rest as ConfigFromAttrs does.
func CRDConfigFromAttrs(kind string, attrs map[string]any, base string) (CRDConfig, error) {
	c := CRDConfig{Kind: kind}
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	common := map[string]any{}
	var roleBlocks []string
	own := map[string]bool{}
	switch kind {
	case KindKubeflow:
		own = map[string]bool{"operator": true, "worker": true, "ps": true, "master": true}
		roleBlocks = []string{"master", "worker", "ps"}
	case KindAdaptDL:
		own = map[string]bool{"adaptive": true, "min_replicas": true, "max_replicas": true}
	case KindFrameworkController:
		own = map[string]bool{"task_role": true}
	default:
		return c, providers.Permanent(fmt.Errorf("platform kind %q is not a CRD kind", kind))
	}
	for k, v := range attrs {
		if !own[k] {
			common[k] = v
		}
	}
	cfg, err := ConfigFromAttrs(common, base)
	if err != nil {
		errs = append(errs, strings.TrimPrefix(err.Error(), "kubernetes platform: "))
	}
	c.Config = cfg
	whole := func(where string, v any, min int) int {
		f, ok := v.(float64)
		if !ok || f != float64(int(f)) || int(f) < min {
			bad("%s must be a whole number >= %d", where, min)
			return min
		}
		return int(f)
	}
	blocks := func(k string) []map[string]any {
		v, ok := attrs[k]
		if !ok || v == nil {
			return nil
		}
		l, ok := v.([]any)
		if !ok {
			if m, ok := v.(map[string]any); ok {
				return []map[string]any{m}
			}
			bad("%s must be a block", k)
			return nil
		}
		var out []map[string]any
		for _, e := range l {
			m, ok := e.(map[string]any)
			if !ok {
				bad("%s must be a block", k)
				return nil
			}
			out = append(out, m)
		}
		return out
	}
	role := func(where string, m map[string]any, countKey string) Role {
		r := Role{Replicas: 1, MinFailedTaskCount: 1, MinSucceededTaskCount: -1}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := m[k]
			switch k {
			case "_labels":
			case countKey:
				r.Replicas = whole(where+"."+k, v, 1)
			case "cpu":
				r.CPU = quantity(v)
			case "memory":
				r.Memory = quantity(v)
			case "gpu":
				r.GPU = whole(where+".gpu", v, 0)
			case "image", "command":
				s, ok := v.(string)
				if !ok {
					bad("%s.%s must be a string", where, k)
				}
				if k == "image" {
					r.Image = s
				} else {
					r.Command = s
				}
			case "framework_attempt_completion_policy":
				if kind != KindFrameworkController {
					bad("%s: unknown setting %q", where, k)
					continue
				}
				var pm map[string]any
				switch x := v.(type) {
				case []any:
					if len(x) == 1 {
						pm, _ = x[0].(map[string]any)
					}
				case map[string]any:
					pm = x
				}
				if pm == nil {
					bad("%s.%s must be one block", where, k)
					continue
				}
				for pk, pv := range pm {
					switch pk {
					case "min_failed_task_count":
						r.MinFailedTaskCount = whole(where+"."+pk, pv, -1)
					case "min_succeeded_task_count":
						r.MinSucceededTaskCount = whole(where+"."+pk, pv, -1)
					default:
						bad("%s.%s: unknown setting %q (min_failed_task_count, min_succeeded_task_count)", where, k, pk)
					}
				}
			default:
				bad("%s: unknown setting %q (%s, cpu, memory, gpu, image, command)", where, k, countKey)
			}
		}
		for k, q := range map[string]string{"cpu": r.CPU, "memory": r.Memory} {
			if q != "" {
				if _, err := resource.ParseQuantity(q); err != nil {
					bad("%s.%s = %q is not a Kubernetes quantity", where, k, q)
				}
			}
		}
		return r
	}
	switch kind {
	case KindKubeflow:
		c.Operator, _ = attrs["operator"].(string)
		switch c.Operator {
		case "tfjob", "pytorchjob":
		case "":
			bad(`operator is required: "tfjob" or "pytorchjob"`)
		default:
			bad(`operator = %q: want "tfjob" or "pytorchjob"`, c.Operator)
		}
		for _, rb := range roleBlocks {
			bs := blocks(rb)
			if len(bs) > 1 {
				bad("only one %s block is allowed", rb)
			}
			if len(bs) == 0 {
				continue
			}
			switch {
			case rb == "ps" && c.Operator == "pytorchjob":
				bad("a ps block is for operator \"tfjob\" (a PyTorchJob has master and worker)")
			case rb == "master" && c.Operator == "tfjob":
				bad("a master block is for operator \"pytorchjob\" (a TFJob has worker and ps)")
			}
			r := role(rb, bs[0], "replicas")
			r.Name = rb
			if rb == "master" && r.Replicas != 1 {
				bad("master.replicas must be 1 (a PyTorchJob has one master)")
			}
			c.Roles = append(c.Roles, r)
		}
		hasWorker := false
		for _, r := range c.Roles {
			hasWorker = hasWorker || r.Name == "worker" || (r.Name == "master" && c.Operator == "pytorchjob")
		}
		if !hasWorker {
			bad("a worker block is required (or, for pytorchjob, a master block)")
		}
	case KindAdaptDL:
		if v, ok := attrs["adaptive"]; ok && v != nil {
			b, ok := v.(bool)
			if !ok {
				bad("adaptive must be true or false")
			}
			c.Adaptive = b
		}
		if v, ok := attrs["min_replicas"]; ok && v != nil {
			c.MinReplicas = whole("min_replicas", v, 0)
		}
		if v, ok := attrs["max_replicas"]; ok && v != nil {
			c.MaxReplicas = whole("max_replicas", v, 1)
		}
		if c.MaxReplicas > 0 && c.MinReplicas > c.MaxReplicas {
			bad("min_replicas (%d) is more than max_replicas (%d)", c.MinReplicas, c.MaxReplicas)
		}
		if !c.Adaptive && (c.MinReplicas > 0 || c.MaxReplicas > 0) {
			bad("min_replicas and max_replicas need adaptive = true")
		}
	case KindFrameworkController:
		seen := map[string]bool{}
		for _, m := range blocks("task_role") {
			name := ""
			if l, ok := m["_labels"].([]any); ok && len(l) == 1 {
				name, _ = l[0].(string)
			}
			if name == "" {
				bad(`a task_role block needs a name: task_role "worker" { ... }`)
				continue
			}
			if seen[name] {
				bad("task_role %q is declared twice", name)
			}
			seen[name] = true
			r := role(fmt.Sprintf("task_role %q", name), m, "task_number")
			r.Name = name
			c.Roles = append(c.Roles, r)
		}
		if len(c.Roles) == 0 {
			bad(`a task_role block is required: task_role "worker" { task_number = 1 }`)
		}
	}
	if len(errs) > 0 {
		return c, providers.Permanent(fmt.Errorf("%s platform: %s", kind, strings.Join(errs, "; ")))
	}
	return c, nil
}
