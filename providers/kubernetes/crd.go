package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/providers"
)

// AnnStoppedAt is when Stop (or max_duration) stopped a trial of a CRD
// platform (RFC 3339).
const AnnStoppedAt = "trialform.io/stopped-at"

// CRD runs trials as one custom resource per trial (a TFJob, PyTorchJob,
// AdaptDLJob or Framework) that an operator on the cluster turns into pods.
// Everything but the object itself is shared with the Job platform: the
// name, labels and annotations, the ConfigMap (owned by the object), the
// pod template every replica gets, metrics read from the log (and the
// termination message) of the one pod that runs the trial's command as
// its operator labels it, List by label selector, retries.
//
// Stop records the reason on the object and on the ConfigMap, which it
// keeps (without owner) as the trial's tombstone, deletes the object with
// orphan propagation (so its operator lets go of the pods at once) and
// then the pods with the grace period; a Read finding the tombstone says
// killed. Purge and destroy delete everything with background
// propagation.
type CRD struct {
	k    *Kubernetes
	cfg  CRDConfig
	dyn  dynamic.Interface
	kind crdKind
	gvr  schema.GroupVersionResource
	// dynStream is dyn without the request timeout, for watches.
	dynStream dynamic.Interface

	listed *snapshots[*unstructured.Unstructured]
	// follow, once Follow was called, keeps watched copies of the trial
	// objects and pods (follow.go); guarded by k.mu.
	follow *follower
}

// crdKind is what differs between the custom resources.
type crdKind interface {
	gvk() schema.GroupVersionKind
	plural() string
	// install names what provides the CRD (for Validate's message).
	install() string
	// container is the trial container's name in every pod.
	container() string
	// spec builds the object's spec from the pod template of each role.
	spec(cfg CRDConfig, req providers.StartRequest, role func(Role) (map[string]any, error)) (map[string]any, error)
	// phase maps the object's status (and the trial pod's) to a phase.
	phase(obj *unstructured.Unstructured, main *corev1.Pod) (providers.Phase, string)
	// template is the pod template of the role that runs the trial.
	template(obj *unstructured.Unstructured) map[string]any
	// main picks the pod that runs the trial (its metrics count) among the
	// object's pods, oldest first; nil when there is none yet.
	main(obj *unstructured.Unstructured, pods []corev1.Pod) *corev1.Pod
}

var (
	_ providers.Provider         = (*CRD)(nil)
	_ providers.Lister           = (*CRD)(nil)
	_ providers.LogStreamer      = (*CRD)(nil)
	_ providers.ExperimentPurger = (*CRD)(nil)
)

// NewCRD builds the clients of a CRD platform (nothing is contacted yet).
func NewCRD(cfg CRDConfig) (*CRD, error) {
	var kind crdKind
	switch cfg.Kind {
	case KindKubeflow:
		k, ok := newKubeflowKind(cfg.Operator)
		if !ok {
			return nil, providers.Permanent(fmt.Errorf("kubeflow platform: operator = %q: want one of %s", cfg.Operator, strings.Join(KubeflowOperators, ", ")))
		}
		kind = k
	case KindAdaptDL:
		kind = adaptdlKind{}
	case KindFrameworkController:
		kind = frameworkKind{}
	default:
		return nil, providers.Permanent(fmt.Errorf("platform kind %q is not a CRD kind", cfg.Kind))
	}
	k, err := New(cfg.Config)
	if err != nil {
		return nil, err
	}
	cfg.Config = k.cfg
	k.nniPlatform = cfg.Kind
	if cfg.Kind == KindAdaptDL {
		k.nniPlatform = "adl" // NNI's name of the platform
	}
	rc, _, err := cfg.Config.restConfig()
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst, rc.UserAgent, rc.Timeout = k.cfg.QPS, k.cfg.Burst, "trialform", requestTimeout
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s platform: %w", cfg.Kind, err))
	}
	src := rest.CopyConfig(rc)
	src.Timeout = 0
	dynStream, err := dynamic.NewForConfig(src)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s platform: %w", cfg.Kind, err))
	}
	gvk := kind.gvk()
	return &CRD{k: k, cfg: cfg, dyn: dyn, dynStream: dynStream, kind: kind, gvr: gvk.GroupVersion().WithResource(kind.plural()),
		listed: newSnapshots(func(o *unstructured.Unstructured) string { return string(o.GetUID()) })}, nil
}

// Kind is the platform kind ("kubeflow", "adaptdl", "frameworkcontroller").
func (c *CRD) Kind() string { return c.cfg.Kind }

// Namespace is where the trial objects go.
func (c *CRD) Namespace() string { return c.k.namespace }

// Foreign is Kubernetes.Foreign: an object in another namespace.
func (c *CRD) Foreign(h providers.Handle) string { return foreignNamespace(h, c.k.namespace) }

// Close stops following (Follow); the trials keep running.
func (c *CRD) Close() error {
	c.k.mu.Lock()
	f := c.follow
	c.follow = nil
	c.k.mu.Unlock()
	if f != nil {
		f.stop()
	}
	return c.k.Close()
}

// Follow starts following the platform's trial objects and their pods,
// as the Job platform does (follow.go), until Close.
func (c *CRD) Follow() {
	k := c.k
	k.mu.Lock()
	defer k.mu.Unlock()
	if c.follow != nil || k.closed {
		return
	}
	c.follow = startFollower(labelled(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.res().List(ctx, o)
	}, c.dynStream.Resource(c.gvr).Namespace(k.namespace).Watch), &unstructured.Unstructured{}, c.kind.plural()+" and pods", func(a, b any) bool {
		o, ok1 := a.(*unstructured.Unstructured)
		n, ok2 := b.(*unstructured.Unstructured)
		return !ok1 || !ok2 || crdChanged(o, n)
	}, k)
}

// Warnings tells once that the trials cannot be followed, and why
// (providers.Warner).
func (c *CRD) Warnings() []string { return append(c.follower().warnings(), c.k.logWarnings()...) }

// Changed receives a value when a followed trial changed (see
// Kubernetes.Changed).
func (c *CRD) Changed() <-chan struct{} { return c.k.changed }

// following is the CRD's follower when its copies can answer, else nil.
func (c *CRD) following() *follower { return c.follower().ifReady() }

// follower is the CRD's follower, ready or not (nil: not following).
func (c *CRD) follower() *follower {
	c.k.mu.Lock()
	defer c.k.mu.Unlock()
	return c.follow
}

// crdChanged reports a change of an object's status, stop reason or
// deletion.
func crdChanged(o, n *unstructured.Unstructured) bool {
	return !equality.Semantic.DeepEqual(o.Object["status"], n.Object["status"]) ||
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
		o.GetAnnotations()[AnnStopReason] != n.GetAnnotations()[AnnStopReason]
}

// ReadParallelism is how many Reads a refresh may run at once (as for
// Jobs).
func (c *CRD) ReadParallelism() int { return c.k.ReadParallelism() }

func (c *CRD) res() dynamic.ResourceInterface { return c.dyn.Resource(c.gvr).Namespace(c.k.namespace) }

// Validate checks the namespace as the Job platform does and that the
// cluster serves the custom resource.
func (c *CRD) Validate(ctx context.Context) error {
	if err := c.k.Validate(ctx); err != nil {
		return errors.New(strings.Replace(err.Error(), "kubernetes platform", c.cfg.Kind+" platform", 1))
	}
	gvk := c.kind.gvk()
	return retry(ctx, func() error {
		list, err := c.k.client.serverResources(ctx, gvk.GroupVersion().String())
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s platform: %w", c.cfg.Kind, err)
		}
		if list != nil {
			for _, r := range list.APIResources {
				if r.Kind == gvk.Kind && r.Name == c.kind.plural() {
					return nil
				}
			}
		}
		return providers.Permanent(fmt.Errorf("%s platform: the cluster has no %s (%s): install %s", c.cfg.Kind, gvk.Kind, gvk.GroupVersion(), c.kind.install()))
	})
}

func crdHandle(obj *unstructured.Unstructured) providers.Handle {
	return providers.Handle{"namespace": obj.GetNamespace(), "kind": obj.GetKind(), "name": obj.GetName(), "uid": string(obj.GetUID())}
}

// get reads the trial's object; nil when there is none (or it is another
// trial's).
func (c *CRD) get(ctx context.Context, exp, trial string) (*unstructured.Unstructured, error) {
	name := JobName(exp, trial)
	var obj *unstructured.Unstructured
	err := retry(ctx, func() error {
		var err error
		obj, err = c.res().Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		c.follower().gone(c.k.namespace, name)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", c.kind.gvk().Kind, name, err)
	}
	c.follower().knows(obj)
	if a := obj.GetAnnotations(); a[AnnExperiment] != exp || a[AnnTrial] != trial {
		return nil, nil
	}
	return obj, nil
}

// tombstone is the ConfigMap a stopped trial left (nil when none).
func (c *CRD) tombstone(ctx context.Context, exp, trial string) (*corev1.ConfigMap, error) {
	var cm *corev1.ConfigMap
	err := retry(ctx, func() error {
		var err error
		cm, err = c.k.client.CoreV1().ConfigMaps(c.k.namespace).Get(ctx, JobName(exp, trial), metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get configmap %s: %w", JobName(exp, trial), err)
	}
	a := cm.Annotations
	if a[AnnTrial] != trial || a[AnnExperiment] != exp || a[AnnStopReason] == "" || len(cm.OwnerReferences) > 0 || cm.DeletionTimestamp != nil {
		return nil, nil
	}
	return cm, nil
}

func (c *CRD) tombstoneObservation(cm *corev1.ConfigMap) providers.Observation {
	a := cm.Annotations
	o := providers.Observation{
		TrialID: a[AnnTrial], Experiment: a[AnnExperiment], Exists: true, Phase: providers.PhaseKilled, Reason: a[AnnStopReason],
		Handle:  providers.Handle{"namespace": cm.Namespace, "kind": c.kind.gvk().Kind, "name": cm.Name, "uid": ""},
		Lineage: a[AnnLineage], Owner: ownerOf(a), PastMaxDuration: pastMaxDuration(providers.PhaseKilled, a[AnnStopReason]),
	}
	if t, err := time.Parse(time.RFC3339Nano, a[AnnStoppedAt]); err == nil {
		o.EndedAt = &t
	}
	return o
}

// pods lists the pods of the trial (by our labels, which every replica
// carries from the template), those of obj when it is not nil.
func (c *CRD) pods(ctx context.Context, exp, trial string, obj *unstructured.Unstructured) ([]corev1.Pod, error) {
	sel := labels.Set{LabelExperiment: LabelValue(exp), LabelTrial: LabelValue(trial)}.String()
	var list *corev1.PodList
	err := retry(ctx, func() error {
		var err error
		list, err = c.k.client.CoreV1().Pods(c.k.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list pods of trial %s: %w", trial, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if obj == nil || controllerUID(&p) == obj.GetUID() {
			out = append(out, p)
		}
	}
	sortPods(out)
	return out, nil
}

func controllerUID(p *corev1.Pod) types.UID {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.UID
		}
	}
	return ""
}

// Start creates or adopts the trial's object (see the providers contract).
func (c *CRD) Start(ctx context.Context, req providers.StartRequest) (providers.Handle, error) {
	if err := validateStart(req); err != nil {
		return nil, err
	}
	name := JobName(req.Experiment, req.TrialID)
	defer c.invalidate(req.Experiment)
	attempt := 1
	for {
		var raw *unstructured.Unstructured
		err := retry(ctx, func() error {
			var err error
			raw, err = c.res().Get(ctx, name, metav1.GetOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get %s %s: %w", c.kind.gvk().Kind, name, err)
		}
		if err == nil {
			a := raw.GetAnnotations()
			if a[AnnExperiment] != req.Experiment || a[AnnTrial] != req.TrialID {
				return nil, providers.Permanent(fmt.Errorf("%s %s/%s exists but is not trial %s/%s", c.kind.gvk().Kind, c.k.namespace, name, req.Experiment, req.TrialID))
			}
			if err := providers.CheckOwner(c.kind.gvk().Kind+" "+c.k.namespace+"/"+name, req, ownerOf(a)); err != nil {
				return nil, err
			}
			if n, err := strconv.Atoi(a[AnnAttempt]); err == nil {
				attempt = n + 1
			}
			if raw.GetDeletionTimestamp() == nil {
				o := c.observe(raw, nil)
				if !o.Phase.Ended() || !req.Resume {
					c.k.markSeen(req.Experiment, req.TrialID, true)
					return crdHandle(raw), nil
				}
			}
			// An ended trial to resume: delete the old object (its pods
			// and ConfigMap go with it; the checkpoint claim stays) and
			// wait for the name to be free.
			if err := c.deleteObj(ctx, raw, metav1.DeletePropagationBackground); err != nil {
				return nil, err
			}
			if err := c.waitGone(ctx, name); err != nil {
				return nil, err
			}
			continue
		}
		ts, err := c.tombstone(ctx, req.Experiment, req.TrialID)
		if err != nil {
			return nil, err
		}
		if ts != nil {
			if !req.Resume {
				c.k.markSeen(req.Experiment, req.TrialID, true)
				return c.tombstoneObservation(ts).Handle, nil
			}
			if n, err := strconv.Atoi(ts.Annotations[AnnAttempt]); err == nil && n+1 > attempt {
				attempt = n + 1
			}
		}
		h, err := c.create(ctx, req, name, attempt)
		if apierrors.IsAlreadyExists(err) {
			continue // someone else created it meanwhile: adopt
		}
		if err != nil {
			return nil, err
		}
		c.k.markSeen(req.Experiment, req.TrialID, true)
		return h, nil
	}
}

// podTemplate is the trial's pod template with a role's settings, as an
// unstructured object.
func (c *CRD) podTemplate(ts *trialSpec, r Role) (map[string]any, error) {
	t := *ts.pod.DeepCopy()
	ct := &t.Spec.Containers[0]
	ct.Name = c.kind.container()
	if r.Image != "" {
		ct.Image = r.Image
	}
	if r.Command != "" {
		ct.Command = wrapped([]string{"/bin/sh", "-c", r.Command})
	}
	if r.CPU != "" || r.Memory != "" || r.GPU > 0 {
		res := corev1.ResourceList{}
		for n, q := range ct.Resources.Requests {
			res[n] = q
		}
		if r.CPU != "" {
			res[corev1.ResourceCPU] = resource.MustParse(r.CPU)
		}
		if r.Memory != "" {
			res[corev1.ResourceMemory] = resource.MustParse(r.Memory)
		}
		if r.GPU > 0 {
			res["nvidia.com/gpu"] = *resource.NewQuantity(int64(r.GPU), resource.DecimalSI)
		}
		ct.Resources = corev1.ResourceRequirements{Requests: res, Limits: res}
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&t)
	if err != nil {
		return nil, err
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return m, nil
}

// create writes the ConfigMap, the checkpoint claim and the object, then
// makes the object own the ConfigMap.
func (c *CRD) create(ctx context.Context, req providers.StartRequest, name string, attempt int) (providers.Handle, error) {
	ts, err := c.k.trialObjects(req, name, attempt, true)
	if err != nil {
		return nil, err
	}
	if c.cfg.Checkpoint != nil {
		if err := c.k.ensureClaim(ctx, name, ts.labels, req.Lineage); err != nil {
			return nil, err
		}
	}
	spec, err := c.kind.spec(c.cfg, req, func(r Role) (map[string]any, error) { return c.podTemplate(ts, r) })
	if err != nil {
		return nil, providers.Permanent(err)
	}
	gvk := c.kind.gvk()
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	obj.SetAPIVersion(gvk.GroupVersion().String())
	obj.SetKind(gvk.Kind)
	obj.SetName(name)
	obj.SetNamespace(c.k.namespace)
	obj.SetLabels(ts.labels)
	obj.SetAnnotations(ts.ann)
	if err := c.k.ensureConfigMap(ctx, ts.cm, c.alive); err != nil {
		return nil, err
	}
	var created *unstructured.Unstructured
	err = retry(ctx, func() error {
		var err error
		created, err = c.res().Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		if apierrors.IsNotFound(err) {
			err = providers.Permanent(fmt.Errorf("%w (is the %s CRD installed? install %s)", err, gvk.Kind, c.kind.install()))
		} else if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
			err = providers.Permanent(err)
		}
		return nil, fmt.Errorf("create %s %s/%s: %w", gvk.Kind, c.k.namespace, name, err)
	}
	c.follower().knows(created)
	// The object owns the ConfigMap: deleting it removes both.
	ref := metav1.OwnerReference{APIVersion: created.GetAPIVersion(), Kind: created.GetKind(), Name: created.GetName(), UID: created.GetUID()}
	if err := c.k.own(ctx, ts.cm, ref); err != nil {
		return nil, err
	}
	return crdHandle(created), nil
}

// alive reports whether the object of an owner reference exists (same
// UID) and is not being deleted.
func (c *CRD) alive(ctx context.Context, o metav1.OwnerReference) (bool, error) {
	if o.Kind != c.kind.gvk().Kind {
		return c.k.jobAlive(ctx, o)
	}
	obj, err := c.res().Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return obj.GetUID() == o.UID && obj.GetDeletionTimestamp() == nil, nil
}

func (c *CRD) deleteObj(ctx context.Context, obj *unstructured.Unstructured, prop metav1.DeletionPropagation) error {
	uid := obj.GetUID()
	err := retry(ctx, func() error {
		return c.res().Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &prop, Preconditions: &metav1.Preconditions{UID: &uid}})
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	c.follower().deleted(obj.GetAnnotations()[AnnExperiment], obj.GetName(), uid)
	return nil
}

func (c *CRD) waitGone(ctx context.Context, name string) error {
	for {
		_, err := c.res().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s %s to go: %w", c.kind.gvk().Kind, name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *CRD) invalidate(exp string) { c.listed.drop(exp) }

// Read observes one trial: its object, the object's pods, and the metrics
// in the trial pod's log past req.MetricsOffset. A running trial past its
// max_duration is stopped here.
func (c *CRD) Read(ctx context.Context, req providers.ReadRequest) (providers.Observation, error) {
	var obj *unstructured.Unstructured
	var pods []corev1.Pod
	ok := false
	if f := c.following(); f != nil {
		// The watched copy, when it holds the object and has caught up
		// with what this process did to it; one it lacks (a tombstone,
		// a lost trial) is asked for below.
		if m, trusted := f.obj(c.k.namespace, JobName(req.Experiment, req.TrialID)); trusted && m != nil {
			if u, is := m.(*unstructured.Unstructured); is {
				if a := u.GetAnnotations(); a[AnnExperiment] == req.Experiment && a[AnnTrial] == req.TrialID {
					obj, pods, ok = u.DeepCopy(), f.ownedPods(u.GetUID()), true
					// As for Jobs (read.go): an object that ended before
					// its trial pod's copy shows it is read with the
					// pods from the API.
					if main := c.kind.main(obj, pods); c.observe(obj, pods).Phase.Ended() && (main == nil || terminated(main) == nil) {
						var err error
						if pods, err = c.pods(ctx, req.Experiment, req.TrialID, obj); err != nil {
							return providers.Observation{}, err
						}
					}
				}
			}
		}
	}
	if !ok {
		obj, pods, ok = c.listed.get(req.Experiment, req.TrialID)
	}
	if !ok {
		var err error
		if obj, err = c.get(ctx, req.Experiment, req.TrialID); err != nil {
			return providers.Observation{}, err
		}
		if obj == nil {
			ts, err := c.tombstone(ctx, req.Experiment, req.TrialID)
			if err != nil {
				return providers.Observation{}, err
			}
			if ts != nil {
				o := c.tombstoneObservation(ts)
				o.MetricsOffset = req.MetricsOffset
				return o, nil
			}
			o := c.k.missing(req)
			if o.Phase == providers.PhaseLost {
				o.Reason = "its " + c.kind.gvk().Kind + " was deleted outside trialform"
			}
			return o, nil
		}
		if pods, err = c.pods(ctx, req.Experiment, req.TrialID, obj); err != nil {
			return providers.Observation{}, err
		}
	}
	o := c.observe(obj, pods)
	c.k.markSeen(req.Experiment, req.TrialID, true)
	if d, err := time.ParseDuration(obj.GetAnnotations()[AnnMaxDuration]); err == nil && d > 0 &&
		(o.Phase == providers.PhaseRunning || o.Phase == providers.PhasePending) && o.StartedAt != nil && time.Since(*o.StartedAt) > d+time.Second {
		// (+1s: the start time is stored with second precision.)
		reason := maxDurationReason(d.String())
		if err := c.kill(ctx, obj, reason, 10*time.Second, false); err != nil {
			return providers.Observation{}, err
		}
		c.invalidate(req.Experiment)
		now := time.Now()
		o.Phase, o.Reason, o.EndedAt, o.PastMaxDuration = providers.PhaseKilled, reason, &now, true
	}
	main := c.kind.main(obj, pods)
	if main == nil {
		o.MetricsOffset = req.MetricsOffset
		return o, nil
	}
	if err := c.readMetrics(ctx, obj, main, req.MetricsOffset, req.SkipRunningMetrics, &o); err != nil {
		return providers.Observation{}, err
	}
	return o, nil
}

// readMetrics reads the metrics of the trial pod as the Job platform reads
// its pod's.
func (c *CRD) readMetrics(ctx context.Context, obj *unstructured.Unstructured, main *corev1.Pod, offsets map[string]int64, skipRunning bool, o *providers.Observation) error {
	holder := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Annotations: obj.GetAnnotations()}}
	return c.k.readMetrics(ctx, holder, []corev1.Pod{*main}, offsets, skipRunning, o)
}

// observe builds the observation of an object from its pods (oldest
// first).
func (c *CRD) observe(obj *unstructured.Unstructured, pods []corev1.Pod) providers.Observation {
	a := obj.GetAnnotations()
	main := c.kind.main(obj, pods)
	ph, reason := c.kind.phase(obj, main)
	if ph == providers.PhasePending && main != nil && main.Status.Phase == corev1.PodRunning {
		ph = providers.PhaseRunning
	}
	switch {
	case a[AnnStopReason] != "" && ph != providers.PhaseSucceeded:
		ph, reason = providers.PhaseKilled, a[AnnStopReason]
	case obj.GetDeletionTimestamp() != nil && !ph.Ended():
		ph, reason = providers.PhaseLost, "its "+obj.GetKind()+" is being deleted outside trialform"
	}
	o := providers.Observation{
		TrialID: a[AnnTrial], Experiment: a[AnnExperiment], Exists: true,
		Phase: ph, Reason: reason, Handle: crdHandle(obj), Lineage: a[AnnLineage], Owner: ownerOf(a),
		PastMaxDuration: pastMaxDuration(ph, reason),
	}
	if holder, err := c.trialJob(obj); err == nil {
		o.Spec = renderSpec(holder) // for drift (spec.go)
	}
	if t := started(main); t != nil {
		o.StartedAt = t
	} else if t := statusTime(obj, "startTime"); t != nil {
		o.StartedAt = t
	}
	if ph.Ended() || ph == providers.PhaseLost {
		if t := terminated(main); t != nil {
			code := int(t.ExitCode)
			o.ExitCode = &code
			e := t.FinishedAt.Time
			o.EndedAt = &e
		}
		if o.EndedAt == nil {
			if t, err := time.Parse(time.RFC3339Nano, a[AnnStoppedAt]); err == nil && ph == providers.PhaseKilled {
				o.EndedAt = &t
			} else if t := statusTime(obj, "completionTime", "completionTimestamp"); t != nil {
				o.EndedAt = t
			}
		}
		if o.StartedAt != nil && o.EndedAt != nil && o.EndedAt.Before(*o.StartedAt) {
			e := *o.StartedAt
			o.EndedAt = &e
		}
	}
	return o
}

// statusTime is the first of the status fields that holds a time.
func statusTime(obj *unstructured.Unstructured, fields ...string) *time.Time {
	for _, f := range fields {
		s, _, _ := unstructured.NestedString(obj.Object, "status", f)
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return &t
		}
	}
	return nil
}

// List returns every trial of the experiment found by label selector: one
// call for the objects and one for their pods.
func (c *CRD) List(ctx context.Context, experiment string) ([]providers.Observation, error) {
	if f := c.following(); f != nil && f.caughtUpAll(c.k.namespace, experiment) {
		objs, byObj := f.experimentObjs(experiment)
		var out []providers.Observation
		for _, o := range objs {
			obj, ok := o.(*unstructured.Unstructured)
			if !ok || obj.GetAnnotations()[AnnExperiment] != experiment || obj.GetDeletionTimestamp() != nil {
				continue
			}
			out = append(out, c.observe(obj, byObj[string(obj.GetUID())]))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].TrialID < out[j].TrialID })
		return out, nil
	}
	sel := labels.Set{LabelExperiment: LabelValue(experiment)}.String()
	var objs *unstructured.UnstructuredList
	err := retry(ctx, func() error {
		var err error
		objs, err = c.res().List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err
	})
	if err != nil {
		return nil, listErr("list "+c.kind.plural(), c.kind.plural(), c.k.namespace, err)
	}
	if len(objs.Items) == 0 {
		return nil, nil
	}
	var pods *corev1.PodList
	err = retry(ctx, func() error {
		var err error
		pods, err = c.k.client.CoreV1().Pods(c.k.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err
	})
	if err != nil {
		return nil, listErr("list pods", "pods", c.k.namespace, err)
	}
	byObj := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		uid := string(controllerUID(&p))
		byObj[uid] = append(byObj[uid], p)
	}
	snap := map[string]*unstructured.Unstructured{}
	var out []providers.Observation
	for i := range objs.Items {
		obj := &objs.Items[i]
		if obj.GetAnnotations()[AnnExperiment] != experiment || obj.GetDeletionTimestamp() != nil {
			continue
		}
		ps := byObj[string(obj.GetUID())]
		sortPods(ps)
		snap[obj.GetAnnotations()[AnnTrial]] = obj
		out = append(out, c.observe(obj, ps))
	}
	c.listed.put(experiment, snap, byObj)
	sort.Slice(out, func(i, j int) bool { return out[i].TrialID < out[j].TrialID })
	return out, nil
}

// Stop stops a running trial (see CRD); with Purge it then deletes the
// object with background propagation, the ConfigMap, leftover pods and
// the checkpoint claim.
func (c *CRD) Stop(ctx context.Context, req providers.StopRequest) error {
	if err := checkName("trial id", req.TrialID); err != nil {
		return err
	}
	defer c.invalidate(req.Experiment)
	obj, err := c.get(ctx, req.Experiment, req.TrialID)
	if err != nil {
		return err
	}
	if obj != nil && obj.GetDeletionTimestamp() == nil {
		if o := c.observe(obj, nil); !o.Phase.Ended() {
			reason := req.Reason
			if reason == "" {
				reason = "stopped by trialform"
			}
			if err := c.kill(ctx, obj, reason, req.Grace, true); err != nil {
				return err
			}
		}
	}
	if !req.Purge {
		return nil
	}
	name := JobName(req.Experiment, req.TrialID)
	if obj != nil {
		if err := c.deleteObj(ctx, obj, metav1.DeletePropagationBackground); err != nil {
			return err
		}
	}
	c.k.markSeen(req.Experiment, req.TrialID, false)
	sel := labels.Set{LabelExperiment: LabelValue(req.Experiment), LabelTrial: LabelValue(req.TrialID)}.String()
	for _, del := range []func() error{
		func() error {
			return c.k.client.CoreV1().ConfigMaps(c.k.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		},
		func() error {
			return c.k.client.CoreV1().PersistentVolumeClaims(c.k.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		},
		func() error {
			return c.k.client.CoreV1().Pods(c.k.namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel})
		},
	} {
		if err := retry(ctx, del); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// kill stops a trial: the reason goes on the ConfigMap, which loses its
// owner to stay as the tombstone, and on the object, which is deleted
// with orphan propagation (its operator lets go of the pods); then the
// pods are deleted with the grace period. With wait it returns once the
// object and the pods are gone.
func (c *CRD) kill(ctx context.Context, obj *unstructured.Unstructured, reason string, grace time.Duration, wait bool) error {
	name := obj.GetName()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	marks := map[string]string{AnnStopReason: reason, AnnStoppedAt: now}
	cmPatch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": marks, "ownerReferences": nil}})
	if err := retryConflict(ctx, func() error {
		_, err := c.k.client.CoreV1().ConfigMaps(c.k.namespace).Patch(ctx, name, types.MergePatchType, cmPatch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			a := map[string]string{}
			for k, v := range obj.GetAnnotations() {
				a[k] = v
			}
			for k, v := range marks {
				a[k] = v
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.k.namespace, Labels: obj.GetLabels(), Annotations: a}}
			_, err = c.k.client.CoreV1().ConfigMaps(c.k.namespace).Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), name, errors.New("created meanwhile"))
			}
		}
		return err
	}); err != nil {
		return fmt.Errorf("stop %s %s: mark its configmap: %w", obj.GetKind(), name, err)
	}
	objPatch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": marks}})
	if err := retry(ctx, func() error {
		_, err := c.res().Patch(ctx, name, types.MergePatchType, objPatch, metav1.PatchOptions{})
		return err
	}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("stop %s %s: %w", obj.GetKind(), name, err)
	}
	if err := c.deleteObj(ctx, obj, metav1.DeletePropagationOrphan); err != nil {
		return err
	}
	a := obj.GetAnnotations()
	sel := labels.Set{LabelExperiment: LabelValue(a[AnnExperiment]), LabelTrial: LabelValue(a[AnnTrial])}.String()
	secs := int64(grace.Round(time.Second) / time.Second)
	if grace > 0 && secs == 0 {
		secs = 1
	}
	if err := retry(ctx, func() error {
		return c.k.client.CoreV1().Pods(c.k.namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &secs}, metav1.ListOptions{LabelSelector: sel})
	}); err != nil {
		return fmt.Errorf("stop the pods of %s %s: %w", obj.GetKind(), name, err)
	}
	if err := c.deleteServices(ctx, name); err != nil {
		return fmt.Errorf("stop %s %s: %w", obj.GetKind(), name, err)
	}
	if !wait {
		return nil
	}
	// Wait for the pods to be gone (the object may wait a little longer
	// for the garbage collector to orphan them).
	deadline := time.Now().Add(grace + 30*time.Second)
	for time.Now().Before(deadline) {
		pods, err := c.k.client.CoreV1().Pods(c.k.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil && len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("stop %s %s: its pods were not gone %s after their deletion", obj.GetKind(), name, grace+30*time.Second)
}

// deleteServices deletes the Services the Kubeflow training operator made
// for a job's replicas (labelled with the job's name; other kinds make
// none). They are owned by the job, so they go with it, but not when a
// Stop orphans them with the pods.
func (c *CRD) deleteServices(ctx context.Context, job string) error {
	if _, ok := c.kind.(kubeflowKind); !ok {
		return nil
	}
	var svcs *corev1.ServiceList
	sel := metav1.ListOptions{LabelSelector: labels.Set{KubeflowJobNameLabel: job}.String()}
	if err := retry(ctx, func() (err error) {
		svcs, err = c.k.client.CoreV1().Services(c.k.namespace).List(ctx, sel)
		return err
	}); err != nil {
		return fmt.Errorf("list the services of %s: %w", job, err)
	}
	for i := range svcs.Items {
		n := svcs.Items[i].Name
		if err := retry(ctx, func() error {
			return c.k.client.CoreV1().Services(c.k.namespace).Delete(ctx, n, metav1.DeleteOptions{})
		}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete service %s: %w", n, err)
		}
	}
	return nil
}

// PurgeExperiment deletes every object (background propagation), pod,
// ConfigMap and checkpoint claim labelled with the experiment whose
// lineage is the given one (or unset), and waits for the objects and pods
// to be gone.
func (c *CRD) PurgeExperiment(ctx context.Context, experiment, lineage string) error {
	defer c.invalidate(experiment)
	opts := metav1.ListOptions{LabelSelector: labels.Set{LabelExperiment: LabelValue(experiment)}.String()}
	ours := func(m metav1.Object) bool {
		a := m.GetAnnotations()
		return (a[AnnLineage] == "" || a[AnnLineage] == lineage) && (a[AnnExperiment] == "" || a[AnnExperiment] == experiment)
	}
	var objs *unstructured.UnstructuredList
	if err := retry(ctx, func() (err error) {
		objs, err = c.res().List(ctx, opts)
		return err
	}); err != nil {
		return fmt.Errorf("list %s: %w", c.kind.plural(), err)
	}
	var deleted []string
	for i := range objs.Items {
		obj := &objs.Items[i]
		if !ours(obj) {
			continue
		}
		if err := c.deleteObj(ctx, obj, metav1.DeletePropagationBackground); err != nil {
			return err
		}
		deleted = append(deleted, obj.GetName())
		c.k.markSeen(experiment, obj.GetAnnotations()[AnnTrial], false)
	}
	// The Services a kubeflow operator made for stopped trials (orphaned
	// with their pods) are found by the tombstones' names.
	if _, ok := c.kind.(kubeflowKind); ok {
		var cms *corev1.ConfigMapList
		if err := retry(ctx, func() (err error) {
			cms, err = c.k.client.CoreV1().ConfigMaps(c.k.namespace).List(ctx, opts)
			return err
		}); err != nil {
			return fmt.Errorf("list configmaps: %w", err)
		}
		for i := range cms.Items {
			if ours(&cms.Items[i]) {
				if err := c.deleteServices(ctx, cms.Items[i].Name); err != nil {
					return err
				}
			}
		}
	}
	if err := c.k.purgeOwned(ctx, opts, ours); err != nil {
		return err
	}
	// The pods go with their objects; delete them too, in case the
	// garbage collector is slow or they were orphaned by a Stop.
	var pods *corev1.PodList
	if err := retry(ctx, func() (err error) {
		pods, err = c.k.client.CoreV1().Pods(c.k.namespace).List(ctx, opts)
		return err
	}); err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !ours(p) || p.DeletionTimestamp != nil {
			continue
		}
		if err := retry(ctx, func() error {
			return c.k.client.CoreV1().Pods(c.k.namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
	}
	for _, n := range deleted {
		if err := c.waitGone(ctx, n); err != nil {
			return err
		}
	}
	for {
		pods, err := c.k.client.CoreV1().Pods(c.k.namespace).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		left := 0
		for i := range pods.Items {
			if ours(&pods.Items[i]) {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the pods of %s to go: %w", experiment, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Logs copies the trial pod's log to req.Out; with Follow it waits for
// the pod to start and follows its log until the container ends.
func (c *CRD) Logs(ctx context.Context, req providers.LogsRequest) error {
	for {
		obj, err := c.get(ctx, req.Experiment, req.TrialID)
		if err != nil {
			return err
		}
		if obj == nil {
			return fmt.Errorf("trial %s/%s: %w (no %s %s in namespace %s)", req.Experiment, req.TrialID, providers.ErrNotFound,
				c.kind.gvk().Kind, JobName(req.Experiment, req.TrialID), c.k.namespace)
		}
		pods, err := c.pods(ctx, req.Experiment, req.TrialID, obj)
		if err != nil {
			return err
		}
		main := c.kind.main(obj, pods)
		o := c.observe(obj, pods)
		show := logPods(main, pods, o.Phase)
		if len(show) > 0 && (req.Follow && show[0].header == "") {
			// The trial runs, or ran on its own: its results pod's log,
			// followed until the container ends.
			return c.k.streamLog(ctx, show[0].pod, true, req.Out)
		}
		for _, sp := range show {
			if sp.header != "" {
				fmt.Fprintf(req.Out, "==> pod %s (%s) <==\n", sp.pod.Name, sp.header)
			}
			if err := c.k.streamLog(ctx, sp.pod, false, req.Out); err != nil {
				return err
			}
		}
		if len(show) > 0 {
			return nil
		}
		if o.Phase.Ended() {
			return fmt.Errorf("trial %s/%s ended and no pod of its %s %s is left to show a log (the operator removes them when the job ends: its cleanPodPolicy)",
				req.Experiment, req.TrialID, c.kind.gvk().Kind, obj.GetName())
		}
		if !req.Follow {
			return nil // not running yet: nothing to show
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// shownPod is a pod whose log `logs` shows, with the header that says
// why ("" for the results pod of a trial shown alone).
type shownPod struct {
	pod    *corev1.Pod
	header string
}

// logPods picks the pods whose logs `logs` shows for a trial of a
// distributed job in phase: its results pod (main) once it started. A
// trial that failed because another replica failed (the operator then
// removes or stops the pods still running, the results pod among them)
// also shows the log of the replica that failed first, which tells why.
// With the results pod gone or never run: that replica, else the newest
// that ran.
// Nothing while the trial has not started.
func logPods(main *corev1.Pod, pods []corev1.Pod, phase providers.Phase) []shownPod {
	mainRan := main != nil && (main.Status.Phase != corev1.PodPending || terminated(main) != nil)
	// The replica that failed first is the cause: the others that
	// ended non-zero after it were stopped because of it.
	var failed *corev1.Pod
	if phase.Ended() && phase != providers.PhaseSucceeded {
		for i := range pods {
			t := terminated(&pods[i])
			if t == nil || t.ExitCode == 0 {
				continue
			}
			if failed == nil || t.FinishedAt.Before(&terminated(failed).FinishedAt) {
				failed = &pods[i]
			}
		}
		if failed != nil && main != nil && failed.Name == main.Name {
			failed = nil // the results pod failed first: its own log says why
		}
	}
	switch {
	case mainRan && failed != nil:
		return []shownPod{{main, "the trial's results pod"}, {failed, "a replica that failed; the trial failed with it"}}
	case mainRan:
		return []shownPod{{pod: main}}
	case !phase.Ended():
		return nil
	case failed != nil:
		return []shownPod{{failed, "the trial's results pod is gone; this replica's log"}}
	}
	if p := pickPod(pods, func(p *corev1.Pod) bool { return p.Status.Phase != corev1.PodPending || terminated(p) != nil }); p != nil {
		return []shownPod{{p, "the trial's results pod is gone; this replica's log"}}
	}
	return nil
}

// pickPod returns the newest pod (pods are oldest first) for which match
// holds.
func pickPod(pods []corev1.Pod, match func(p *corev1.Pod) bool) *corev1.Pod {
	for i := len(pods) - 1; i >= 0; i-- {
		if match(&pods[i]) {
			return &pods[i]
		}
	}
	return nil
}

// failedReason is why a trial whose object failed failed: the trial
// container's exit, else what the operator says.
func failedReason(main *corev1.Pod, what string) string {
	if t := terminated(main); t != nil {
		return exitReason(t)
	}
	return strings.TrimSpace(what)
}
