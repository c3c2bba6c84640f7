package kubernetes

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// A session that refreshes again and again (apply -wait, watch, the
// controller) follows the namespace's trial Jobs and pods: one List and a
// watch of each (client-go informers), after which a refresh's List and
// Reads answer from the watched copies instead of listing 1,000 Jobs and
// pods every ListInterval, and a trial that ends wakes the run loop at
// once (Changed) instead of at the next List. A one-shot command (plan,
// apply, trials) never follows: it lists once, as before.
//
// The copies are trusted only while both watches run (after their first
// List, and not since a watch failed until it is running again), and a
// trial's Job only once the copy has caught up with what this process
// last read or wrote of it through the API (floors): a Job just created,
// stopped or deleted is read from the API until its watch event arrived,
// so a refresh never sees an older Job than the one this process acted
// on. The two watches are not in step: a Job whose copy ended while its
// pod's copy does not show the trial container's end is read with its
// pods from the API (read.go). Everything else (logs, ConfigMaps,
// claims, a CRD trial's tombstone) is read as before. The CRD platforms
// (crd.go) follow their custom resources the same way.

// follower holds the two informers of a following platform: its trial
// objects (Jobs, or a CRD platform's custom resources) and their pods.
type follower struct {
	objs, pods cache.SharedIndexInformer
	cancel     context.CancelFunc
	wg         sync.WaitGroup

	mu       sync.Mutex
	watching map[string]bool  // "objs", "pods": the watch runs
	floors   map[string]floor // object name: the newest version this process knows of
	// failed is the last List or watch error while not watching, since
	// when; warned, the errors already reported (Warnings).
	failed      error
	failedSince time.Time
	warned      map[string]bool
	what        string // what is watched, for the warning ("jobs and pods")
}

// floor is the newest version of a trial object this process read or
// wrote through the API; deleted: it deleted the object of that UID.
type floor struct {
	exp     string
	rv      string
	deleted types.UID
	at      time.Time
}

// floorTTL bounds how long a floor makes the copy of an object untrusted
// (a watch that ran all along delivers the event in milliseconds): past
// it the object is read from the copy again.
const floorTTL = 5 * time.Minute

const podOwnerIndex = "owner-uid"

// Follow starts following (see above) until Close. It returns at once;
// until both copies are filled, refreshes read the API as before.
// Calling it again does nothing.
func (k *Kubernetes) Follow() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.follow != nil || k.closed {
		return
	}
	k.follow = startFollower(labelled(
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return k.client.BatchV1().Jobs(k.namespace).List(ctx, o)
		}, k.stream.BatchV1().Jobs(k.namespace).Watch), &batchv1.Job{}, "Jobs and pods",
		func(a, b any) bool {
			o, ok1 := a.(*batchv1.Job)
			n, ok2 := b.(*batchv1.Job)
			return !ok1 || !ok2 || jobChanged(o, n)
		}, k)
}

// labelled lists and watches what list and watchFn do, of the objects
// with the experiment label (every trial object and pod has it).
func labelled(list cache.ListWithContextFunc, watchFn cache.WatchFuncWithContext) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = LabelExperiment
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = LabelExperiment
			return watchFn(ctx, o)
		},
	}
}

// startFollower starts the informers of the trial objects objs lists and
// watches (of type example) and of the namespace's trial pods; changed
// says whether an object's update is news (signalled on k).
func startFollower(objs *cache.ListWatch, example runtime.Object, what string, changed func(a, b any) bool, k *Kubernetes) *follower {
	quietKlog()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{cancel: cancel, watching: map[string]bool{}, floors: map[string]floor{}, what: what}
	pods := labelled(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return k.client.CoreV1().Pods(k.namespace).List(ctx, o)
	}, k.stream.CoreV1().Pods(k.namespace).Watch)
	watched := func(name string, lw *cache.ListWatch) *cache.ListWatch {
		w := lw.WatchFuncWithContext
		lw.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := w(ctx, o)
			f.setWatching(name, err == nil)
			return wi, err
		}
		return lw
	}
	f.objs = cache.NewSharedIndexInformer(watched("objs", objs), example, 0, cache.Indexers{})
	f.pods = cache.NewSharedIndexInformer(watched("pods", pods), &corev1.Pod{}, 0, cache.Indexers{
		podOwnerIndex: func(obj any) ([]string, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			return []string{string(controllerUID(p))}, nil
		},
	})
	for name, inf := range map[string]cache.SharedIndexInformer{"objs": f.objs, "pods": f.pods} {
		// A failed List or watch: the copy is not trusted until a new
		// watch runs (the reflector retries with a backoff).
		inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			f.setWatching(name, false)
			f.mu.Lock()
			if f.failed == nil {
				f.failedSince = time.Now()
			}
			f.failed = err
			f.mu.Unlock()
		})
		inf.SetTransform(trimCopy)
	}
	f.objs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { k.signal() },
		UpdateFunc: func(a, b any) {
			if changed(a, b) {
				k.signal()
			}
		},
		DeleteFunc: func(any) { k.signal() },
	})
	f.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { k.signal() },
		UpdateFunc: func(a, b any) {
			o, ok1 := a.(*corev1.Pod)
			n, ok2 := b.(*corev1.Pod)
			if !ok1 || !ok2 || podChanged(o, n) {
				k.signal()
			}
		},
		DeleteFunc: func(any) { k.signal() },
	})
	f.wg.Add(2)
	go func() { defer f.wg.Done(); f.objs.RunWithContext(ctx) }()
	go func() { defer f.wg.Done(); f.pods.RunWithContext(ctx) }()
	return f
}

// trimCopy keeps in the copies what a refresh reads: no field managers;
// of a pod's spec its node and its containers' names (the status whole);
// of an ended Job's pod template its containers' names (the template of
// a running one is compared for drift). The copies of a namespace that
// keeps every finished trial's Job and pod stay small.
func trimCopy(obj any) (any, error) {
	names := func(cs []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			out[i] = corev1.Container{Name: c.Name}
		}
		return out
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.ManagedFields = nil
		o.Spec = corev1.PodSpec{NodeName: o.Spec.NodeName, InitContainers: names(o.Spec.InitContainers), Containers: names(o.Spec.Containers)}
	case *batchv1.Job:
		o.ManagedFields = nil
		if ph, _ := jobPhase(o, nil); ph.Ended() {
			o.Spec.Template.Spec = corev1.PodSpec{Containers: names(o.Spec.Template.Spec.Containers)}
		}
	default:
		if m, err := meta.Accessor(obj); err == nil {
			m.SetManagedFields(nil)
		}
	}
	return obj, nil
}

// quietKlog keeps client-go's own log (a watch that failed, retried)
// off the user's terminal: trialform reports what matters itself.
// (klog writes errors to stderr whatever its output, unless a logger
// takes them.)
var quietKlog = sync.OnceFunc(func() { klog.SetLogger(logr.Discard()) })

func (f *follower) setWatching(name string, on bool) {
	f.mu.Lock()
	f.watching[name] = on
	if f.watching["objs"] && f.watching["pods"] {
		f.failed = nil
	}
	f.mu.Unlock()
}

// warnAfter is how long the watches may fail before the user is told.
const warnAfter = 10 * time.Second

// warnings is what to tell the user about the watches, once per error:
// that they have failed for warnAfter, and why.
func (f *follower) warnings() []string {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil || time.Since(f.failedSince) < warnAfter {
		return nil
	}
	msg := fmt.Sprintf("cannot watch the trials' %s (%v): each refresh lists them instead; "+
		"grant the account list and watch on them to follow the trials", f.what, f.failed)
	if f.warned[msg] {
		return nil
	}
	if f.warned == nil {
		f.warned = map[string]bool{}
	}
	f.warned[msg] = true
	return []string{msg}
}

// Warnings tells once that the trials cannot be followed, and why
// (providers.Warner).
func (k *Kubernetes) Warnings() []string { return append(k.follower().warnings(), k.logWarnings()...) }

// logWarnings tells once that the account may not read the pods' logs.
func (k *Kubernetes) logWarnings() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.logForbidden || k.logWarned {
		return nil
	}
	k.logWarned = true
	return []string{"cannot read the trials' pod logs (forbidden): their metrics are not collected; grant " + logPermission(k.namespace)}
}

// stop ends the informers and waits for them.
func (f *follower) stop() {
	f.cancel()
	f.wg.Wait()
}

// ready reports whether both copies can answer.
func (f *follower) ready() bool {
	if f == nil || !f.objs.HasSynced() || !f.pods.HasSynced() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watching["objs"] && f.watching["pods"]
}

// following is the follower when its copies can answer, else nil.
func (k *Kubernetes) following() *follower { return k.follower().ifReady() }

// ifReady is f when its copies can answer, else nil.
func (f *follower) ifReady() *follower {
	if f.ready() {
		return f
	}
	return nil
}

// knows records a version of a trial object that this process read or
// wrote through the API: until the copy holds it (or a newer one), the
// object is read from the API. Nil-safe (not following: nothing).
func (f *follower) knows(obj metav1.Object) {
	if f == nil || obj == nil || obj.GetResourceVersion() == "" {
		return
	}
	f.mu.Lock()
	f.floors[obj.GetName()] = floor{exp: obj.GetAnnotations()[AnnExperiment], rv: obj.GetResourceVersion(), at: time.Now()}
	f.mu.Unlock()
}

// deleted records that this process deleted the object of that name and
// UID: until the copy lost it, the object is read from the API.
func (f *follower) deleted(exp, name string, uid types.UID) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.floors[name] = floor{exp: exp, deleted: uid, at: time.Now()}
	f.mu.Unlock()
}

// gone records that the API has no object of that name: the copy is not
// trusted for it while it still holds one.
func (f *follower) gone(ns, name string) {
	if f == nil {
		return
	}
	obj := f.cached(ns, name)
	f.mu.Lock()
	if obj != nil {
		f.floors[name] = floor{exp: obj.GetAnnotations()[AnnExperiment], deleted: obj.GetUID(), at: time.Now()}
	} else {
		delete(f.floors, name)
	}
	f.mu.Unlock()
}

// cached is the copy's object of that name, or nil.
func (f *follower) cached(ns, name string) metav1.Object {
	obj, ok, err := f.objs.GetStore().GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}

// follower is k's follower, ready or not (nil: not following).
func (k *Kubernetes) follower() *follower {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.follow
}

// obj is the copy of the trial object of that name (nil: the copy has
// none), and whether the copy can be trusted for it (see floors).
func (f *follower) obj(ns, name string) (metav1.Object, bool) {
	obj := f.cached(ns, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	return obj, f.caughtUp(name, obj)
}

// job is obj for the Job platform.
func (f *follower) job(ns, name string) (*batchv1.Job, bool) {
	obj, ok := f.obj(ns, name)
	j, _ := obj.(*batchv1.Job)
	return j, ok
}

// caughtUp reports whether the copy's object (nil: none) is at least
// what the floor of that name says, dropping the floor once it is; f.mu
// is held.
func (f *follower) caughtUp(name string, obj metav1.Object) bool {
	fl, ok := f.floors[name]
	if !ok {
		return true
	}
	switch {
	case time.Since(fl.at) > floorTTL:
	case fl.deleted != "":
		if obj != nil && obj.GetUID() == fl.deleted {
			return false
		}
	case obj == nil || !versionAtLeast(obj.GetResourceVersion(), fl.rv):
		return false
	}
	delete(f.floors, name)
	return true
}

// caughtUpAll reports whether the copy is caught up for every object of
// the experiment this process acted on.
func (f *follower) caughtUpAll(ns, exp string) bool {
	f.mu.Lock()
	var names []string
	for n, fl := range f.floors {
		if fl.exp == exp {
			names = append(names, n)
		}
	}
	f.mu.Unlock()
	for _, n := range names {
		if _, ok := f.obj(ns, n); !ok {
			return false
		}
	}
	return true
}

// versionAtLeast compares resource versions: as numbers when both are
// (etcd's revisions, which every apiserver serves), else only equality.
func versionAtLeast(have, want string) bool {
	h, err1 := strconv.ParseUint(have, 10, 64)
	w, err2 := strconv.ParseUint(want, 10, 64)
	if err1 != nil || err2 != nil {
		return have == want
	}
	return h >= w
}

// ownedPods is the copy's pods that the object of that UID controls,
// oldest first (a new slice).
func (f *follower) ownedPods(uid types.UID) []corev1.Pod {
	objs, _ := f.pods.GetIndexer().ByIndex(podOwnerIndex, string(uid))
	pods := make([]corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, *p)
		}
	}
	sortPods(pods)
	return pods
}

// experimentObjs is the copy's trial objects labelled with the
// experiment, and their pods by the object's UID.
func (f *follower) experimentObjs(exp string) ([]runtime.Object, map[string][]corev1.Pod) {
	value := LabelValue(exp)
	var objs []runtime.Object
	byObj := map[string][]corev1.Pod{}
	for _, o := range f.objs.GetStore().List() {
		m, err := meta.Accessor(o)
		ro, ok := o.(runtime.Object)
		if err != nil || !ok || m.GetLabels()[LabelExperiment] != value {
			continue
		}
		objs = append(objs, ro)
		byObj[string(m.GetUID())] = f.ownedPods(m.GetUID())
	}
	return objs, byObj
}

// Changed receives a value when a followed trial's Job or pod changed in
// a way a refresh would see (apply's Notifier): its phase, a container
// that started or ended, a Job's conditions or its deletion. Never closed.
func (k *Kubernetes) Changed() <-chan struct{} { return k.changed }

func (k *Kubernetes) signal() {
	select {
	case k.changed <- struct{}{}:
	default:
	}
}

// jobChanged reports a change of what observe reads of a Job's status.
func jobChanged(o, n *batchv1.Job) bool {
	return !equality.Semantic.DeepEqual(o.Status.Conditions, n.Status.Conditions) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		o.Annotations[AnnStopReason] != n.Annotations[AnnStopReason]
}

// podChanged reports a change of a pod's phase or of a container's
// state (waiting, running, ended).
func podChanged(o, n *corev1.Pod) bool {
	if o.Status.Phase != n.Status.Phase || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
		return true
	}
	state := func(p *corev1.Pod) string {
		b := make([]byte, 0, 4)
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			switch {
			case cs.State.Terminated != nil:
				b = append(b, 't')
			case cs.State.Running != nil:
				b = append(b, 'r')
			default:
				b = append(b, 'w')
			}
		}
		return string(b)
	}
	return state(o) != state(n)
}
