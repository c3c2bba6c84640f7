package kubernetes_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/conformance"
	k8s "github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
)

// crdKinds are the CRD platforms under test: a config and the resource
// its objects are.
var crdKinds = []struct {
	name string
	cfg  k8s.CRDConfig
	gvr  schema.GroupVersionResource
	nni  string
}{
	{"tfjob", k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "tfjob", Roles: []k8s.Role{{Name: "worker", Replicas: 1}}}, k8stest.TFJobs, "kubeflow"},
	{"pytorchjob", k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "pytorchjob", Roles: []k8s.Role{{Name: "master", Replicas: 1}}}, k8stest.PyTorchJobs, "kubeflow"},
	{"adaptdl", k8s.CRDConfig{Kind: k8s.KindAdaptDL}, k8stest.AdaptDLJobs, "adl"},
	{"framework", k8s.CRDConfig{Kind: k8s.KindFrameworkController, Roles: []k8s.Role{{Name: "worker", Replicas: 1, MinFailedTaskCount: 1, MinSucceededTaskCount: -1}}}, k8stest.Frameworks, "frameworkcontroller"},
}

func dyn(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newCRD(t *testing.T, cfg k8s.CRDConfig, ns string) *k8s.CRD {
	t.Helper()
	cfg.Config.Rest, cfg.Config.Namespace = cp.Config, ns
	if cfg.Config.Image == "" {
		cfg.Config.Image = "python:3.11-slim"
	}
	p, err := k8s.NewCRD(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCRDConformance runs the provider suite against the CRD platforms,
// the real training operator (tfjob, pytorchjob) or the test operator
// (adaptdl, framework) turning their objects into pods
// (TRIALFORM_CRD_CONFORMANCE=tfjob,framework picks kinds).
func TestCRDConformance(t *testing.T) {
	need(t)
	t.Parallel()
	kinds := map[string]bool{"tfjob": true, "pytorchjob": true, "adaptdl": true, "framework": true}
	if s := os.Getenv("TRIALFORM_CRD_CONFORMANCE"); s != "" {
		kinds = map[string]bool{}
		for _, k := range strings.Split(s, ",") {
			kinds[k] = true
		}
	}
	type variant struct {
		kind   int
		follow bool
	}
	var variants []variant
	for i, kc := range crdKinds {
		variants = append(variants, variant{i, false})
		// Following (apply -wait, watch, the controller): on the real
		// training operator and on the test operator.
		if kc.name == "tfjob" || kc.name == "framework" {
			variants = append(variants, variant{i, true})
		}
	}
	for _, v := range variants {
		kc := crdKinds[v.kind]
		if !kinds[kc.name] {
			continue
		}
		name := kc.name
		if v.follow {
			name += "-following"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t, "conf-"+name)
			share := t.TempDir()
			conformance.Run(t, func(t *testing.T) providers.Provider {
				cfg := kc.cfg
				cfg.Config.NFS = &k8s.NFS{Server: "127.0.0.1", Path: share, MountPath: share, LocalPath: share}
				p := newCRD(t, cfg, ns)
				if v.follow {
					follow(t, p)
				}
				return p
			}, conformance.Options{
				NNIPlatform: kc.nni,
				CodeDir:     codeDirsIn(share),
				Lose: func(t *testing.T, h providers.Handle) {
					bg := metav1.DeletePropagationBackground
					if err := dyn(t).Resource(kc.gvr).Namespace(h["namespace"]).Delete(context.Background(), h["name"], metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
						t.Fatal(err)
					}
				},
				Timeout:  90 * time.Second,
				Parallel: true,
				Unimplemented: map[string]string{
					conformance.CapKillNewSession:  nodeAgentSessions,
					conformance.CapLocation:        k8sNoLocation,
					conformance.CapTensorBoardSync: k8sNoTensorBoardSync,
				},
			})
		})
	}
}

// trialScript reports an intermediate and a final result; replicas other
// than the trial's own pod report a final result that must not count,
// and end before it (a TFJob's end deletes the replicas still running):
// the trial's pod waits for PEERS files in PEER_DIR (a test-only
// directory every process on this machine sees).
const trialScript = `import nni, os, time
p = nni.get_next_parameter()
assert os.path.exists(os.path.join(os.environ["NNI_SYS_DIR"], "parameter.cfg"))
host = os.environ.get("HOSTNAME", "")
main = host.endswith(os.environ["MAIN_SUFFIX"])
peers = os.environ["PEER_DIR"]
if main:
    deadline = time.time() + 60
    while len(os.listdir(peers)) < int(os.environ["PEERS"]) and time.time() < deadline:
        time.sleep(0.05)
nni.report_intermediate_result(p["x"] / 2)
nni.report_final_result(p["x"] * 2 if main else 999.0)
if not main:
    open(os.path.join(peers, host), "w").close()
`

// TestCRDObjects starts a multi-replica trial on each CRD platform: the
// apiserver accepts the object (the CRD schema, and for the kubeflow kinds
// the real operator's webhook, validate it), the operator
// makes a pod of every replica from its template, every replica gets
// parameter.cfg, and the metrics are those of the trial's own pod.
func TestCRDObjects(t *testing.T) {
	need(t)
	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "train.py"), []byte(trialScript), 0o644); err != nil {
		t.Fatal(err)
	}
	py, _ := filepathLookPython()
	for _, tc := range []struct {
		name     string
		cfg      k8s.CRDConfig
		gvr      schema.GroupVersionResource
		pods     int
		peers    int // replicas other than the trial's that run trialScript
		check    func(t *testing.T, obj *unstructured.Unstructured)
		mainName string
	}{
		{"tfjob", k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "tfjob", Roles: []k8s.Role{
			{Name: "worker", Replicas: 2, CPU: "500m", Memory: "1Gi"},
			{Name: "ps", Replicas: 1, Command: "echo ps up; sleep 1000"}}},
			k8stest.TFJobs, 1, 1, func(t *testing.T, obj *unstructured.Unstructured) {
				w, _, _ := unstructured.NestedMap(obj.Object, "spec", "tfReplicaSpecs", "Worker")
				if w["replicas"] != int64(2) || w["restartPolicy"] != "Never" {
					t.Errorf("Worker spec %v", w)
				}
				cs, _, _ := unstructured.NestedSlice(w, "template", "spec", "containers")
				if len(cs) != 1 || cs[0].(map[string]any)["name"] != "tensorflow" {
					t.Errorf("Worker containers %v", cs)
				}
				if _, ok, _ := unstructured.NestedMap(obj.Object, "spec", "tfReplicaSpecs", "PS"); !ok {
					t.Error("no PS replica spec")
				}
				// cleanPodPolicy Running, no backoffLimit or
				// activeDeadlineSeconds (past which the operator deletes
				// the failed pods too), not suspended (the CRD's default).
				rp, _, _ := unstructured.NestedMap(obj.Object, "spec", "runPolicy")
				_, backoff := rp["backoffLimit"]
				_, deadline := rp["activeDeadlineSeconds"]
				if rp["cleanPodPolicy"] != "Running" || backoff || deadline || rp["suspend"] == true {
					t.Errorf("runPolicy %v", rp)
				}
			}, "-worker-0"},
		{"pytorchjob", k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "pytorchjob", Roles: []k8s.Role{
			{Name: "master", Replicas: 1}, {Name: "worker", Replicas: 2, GPU: 1}}},
			k8stest.PyTorchJobs, 1, 2, func(t *testing.T, obj *unstructured.Unstructured) {
				w, _, _ := unstructured.NestedMap(obj.Object, "spec", "pytorchReplicaSpecs", "Worker")
				cs, _, _ := unstructured.NestedSlice(w, "template", "spec", "containers")
				gpu, _, _ := unstructured.NestedString(cs[0].(map[string]any), "resources", "limits", "nvidia.com/gpu")
				if gpu != "1" || cs[0].(map[string]any)["name"] != "pytorch" {
					t.Errorf("Worker container %v", cs[0])
				}
			}, "-master-0"},
		{"adaptdl", k8s.CRDConfig{Kind: k8s.KindAdaptDL}, k8stest.AdaptDLJobs, 1, 0, func(t *testing.T, obj *unstructured.Unstructured) {
			if v, _, _ := unstructured.NestedBool(obj.Object, "spec", "preemptible"); v {
				t.Error("a non-adaptive job is preemptible")
			}
		}, "-0-0"},
		{"framework", k8s.CRDConfig{Kind: k8s.KindFrameworkController, Roles: []k8s.Role{
			{Name: "worker", Replicas: 2, MinFailedTaskCount: 1, MinSucceededTaskCount: -1},
			{Name: "ps", Replicas: 1, MinFailedTaskCount: 1, MinSucceededTaskCount: -1, Command: "echo ps up"}}},
			k8stest.Frameworks, 3, 1, func(t *testing.T, obj *unstructured.Unstructured) {
				roles, _, _ := unstructured.NestedSlice(obj.Object, "spec", "taskRoles")
				if len(roles) != 2 {
					t.Fatalf("taskRoles %v", roles)
				}
				r := roles[0].(map[string]any)
				if r["name"] != "worker" || r["taskNumber"] != int64(2) {
					t.Errorf("task role %v", r)
				}
				if p, _, _ := unstructured.NestedInt64(r, "frameworkAttemptCompletionPolicy", "minSucceededTaskCount"); p != -1 {
					t.Errorf("minSucceededTaskCount %d", p)
				}
			}, "-worker-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t, "obj-"+tc.name)
			p := newCRD(t, tc.cfg, ns)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := p.Validate(ctx); err != nil {
				t.Fatal(err)
			}
			req := providers.StartRequest{Experiment: "objs", ExperimentID: "eid", TrialID: "t0", ParameterID: 5,
				Params: map[string]any{"x": 1.5}, Args: []string{py, "train.py"}, CodeDir: code, Lineage: "L",
				Env: map[string]string{"MAIN_SUFFIX": tc.mainName, "PEER_DIR": t.TempDir(), "PEERS": strconv.Itoa(tc.peers)}}
			h, err := p.Start(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := dyn(t).Resource(tc.gvr).Namespace(ns).Get(ctx, h["name"], metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if obj.GetLabels()[k8s.LabelTrial] != "t0" || obj.GetAnnotations()[k8s.AnnLineage] != "L" {
				t.Errorf("labels %v annotations %v", obj.GetLabels(), obj.GetAnnotations())
			}
			tc.check(t, obj)
			// Drift: the live object renders as Spec renders the request.
			o, err := p.Read(ctx, providers.ReadRequest{Experiment: "objs", TrialID: "t0"})
			if err != nil {
				t.Fatal(err)
			}
			if want, err := p.Spec(req); err != nil || o.Spec != want || !strings.Contains(want, "image: python:3.11-slim") {
				t.Errorf("live spec:\n%s\nwant (%v):\n%s", o.Spec, err, want)
			}
			changed := tc.cfg
			changed.Config.Image = "python:3.12"
			if want, _ := newCRD(t, changed, ns).Spec(req); want == o.Spec {
				t.Error("another image renders the same spec")
			}
			begin := time.Now()
			metrics := untilSucceeded(ctx, t, p, ns, "objs", "t0")
			t.Logf("ended after %s", time.Since(begin))
			if len(metrics) != 2 || metrics[0].Value != "0.75" || metrics[1].Type != "FINAL" || strings.TrimSuffix(metrics[1].Value, ".0") != "3" || metrics[1].ParameterID != 5 {
				t.Errorf("metrics %+v", metrics)
			}
			pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelTrial + "=t0"})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			n := 0
			for _, p := range pods.Items {
				names = append(names, p.Name+":"+string(p.Status.Phase))
				// A Kubeflow job succeeds when its main replica does (the
				// tfjob's worker-0, the pytorchjob's master); cleanPodPolicy
				// Running then deletes the pods still running: the tfjob's
				// ps, and any worker slower than the main one (clean CI
				// runs saw tfjob's worker-1 and pytorchjob's worker-0
				// gone). So only the main pod must stay.
				if tc.cfg.Kind != k8s.KindKubeflow || strings.HasSuffix(p.Name, tc.mainName) {
					n++
				}
			}
			t.Logf("pods at the end: %v", names)
			if n != tc.pods {
				t.Errorf("pods %v, want %d", names, tc.pods)
			}
			for _, pod := range pods.Items {
				if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != obj.GetUID() {
					t.Errorf("pod %s owners %v", pod.Name, pod.OwnerReferences)
				}
			}
			if tc.name == "tfjob" {
				// cleanPodPolicy Running: the ps still running at the end goes.
				deadline := time.Now().Add(20 * time.Second)
				for {
					ps, _ := cp.Client.CoreV1().Pods(ns).Get(ctx, h["name"]+"-ps-0", metav1.GetOptions{})
					if ps == nil || ps.Name == "" {
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("the ps pod is still there: %s", ps.Status.Phase)
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			t.Logf("checked after %s", time.Since(begin))
			if err := p.PurgeExperiment(ctx, "objs", "L"); err != nil {
				t.Fatal(err)
			}
			noneLeft(t, ns, tc.gvr)
		})
	}
}

// smallCodeDir is a code dir of one file.
func smallCodeDir(t *testing.T) string {
	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "README"), []byte("trial code"), 0o644); err != nil {
		t.Fatal(err)
	}
	return code
}

// noneLeft fails when an object with trialform's labels is left in ns.
func noneLeft(t *testing.T, ns string, gvr schema.GroupVersionResource) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: k8s.LabelManagedBy + "=trialform"}
	objs, _ := dyn(t).Resource(gvr).Namespace(ns).List(ctx, sel)
	cms, _ := cp.Client.CoreV1().ConfigMaps(ns).List(ctx, sel)
	pods, _ := cp.Client.CoreV1().Pods(ns).List(ctx, sel)
	pvcs, _ := cp.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
	if len(objs.Items)+len(cms.Items)+len(pods.Items)+len(pvcs.Items) > 0 {
		t.Errorf("left after purge: %d objects, %d configmaps, %d pods, %d claims", len(objs.Items), len(cms.Items), len(pods.Items), len(pvcs.Items))
	}
}

// TestCRDInvalidObjects: the apiserver refuses objects the CRD schemas do
// not allow, and (kubeflow.org) those the training operator's validating
// webhook denies.
func TestCRDInvalidObjects(t *testing.T) {
	need(t)
	ns := namespace(t, "invalid")
	ctx := context.Background()
	tmpl := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "tensorflow", "image": "x"}}}}
	for _, tc := range []struct {
		name string
		gvr  schema.GroupVersionResource
		kind string
		spec map[string]any
		want string
	}{
		{"replicas-string", k8stest.TFJobs, "TFJob", map[string]any{"tfReplicaSpecs": map[string]any{"Worker": map[string]any{"replicas": "two", "template": tmpl}}}, "replicas"},
		{"container-name", k8stest.TFJobs, "TFJob", map[string]any{"tfReplicaSpecs": map[string]any{"Worker": map[string]any{"template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "trial", "image": "x"}}}}}}}, `admission webhook "validator.tfjob.training-operator.kubeflow.org" denied the request`},
		{"no-replica-specs", k8stest.PyTorchJobs, "PyTorchJob", map[string]any{"runPolicy": map[string]any{}}, "pytorchReplicaSpecs"},
		{"adaptdl-max", k8stest.AdaptDLJobs, "AdaptDLJob", map[string]any{"template": tmpl, "maxReplicas": int64(0)}, "maxReplicas"},
		{"fc-policy", k8stest.Frameworks, "Framework", map[string]any{"taskRoles": []any{map[string]any{"name": "worker", "taskNumber": int64(1),
			"frameworkAttemptCompletionPolicy": map[string]any{"minFailedTaskCount": int64(-5), "minSucceededTaskCount": int64(-1)},
			"task":                             map[string]any{"pod": tmpl}}}}, "minFailedTaskCount"},
		{"fc-execution", k8stest.Frameworks, "Framework", map[string]any{"executionType": "Go", "taskRoles": []any{map[string]any{"name": "worker", "taskNumber": int64(1), "task": map[string]any{"pod": tmpl}}}}, "executionType"},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"spec": tc.spec}}
		obj.SetAPIVersion(tc.gvr.Group + "/" + tc.gvr.Version)
		obj.SetKind(tc.kind)
		obj.SetName("bad-" + tc.name)
		_, err := dyn(t).Resource(tc.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		if !(apierrors.IsInvalid(err) || apierrors.IsForbidden(err)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want Invalid or Forbidden naming %s", tc.name, err, tc.want)
		}
	}
}

// TestCRDStatusDriven drives the status of objects directly, as the
// operators write it, and checks Read's phase and reason (the kinds of the
// test operator, which can leave an object alone; the kubeflow kinds'
// conditions come from the real operator: TestKubeflowConditions, and
// TestKubeflowPhase for the mapping).
func TestCRDStatusDriven(t *testing.T) {
	need(t)
	ns := namespace(t, "status")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := smallCodeDir(t)
	for _, tc := range []struct {
		kind   int // index in crdKinds
		status map[string]any
		phase  providers.Phase
		reason string
	}{
		{2, map[string]any{"phase": "Starting"}, providers.PhasePending, ""},
		{2, map[string]any{"phase": "Stopping"}, providers.PhaseRunning, ""},
		{2, map[string]any{"phase": "Failed", "reason": "PodFailure", "message": "x-0-0 Failed"}, providers.PhaseFailed, "PodFailure: x-0-0 Failed"},
		{3, map[string]any{"state": "AttemptRunning"}, providers.PhaseRunning, ""},
		{3, map[string]any{"state": "Completed", "attemptStatus": map[string]any{"completionStatus": map[string]any{"code": int64(-220), "phrase": "FrameworkAttemptCompletionPolicyFailed",
			"type": map[string]any{"name": "Failed"}, "diagnostics": "task role worker failed"}}}, providers.PhaseFailed, "completion code -220 (FrameworkAttemptCompletionPolicyFailed)"},
		{3, map[string]any{"state": "Completed", "attemptStatus": map[string]any{"completionStatus": map[string]any{"code": int64(0), "phrase": "Succeeded",
			"type": map[string]any{"name": "Succeeded"}}}}, providers.PhaseSucceeded, ""},
	} {
		kc := crdKinds[tc.kind]
		p := newCRD(t, kc.cfg, ns)
		exp := "status-" + kc.name
		id := "t" + strings.ReplaceAll(string(tc.phase)+tc.reason, " ", "")
		id = k8s.LabelValue(id)
		req := providers.StartRequest{Experiment: exp, TrialID: id, Shell: "true", CodeDir: code, Lineage: "L"}
		h, err := p.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := dyn(t).Resource(kc.gvr).Namespace(ns)
		// Pause the operator for this object before it makes pods.
		patch := []byte(`{"metadata":{"annotations":{"` + k8stest.OperatorPaused + `":"1"}}}`)
		if _, err := r.Patch(ctx, h["name"], "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := operator.Sync(ctx); err != nil { // a tick in flight ends
			t.Fatal(err)
		}
		bg := metav1.DeletePropagationBackground
		sel := metav1.ListOptions{LabelSelector: k8s.LabelExperiment + "=" + exp + "," + k8s.LabelTrial + "=" + id}
		_ = cp.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, sel)
		for { // the status alone decides
			pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, sel)
			if err != nil || len(pods.Items) == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		obj, err := r.Get(ctx, h["name"], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		obj.Object["status"] = tc.status
		if _, err := r.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: id})
		if err != nil {
			t.Fatal(err)
		}
		if o.Phase != tc.phase || !strings.Contains(o.Reason, tc.reason) {
			t.Errorf("%s status %v: phase %s (%q), want %s (%q)", kc.name, tc.status, o.Phase, o.Reason, tc.phase, tc.reason)
		}
		if err := p.PurgeExperiment(ctx, exp, "L"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCRDLostResumeOrphansPurge: an object deleted while its trial runs is
// lost and resumes; List finds trials the state does not know; purge
// leaves nothing with our labels.
func TestCRDLostResumeOrphansPurge(t *testing.T) {
	need(t)
	ns := namespace(t, "lost")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	code := smallCodeDir(t)
	kc := crdKinds[0]
	p := newCRD(t, kc.cfg, ns)
	exp := "lost"
	start := func(id string, resume bool) providers.Handle {
		h, err := p.Start(ctx, providers.StartRequest{Experiment: exp, TrialID: id, Shell: "sleep 1000", CodeDir: code, Lineage: "L", Resume: resume})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	until := func(p providers.Provider, id string, ph providers.Phase) providers.Observation {
		for {
			o, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: id})
			if err != nil {
				t.Fatalf("%s: waiting for %s: %v", id, ph, err)
			}
			if o.Phase == ph {
				t.Logf("%s: %s", id, ph)
				return o
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: waited for %s, last %s (%s)", id, ph, o.Phase, o.Reason)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	h := start("t0", false)
	until(p, "t0", providers.PhaseRunning)
	bg := metav1.DeletePropagationBackground
	if err := dyn(t).Resource(kc.gvr).Namespace(ns).Delete(ctx, h["name"], metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	// A fresh provider (a later run of trialform) knows it from the handle.
	p2 := newCRD(t, kc.cfg, ns)
	o, err := p2.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: "t0", Handle: h})
	if err != nil {
		t.Fatal(err)
	}
	for o.Phase != providers.PhaseLost {
		time.Sleep(100 * time.Millisecond)
		if o, err = p2.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: "t0", Handle: h}); err != nil || ctx.Err() != nil {
			t.Fatalf("read after the delete: %v %s", err, o.Phase)
		}
	}
	if !strings.Contains(o.Reason, "TFJob was deleted") && !strings.Contains(o.Reason, "being deleted") {
		t.Errorf("lost reason %q", o.Reason)
	}
	h2 := start("t0", true)
	if h2["uid"] == h["uid"] {
		t.Error("resume adopted the deleted object")
	}
	until(p, "t0", providers.PhaseRunning)
	// An orphan: started by another state (same experiment).
	start("orphan", false)
	obs, err := newCRD(t, kc.cfg, ns).List(ctx, exp)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 2 || obs[0].TrialID != "orphan" || obs[1].TrialID != "t0" {
		t.Errorf("List = %+v", obs)
	}
	// Stop keeps a killed trial readable, then purge removes everything.
	if err := p.Stop(ctx, providers.StopRequest{Experiment: exp, TrialID: "t0", Grace: time.Second, Reason: "test stop"}); err != nil {
		t.Fatal(err)
	}
	if o := until(newCRD(t, kc.cfg, ns), "t0", providers.PhaseKilled); o.Reason != "test stop" {
		t.Errorf("killed reason %q", o.Reason)
	}
	if err := p.PurgeExperiment(ctx, exp, "L"); err != nil {
		t.Fatal(err)
	}
	noneLeft(t, ns, kc.gvr)
}

// TestCRDValidate says which operator to install when the CRD is missing.
func TestCRDValidate(t *testing.T) {
	need(t)
	ns := namespace(t, "validate")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := newCRD(t, crdKinds[2].cfg, ns)
	if err := p.Validate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k8stest.UninstallCRD(ctx, cp, "adaptdljobs.adaptdl.petuum.com"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := k8stest.InstallCRDs(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}()
	var err error
	for i := 0; i < 50; i++ { // discovery follows the deletion
		if err = p.Validate(ctx); err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := "the cluster has no AdaptDLJob (adaptdl.petuum.com/v1): install the AdaptDL scheduler"
	if err == nil || !strings.Contains(err.Error(), want) || !providers.IsPermanent(err) {
		t.Errorf("Validate = %v, want %q", err, want)
	}
}
