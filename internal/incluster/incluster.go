// Package incluster finds the Kubernetes API from inside a pod: the
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT variables and the
// service account's files (token, ca.crt, namespace). It is client-go's
// rest.InClusterConfig with one difference: the directory of those files
// is $TRIALFORM_SERVICEACCOUNT_DIR when set, so that a test can run the
// real binary as a pod would without writing under /var/run/secrets.
// Every client of the binary (the kubernetes platform, the kubernetes
// state backend, the controller's leader election) finds the API through
// it, so that they agree. It never reads a kubeconfig's credentials
// itself and never prints the token.
package incluster

import (
	"net"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DirEnv names the variable that moves the service account's directory.
const DirEnv = "TRIALFORM_SERVICEACCOUNT_DIR"

// DefaultDir is where the kubelet mounts a pod's service account.
const DefaultDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Dir is the directory of the service account's files.
func Dir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return DefaultDir
}

// Possible reports whether this process looks like it runs in a pod: the
// service variables are set and the token file is there.
func Possible() bool {
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" || os.Getenv("KUBERNETES_SERVICE_PORT") == "" {
		return false
	}
	fi, err := os.Stat(filepath.Join(Dir(), "token"))
	return err == nil && !fi.IsDir()
}

// Config is the pod's client configuration. The token is read again by
// the transport when it changes on disk (bound tokens are rotated).
func Config() (*rest.Config, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, rest.ErrNotInCluster
	}
	dir := Dir()
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerToken:     strings.TrimSpace(string(tok)),
		BearerTokenFile: filepath.Join(dir, "token"),
	}
	if ca := filepath.Join(dir, "ca.crt"); fileExists(ca) {
		cfg.TLSClientConfig.CAFile = ca
	}
	return cfg, nil
}

// Namespace is the pod's namespace, from the service account's files.
func Namespace() (string, bool) {
	b, err := os.ReadFile(filepath.Join(Dir(), "namespace"))
	if err != nil {
		return "", false
	}
	ns := strings.TrimSpace(string(b))
	return ns, ns != ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ClientConfig wraps a kubeconfig loader: when no kubeconfig is found
// and the process runs in a pod, the pod's configuration and namespace
// are used (as client-go's deferred loader does, but from Dir()).
func ClientConfig(cc clientcmd.ClientConfig) clientcmd.ClientConfig {
	return &fallback{inner: cc}
}

type fallback struct{ inner clientcmd.ClientConfig }

func (f *fallback) RawConfig() (clientcmdapi.Config, error) { return f.inner.RawConfig() }
func (f *fallback) ConfigAccess() clientcmd.ConfigAccess    { return f.inner.ConfigAccess() }

func (f *fallback) ClientConfig() (*rest.Config, error) {
	cfg, err := f.inner.ClientConfig()
	if err != nil && clientcmd.IsEmptyConfig(err) && Possible() {
		return Config()
	}
	return cfg, err
}

func (f *fallback) Namespace() (string, bool, error) {
	ns, over, err := f.inner.Namespace()
	if err != nil && clientcmd.IsEmptyConfig(err) && Possible() {
		if n, ok := Namespace(); ok {
			return n, false, nil
		}
		return "default", false, nil
	}
	return ns, over, err
}
