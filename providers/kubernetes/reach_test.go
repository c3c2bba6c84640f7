package kubernetes_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
)

const reachToken = "s3cr3t-token-do-not-print"

// kubeconfigFor writes a kubeconfig whose context "lab" points at server
// with a bearer token (and trusts the base64 PEM caData, if given).
func kubeconfigFor(t *testing.T, server string, caData ...string) string {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	ca := ""
	if len(caData) > 0 {
		ca = "    certificate-authority-data: " + caData[0] + "\n"
	}
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: ` + server + `
` + ca + `contexts:
- name: lab
  context: {cluster: lab, user: lab}
current-context: lab
users:
- name: lab
  user: {token: ` + reachToken + `}
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// An address that answers 404 without a Kubernetes Status (a wrong URL, a
// proxy, an ingress) is not a Kubernetes API server: Validate says so,
// naming the address, the context and the kubeconfig, and what to check,
// not `namespace "default" does not exist`; the token is never printed.
func TestValidateNotAnAPIServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ctype string
		body  string
		want  string
	}{
		{"empty", "", "", "HTTP 404 with an empty body"},
		{"html", "text/html", "<html><body>404 page not found</body></html>", `HTTP 404 "<html><body>404 page not found`},
		{"json", "application/json", `{"error":"no route"}`, "HTTP 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.WriteHeader(http.StatusNotFound)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			kc := kubeconfigFor(t, srv.URL+"/wrong/prefix")
			p, err := k8s.New(k8s.Config{Kubeconfig: kc})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err = p.Validate(ctx)
			if err == nil {
				t.Fatal("Validate of an address that answers 404 to everything: no error")
			}
			msg := err.Error()
			t.Log(msg)
			for _, w := range []string{srv.URL + "/wrong/prefix", "is not a Kubernetes API server", tc.want, "context lab", kc, "check the server"} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, "does not exist") || strings.Contains(msg, reachToken) {
				t.Errorf("error %q", msg)
			}
			if !providers.IsPermanent(err) {
				t.Errorf("error %q is not permanent: retrying cannot fix it", msg)
			}
		})
	}
}

// A real apiserver's 404 (a Status: NotFound, namespaces) still says the
// namespace does not exist.
func TestValidateMissingNamespace(t *testing.T) {
	need(t)
	p, err := k8s.New(k8s.Config{Rest: cp.Config, Namespace: "no-such-namespace"})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Validate(context.Background())
	if err == nil || !strings.Contains(err.Error(), `namespace "no-such-namespace" does not exist`) || strings.Contains(err.Error(), "not a Kubernetes API server") {
		t.Errorf("Validate with a missing namespace: %v", err)
	}
}

// Credentials the apiserver refuses (401) are said to be refused, naming
// the server, with what to do and without the token; retrying cannot fix
// them.
func TestValidateRefusedToken(t *testing.T) {
	need(t)
	rc := *cp.Config
	rc.BearerToken = reachToken
	p, err := k8s.New(k8s.Config{Rest: &rc, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Validate(context.Background())
	if err == nil {
		t.Fatal("Validate with a token the apiserver does not know: no error")
	}
	msg := err.Error()
	for _, w := range []string{cp.Config.Host, "refused the credentials (401 Unauthorized)", "get fresh credentials"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	if strings.Contains(msg, reachToken) || !providers.IsPermanent(err) {
		t.Errorf("error %q (permanent %v)", msg, providers.IsPermanent(err))
	}
}

// A server whose certificate this machine does not trust (a wrong or
// missing certificate-authority-data, a certificate expired) is said so
// at once, naming the server and what to check, and not retried.
func TestValidateUntrustedCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	p, err := k8s.New(k8s.Config{Kubeconfig: kubeconfigFor(t, srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = p.Validate(ctx)
	if err == nil {
		t.Fatal("Validate of a server with an untrusted certificate: no error")
	}
	msg := err.Error()
	t.Log(msg)
	for _, w := range []string{srv.URL, "context lab", "not signed by a certificate authority", "certificate-authority-data"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	if !providers.IsPermanent(err) || ctx.Err() != nil {
		t.Errorf("error %q was retried (permanent %v)", msg, providers.IsPermanent(err))
	}
}

// A kubeconfig path that does not exist names the path and what to do.
func TestKubeconfigMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	_, err := k8s.New(k8s.Config{Kubeconfig: missing})
	if err == nil || !providers.IsPermanent(err) {
		t.Fatalf("New with a missing kubeconfig: %v", err)
	}
	for _, w := range []string{"kubeconfig " + missing + " does not exist", "leave it out to use $KUBECONFIG"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
