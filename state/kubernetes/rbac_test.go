package k8sstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendtest"
)

// roleVerbs is the Role docs/backends.md lists: exactly what the backend uses,
// in the namespace of the state.
var roleVerbs = map[string][]string{
	"secrets": {"get", "list", "watch", "create", "update", "delete"},
	"leases":  {"get", "list", "create", "update", "delete"},
}

func rules(verbs map[string][]string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	if v := verbs["secrets"]; len(v) > 0 {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: v})
	}
	if v := verbs["leases"]; len(v) > 0 {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: v})
	}
	return out
}

// serviceAccount makes a ServiceAccount bound to a Role with verbs in ns
// and returns a client configuration with its token (TokenRequest), not
// the admin's credentials. It returns once the grant is in effect.
func serviceAccount(t *testing.T, ns, name string, verbs map[string][]string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	c := controlPlane(t)
	k := c.Client
	if _, err := k.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules(verbs)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secs := int64(3600)
	tr, err := k.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: c.URL, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAFile: c.CACert}}
	// The RBAC authorizer learns of new bindings from a watch: wait for
	// a verb the Role has to be allowed.
	b, err := New(cfg, ns, "probe")
	if err != nil {
		t.Fatal(err)
	}
	for {
		var err error
		switch {
		case contains(verbs["secrets"], "get"):
			_, err = b.c.getSecret(ctx, "probe")
		case contains(verbs["leases"], "get"):
			_, err = b.c.getLease(ctx, "probe")
		default:
			_, err = b.c.listSecrets(ctx, "x=y")
		}
		if err == nil || apierrors.IsNotFound(err) {
			return cfg
		}
		if !apierrors.IsForbidden(err) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The suite with a service account's token bound to the Role of docs/backends.md
// in one namespace.
func TestRBAC(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "tfstate-rbac")
	cfg := serviceAccount(t, ns, "trialform", roleVerbs)
	backendtest.Run(t, func(t *testing.T) *backendtest.Store { return store(t, cfg, ns) })
	t.Run("Exercise", func(t *testing.T) {
		if err := exercise(t, cfg, ns); err != nil {
			t.Fatal(err)
		}
	})
	// Another namespace is out of reach.
	b, _ := New(cfg, namespace(t, "tfstate"), newSuffix())
	if _, err := b.Load(); !apierrors.IsForbidden(err) {
		t.Fatalf("a load in another namespace: %v, want forbidden", err)
	}
	// A misspelled namespace (one that does not exist) is refused as
	// forbidden too, the Role being bound in the right one: the error
	// names the typo first, then the grant.
	typo := ns[:len(ns)-1] + "0"
	b, _ = New(cfg, typo, newSuffix())
	_, err := b.Load()
	want := fmt.Sprintf("if namespace %q is misspelled in the backend block, correct it", typo)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("a load in namespace %s (a typo of %s): %v, want forbidden, saying %q", typo, ns, err, want)
	}
}

// Each verb of the Role is needed: without it, something the backend
// does fails, naming the verb.
func TestRBACEachVerbNeeded(t *testing.T) {
	ns := namespace(t, "tfstate-verbs")
	for res, verbs := range roleVerbs {
		for _, verb := range verbs {
			t.Run(res+"/"+verb, func(t *testing.T) {
				less := map[string][]string{}
				for r, vs := range roleVerbs {
					for _, v := range vs {
						if r != res || v != verb {
							less[r] = append(less[r], v)
						}
					}
				}
				cfg := serviceAccount(t, ns, "no-"+res+"-"+verb, less)
				err := exercise(t, cfg, ns)
				want := fmt.Sprintf("cannot %s resource %q", verb, res)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("without %s on %s: %v, want an error saying %q", verb, res, err, want)
				}
			})
		}
	}
}

// exercise does everything the backend does, once; the first error.
func exercise(t *testing.T, cfg *rest.Config, ns string) (err error) {
	suffix := newSuffix()
	var mu sync.Mutex
	var reported []string
	open := func() *Backend {
		b, _ := New(cfg, ns, suffix)
		b.leaseDuration = time.Second
		b.SetReporter(func(m string) { mu.Lock(); reported = append(reported, m); mu.Unlock() })
		return b
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := open()
	changes, err := b.Changes(ctx)
	if err != nil {
		return err
	}
	s := backendtest.Sample(3)
	if err := b.Save(s); err != nil {
		return err
	}
	<-changes
	s.Experiments["mnist"].Trials["t0001"].Attempts++
	if err := b.Save(s); err != nil {
		return err
	}
	if _, err := open().Load(); err != nil {
		return err
	}
	if _, err := b.StateStamp(); err != nil {
		return err
	}
	lk, err := b.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		return err
	}
	b.mu.Lock()
	h := b.held.locks[0]
	b.mu.Unlock()
	if err := b.renewOnce(ctx, h); err != nil {
		return err
	}
	if err := lk.Unlock(); err != nil {
		return err
	}
	lk, err = b.Lock(ctx, "apply", "v", 0)
	if err != nil {
		return err
	}
	if _, err := open().CurrentLocks(); err != nil {
		return err
	}
	if err := open().ForceUnlock(lk.Info().ID); err != nil {
		return err
	}
	lk.Unlock()
	pt := func(seq int) []state.MetricPoint {
		return []state.MetricPoint{{Type: "PERIODICAL", Sequence: seq, Value: []byte("1"), Time: time.Now()}}
	}
	for i := range 2 {
		if err := b.AppendMetrics("mnist", "t0000", pt(i)); err != nil {
			return err
		}
	}
	if _, err := open().ReadMetrics("mnist", "t0000"); err != nil {
		return err
	}
	if err := b.MoveMetrics("mnist", "mnist2"); err != nil {
		return err
	}
	if err := b.RemoveMetrics("mnist2"); err != nil {
		return err
	}
	for i := range 2 {
		if err := open().MarkRefreshed(s.Lineage, []string{"mnist"}, time.Now().Add(time.Duration(i)*time.Hour)); err != nil {
			return err
		}
	}
	if len(open().RefreshedAt(s.Lineage)) != 1 {
		return errors.New("the refresh marks were not read back")
	}
	if _, err := open().Lost(); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) > 0 {
		return errors.New(strings.Join(reported, "; "))
	}
	return nil
}
