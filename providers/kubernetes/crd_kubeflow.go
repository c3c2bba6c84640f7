package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trialform/trialform/providers"
)

// Pod labels of the Kubeflow training operator.
const (
	KubeflowJobNameLabel      = "training.kubeflow.org/job-name"
	KubeflowReplicaTypeLabel  = "training.kubeflow.org/replica-type"
	KubeflowReplicaIndexLabel = "training.kubeflow.org/replica-index"
)

// kubeflowKind is a TFJob (tf) or a PyTorchJob of the Kubeflow training
// operator (kubeflow.org/v1): one replica spec per role (Worker, PS,
// Master), each {replicas, restartPolicy, template}; status.conditions
// Created, Running, Restarting, Succeeded, Failed.
type kubeflowKind struct{ tf bool }

func (k kubeflowKind) gvk() schema.GroupVersionKind {
	if k.tf {
		return schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "TFJob"}
	}
	return schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}
}

func (k kubeflowKind) plural() string {
	if k.tf {
		return "tfjobs"
	}
	return "pytorchjobs"
}

func (kubeflowKind) install() string { return "the Kubeflow training operator" }

// container is the name the operator looks for in every replica.
func (k kubeflowKind) container() string {
	if k.tf {
		return "tensorflow"
	}
	return "pytorch"
}

// KubeflowReplicaType is the replica type of a role ("worker" -> "Worker",
// "ps" -> "PS", "master" -> "Master").
func KubeflowReplicaType(role string) string {
	if role == "ps" {
		return "PS"
	}
	return strings.ToUpper(role[:1]) + role[1:]
}

func (k kubeflowKind) spec(cfg CRDConfig, req providers.StartRequest, pod func(Role) (map[string]any, error)) (map[string]any, error) {
	specs := map[string]any{}
	for _, r := range cfg.Roles {
		t, err := pod(r)
		if err != nil {
			return nil, err
		}
		specs[KubeflowReplicaType(r.Name)] = map[string]any{"replicas": int64(r.Replicas), "restartPolicy": "Never", "template": t}
	}
	key := "pytorchReplicaSpecs"
	if k.tf {
		key = "tfReplicaSpecs"
	}
	// Once the job ends, delete only the pods still running (ps): the
	// completed ones keep their logs, which hold the metrics. Never
	// restart a failed trial (trialform decides about resumes): that is
	// restartPolicy Never, with which the operator fails the job when a
	// replica fails. No backoffLimit: the operator deletes every pod of a
	// job past its backoff limit, the failed one (its exit code, its log)
	// included.
	return map[string]any{key: specs, "runPolicy": map[string]any{"cleanPodPolicy": "Running"}}, nil
}

func (kubeflowKind) phase(obj *unstructured.Unstructured, main *corev1.Pod) (providers.Phase, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	is := map[string]string{} // type -> reason/message of the true ones
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m == nil || m["status"] != "True" {
			continue
		}
		t, _ := m["type"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		is[t] = strings.TrimSpace(r + ": " + msg)
	}
	if _, ok := is["Succeeded"]; ok {
		return providers.PhaseSucceeded, ""
	}
	if why, ok := is["Failed"]; ok {
		return providers.PhaseFailed, failedReason(main, why)
	}
	if _, ok := is["Running"]; ok {
		return providers.PhaseRunning, ""
	}
	if _, ok := is["Restarting"]; ok {
		return providers.PhaseRunning, ""
	}
	return providers.PhasePending, ""
}

func (kubeflowKind) template(obj *unstructured.Unstructured) map[string]any {
	specs, _, _ := unstructured.NestedMap(obj.Object, "spec", "pytorchReplicaSpecs")
	if specs == nil {
		specs, _, _ = unstructured.NestedMap(obj.Object, "spec", "tfReplicaSpecs")
	}
	return kubeflowTemplate(specs)
}

// main is the master's (PyTorchJob) or chief's pod, else worker 0's.
func (kubeflowKind) main(obj *unstructured.Unstructured, pods []corev1.Pod) *corev1.Pod {
	of := func(types ...string) *corev1.Pod {
		return pickPod(pods, func(p *corev1.Pod) bool {
			if p.Labels[KubeflowJobNameLabel] != obj.GetName() || p.Labels[KubeflowReplicaIndexLabel] != "0" {
				return false
			}
			for _, t := range types {
				if strings.EqualFold(p.Labels[KubeflowReplicaTypeLabel], t) {
					return true
				}
			}
			return false
		})
	}
	if p := of("master", "chief"); p != nil {
		return p
	}
	specs, _, _ := unstructured.NestedMap(obj.Object, "spec", "pytorchReplicaSpecs")
	if specs == nil {
		specs, _, _ = unstructured.NestedMap(obj.Object, "spec", "tfReplicaSpecs")
	}
	for t := range specs {
		if strings.EqualFold(t, "master") || strings.EqualFold(t, "chief") {
			return nil // not created yet
		}
	}
	return of("worker")
}
