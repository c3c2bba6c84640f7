package kubernetes

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trialform/trialform/providers"
)

// Pod label and annotations of the AdaptDL scheduler.
const (
	AdaptDLJobLabel      = "adaptdl/job"
	AdaptDLRankAnnot     = "adaptdl/rank"
	AdaptDLGroupAnnot    = "adaptdl/group"
	AdaptDLReplicasAnnot = "adaptdl/replicas"
)

// adaptdlKind is an AdaptDLJob (adaptdl.petuum.com/v1): spec.template,
// preemptible, minReplicas, maxReplicas; status.phase Pending, Starting,
// Running, Stopping (rescaling), Succeeded, Failed.
type adaptdlKind struct{}

func (adaptdlKind) gvk() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "adaptdl.petuum.com", Version: "v1", Kind: "AdaptDLJob"}
}

func (adaptdlKind) plural() string    { return "adaptdljobs" }
func (adaptdlKind) install() string   { return "the AdaptDL scheduler (helm chart adaptdl-sched)" }
func (adaptdlKind) container() string { return containerName }

func (adaptdlKind) spec(cfg CRDConfig, req providers.StartRequest, pod func(Role) (map[string]any, error)) (map[string]any, error) {
	t, err := pod(Role{})
	if err != nil {
		return nil, err
	}
	spec := map[string]any{"template": t, "preemptible": cfg.Adaptive}
	if !cfg.Adaptive {
		spec["maxReplicas"] = int64(1)
	}
	if cfg.MinReplicas > 0 {
		spec["minReplicas"] = int64(cfg.MinReplicas)
	}
	if cfg.MaxReplicas > 0 {
		spec["maxReplicas"] = int64(cfg.MaxReplicas)
	}
	return spec, nil
}

func (adaptdlKind) phase(obj *unstructured.Unstructured, main *corev1.Pod) (providers.Phase, string) {
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	switch phase {
	case "Succeeded":
		return providers.PhaseSucceeded, ""
	case "Failed":
		r, _, _ := unstructured.NestedString(obj.Object, "status", "reason")
		m, _, _ := unstructured.NestedString(obj.Object, "status", "message")
		return providers.PhaseFailed, failedReason(main, r+": "+m)
	case "Running", "Stopping":
		// Stopping: the scheduler rescales the job (its pods restart).
		return providers.PhaseRunning, ""
	}
	return providers.PhasePending, ""
}

func (adaptdlKind) template(obj *unstructured.Unstructured) map[string]any {
	t, _, _ := unstructured.NestedMap(obj.Object, "spec", "template")
	return t
}

// main is the rank-0 replica of the newest group.
func (adaptdlKind) main(obj *unstructured.Unstructured, pods []corev1.Pod) *corev1.Pod {
	var best *corev1.Pod
	bestGroup := -1
	for i := range pods {
		p := &pods[i]
		if p.Labels[AdaptDLJobLabel] != obj.GetName() || p.Annotations[AdaptDLRankAnnot] != "0" {
			continue
		}
		g, _ := strconv.Atoi(p.Annotations[AdaptDLGroupAnnot])
		if g >= bestGroup {
			best, bestGroup = p, g
		}
	}
	return best
}
