package kubernetes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trialform/trialform/internal/incluster"

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

	// origin is the API server address and where it came from (set by
	// restConfig; for messages).
	origin string
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

// quantity is a cpu or memory value: a quantity string as written, or a
// number of cores.
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

// origin says where the API server address came from, for messages:
// "https://10.0.0.1:6443 (context prod of ~/.kube/config)". No
// credentials are in it.
func originOf(host, context string, rules *clientcmd.ClientConfigLoadingRules, cc clientcmd.ClientConfig) string {
	if raw, err := cc.RawConfig(); err == nil && context == "" {
		context = raw.CurrentContext
	}
	var from []string
	if context != "" {
		from = append(from, "context "+context)
	}
	if rules.ExplicitPath != "" {
		from = append(from, "of "+rules.ExplicitPath)
	} else if ps := rules.GetLoadingPrecedence(); len(ps) > 0 {
		from = append(from, "of "+strings.Join(ps, ":"))
	}
	if len(from) == 0 {
		return host
	}
	return host + " (" + strings.Join(from, " ") + ")"
}

// restConfig loads the client configuration and the namespace.
func (c *Config) restConfig() (*rest.Config, string, error) {
	if c.Rest != nil {
		c.origin = c.Rest.Host
		ns := c.Namespace
		if ns == "" {
			ns = "default"
		}
		return rest.CopyConfig(c.Rest), ns, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.Kubeconfig != "" {
		rules.ExplicitPath = c.Kubeconfig
		if _, err := os.Stat(c.Kubeconfig); errors.Is(err, fs.ErrNotExist) {
			return nil, "", providers.Permanent(fmt.Errorf("kubernetes platform: kubeconfig %s does not exist; set kubeconfig to your cluster's kubeconfig file (relative to the configuration directory), or leave it out to use $KUBECONFIG or ~/.kube/config", c.Kubeconfig))
		}
	}
	cc := incluster.ClientConfig(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context}))
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", providers.Permanent(fmt.Errorf("kubernetes platform: kubeconfig: %w", err))
	}
	c.origin = originOf(rc.Host, c.Context, rules, cc)
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
