package incluster

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// Without a kubeconfig, a process with the service variables and the
// service account's files in $TRIALFORM_SERVICEACCOUNT_DIR talks to that
// API with that token, in that namespace; with a kubeconfig, the
// kubeconfig wins.
func TestFallbackToServiceAccountDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "token"), []byte("tok123\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "namespace"), []byte("ml-team\n"), 0o600)
	t.Setenv(DirEnv, dir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	empty := &clientcmd.ClientConfigLoadingRules{Precedence: []string{filepath.Join(dir, "no-kubeconfig")}}
	cc := ClientConfig(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(empty, &clientcmd.ConfigOverrides{}))
	cfg, err := cc.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.1:443" || cfg.BearerToken != "tok123" || cfg.BearerTokenFile != filepath.Join(dir, "token") || cfg.CAFile != filepath.Join(dir, "ca.crt") {
		t.Errorf("config: host %q token %q token file %q CA %q", cfg.Host, cfg.BearerToken, cfg.BearerTokenFile, cfg.CAFile)
	}
	if ns, _, err := cc.Namespace(); err != nil || ns != "ml-team" {
		t.Errorf("namespace %q, %v; want ml-team", ns, err)
	}

	kc := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://elsewhere:6443"}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: other}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600)
	cc = ClientConfig(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: kc}, &clientcmd.ConfigOverrides{}))
	if cfg, err := cc.ClientConfig(); err != nil || cfg.Host != "https://elsewhere:6443" {
		t.Errorf("with a kubeconfig: %v, %v", cfg, err)
	}
	if ns, _, _ := cc.Namespace(); ns != "other" {
		t.Errorf("with a kubeconfig: namespace %q", ns)
	}

	// Not in a pod: no fallback.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cc = ClientConfig(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(empty, &clientcmd.ConfigOverrides{}))
	if _, err := cc.ClientConfig(); err == nil || !clientcmd.IsEmptyConfig(err) {
		t.Errorf("outside a pod without a kubeconfig: %v, want the empty-config error", err)
	}
}
