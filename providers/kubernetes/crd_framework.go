package kubernetes

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trialform/trialform/providers"
)

// Pod labels (and the task index annotation) of FrameworkController.
const (
	FrameworkNameLabel     = "FC_FRAMEWORK_NAME"
	FrameworkTaskRoleLabel = "FC_TASKROLE_NAME"
	FrameworkTaskIndex     = "FC_TASK_INDEX"
)

// frameworkKind is a Framework of FrameworkController
// (frameworkcontroller.microsoft.com/v1): spec.taskRoles[] {name,
// taskNumber, frameworkAttemptCompletionPolicy, task{retryPolicy, pod}};
// status.state (AttemptPreparing, AttemptRunning, ..., Completed) and
// status.attemptStatus.completionStatus {code, phrase, type{name}}.
type frameworkKind struct{}

func (frameworkKind) gvk() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "frameworkcontroller.microsoft.com", Version: "v1", Kind: "Framework"}
}

func (frameworkKind) plural() string    { return "frameworks" }
func (frameworkKind) install() string   { return "FrameworkController" }
func (frameworkKind) container() string { return containerName }

func (frameworkKind) spec(cfg CRDConfig, req providers.StartRequest, pod func(Role) (map[string]any, error)) (map[string]any, error) {
	noRetry := map[string]any{"fancyRetryPolicy": false, "maxRetryCount": int64(0)}
	var roles []any
	for _, r := range cfg.Roles {
		t, err := pod(r)
		if err != nil {
			return nil, err
		}
		roles = append(roles, map[string]any{
			"name":       r.Name,
			"taskNumber": int64(r.Replicas),
			"frameworkAttemptCompletionPolicy": map[string]any{
				"minFailedTaskCount": int64(r.MinFailedTaskCount), "minSucceededTaskCount": int64(r.MinSucceededTaskCount),
			},
			"task": map[string]any{"retryPolicy": noRetry, "podGracefulDeletionTimeoutSec": int64(600), "pod": t},
		})
	}
	return map[string]any{"executionType": "Start", "retryPolicy": noRetry, "taskRoles": roles}, nil
}

func (frameworkKind) phase(obj *unstructured.Unstructured, main *corev1.Pod) (providers.Phase, string) {
	state, _, _ := unstructured.NestedString(obj.Object, "status", "state")
	cs, _, _ := unstructured.NestedMap(obj.Object, "status", "attemptStatus", "completionStatus")
	switch state {
	case "AttemptCompleted", "Completed":
		if cs == nil {
			return providers.PhaseFailed, "the framework completed without a completion status"
		}
		typ, _, _ := unstructured.NestedString(cs, "type", "name")
		if typ == "Succeeded" {
			return providers.PhaseSucceeded, ""
		}
		code, _, _ := unstructured.NestedInt64(cs, "code")
		phrase, _, _ := unstructured.NestedString(cs, "phrase")
		diag, _, _ := unstructured.NestedString(cs, "diagnostics")
		why := fmt.Sprintf("completion code %d (%s)", code, phrase)
		if diag != "" {
			why += ": " + diag
		}
		return providers.PhaseFailed, failedReason(main, why)
	case "AttemptRunning", "AttemptDeletionPending", "AttemptDeletionRequested", "AttemptDeleting":
		return providers.PhaseRunning, ""
	}
	return providers.PhasePending, ""
}

// FrameworkPodIndex is a Framework pod's task index (label or
// annotation FC_TASK_INDEX), -1 when it has none.
func FrameworkPodIndex(p *corev1.Pod) int {
	s, ok := p.Labels[FrameworkTaskIndex]
	if !ok {
		s, ok = p.Annotations[FrameworkTaskIndex]
	}
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return i
}

func (frameworkKind) template(obj *unstructured.Unstructured) map[string]any {
	roles, _, _ := unstructured.NestedSlice(obj.Object, "spec", "taskRoles")
	if len(roles) == 0 {
		return nil
	}
	first, _ := roles[0].(map[string]any)
	t, _, _ := unstructured.NestedMap(first, "task", "pod")
	return t
}

// main is task 0 of the first task role.
func (frameworkKind) main(obj *unstructured.Unstructured, pods []corev1.Pod) *corev1.Pod {
	roles, _, _ := unstructured.NestedSlice(obj.Object, "spec", "taskRoles")
	if len(roles) == 0 {
		return nil
	}
	first, _ := roles[0].(map[string]any)
	name, _ := first["name"].(string)
	return pickPod(pods, func(p *corev1.Pod) bool {
		return p.Labels[FrameworkNameLabel] == obj.GetName() && p.Labels[FrameworkTaskRoleLabel] == name && FrameworkPodIndex(p) == 0
	})
}
