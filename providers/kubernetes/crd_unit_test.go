package kubernetes

import (
	"strings"

	"testing"

	"github.com/hashicorp/hcl/v2"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
)

func TestCRDConfigFrom(t *testing.T) {
	c, err := CRDConfigFrom(&KubeflowSettings{Settings: Settings{Namespace: "ml", Image: "tf:2"}, Operator: "tfjob",
		Worker: &ReplicaSettings{Replicas: 2, RoleResources: RoleResources{CPU: 2.0, Memory: "8Gi", GPU: 1}},
		PS:     &ReplicaSettings{Replicas: 1, RoleResources: RoleResources{Command: "python ps.py", Image: "tf:cpu"}},
	}, "/")
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != KindKubeflow || c.Namespace != "ml" || c.Image != "tf:2" || len(c.Roles) != 2 || c.Roles[0].Name != "worker" || c.Roles[0].Replicas != 2 ||
		c.Roles[0].CPU != "2" || c.Roles[0].GPU != 1 || c.Roles[1].Command != "python ps.py" || c.Roles[1].Image != "tf:cpu" {
		t.Errorf("config %+v", c)
	}
	one, two := 1, 2
	fc, err := CRDConfigFrom(&FrameworkControllerSettings{TaskRoles: []TaskRoleSettings{{Name: "worker", TaskNumber: 2,
		Policy: &CompletionPolicy{MinFailedTaskCount: &one, MinSucceededTaskCount: &two}}, {Name: "ps"}}}, "/")
	if err != nil {
		t.Fatal(err)
	}
	if r := fc.Roles[0]; r.Name != "worker" || r.Replicas != 2 || r.MinFailedTaskCount != 1 || r.MinSucceededTaskCount != 2 {
		t.Errorf("task role %+v", r)
	}
	if r := fc.Roles[1]; r.Replicas != 1 || r.MinFailedTaskCount != 1 || r.MinSucceededTaskCount != -1 {
		t.Errorf("default task role %+v", r)
	}
	adl, err := CRDConfigFrom(&AdaptDLSettings{Adaptive: true, MaxReplicas: 4, Settings: Settings{Resources: &ResourceSettings{GPU: 1}}}, "/")
	if err != nil || adl.Kind != KindAdaptDL || !adl.Adaptive || adl.MaxReplicas != 4 || adl.GPU != 1 {
		t.Errorf("adaptdl %+v %v", adl, err)
	}
	if _, err := CRDConfigFrom(&Settings{}, "/"); err == nil || !providers.IsPermanent(err) {
		t.Errorf("plain kubernetes settings as a CRD kind: %v", err)
	}
	// The rules HCL types do not express are the kinds' Check methods.
	for _, tc := range []struct {
		cfg  decl.Checker
		want string
	}{
		{&KubeflowSettings{Operator: "mxjob", Worker: &ReplicaSettings{}}, `operator = "mxjob"`},
		{&KubeflowSettings{Operator: "pytorchjob", Worker: &ReplicaSettings{}, PS: &ReplicaSettings{}}, `A ps block is not for operator "pytorchjob": a PyTorchJob has master and worker.`},
		{&KubeflowSettings{Operator: "tfjob", Worker: &ReplicaSettings{}, Master: &ReplicaSettings{}}, `A master block is not for operator "tfjob": a TFJob has worker and ps.`},
		{&KubeflowSettings{Operator: "xgboostjob", Worker: &ReplicaSettings{}}, "An XGBoostJob needs a master block"},
		{&KubeflowSettings{Operator: "paddlejob", Worker: &ReplicaSettings{}, PS: &ReplicaSettings{}}, `a PaddleJob has master and worker`},
		{&KubeflowSettings{Operator: "pytorchjb", Worker: &ReplicaSettings{}}, `Did you mean "pytorchjob"?`},
		{&KubeflowSettings{Operator: "tfjob"}, "needs a worker block"},
		{&KubeflowSettings{Operator: "pytorchjob", Master: &ReplicaSettings{Replicas: 2}}, "master.replicas must be 1"},
		{&KubeflowSettings{Operator: "tfjob", Worker: &ReplicaSettings{RoleResources: RoleResources{Memory: "lots"}}}, `memory = "lots"`},
		{&AdaptDLSettings{MinReplicas: 2}, "need adaptive = true"},
		{&AdaptDLSettings{Adaptive: true, MinReplicas: 3, MaxReplicas: 2}, "min_replicas (3) is more than max_replicas (2)"},
		{&FrameworkControllerSettings{}, "needs a task_role block"},
		{&FrameworkControllerSettings{TaskRoles: []TaskRoleSettings{{Name: "w"}, {Name: "w"}}}, `task_role "w" is declared twice`},
	} {
		w := decl.NewWhere("k", hcl.Range{Filename: "main.hcl"})
		w.Set("operator", hcl.Range{Filename: "main.hcl"})
		var got []string
		for _, d := range tc.cfg.Check(w) {
			got = append(got, d.Detail)
		}
		if !strings.Contains(strings.Join(got, "\n"), tc.want) {
			t.Errorf("%+v: Check = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

func crObj(kind, name string, spec, status map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	if status != nil {
		o.Object["status"] = status
	}
	o.SetKind(kind)
	o.SetName(name)
	return o
}

func pod(name string, lbl, ann map[string]string, phase corev1.PodPhase, exit *int32) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl, Annotations: ann},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow"}}},
		Status: corev1.PodStatus{Phase: phase}}
	if exit != nil {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "tensorflow", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: *exit}}}}
	}
	return p
}

// TestCRDPhases maps operator statuses (and the trial pod) to phases, and
// picks the trial pod by the operators' labels.
func TestCRDPhases(t *testing.T) {
	three := int32(3)
	kf := func(rt string, i string) map[string]string {
		return map[string]string{KubeflowJobNameLabel: "j", KubeflowReplicaTypeLabel: rt, KubeflowReplicaIndexLabel: i}
	}
	tf := crObj("TFJob", "j", map[string]any{"tfReplicaSpecs": map[string]any{"Worker": map[string]any{}, "PS": map[string]any{}}},
		map[string]any{"conditions": []any{map[string]any{"type": "Created", "status": "True"},
			map[string]any{"type": "Failed", "status": "True", "reason": "TFJobFailed", "message": "worker failed"}}})
	pods := []corev1.Pod{pod("j-ps-0", kf("ps", "0"), nil, corev1.PodRunning, nil), pod("j-worker-1", kf("worker", "1"), nil, corev1.PodSucceeded, nil),
		pod("j-worker-0", kf("Worker", "0"), nil, corev1.PodFailed, &three)}
	k := kubeflowKind{kubeflowJobs["tfjob"]}
	main := k.main(tf, pods)
	if main == nil || main.Name != "j-worker-0" {
		t.Fatalf("tfjob main %v", main)
	}
	if ph, r := k.phase(tf, main); ph != providers.PhaseFailed || r != "exit status 3" {
		t.Errorf("tfjob failed: %s %q", ph, r)
	}
	if ph, r := k.phase(tf, nil); ph != providers.PhaseFailed || !strings.Contains(r, "worker failed") {
		t.Errorf("tfjob failed without pod: %s %q", ph, r)
	}
	pt := crObj("PyTorchJob", "j", map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": map[string]any{}, "Worker": map[string]any{}}}, nil)
	if m := (kubeflowKind{kubeflowJobs["pytorchjob"]}).main(pt, pods); m != nil {
		t.Errorf("pytorchjob main before its master exists: %s", m.Name)
	}
	pods = append(pods, pod("j-master-0", kf("master", "0"), nil, corev1.PodRunning, nil))
	if m := (kubeflowKind{kubeflowJobs["pytorchjob"]}).main(pt, pods); m == nil || m.Name != "j-master-0" {
		t.Errorf("pytorchjob main %v", m)
	}
	if ph, _ := (kubeflowKind{kubeflowJobs["pytorchjob"]}).phase(pt, nil); ph != providers.PhasePending {
		t.Errorf("pytorchjob without status: %s", ph)
	}

	fw := crObj("Framework", "f", map[string]any{"taskRoles": []any{map[string]any{"name": "worker"}, map[string]any{"name": "ps"}}},
		map[string]any{"state": "Completed", "attemptStatus": map[string]any{"completionStatus": map[string]any{
			"code": int64(3), "phrase": "ContainerFailed", "type": map[string]any{"name": "Failed"}}}})
	fpods := []corev1.Pod{
		pod("f-ps-0", map[string]string{FrameworkNameLabel: "f", FrameworkTaskRoleLabel: "ps"}, map[string]string{FrameworkTaskIndex: "0"}, corev1.PodSucceeded, nil),
		pod("f-worker-1", map[string]string{FrameworkNameLabel: "f", FrameworkTaskRoleLabel: "worker"}, map[string]string{FrameworkTaskIndex: "1"}, corev1.PodSucceeded, nil),
		pod("f-worker-0", map[string]string{FrameworkNameLabel: "f", FrameworkTaskRoleLabel: "worker", FrameworkTaskIndex: "0"}, nil, corev1.PodRunning, nil),
	}
	if m := (frameworkKind{}).main(fw, fpods); m == nil || m.Name != "f-worker-0" {
		t.Errorf("framework main %v", m)
	}
	if ph, r := (frameworkKind{}).phase(fw, nil); ph != providers.PhaseFailed || r != "completion code 3 (ContainerFailed)" {
		t.Errorf("framework failed: %s %q", ph, r)
	}
	fw.Object["status"] = map[string]any{"state": "AttemptPreparing"}
	if ph, _ := (frameworkKind{}).phase(fw, nil); ph != providers.PhasePending {
		t.Errorf("framework preparing: %s", ph)
	}
	fw.Object["status"] = map[string]any{"state": "Completed"}
	if ph, _ := (frameworkKind{}).phase(fw, nil); ph != providers.PhaseFailed {
		t.Errorf("framework completed without status: %s", ph)
	}

	adl := crObj("AdaptDLJob", "a", map[string]any{}, map[string]any{"phase": "Running"})
	apods := []corev1.Pod{
		pod("a-0-0", map[string]string{AdaptDLJobLabel: "a"}, map[string]string{AdaptDLRankAnnot: "0", AdaptDLGroupAnnot: "0"}, corev1.PodFailed, nil),
		pod("a-1-1", map[string]string{AdaptDLJobLabel: "a"}, map[string]string{AdaptDLRankAnnot: "1", AdaptDLGroupAnnot: "1"}, corev1.PodRunning, nil),
		pod("a-1-0", map[string]string{AdaptDLJobLabel: "a"}, map[string]string{AdaptDLRankAnnot: "0", AdaptDLGroupAnnot: "1"}, corev1.PodRunning, nil),
	}
	if m := (adaptdlKind{}).main(adl, apods); m == nil || m.Name != "a-1-0" {
		t.Errorf("adaptdl main %v (want rank 0 of the newest group)", m)
	}
	for ph, want := range map[string]providers.Phase{"Pending": providers.PhasePending, "Starting": providers.PhasePending, "Running": providers.PhaseRunning,
		"Stopping": providers.PhaseRunning, "Succeeded": providers.PhaseSucceeded, "Failed": providers.PhaseFailed} {
		adl.Object["status"] = map[string]any{"phase": ph}
		if got, _ := (adaptdlKind{}).phase(adl, nil); got != want {
			t.Errorf("adaptdl %s: %s, want %s", ph, got, want)
		}
	}
}

// TestKubeflowPhase maps the training operator's conditions to phases (the
// conditions as v1.8 writes them; TestKubeflowConditions has the operator
// write them).
func TestKubeflowPhase(t *testing.T) {
	cond := func(typ, status, reason, msg string) any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
	}
	for _, tc := range []struct {
		conds  []any
		phase  providers.Phase
		reason string
	}{
		{nil, providers.PhasePending, ""},
		{[]any{cond("Created", "True", "TFJobCreated", "")}, providers.PhasePending, ""},
		{[]any{cond("Created", "True", "", ""), cond("Running", "True", "TFJobRunning", "")}, providers.PhaseRunning, ""},
		{[]any{cond("Created", "True", "", ""), cond("Restarting", "True", "TFJobRestarting", "")}, providers.PhaseRunning, ""},
		{[]any{cond("Created", "True", "", ""), cond("Running", "False", "", ""), cond("Failed", "True", "TFJobFailed", "TFJob x has failed because 1 Worker replica(s) failed.")},
			providers.PhaseFailed, "1 Worker replica(s) failed"},
		{[]any{cond("Running", "False", "", ""), cond("Succeeded", "True", "PyTorchJobSucceeded", "")}, providers.PhaseSucceeded, ""},
		{[]any{cond("Running", "False", "", ""), cond("Suspended", "True", "TFJobSuspended", "")}, providers.PhasePending, ""},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": tc.conds}}}
		ph, reason := kubeflowKind{kubeflowJobs["tfjob"]}.phase(obj, nil)
		if ph != tc.phase || !strings.Contains(reason, tc.reason) {
			t.Errorf("%v: %s %q, want %s %q", tc.conds, ph, reason, tc.phase, tc.reason)
		}
	}
}
