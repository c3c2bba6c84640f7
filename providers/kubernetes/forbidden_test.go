package kubernetes_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
)

// restAs is the test cluster's config for a user of its own client
// certificate (the cluster's CA issues it; RBAC grants it nothing).
func restAs(t *testing.T, user string) *rest.Config {
	crt, key, err := cp.IssueCert(user, user, "")
	if err != nil {
		t.Fatal(err)
	}
	rc := rest.CopyConfig(cp.Config)
	rc.BearerToken = ""
	rc.CertFile, rc.KeyFile = crt, key
	return rc
}

// A user RBAC grants nothing: Validate says it may not list jobs in the
// namespace, what to grant, and does not retry.
func TestValidateForbidden(t *testing.T) {
	need(t)
	p, err := k8s.New(k8s.Config{Rest: restAs(t, "nobody-at-all"), Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Validate(context.Background())
	if err == nil {
		t.Fatal("Validate as a user with no rights: no error")
	}
	msg := err.Error()
	t.Log(msg)
	for _, w := range []string{cp.Config.Host, `list jobs in namespace "default"`, "403 Forbidden", "nobody-at-all", "grant it list on jobs"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	if !providers.IsPermanent(err) {
		t.Errorf("error %q is not permanent: retrying cannot grant rights", msg)
	}
}

// A Role that lets the user list its jobs but not the pods (a common RBAC
// slip): a refresh's List names the resource the account lacks and what
// to grant, and is not retried.
func TestListForbiddenPods(t *testing.T) {
	need(t)
	ctx := context.Background()
	ns := namespace(t, "forbidden")
	user := "jobs-only"
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
	}}
	if _, err := cp.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := cp.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := k8s.New(k8s.Config{Rest: restAs(t, user), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	// RBAC's cache takes the new binding within a moment.
	deadline := time.Now().Add(time.Minute)
	for {
		if err = p.Validate(ctx); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Validate with list on jobs granted: %v", err)
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err = p.List(lctx, "svm")
	if err == nil {
		t.Fatal("List without the right to list pods: no error")
	}
	msg := err.Error()
	t.Log(msg)
	for _, w := range []string{"list pods", `namespace "` + ns + `"`, "403 Forbidden", "grant this account list on pods"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	if lctx.Err() != nil || !providers.IsPermanent(err) {
		t.Errorf("error %q was retried (permanent %v)", msg, providers.IsPermanent(err))
	}
}

// testCA is a certificate authority of the test's own, and a server
// certificate it signs for names, valid from notBefore to notAfter.
func serveTLS(t *testing.T, names []string, notBefore, notAfter time.Time) (url, caData string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "reach-test-ca"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "apiserver"},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &srvKey.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: srvKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return srv.URL, base64.StdEncoding.EncodeToString(caPEM)
}

// A server whose certificate, signed by the CA the kubeconfig trusts, has
// expired or names other hosts: each is said so at once, naming the
// server and what to do, and not retried.
func TestValidateBadServerCertificate(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name      string
		names     []string
		from, to  time.Time
		want, not string
	}{
		{"expired", []string{"127.0.0.1"}, now.Add(-30 * 24 * time.Hour), now.Add(-24 * time.Hour), "has expired or is not valid yet", "not valid for this address"},
		{"not-yet-valid", []string{"127.0.0.1"}, now.Add(24 * time.Hour), now.Add(30 * 24 * time.Hour), "check this machine's clock", "not valid for this address"},
		{"wrong-host", []string{"apiserver.example.internal", "10.9.8.7"}, now.Add(-time.Hour), now.Add(24 * time.Hour), "not valid for this address", "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, ca := serveTLS(t, tc.names, tc.from, tc.to)
			p, err := k8s.New(k8s.Config{Kubeconfig: kubeconfigFor(t, url, ca)})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err = p.Validate(ctx)
			if err == nil {
				t.Fatal("Validate: no error")
			}
			msg := err.Error()
			t.Log(msg)
			for _, w := range []string{url, "context lab", tc.want} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, tc.not) || strings.Contains(msg, reachToken) {
				t.Errorf("error %q", msg)
			}
			if !providers.IsPermanent(err) || ctx.Err() != nil {
				t.Errorf("error %q was retried (permanent %v)", msg, providers.IsPermanent(err))
			}
		})
	}
}
