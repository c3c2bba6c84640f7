package kubernetes

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/registry"
)

// Settings is a platform "kubernetes" block; the CRD kinds embed it.
type Settings struct {
	Kubeconfig       string            `hcl:"kubeconfig,optional" type:"a string (a kubeconfig path)" doc:"kubeconfig path, relative to the configuration directory (default $KUBECONFIG, then ~/.kube/config)"`
	Context          string            `hcl:"context,optional" type:"a string (a kubeconfig context)" doc:"kubeconfig context (default the current one)"`
	Namespace        string            `hcl:"namespace,optional" doc:"namespace of the trial objects (default the context's, then default)"`
	Image            string            `hcl:"image,optional" type:"a string (a container image)" doc:"container image (default python:3.11-slim)"`
	ImagePullSecrets []string          `hcl:"image_pull_secrets,optional" type:"a list of secret names" doc:"secrets for pulling the image"`
	ServiceAccount   string            `hcl:"service_account,optional" doc:"service account of the trial pods"`
	NodeSelector     map[string]string `hcl:"node_selector,optional" type:"a map of label values" doc:"node labels the trial pods need"`
	Tolerations      any               `hcl:"tolerations,optional" type:"a list of objects {key, operator, value, effect, toleration_seconds}" doc:"taints the trial pods tolerate"`
	CodeDir          string            `hcl:"code_dir,optional" type:"a string (where the code is in the image)" doc:"where the code already is in the image: nothing is shipped"`
	MetricsInterval  string            `hcl:"metrics_interval,optional" type:"a duration string (\"5s\")" doc:"how often a running trial's log is read for metrics: once per interval by watch and apply -wait, and not by a new command while the last line read from it is younger (default 5s)"`
	Resources        *ResourceSettings `hcl:"resources,block" doc:"requests = limits of the trial container"`
	NFS              *NFSSettings      `hcl:"nfs,block" doc:"a share mounted into every trial; code under it runs from the share"`
	Checkpoint       *CheckpointBlock  `hcl:"checkpoint,block" doc:"a PersistentVolumeClaim per trial for NNI_OUTPUT_DIR, kept across resumes"`
}

// ResourceSettings is a resources block.
type ResourceSettings struct {
	CPU    any    `hcl:"cpu,optional" type:"a number or a quantity string (\"500m\")" doc:"CPU cores"`
	Memory string `hcl:"memory,optional" type:"a quantity string (\"8Gi\")" doc:"memory"`
	GPU    int    `hcl:"gpu,optional" min:"0" type:"a whole number >= 0" doc:"nvidia.com/gpu (the experiment's gpus wins when larger)"`
}

// NFSSettings is an nfs block.
type NFSSettings struct {
	Server    string `hcl:"server,attr" doc:"NFS server"`
	Path      string `hcl:"path,attr" doc:"exported path"`
	MountPath string `hcl:"mount_path,attr" doc:"where trials see the share"`
	LocalPath string `hcl:"local_path,optional" type:"a string (where the share is mounted on this machine)" doc:"where the share is mounted on this machine (default mount_path)"`
}

// CheckpointBlock is a checkpoint block.
type CheckpointBlock struct {
	StorageClass string `hcl:"storage_class,optional" doc:"storage class of the claim"`
	Size         string `hcl:"size,optional" type:"a quantity string (\"1Gi\")" doc:"size of the claim (default 1Gi)"`
}

// Check checks Kubernetes quantities and the duration.
func (s *Settings) Check(w *decl.Where) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if s.MetricsInterval != "" {
		if _, err := parseDuration(s.MetricsInterval); err != nil {
			diags = append(diags, w.Error("metrics_interval", "Invalid duration", "metrics_interval = %q is not a duration: write it like \"5s\" or \"1m30s\".", s.MetricsInterval))
		}
	}
	if s.Resources != nil {
		diags = append(diags, checkQuantities(w, "resources.0", s.Resources.CPU, s.Resources.Memory)...)
	}
	if s.Checkpoint != nil && s.Checkpoint.Size != "" {
		if _, err := resource.ParseQuantity(s.Checkpoint.Size); err != nil {
			diags = append(diags, w.Error("checkpoint.0.size", "Invalid value", "checkpoint.size = %q is not a Kubernetes quantity (\"1Gi\").", s.Checkpoint.Size))
		}
	}
	if err := tolerationsCheck(s.Tolerations); err != nil {
		diags = append(diags, w.Error("tolerations", "Invalid value", "%s.", err))
	}
	return diags
}

func checkQuantities(w *decl.Where, path string, cpu any, memory string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if cpu != nil {
		switch c := cpu.(type) {
		case string:
			if _, err := resource.ParseQuantity(c); err != nil {
				diags = append(diags, w.Error(path+".cpu", "Invalid value", "cpu = %q is not a Kubernetes quantity (\"500m\", \"2\").", c))
			}
		case float64:
		default:
			diags = append(diags, w.Error(path+".cpu", "Incorrect attribute value type", "Inappropriate value for cpu: a number or a quantity string (\"500m\") is required."))
		}
	}
	if memory != "" {
		if _, err := resource.ParseQuantity(memory); err != nil {
			diags = append(diags, w.Error(path+".memory", "Invalid value", "memory = %q is not a Kubernetes quantity (\"8Gi\").", memory))
		}
	}
	return diags
}

// parseDuration reads metrics_interval: a Go duration, not negative.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = fmt.Errorf("negative duration")
	}
	return d, err
}

// Registration is the kubernetes kind's entry in the platform registry.
func Registration() registry.Kind {
	return registry.Kind{
		Name:    "kubernetes",
		Summary: "one Kubernetes Job per trial (NNI's kubernetes mode)",
		Config:  func() any { return &Settings{} },
		New: func(cfg any, env registry.Env) (providers.Provider, error) {
			s, ok := cfg.(*Settings)
			if !ok {
				return nil, fmt.Errorf("kubernetes platform: configuration %T", cfg)
			}
			c, err := ConfigFrom(s, env.Dir)
			if err != nil {
				return nil, err
			}
			return New(c)
		},
	}
}

// ConfigFrom turns decoded settings into a Config; dir resolves a relative
// kubeconfig path. What schema checked (through Check) is not
// checked again.
func ConfigFrom(s *Settings, dir string) (Config, error) {
	c := Config{
		Kubeconfig: expandHome(s.Kubeconfig), Context: s.Context, Namespace: s.Namespace, Image: s.Image,
		ImagePullSecrets: s.ImagePullSecrets, ServiceAccount: s.ServiceAccount, NodeSelector: s.NodeSelector, CodeDir: s.CodeDir,
	}
	if c.Kubeconfig != "" && !filepath.IsAbs(c.Kubeconfig) {
		c.Kubeconfig = filepath.Join(dir, c.Kubeconfig)
	}
	if s.MetricsInterval != "" {
		d, err := parseDuration(s.MetricsInterval)
		if err != nil {
			return c, providers.Permanent(fmt.Errorf("kubernetes platform: metrics_interval %q is not a duration (\"5s\")", s.MetricsInterval))
		}
		c.MetricsInterval = d
	}
	t, err := tolerations(s.Tolerations)
	if err != nil {
		return c, providers.Permanent(fmt.Errorf("kubernetes platform: %w", err))
	}
	c.Tolerations = t
	if r := s.Resources; r != nil {
		if r.CPU != nil {
			c.CPU = quantity(r.CPU)
		}
		c.Memory, c.GPU = r.Memory, r.GPU
	}
	if n := s.NFS; n != nil {
		c.NFS = &NFS{Server: n.Server, Path: n.Path, MountPath: n.MountPath, LocalPath: expandHome(n.LocalPath)}
		if c.NFS.LocalPath == "" {
			c.NFS.LocalPath = c.NFS.MountPath
		}
	}
	if k := s.Checkpoint; k != nil {
		c.Checkpoint = &Checkpoint{StorageClass: k.StorageClass, Size: k.Size}
		if c.Checkpoint.Size == "" {
			c.Checkpoint.Size = "1Gi"
		}
	}
	return c, nil
}

func tolerationsCheck(v any) error {
	_, err := tolerations(v)
	return err
}

// tolerations reads the tolerations attribute: a list of objects.
func tolerations(v any) ([]corev1.Toleration, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("tolerations must be a list of objects {key, operator, value, effect, toleration_seconds}")
	}
	var out []corev1.Toleration
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("tolerations must be a list of objects {key, operator, value, effect, toleration_seconds}")
		}
		var t corev1.Toleration
		for k, x := range m {
			s, isStr := x.(string)
			if k != "toleration_seconds" && !isStr {
				return nil, fmt.Errorf("tolerations[%d].%s must be a string", i, k)
			}
			switch k {
			case "key":
				t.Key = s
			case "operator":
				t.Operator = corev1.TolerationOperator(s)
			case "value":
				t.Value = s
			case "effect":
				t.Effect = corev1.TaintEffect(s)
			case "toleration_seconds":
				f, ok := x.(float64)
				if !ok || f != float64(int64(f)) {
					return nil, fmt.Errorf("tolerations[%d].toleration_seconds must be a whole number", i)
				}
				n := int64(f)
				t.TolerationSeconds = &n
			default:
				return nil, fmt.Errorf("tolerations[%d]: unknown field %q (key, operator, value, effect, toleration_seconds)", i, k)
			}
		}
		out = append(out, t)
	}
	return out, nil
}
