package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The platform's client of the Kubernetes API: REST clients of core/v1
// and batch/v1 over a scheme of those two groups alone, with the typed
// methods trialform calls (the same signatures as client-go's typed
// clients). Not client-go's kubernetes.Clientset: its scheme registers
// every API group (57 of them), which would all be compiled, linked and
// initialised at every start of the binary. The CRD trials go through the
// dynamic client (crd.go).

type apiCodecs struct {
	scheme *runtime.Scheme
	codecs runtime.NegotiatedSerializer
	params runtime.ParameterCodec
}

// codecs is built on first use, not in an init(): `trialform version`
// and the commands that never talk to a cluster do not pay for it.
var codecs = sync.OnceValue(func() apiCodecs {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := batchv1.AddToScheme(s); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return apiCodecs{scheme: s, codecs: serializer.NewCodecFactory(s).WithoutConversion(), params: runtime.NewParameterCodec(s)}
})

// clientset holds the REST clients of the two groups.
type clientset struct {
	core  *coreV1
	batch *batchV1
}

func newClientset(cfg *rest.Config) (*clientset, error) {
	mk := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = codecs().codecs
		// Protobuf, as Kubernetes' own components talk: a List of 1,000
		// Jobs or pods is several times cheaper to encode (apiserver) and
		// to decode (here) than in JSON. Replies that are not protobuf
		// (errors of a proxy, the log subresource) are still read.
		if c.ContentType == "" {
			c.ContentType = runtime.ContentTypeProtobuf
			c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		}
		return rest.RESTClientFor(c)
	}
	core, err := mk(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	batch, err := mk(batchv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &clientset{core: &coreV1{core}, batch: &batchV1{batch}}, nil
}

func (c *clientset) CoreV1() *coreV1   { return c.core }
func (c *clientset) BatchV1() *batchV1 { return c.batch }

// serverResources is the discovery document of group version gv (as
// "group/version"): the resources the cluster serves in it.
func (c *clientset) serverResources(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	// Read as JSON below: ask for JSON whatever the client's protobuf default.
	b, err := c.core.rc.Get().AbsPath("/apis", gv).SetHeader("Accept", runtime.ContentTypeJSON).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("the discovery document of %s: %w", gv, err)
	}
	return &list, nil
}

type coreV1 struct{ rc rest.Interface }

func (c *coreV1) RESTClient() rest.Interface { return c.rc }

func (c *coreV1) Pods(ns string) *podClient {
	return &podClient{typed[corev1.Pod, *corev1.Pod, corev1.PodList, *corev1.PodList]{c.rc, ns, "pods"}}
}

func (c *coreV1) ConfigMaps(ns string) *typed[corev1.ConfigMap, *corev1.ConfigMap, corev1.ConfigMapList, *corev1.ConfigMapList] {
	return &typed[corev1.ConfigMap, *corev1.ConfigMap, corev1.ConfigMapList, *corev1.ConfigMapList]{c.rc, ns, "configmaps"}
}

func (c *coreV1) PersistentVolumeClaims(ns string) *typed[corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList, *corev1.PersistentVolumeClaimList] {
	return &typed[corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList, *corev1.PersistentVolumeClaimList]{c.rc, ns, "persistentvolumeclaims"}
}

func (c *coreV1) Services(ns string) *typed[corev1.Service, *corev1.Service, corev1.ServiceList, *corev1.ServiceList] {
	return &typed[corev1.Service, *corev1.Service, corev1.ServiceList, *corev1.ServiceList]{c.rc, ns, "services"}
}

func (c *coreV1) Events(ns string) *typed[corev1.Event, *corev1.Event, corev1.EventList, *corev1.EventList] {
	return &typed[corev1.Event, *corev1.Event, corev1.EventList, *corev1.EventList]{c.rc, ns, "events"}
}

func (c *coreV1) Namespaces() *typed[corev1.Namespace, *corev1.Namespace, corev1.NamespaceList, *corev1.NamespaceList] {
	return &typed[corev1.Namespace, *corev1.Namespace, corev1.NamespaceList, *corev1.NamespaceList]{c.rc, "", "namespaces"}
}

type batchV1 struct{ rc rest.Interface }

func (c *batchV1) Jobs(ns string) *typed[batchv1.Job, *batchv1.Job, batchv1.JobList, *batchv1.JobList] {
	return &typed[batchv1.Job, *batchv1.Job, batchv1.JobList, *batchv1.JobList]{c.rc, ns, "jobs"}
}

// podClient adds pods' log subresource.
type podClient struct {
	typed[corev1.Pod, *corev1.Pod, corev1.PodList, *corev1.PodList]
}

// GetLogs is the request for a pod's log (Stream or DoRaw it).
func (p *podClient) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.rc.Get().Namespace(p.ns).Resource("pods").Name(name).SubResource("log").VersionedParams(opts, codecs().params)
}

// typed is the typed client of one resource (in namespace ns; "" for
// a cluster-scoped one): T its object, L its list.
type typed[T any, PT interface {
	*T
	runtime.Object
}, L any, PL interface {
	*L
	runtime.Object
}] struct {
	rc   rest.Interface
	ns   string
	name string
}

func (r *typed[T, PT, L, PL]) req(verb string) *rest.Request {
	return r.rc.Verb(verb).NamespaceIfScoped(r.ns, r.ns != "").Resource(r.name)
}

func (r *typed[T, PT, L, PL]) Get(ctx context.Context, name string, opts metav1.GetOptions) (*T, error) {
	out := PT(new(T))
	err := r.req("GET").Name(name).VersionedParams(&opts, codecs().params).Do(ctx).Into(out)
	return out, err
}

func (r *typed[T, PT, L, PL]) List(ctx context.Context, opts metav1.ListOptions) (*L, error) {
	out := PL(new(L))
	err := r.req("GET").VersionedParams(&opts, codecs().params).Do(ctx).Into(out)
	return out, err
}

func (r *typed[T, PT, L, PL]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.req("GET").VersionedParams(&opts, codecs().params).Watch(ctx)
}

func (r *typed[T, PT, L, PL]) Create(ctx context.Context, obj *T, opts metav1.CreateOptions) (*T, error) {
	out := PT(new(T))
	err := r.req("POST").VersionedParams(&opts, codecs().params).Body(PT(obj)).Do(ctx).Into(out)
	return out, err
}

func (r *typed[T, PT, L, PL]) update(ctx context.Context, obj *T, opts metav1.UpdateOptions, sub ...string) (*T, error) {
	m, err := meta.Accessor(PT(obj))
	if err != nil {
		return nil, err
	}
	out := PT(new(T))
	err = r.req("PUT").Name(m.GetName()).SubResource(sub...).VersionedParams(&opts, codecs().params).Body(PT(obj)).Do(ctx).Into(out)
	return out, err
}

func (r *typed[T, PT, L, PL]) Update(ctx context.Context, obj *T, opts metav1.UpdateOptions) (*T, error) {
	return r.update(ctx, obj, opts)
}

func (r *typed[T, PT, L, PL]) UpdateStatus(ctx context.Context, obj *T, opts metav1.UpdateOptions) (*T, error) {
	return r.update(ctx, obj, opts, "status")
}

func (r *typed[T, PT, L, PL]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*T, error) {
	out := PT(new(T))
	err := r.rc.Patch(pt).NamespaceIfScoped(r.ns, r.ns != "").Resource(r.name).Name(name).SubResource(sub...).VersionedParams(&opts, codecs().params).Body(data).Do(ctx).Into(out)
	return out, err
}

func (r *typed[T, PT, L, PL]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.req("DELETE").Name(name).Body(&opts).Do(ctx).Error()
}

func (r *typed[T, PT, L, PL]) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, list metav1.ListOptions) error {
	return r.req("DELETE").VersionedParams(&list, codecs().params).Body(&opts).Do(ctx).Error()
}
