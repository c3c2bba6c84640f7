package kubernetes

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trialform/trialform/providers"
)

// Config configures a kubernetes platform (one HCL platform block).
type Config struct {
	// Kubeconfig is the kubeconfig path ("" = $KUBECONFIG, then
	// ~/.kube/config); Context a context of it ("" = current).
	Kubeconfig string
	Context    string
	// Namespace of the trial objects ("" = the context's, then "default").
	Namespace        string
	Image            string // container image (default python:3.11-slim)
	ImagePullSecrets []string
	ServiceAccount   string
	NodeSelector     map[string]string
	Tolerations      []corev1.Toleration
	// Resources of the trial container: requests = limits. GPU becomes
	// nvidia.com/gpu (StartRequest.GPUs wins when larger).
	CPU, Memory string
	GPU         int
	// NFS, when set, is mounted into every trial at MountPath; a code dir
	// under LocalPath (where the share is mounted on this machine, default
	// MountPath) runs from the share, and outputs go to the share.
	NFS *NFS
	// Checkpoint, when set, gives every trial a PersistentVolumeClaim for
	// NNI_OUTPUT_DIR, kept across resumes and deleted by destroy.
	Checkpoint *Checkpoint
	// CodeDir, when set, is where the code already is in the image: no
	// code is shipped, trials run there.
	CodeDir string

	// MetricsInterval is how often one process (watch, apply -wait) reads
	// a running trial's log for new metrics (default 5s; negative: every
	// refresh). Ended trials are read at once.
	MetricsInterval time.Duration

	// Rest, when not nil, is used instead of loading a kubeconfig (tests).
	Rest *rest.Config
	// QPS and Burst of the client (defaults 1000 and 2000: client-go's 5/10
	// make creating and refreshing many trials crawl).
	QPS   float32
	Burst int
}

// DefaultMetricsInterval is Config.MetricsInterval's default.
const DefaultMetricsInterval = 5 * time.Second

// NFS is a share mounted into trials.
type NFS struct {
	Server, Path, MountPath, LocalPath string
}

// Checkpoint is the per-trial volume claim.
type Checkpoint struct {
	StorageClass, Size string
}

// ConfigFromAttrs decodes a platform block's attributes (schema.Platform.Attrs;
// nested blocks arrive as []map[string]any). base resolves a relative
// kubeconfig path.
func ConfigFromAttrs(attrs map[string]any, base string) (Config, error) {
	var c Config
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	str := func(k string) string {
		v, ok := attrs[k]
		if !ok || v == nil {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			bad("%s must be a string", k)
		}
		return s
	}
	strList := func(k string) []string {
		v, ok := attrs[k]
		if !ok || v == nil {
			return nil
		}
		l, ok := v.([]any)
		if !ok {
			bad("%s must be a list of strings", k)
			return nil
		}
		var out []string
		for _, e := range l {
			s, ok := e.(string)
			if !ok {
				bad("%s must be a list of strings", k)
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	block := func(k string) map[string]any {
		v, ok := attrs[k]
		if !ok || v == nil {
			return nil
		}
		switch x := v.(type) {
		case map[string]any:
			return x
		case []any:
			if len(x) != 1 {
				bad("only one %s block is allowed", k)
				return nil
			}
			if m, ok := x[0].(map[string]any); ok {
				return m
			}
		}
		bad("%s must be a block", k)
		return nil
	}
	known := map[string]bool{"kubeconfig": true, "context": true, "namespace": true, "image": true, "image_pull_secrets": true,
		"service_account": true, "node_selector": true, "tolerations": true, "resources": true, "nfs": true, "checkpoint": true, "code_dir": true, "metrics_interval": true}
	var unknown []string
	for k := range attrs {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		bad("unknown setting %q", k)
	}
	c.Kubeconfig = expandHome(str("kubeconfig"))
	if c.Kubeconfig != "" && !filepath.IsAbs(c.Kubeconfig) {
		c.Kubeconfig = filepath.Join(base, c.Kubeconfig)
	}
	c.Context = str("context")
	c.Namespace = str("namespace")
	c.Image = str("image")
	c.ImagePullSecrets = strList("image_pull_secrets")
	c.ServiceAccount = str("service_account")
	c.CodeDir = str("code_dir")
	if s := str("metrics_interval"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			bad("metrics_interval %q is not a duration (\"5s\")", s)
		}
		c.MetricsInterval = d
	}
	if v, ok := attrs["node_selector"]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			bad("node_selector must be a map of strings")
		}
		c.NodeSelector = map[string]string{}
		for k, e := range m {
			s, ok := e.(string)
			if !ok {
				bad("node_selector[%q] must be a string", k)
			}
			c.NodeSelector[k] = s
		}
	}
	if v, ok := attrs["tolerations"]; ok && v != nil {
		l, ok := v.([]any)
		if !ok {
			bad("tolerations must be a list of objects {key, operator, value, effect}")
		}
		for _, e := range l {
			m, ok := e.(map[string]any)
			if !ok {
				bad("tolerations must be a list of objects {key, operator, value, effect}")
				break
			}
			var t corev1.Toleration
			for k, x := range m {
				s, _ := x.(string)
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
					if f, ok := x.(float64); ok {
						n := int64(f)
						t.TolerationSeconds = &n
					}
				default:
					bad("tolerations: unknown field %q (key, operator, value, effect, toleration_seconds)", k)
				}
			}
			c.Tolerations = append(c.Tolerations, t)
		}
	}
	if r := block("resources"); r != nil {
		for k, v := range r {
			switch k {
			case "cpu":
				c.CPU = quantity(v)
			case "memory":
				c.Memory = quantity(v)
			case "gpu":
				f, ok := v.(float64)
				if !ok || f < 0 || f != float64(int(f)) {
					bad("resources.gpu must be a whole number >= 0")
				}
				c.GPU = int(f)
			default:
				bad("resources: unknown setting %q (cpu, memory, gpu)", k)
			}
		}
		for k, q := range map[string]string{"cpu": c.CPU, "memory": c.Memory} {
			if q != "" {
				if _, err := resource.ParseQuantity(q); err != nil {
					bad("resources.%s = %q is not a Kubernetes quantity", k, q)
				}
			}
		}
	}
	if n := block("nfs"); n != nil {
		c.NFS = &NFS{}
		for k, v := range n {
			s, _ := v.(string)
			switch k {
			case "server":
				c.NFS.Server = s
			case "path":
				c.NFS.Path = s
			case "mount_path":
				c.NFS.MountPath = s
			case "local_path":
				c.NFS.LocalPath = expandHome(s)
			default:
				bad("nfs: unknown setting %q (server, path, mount_path, local_path)", k)
			}
		}
		if c.NFS.Server == "" || c.NFS.Path == "" || c.NFS.MountPath == "" {
			bad("nfs needs server, path and mount_path")
		}
		if c.NFS.LocalPath == "" {
			c.NFS.LocalPath = c.NFS.MountPath
		}
	}
	if k := block("checkpoint"); k != nil {
		c.Checkpoint = &Checkpoint{}
		for key, v := range k {
			switch key {
			case "storage_class":
				c.Checkpoint.StorageClass, _ = v.(string)
			case "size":
				c.Checkpoint.Size = quantity(v)
			default:
				bad("checkpoint: unknown setting %q (storage_class, size)", key)
			}
		}
		if c.Checkpoint.Size == "" {
			c.Checkpoint.Size = "1Gi"
		}
		if _, err := resource.ParseQuantity(c.Checkpoint.Size); err != nil {
			bad("checkpoint.size = %q is not a Kubernetes quantity", c.Checkpoint.Size)
		}
	}
	if len(errs) > 0 {
		return c, providers.Permanent(fmt.Errorf("kubernetes platform: %s", strings.Join(errs, "; ")))
	}
	return c, nil
}

func quantity(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return resource.NewMilliQuantity(int64(x*1000), resource.DecimalSI).String()
	}
	return fmt.Sprint(v)
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[1:])
		}
	}
	return p
}

// restConfig loads the client configuration and the namespace.
func (c *Config) restConfig() (*rest.Config, string, error) {
	if c.Rest != nil {
		ns := c.Namespace
		if ns == "" {
			ns = "default"
		}
		return rest.CopyConfig(c.Rest), ns, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.Kubeconfig != "" {
		rules.ExplicitPath = c.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", providers.Permanent(fmt.Errorf("kubernetes platform: kubeconfig: %w", err))
	}
	ns := c.Namespace
	if ns == "" {
		if n, _, err := cc.Namespace(); err == nil && n != "" {
			ns = n
		} else {
			ns = "default"
		}
	}
	return rc, ns, nil
}
