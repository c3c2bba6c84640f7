package k8sstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/internal/kubeerr"
	"github.com/trialform/trialform/internal/netretry"
)

// The client: two REST clients (core/v1 for Secrets, coordination.k8s.io/v1
// for Leases) over a scheme holding only those kinds. Not client-go's
// clientset: it would link every API group's types into the binary.

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypes(corev1.SchemeGroupVersion, &corev1.Secret{}, &corev1.SecretList{})
	metav1.AddToGroupVersion(s, corev1.SchemeGroupVersion)
	s.AddKnownTypes(coordv1.SchemeGroupVersion, &coordv1.Lease{}, &coordv1.LeaseList{})
	metav1.AddToGroupVersion(s, coordv1.SchemeGroupVersion)
	// What a watch of metadata only (Changes) decodes.
	s.AddKnownTypes(metav1.SchemeGroupVersion, &metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadataList{})
	return s
}()

var codecs = serializer.NewCodecFactory(scheme).WithoutConversion()

var paramCodec = runtime.NewParameterCodec(scheme)

// client talks to one namespace.
type client struct {
	ns    string
	host  string // for messages: the apiserver's URL
	core  *rest.RESTClient
	coord *rest.RESTClient

	// report tells a person about an outage being waited out.
	report func(string)
	// retryFor is how long a call keeps retrying while the apiserver
	// cannot be reached.
	retryFor time.Duration

	mu     sync.Mutex
	outage time.Time // when the current outage was first reported (zero: none)
}

func newClient(cfg *rest.Config, ns string, report func(string)) (*client, error) {
	mk := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = codecs
		// Protobuf: Secret data travels as bytes, not base64 in JSON.
		c.ContentType = runtime.ContentTypeProtobuf
		c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		if c.UserAgent == "" {
			c.UserAgent = "trialform (state backend kubernetes)"
		}
		if c.QPS == 0 {
			c.QPS, c.Burst = 200, 400
		}
		return rest.RESTClientFor(c)
	}
	core, err := mk(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	coord, err := mk(coordv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &client{ns: ns, host: cfg.Host, core: core, coord: coord, report: report, retryFor: 2 * time.Minute}, nil
}

// transient is internal/kubeerr's classification, shared with the
// kubernetes platform.
func transient(err error) (bool, time.Duration) { return kubeerr.Transient(err) }

// do runs one call under trialform's retry policy (internal/netretry):
// while the apiserver cannot be reached it is called again with jittered
// backoff for up to retryFor, the first failure reported to a person and
// the recovery too. Every other error is returned at once.
func (c *client) do(ctx context.Context, what string, f func(ctx context.Context) error) error {
	if ctx.Value(oneTryKey{}) != nil {
		// A lock wait: it waits an outage out itself, up to its timeout.
		err := f(ctx)
		if retry, _ := transient(err); retry || (err != nil && ctx.Err() != nil) {
			return &unreachableError{what: what, host: c.host, err: err}
		}
		if err == nil {
			return nil
		}
		return c.explain(what, err)
	}
	outage := false
	policy := netretry.Policy{Attempts: -1, Base: 200 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: c.retryFor}
	err := policy.Do(ctx, func(err error) (bool, time.Duration) {
		retry, after := transient(err)
		if retry {
			outage = true
			c.reportOutage(err)
		}
		return retry, after
	}, f)
	if err == nil {
		c.recovered()
		return nil
	}
	if outage {
		if retry, _ := transient(err); retry {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w (the apiserver %s could not be reached: %v)", what, ctx.Err(), c.host, err)
			}
			return fmt.Errorf("%s: the Kubernetes apiserver %s could not be reached for %s (%w); the state is as it was before this call or after it, never a mix: run the command again once the apiserver is back",
				what, c.host, c.retryFor, err)
		}
	}
	return c.explain(what, err)
}

// oneTryKey marks a context whose calls are tried once: a transient
// error comes back at once, as an *unreachableError (oneTry).
type oneTryKey struct{}

func oneTry(ctx context.Context) context.Context { return context.WithValue(ctx, oneTryKey{}, true) }

// unreachableError is a call of a oneTry context that did not reach the
// apiserver (or did not get its answer).
type unreachableError struct {
	what, host string
	err        error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("%s: the Kubernetes apiserver %s could not be reached: %v", e.what, e.host, shortErr(e.err))
}

func (e *unreachableError) Unwrap() error { return e.err }

func (c *client) reportOutage(err error) {
	c.mu.Lock()
	first := c.outage.IsZero()
	if first {
		c.outage = time.Now()
	}
	c.mu.Unlock()
	if first && c.report != nil {
		c.report(fmt.Sprintf("the Kubernetes apiserver %s cannot be reached (%v); retrying for up to %s", c.host, shortErr(err), c.retryFor))
	}
}

func (c *client) recovered() {
	c.mu.Lock()
	was := c.outage
	c.outage = time.Time{}
	c.mu.Unlock()
	if !was.IsZero() && c.report != nil {
		c.report(fmt.Sprintf("the Kubernetes apiserver %s is back after %s", c.host, time.Since(was).Round(time.Second)))
	}
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// explain adds what to do to a refusal: a missing RBAC grant names the
// verb and resource to grant.
func (c *client) explain(what string, err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		// (with a Role bound in the state's namespace, a misspelled
		// namespace is refused so too: said first, it was read as a
		// missing grant)
		return fmt.Errorf("%s: %w; if namespace %q is misspelled in the backend block, correct it; otherwise the kubernetes backend's credentials need the Role listed in docs/backends.md (The kubernetes backend) in namespace %s", what, err, c.ns, c.ns)
	}
	if apierrors.IsUnauthorized(err) {
		return fmt.Errorf("%s: the apiserver %s refused the credentials (401 Unauthorized): check the kubeconfig's user or the service account token", what, c.host)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Secrets.

func (c *client) getSecret(ctx context.Context, name string) (*corev1.Secret, error) {
	var out *corev1.Secret
	err := c.do(ctx, "read Secret "+c.ns+"/"+name, func(ctx context.Context) error {
		s := &corev1.Secret{}
		err := c.core.Get().Namespace(c.ns).Resource("secrets").Name(name).Do(ctx).Into(s)
		if err == nil {
			out = s
		}
		return err
	})
	return out, err
}

func (c *client) createSecret(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	var out *corev1.Secret
	err := c.do(ctx, "create Secret "+c.ns+"/"+s.Name, func(ctx context.Context) error {
		r := &corev1.Secret{}
		err := c.core.Post().Namespace(c.ns).Resource("secrets").Body(s).Do(ctx).Into(r)
		if err == nil {
			out = r
		}
		return err
	})
	return out, err
}

// namespaceMissing reports whether the client's namespace does not exist,
// by a dry-run create of the Secret name (nothing is stored): a read in a
// missing namespace finds nothing, as in an empty one, and the Role grants
// create on Secrets, not a read of Namespaces. A refusal of another kind
// (no create verb) or an outage answers false: the read goes on as it did.
func (c *client) namespaceMissing(ctx context.Context, name string) bool {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns}}
	err := c.core.Post().Namespace(c.ns).Resource("secrets").
		VersionedParams(&metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}, paramCodec).Body(s).Do(ctx).Error()
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == c.ns
}

// updateSecret replaces s; s.ResourceVersion makes it conditional.
func (c *client) updateSecret(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	var out *corev1.Secret
	err := c.do(ctx, "write Secret "+c.ns+"/"+s.Name, func(ctx context.Context) error {
		r := &corev1.Secret{}
		err := c.core.Put().Namespace(c.ns).Resource("secrets").Name(s.Name).Body(s).Do(ctx).Into(r)
		if err == nil {
			out = r
		}
		return err
	})
	return out, err
}

// deleteSecret deletes a Secret (if rv is not "", only that version);
// one already gone is not an error.
func (c *client) deleteSecret(ctx context.Context, name, rv string) error {
	opts := &metav1.DeleteOptions{}
	if rv != "" {
		opts.Preconditions = &metav1.Preconditions{ResourceVersion: &rv}
	}
	err := c.do(ctx, "delete Secret "+c.ns+"/"+name, func(ctx context.Context) error {
		return c.core.Delete().Namespace(c.ns).Resource("secrets").Name(name).Body(opts).Do(ctx).Error()
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (c *client) listSecrets(ctx context.Context, selector string) (*corev1.SecretList, error) {
	var out *corev1.SecretList
	err := c.do(ctx, "list Secrets in "+c.ns, func(ctx context.Context) error {
		l := &corev1.SecretList{}
		err := c.core.Get().Namespace(c.ns).Resource("secrets").
			VersionedParams(&metav1.ListOptions{LabelSelector: selector}, paramCodec).Do(ctx).Into(l)
		if err == nil {
			out = l
		}
		return err
	})
	return out, err
}

// Leases.

func (c *client) getLease(ctx context.Context, name string) (*coordv1.Lease, error) {
	var out *coordv1.Lease
	err := c.do(ctx, "read Lease "+c.ns+"/"+name, func(ctx context.Context) error {
		l := &coordv1.Lease{}
		err := c.coord.Get().Namespace(c.ns).Resource("leases").Name(name).Do(ctx).Into(l)
		if err == nil {
			out = l
		}
		return err
	})
	return out, err
}

func (c *client) createLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	var out *coordv1.Lease
	err := c.do(ctx, "create Lease "+c.ns+"/"+l.Name, func(ctx context.Context) error {
		r := &coordv1.Lease{}
		err := c.coord.Post().Namespace(c.ns).Resource("leases").Body(l).Do(ctx).Into(r)
		if err == nil {
			out = r
		}
		return err
	})
	return out, err
}

func (c *client) updateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	var out *coordv1.Lease
	err := c.do(ctx, "renew Lease "+c.ns+"/"+l.Name, func(ctx context.Context) error {
		r := &coordv1.Lease{}
		err := c.coord.Put().Namespace(c.ns).Resource("leases").Name(l.Name).Body(l).Do(ctx).Into(r)
		if err == nil {
			out = r
		}
		return err
	})
	return out, err
}

func (c *client) deleteLease(ctx context.Context, name, rv string) error {
	opts := &metav1.DeleteOptions{}
	if rv != "" {
		opts.Preconditions = &metav1.Preconditions{ResourceVersion: &rv}
	}
	return c.do(ctx, "delete Lease "+c.ns+"/"+name, func(ctx context.Context) error {
		return c.coord.Delete().Namespace(c.ns).Resource("leases").Name(name).Body(opts).Do(ctx).Error()
	})
}

func (c *client) listLeases(ctx context.Context, selector string) (*coordv1.LeaseList, error) {
	var out *coordv1.LeaseList
	err := c.do(ctx, "list Leases in "+c.ns, func(ctx context.Context) error {
		l := &coordv1.LeaseList{}
		err := c.coord.Get().Namespace(c.ns).Resource("leases").
			VersionedParams(&metav1.ListOptions{LabelSelector: selector}, paramCodec).Do(ctx).Into(l)
		if err == nil {
			out = l
		}
		return err
	})
	return out, err
}

// Metadata only: for what needs a Secret's name, labels, annotations and
// resourceVersion and not its data (stamps, listings), the apiserver is
// asked for PartialObjectMetadata (a full object, from a server that
// cannot, decodes the same).

const (
	metaAccept     = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	metaListAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

func (c *client) getSecretMeta(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error) {
	var out *metav1.PartialObjectMetadata
	err := c.do(ctx, "read Secret "+c.ns+"/"+name, func(ctx context.Context) error {
		raw, err := c.core.Get().Namespace(c.ns).Resource("secrets").Name(name).SetHeader("Accept", metaAccept).DoRaw(ctx)
		if err != nil {
			return err
		}
		m := &metav1.PartialObjectMetadata{}
		if err := json.Unmarshal(raw, m); err != nil {
			return fmt.Errorf("decode the metadata of Secret %s/%s: %w", c.ns, name, err)
		}
		out = m
		return nil
	})
	return out, err
}

func (c *client) listSecretsMeta(ctx context.Context, selector string) (*metav1.PartialObjectMetadataList, error) {
	var out *metav1.PartialObjectMetadataList
	err := c.do(ctx, "list Secrets in "+c.ns, func(ctx context.Context) error {
		raw, err := c.core.Get().Namespace(c.ns).Resource("secrets").
			VersionedParams(&metav1.ListOptions{LabelSelector: selector}, paramCodec).SetHeader("Accept", metaListAccept).DoRaw(ctx)
		if err != nil {
			return err
		}
		l := &metav1.PartialObjectMetadataList{}
		if err := json.Unmarshal(raw, l); err != nil {
			return fmt.Errorf("decode the list of Secrets in %s: %w", c.ns, err)
		}
		out = l
		return nil
	})
	return out, err
}
