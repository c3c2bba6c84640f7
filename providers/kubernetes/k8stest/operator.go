package k8stest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/trialform/trialform/providers/kubernetes/crds"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates the training operator's own CRDs (from the bin dir)
// and those of providers/kubernetes/crds (AdaptDLJob, Framework) unless
// they exist and waits until each is Established and served.
func InstallCRDs(ctx context.Context, cp *ControlPlane) error {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := installTrainingOperatorCRDs(ctx, cp, dyn); err != nil {
		return err
	}
	for _, n := range crds.Names {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(crds.Get(n), &obj.Object); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		if _, err := dyn.Resource(crdGVR).Create(ctx, &obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("install %s: %w", n, err)
		}
		if err := waitEstablished(ctx, cp, dyn, &obj); err != nil {
			return fmt.Errorf("install %s: %w", n, err)
		}
	}
	return nil
}

// UninstallCRD deletes one CRD (by name, e.g. "adaptdljobs.adaptdl.petuum.com")
// and waits until it is gone.
func UninstallCRD(ctx context.Context, cp *ControlPlane, name string) error {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := dyn.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		if _, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func waitEstablished(ctx context.Context, cp *ControlPlane, dyn dynamic.Interface, want *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(want.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(want.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(want.Object, "spec", "versions")
	version := ""
	if len(versions) > 0 {
		version, _ = versions[0].(map[string]any)["name"].(string)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		cur, err := dyn.Resource(crdGVR).Get(ctx, want.GetName(), metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					// Served too (discovery and the handler follow).
					if _, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: plural}).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
						return nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("not established after 60s")
}

// Operator is a minimal stand-in for the AdaptDL scheduler and
// FrameworkController, which have no operator that runs here (the Kubeflow
// kinds run on the real training operator: StartTrainingOperator). It
// polls AdaptDLJobs and Frameworks, creates each replica's pod from its
// template with the real operators' labels and annotations and an owner
// reference to the object, and mirrors the pods' states into the object's
// status through the status subresource as the operators do (AdaptDL
// status.phase; Framework status.state and completionStatus). Nothing else
// (rescaling, retries) is done. Unlike the real FrameworkController it
// keeps the pods of completed Frameworks.
type Operator struct {
	dyn    dynamic.Interface
	client kubernetes.Interface
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	logf *os.File

	// started and finished count ticks; tickDone is closed and replaced
	// when one ends (Sync waits on it).
	tickMu   sync.Mutex
	started  uint64
	finished uint64
	tickDone chan struct{}
}

// Sync returns once a whole tick has run after the call: what the
// operator does from then on sees every change made before it (an
// OperatorPaused annotation, say), and no tick that began earlier is still
// in flight.
func (o *Operator) Sync(ctx context.Context) error {
	o.tickMu.Lock()
	target := o.started + 1
	o.tickMu.Unlock()
	for {
		o.tickMu.Lock()
		done, c := o.finished >= target, o.tickDone
		o.tickMu.Unlock()
		if done {
			return nil
		}
		select {
		case <-c:
		case <-o.done:
			return fmt.Errorf("operator stopped")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// OperatorPaused is an annotation that makes the operator leave an object
// alone (tests drive its status themselves).
const OperatorPaused = "k8stest.trialform.io/operator-paused"

// Operator kinds.
var (
	AdaptDLJobs = schema.GroupVersionResource{Group: "adaptdl.petuum.com", Version: "v1", Resource: "adaptdljobs"}
	Frameworks  = schema.GroupVersionResource{Group: "frameworkcontroller.microsoft.com", Version: "v1", Resource: "frameworks"}
)

// StartOperator starts the operator (the CRDs must be installed).
func StartOperator(cp *ControlPlane) (*Operator, error) {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Operator{dyn: dyn, client: cp.Client, cancel: cancel, done: make(chan struct{}), tickDone: make(chan struct{})}
	o.logf, _ = os.OpenFile(filepath.Join(cp.Dir, "operator.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	go o.loop(ctx)
	return o, nil
}

// Stop stops the operator.
func (o *Operator) Stop() {
	o.cancel()
	<-o.done
	if o.logf != nil {
		o.logf.Close()
	}
}

func (o *Operator) log(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.logf != nil {
		fmt.Fprintf(o.logf, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
	}
}

func (o *Operator) loop(ctx context.Context) {
	defer close(o.done)
	for ctx.Err() == nil {
		o.tickMu.Lock()
		o.started++
		n := o.started
		o.tickMu.Unlock()
		o.tick(ctx)
		o.tickMu.Lock()
		o.finished = n
		close(o.tickDone)
		o.tickDone = make(chan struct{})
		o.tickMu.Unlock()
		sleep(ctx, 150*time.Millisecond)
	}
}

func (o *Operator) tick(ctx context.Context) {
	pods, err := o.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		o.log("list pods: %v", err)
		return
	}
	byOwner := map[types.UID][]corev1.Pod{}
	for _, p := range pods.Items {
		for _, r := range p.OwnerReferences {
			if r.Controller != nil && *r.Controller {
				byOwner[r.UID] = append(byOwner[r.UID], p)
			}
		}
	}
	for _, gvr := range []schema.GroupVersionResource{AdaptDLJobs, Frameworks} {
		list, err := o.dyn.Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // the CRD may not be installed
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if obj.GetDeletionTimestamp() != nil || obj.GetAnnotations()[OperatorPaused] != "" {
				continue
			}
			if err := o.reconcile(ctx, gvr, obj, byOwner[obj.GetUID()]); err != nil && ctx.Err() == nil {
				o.log("%s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
		}
	}
}

// replica is one pod an object wants.
type replica struct {
	name        string
	role        string // replica type or task role
	index       int
	template    map[string]any
	labels, ann map[string]string
}

func (o *Operator) replicas(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) []replica {
	name := obj.GetName()
	var out []replica
	switch gvr {
	case AdaptDLJobs:
		t, _, _ := unstructured.NestedMap(obj.Object, "spec", "template")
		n, _, _ := unstructured.NestedInt64(obj.Object, "spec", "minReplicas")
		n = max(n, 1)
		for i := 0; i < int(n); i++ {
			out = append(out, replica{name: fmt.Sprintf("%s-0-%d", name, i), index: i, template: t,
				labels: map[string]string{"adaptdl": "true", "adaptdl/job": name},
				ann:    map[string]string{"adaptdl/group": "0", "adaptdl/rank": strconv.Itoa(i), "adaptdl/replicas": strconv.Itoa(int(n))}})
		}
	case Frameworks:
		roles, _, _ := unstructured.NestedSlice(obj.Object, "spec", "taskRoles")
		for _, r := range roles {
			m, _ := r.(map[string]any)
			role, _ := m["name"].(string)
			n, _, _ := unstructured.NestedInt64(m, "taskNumber")
			t, _, _ := unstructured.NestedMap(m, "task", "pod")
			for i := 0; i < int(n); i++ {
				out = append(out, replica{name: fmt.Sprintf("%s-%s-%d", name, role, i), role: role, index: i, template: t,
					labels: map[string]string{"FC_FRAMEWORK_NAME": name, "FC_TASKROLE_NAME": role},
					ann:    map[string]string{"FC_FRAMEWORK_NAME": name, "FC_TASKROLE_NAME": role, "FC_TASK_INDEX": strconv.Itoa(i)}})
			}
		}
	}
	return out
}

func (o *Operator) reconcile(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, pods []corev1.Pod) error {
	want := o.replicas(gvr, obj)
	have := map[string]*corev1.Pod{}
	for i := range pods {
		have[pods[i].Name] = &pods[i]
	}
	ended := o.ended(gvr, obj)
	if !ended {
		for _, r := range want {
			if have[r.name] != nil {
				continue
			}
			p, err := o.createPod(ctx, obj, r)
			if err != nil {
				return err
			}
			if p != nil {
				have[r.name] = p
			}
		}
	}
	status := copyMap(obj.Object["status"])
	switch gvr {
	case AdaptDLJobs:
		adaptdlStatus(want, have, status)
	case Frameworks:
		frameworkStatus(obj, want, have, status)
	}
	if reflect.DeepEqual(status, obj.Object["status"]) {
		return nil
	}
	obj.Object["status"] = status
	_, err := o.dyn.Resource(gvr).Namespace(obj.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	if err == nil {
		o.log("%s %s/%s: status %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), summary(status))
	}
	return err
}

func summary(status map[string]any) any {
	if s, ok := status["state"]; ok {
		return s
	}
	if s, ok := status["phase"]; ok {
		return s
	}
	return status["conditions"]
}

func copyMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return runtime.DeepCopyJSON(m)
}

// ended reports whether the object's status is final (no pod is created
// any more).
func (o *Operator) ended(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) bool {
	switch gvr {
	case AdaptDLJobs:
		ph, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		return ph == "Succeeded" || ph == "Failed"
	case Frameworks:
		st, _, _ := unstructured.NestedString(obj.Object, "status", "state")
		return st == "Completed"
	}
	return false
}

func (o *Operator) createPod(ctx context.Context, obj *unstructured.Unstructured, r replica) (*corev1.Pod, error) {
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.template, &t); err != nil {
		return nil, fmt.Errorf("replica %s: template: %w", r.name, err)
	}
	pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	pod.Name, pod.Namespace, pod.GenerateName = r.name, obj.GetNamespace(), ""
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range r.labels {
		pod.Labels[k] = v
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range r.ann {
		pod.Annotations[k] = v
	}
	yes := true
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}}
	created, err := o.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Another object's (an earlier one of the same name, whose
		// garbage collection is pending): try again later.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	o.log("%s %s/%s: created pod %s", obj.GetKind(), obj.GetNamespace(), obj.GetName(), pod.Name)
	return created, nil
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }

func exitOf(p *corev1.Pod) (int64, bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			return int64(cs.State.Terminated.ExitCode), true
		}
	}
	return 0, false
}

func toInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// adaptdlStatus sets status.phase (Pending, Starting, Running, Succeeded,
// Failed), group, replicas and readyReplicas as the AdaptDL controller
// does for a job it does not rescale.
func adaptdlStatus(want []replica, have map[string]*corev1.Pod, st map[string]any) {
	ph, _ := st["phase"].(string)
	if ph == "Succeeded" || ph == "Failed" {
		return
	}
	ready, succeeded := int64(0), 0
	failed := ""
	for _, r := range want {
		p := have[r.name]
		if p == nil {
			continue
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			ready++
		case corev1.PodSucceeded:
			succeeded++
		case corev1.PodFailed:
			failed = p.Name
		}
	}
	st["group"], st["replicas"], st["readyReplicas"] = int64(0), int64(len(want)), ready
	switch {
	case failed != "":
		st["phase"], st["reason"], st["message"] = "Failed", "PodFailure", failed+" Failed"
		st["completionTimestamp"] = now()
	case succeeded == len(want):
		st["phase"] = "Succeeded"
		st["completionTimestamp"] = now()
	case ready == int64(len(want)):
		st["phase"] = "Running"
	default:
		st["phase"] = "Starting"
	}
}

// frameworkStatus sets status.state (AttemptPreparing, AttemptRunning,
// Completed), the attempt's completionStatus by each task role's
// frameworkAttemptCompletionPolicy, startTime and completionTime as
// FrameworkController does (without retries).
func frameworkStatus(obj *unstructured.Unstructured, want []replica, have map[string]*corev1.Pod, st map[string]any) {
	if st["state"] == "Completed" {
		return
	}
	if _, ok := st["startTime"]; !ok {
		st["startTime"] = now()
	}
	policy := map[string][2]int64{}
	roles, _, _ := unstructured.NestedSlice(obj.Object, "spec", "taskRoles")
	for _, r := range roles {
		m, _ := r.(map[string]any)
		name, _ := m["name"].(string)
		f, _, _ := unstructured.NestedInt64(m, "frameworkAttemptCompletionPolicy", "minFailedTaskCount")
		s, _, _ := unstructured.NestedInt64(m, "frameworkAttemptCompletionPolicy", "minSucceededTaskCount")
		policy[name] = [2]int64{f, s}
	}
	failedN, succeededN := map[string]int64{}, map[string]int64{}
	running, completed := false, 0
	var completion map[string]any
	for _, r := range want {
		p := have[r.name]
		if p == nil {
			continue
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			running = true
		case corev1.PodSucceeded:
			completed++
			succeededN[r.role]++
			if s := policy[r.role][1]; s != -1 && succeededN[r.role] >= s && completion == nil {
				completion = fcCompletion(0, "Succeeded", "Succeeded", fmt.Sprintf("task role %s: %d tasks succeeded", r.role, succeededN[r.role]))
			}
		case corev1.PodFailed:
			completed++
			failedN[r.role]++
			if f := policy[r.role][0]; f != -1 && failedN[r.role] >= f {
				code, _ := exitOf(p)
				completion = fcCompletion(code, "ContainerFailed", "Failed", fmt.Sprintf("pod %s failed with exit code %d", p.Name, code))
			}
		}
	}
	if completion == nil && completed == len(want) && len(want) > 0 {
		completion = fcCompletion(0, "Succeeded", "Succeeded", "all tasks completed")
	}
	attempt, _ := st["attemptStatus"].(map[string]any)
	if attempt == nil {
		attempt = map[string]any{"id": int64(0), "startTime": now()}
	}
	switch {
	case completion != nil:
		st["state"] = "Completed"
		attempt["completionStatus"] = completion
		attempt["completionTime"] = now()
		st["completionTime"] = now()
	case running:
		st["state"] = "AttemptRunning"
	default:
		st["state"] = "AttemptPreparing"
	}
	st["attemptStatus"] = attempt
}

func fcCompletion(code int64, phrase, typ, diag string) map[string]any {
	return map[string]any{"code": code, "phrase": phrase, "type": map[string]any{"name": typ, "attributes": []any{}}, "diagnostics": diag}
}
