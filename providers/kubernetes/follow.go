package kubernetes

import (
	"context"
	"io"
	"strconv"
	"sync"
	"time"

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
// on. Everything else (logs, ConfigMaps, claims) is read as before.

// follower holds the two informers of a following Kubernetes platform.
type follower struct {
	jobs, pods cache.SharedIndexInformer
	cancel     context.CancelFunc
	wg         sync.WaitGroup

	mu       sync.Mutex
	watching map[string]bool  // "jobs", "pods": the watch runs
	floors   map[string]floor // job name: the newest version this process knows of
}

// floor is the newest version of a Job this process read or wrote
// through the API; deleted: it deleted the Job of that UID.
type floor struct {
	exp     string
	rv      string
	deleted types.UID
	at      time.Time
}

// floorTTL bounds how long a floor makes the copy of a Job untrusted (a
// watch that ran all along delivers the event in milliseconds): past it
// the Job is read from the copy again.
const floorTTL = 5 * time.Minute

const podJobIndex = "job-uid"

// Follow starts following (see above) until Close. It returns at once;
// until both copies are filled, refreshes read the API as before.
// Calling it again does nothing.
func (k *Kubernetes) Follow() {
	k.mu.Lock()
	if k.follow != nil || k.closed {
		k.mu.Unlock()
		return
	}
	quietKlog()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{cancel: cancel, watching: map[string]bool{}, floors: map[string]floor{}}
	k.follow = f
	k.mu.Unlock()

	// Every trial object carries the experiment label.
	sel := LabelExperiment
	jobsLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return k.client.BatchV1().Jobs(k.namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			w, err := k.stream.BatchV1().Jobs(k.namespace).Watch(ctx, o)
			f.setWatching("jobs", err == nil)
			return w, err
		},
	}
	podsLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return k.client.CoreV1().Pods(k.namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			w, err := k.stream.CoreV1().Pods(k.namespace).Watch(ctx, o)
			f.setWatching("pods", err == nil)
			return w, err
		},
	}
	f.jobs = cache.NewSharedIndexInformer(jobsLW, &batchv1.Job{}, 0, cache.Indexers{})
	f.pods = cache.NewSharedIndexInformer(podsLW, &corev1.Pod{}, 0, cache.Indexers{
		podJobIndex: func(obj any) ([]string, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			return []string{p.Labels["batch.kubernetes.io/controller-uid"]}, nil
		},
	})
	for name, inf := range map[string]cache.SharedIndexInformer{"jobs": f.jobs, "pods": f.pods} {
		// A failed List or watch: the copy is not trusted until a new
		// watch runs (the reflector retries with a backoff).
		inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) { f.setWatching(name, false) })
		inf.SetTransform(trimCopy)
	}
	f.jobs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { k.signal() },
		UpdateFunc: func(a, b any) {
			o, ok1 := a.(*batchv1.Job)
			n, ok2 := b.(*batchv1.Job)
			if !ok1 || !ok2 || jobChanged(o, n) {
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
	go func() { defer f.wg.Done(); f.jobs.RunWithContext(ctx) }()
	go func() { defer f.wg.Done(); f.pods.RunWithContext(ctx) }()
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
var quietKlog = sync.OnceFunc(func() {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
})

func (f *follower) setWatching(name string, on bool) {
	f.mu.Lock()
	f.watching[name] = on
	f.mu.Unlock()
}

// stop ends the informers and waits for them.
func (f *follower) stop() {
	f.cancel()
	f.wg.Wait()
}

// ready reports whether both copies can answer.
func (f *follower) ready() bool {
	if f == nil || !f.jobs.HasSynced() || !f.pods.HasSynced() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watching["jobs"] && f.watching["pods"]
}

// following is the follower when its copies can answer, else nil.
func (k *Kubernetes) following() *follower {
	if f := k.follower(); f.ready() {
		return f
	}
	return nil
}

// knows records a version of job that this process read or wrote through
// the API: until the copy holds it (or a newer one), the Job is read from
// the API.
func (k *Kubernetes) knows(job *batchv1.Job) {
	f := k.follower()
	if f == nil || job == nil || job.ResourceVersion == "" {
		return
	}
	f.mu.Lock()
	f.floors[job.Name] = floor{exp: job.Annotations[AnnExperiment], rv: job.ResourceVersion, at: time.Now()}
	f.mu.Unlock()
}

// deleted records that this process deleted the Job of that name and
// UID: until the copy lost it, the Job is read from the API.
func (k *Kubernetes) deleted(exp, name string, uid types.UID) {
	f := k.follower()
	if f == nil {
		return
	}
	f.mu.Lock()
	f.floors[name] = floor{exp: exp, deleted: uid, at: time.Now()}
	f.mu.Unlock()
}

// gone records that the API has no Job of that name: the copy is not
// trusted for it while it still holds one.
func (k *Kubernetes) gone(name string) {
	f := k.follower()
	if f == nil {
		return
	}
	var job *batchv1.Job
	if obj, ok, err := f.jobs.GetStore().GetByKey(k.namespace + "/" + name); err == nil && ok {
		job, _ = obj.(*batchv1.Job)
	}
	f.mu.Lock()
	if job != nil {
		f.floors[name] = floor{exp: job.Annotations[AnnExperiment], deleted: job.UID, at: time.Now()}
	} else {
		delete(f.floors, name)
	}
	f.mu.Unlock()
}

// follower is k's follower, ready or not (nil: not following).
func (k *Kubernetes) follower() *follower {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.follow
}

// job is the copy of the Job of that name (nil: the copy has none), and
// whether the copy can be trusted for it (see floors).
func (f *follower) job(ns, name string) (*batchv1.Job, bool) {
	var job *batchv1.Job
	if obj, ok, err := f.jobs.GetStore().GetByKey(ns + "/" + name); err == nil && ok {
		job, _ = obj.(*batchv1.Job)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return job, f.caughtUp(name, job)
}

// caughtUp reports whether the copy's job (nil: none) is at least what
// the floor of that name says, dropping the floor once it is; f.mu is
// held.
func (f *follower) caughtUp(name string, job *batchv1.Job) bool {
	fl, ok := f.floors[name]
	if !ok {
		return true
	}
	switch {
	case time.Since(fl.at) > floorTTL:
	case fl.deleted != "":
		if job != nil && job.UID == fl.deleted {
			return false
		}
	case job == nil || !versionAtLeast(job.ResourceVersion, fl.rv):
		return false
	}
	delete(f.floors, name)
	return true
}

// caughtUpAll reports whether the copy is caught up for every Job of the
// experiment this process acted on.
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
		if _, ok := f.job(ns, n); !ok {
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

// jobPods is the copy's pods of a Job, oldest first (a new slice).
func (f *follower) jobPods(job *batchv1.Job) []corev1.Pod {
	objs, _ := f.pods.GetIndexer().ByIndex(podJobIndex, string(job.UID))
	pods := make([]corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, *p)
		}
	}
	sortPods(pods)
	return pods
}

// experimentJobs is the copy's Jobs labelled with the experiment, and
// their pods by Job UID.
func (f *follower) experimentJobs(exp string) ([]*batchv1.Job, map[string][]corev1.Pod) {
	value := LabelValue(exp)
	var jobs []*batchv1.Job
	byJob := map[string][]corev1.Pod{}
	for _, o := range f.jobs.GetStore().List() {
		j, ok := o.(*batchv1.Job)
		if !ok || j.Labels[LabelExperiment] != value {
			continue
		}
		jobs = append(jobs, j)
		byJob[string(j.UID)] = f.jobPods(j)
	}
	return jobs, byJob
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
