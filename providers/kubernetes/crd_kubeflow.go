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

// kubeflowKind is a job kind of the Kubeflow training operator
// (kubeflow.org/v1): one replica spec per role (Worker, PS, Master), each
// {replicas, restartPolicy, template}; status.conditions Created, Running,
// Restarting, Succeeded, Failed.
type kubeflowKind struct{ job *kubeflowJob }

// kubeflowJob describes one kind: its operator name in HCL, Kind, plural,
// the spec's key for the replica specs, the container name the operator
// looks for, and the roles it takes.
type kubeflowJob struct {
	operator, kind, plural, specsKey, container string
	roles                                       []string
}

// KubeflowOperators are the kinds the kubeflow platform runs (its
// operator setting). MPIJob (a launcher running mpirun) and MXJob
// (scheduler and server roles) are not offered.
var KubeflowOperators = []string{"tfjob", "pytorchjob", "xgboostjob", "paddlejob"}

var kubeflowJobs = map[string]*kubeflowJob{
	"tfjob":      {"tfjob", "TFJob", "tfjobs", "tfReplicaSpecs", "tensorflow", []string{"worker", "ps"}},
	"pytorchjob": {"pytorchjob", "PyTorchJob", "pytorchjobs", "pytorchReplicaSpecs", "pytorch", []string{"master", "worker"}},
	"xgboostjob": {"xgboostjob", "XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", "xgboost", []string{"master", "worker"}},
	"paddlejob":  {"paddlejob", "PaddleJob", "paddlejobs", "paddleReplicaSpecs", "paddle", []string{"master", "worker"}},
}

func newKubeflowKind(operator string) (kubeflowKind, bool) {
	j, ok := kubeflowJobs[operator]
	return kubeflowKind{j}, ok
}

func (k kubeflowKind) gvk() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: k.job.kind}
}

func (k kubeflowKind) plural() string { return k.job.plural }

func (kubeflowKind) install() string { return "the Kubeflow training operator" }

// container is the name the operator looks for in every replica.
func (k kubeflowKind) container() string { return k.job.container }

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
	key := k.job.specsKey
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

func (k kubeflowKind) template(obj *unstructured.Unstructured) map[string]any {
	specs, _, _ := unstructured.NestedMap(obj.Object, "spec", k.job.specsKey)
	return kubeflowTemplate(specs)
}

// main is the master's (PyTorchJob, XGBoostJob, PaddleJob) or chief's
// pod, else worker 0's.
func (k kubeflowKind) main(obj *unstructured.Unstructured, pods []corev1.Pod) *corev1.Pod {
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
	specs, _, _ := unstructured.NestedMap(obj.Object, "spec", k.job.specsKey)
	for t := range specs {
		if strings.EqualFold(t, "master") || strings.EqualFold(t, "chief") {
			return nil // not created yet
		}
	}
	return of("worker")
}
