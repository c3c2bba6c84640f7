package kubernetes_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
)

// envScript writes, in every replica, the environment the training
// operator gives a distributed job into OUT_DIR/<pod name>.json, then
// reports a final result (the trial's pod) after its peers wrote theirs.
const envScript = `import json, os, time, nni
p = nni.get_next_parameter()
out = os.environ["OUT_DIR"]
keys = ["TF_CONFIG", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "NNI_PLATFORM", "PADDLE_MASTER", "PADDLE_NNODES"]
env = {k: os.environ[k] for k in keys if k in os.environ}
host = os.environ["HOSTNAME"]
with open(os.path.join(out, host + ".tmp"), "w") as f:
    json.dump(env, f)
os.rename(os.path.join(out, host + ".tmp"), os.path.join(out, host + ".json"))
if host.endswith(os.environ["MAIN_SUFFIX"]):
    deadline = time.time() + 60
    while len([n for n in os.listdir(out) if n.endswith(".json")]) < int(os.environ["PODS"]) and time.time() < deadline:
        time.sleep(0.05)
    nni.report_final_result(p["x"])
`

// TestKubeflowEnv: the environment the real operator injects reaches the
// trial processes: TF_CONFIG (cluster and task) in every TFJob replica,
// MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK in every PyTorchJob and
// XGBoostJob replica, PADDLE_MASTER and PADDLE_NNODES in a PaddleJob's.
// Each kind runs end to end: a real python3 trial in every replica, the
// operator's Succeeded condition, the master's final result.
func TestKubeflowEnv(t *testing.T) {
	need(t)
	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "train.py"), []byte(envScript), 0o644); err != nil {
		t.Fatal(err)
	}
	py, _ := filepathLookPython()
	read := func(t *testing.T, dir, pod string) map[string]string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, pod+".json"))
		if err != nil {
			t.Fatalf("replica %s wrote no environment: %v", pod, err)
		}
		var env map[string]string
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		if env["NNI_PLATFORM"] != "kubeflow" {
			t.Errorf("%s: NNI_PLATFORM %q", pod, env["NNI_PLATFORM"])
		}
		return env
	}
	run := func(t *testing.T, cfg k8s.CRDConfig, main string, pods int) (string, string) {
		ns := namespace(t, "env-"+cfg.Operator)
		p := newCRD(t, cfg, ns)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		out := t.TempDir()
		req := providers.StartRequest{Experiment: "env", ExperimentID: "eid", TrialID: "t0", ParameterID: 1,
			Params: map[string]any{"x": 0.25}, Args: []string{py, "train.py"}, CodeDir: code, Lineage: "L",
			Env: map[string]string{"OUT_DIR": out, "MAIN_SUFFIX": main, "PODS": strconv.Itoa(pods)}}
		h, err := p.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		metrics := untilSucceeded(ctx, t, p, ns, "env", "t0")
		if len(metrics) != 1 || metrics[0].Value != "0.25" {
			t.Errorf("metrics %+v", metrics)
		}
		if err := p.PurgeExperiment(ctx, "env", "L"); err != nil {
			t.Fatal(err)
		}
		return h["name"], out
	}

	t.Run("tfjob", func(t *testing.T) {
		name, out := run(t, k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "tfjob", Roles: []k8s.Role{
			{Name: "worker", Replicas: 2}, {Name: "ps", Replicas: 1}}}, "-worker-0", 3)
		type tfConfig struct {
			Cluster map[string][]string `json:"cluster"`
			Task    struct {
				Type  string `json:"type"`
				Index int    `json:"index"`
			} `json:"task"`
		}
		for _, pod := range []struct {
			role  string
			index int
		}{{"worker", 0}, {"worker", 1}, {"ps", 0}} {
			podName := name + "-" + pod.role + "-" + strconv.Itoa(pod.index)
			env := read(t, out, podName)
			var c tfConfig
			if err := json.Unmarshal([]byte(env["TF_CONFIG"]), &c); err != nil {
				t.Fatalf("%s: TF_CONFIG %q: %v", podName, env["TF_CONFIG"], err)
			}
			if c.Task.Type != pod.role || c.Task.Index != pod.index {
				t.Errorf("%s: TF_CONFIG task %+v", podName, c.Task)
			}
			w, ps := c.Cluster["worker"], c.Cluster["ps"]
			if len(w) != 2 || len(ps) != 1 || !strings.HasPrefix(w[1], name+"-worker-1.") || !strings.HasPrefix(ps[0], name+"-ps-0.") || !strings.HasSuffix(ps[0], ":2222") {
				t.Errorf("%s: TF_CONFIG cluster %v", podName, c.Cluster)
			}
		}
	})
	t.Run("pytorchjob", func(t *testing.T) {
		name, out := run(t, k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "pytorchjob", Roles: []k8s.Role{
			{Name: "master", Replicas: 1}, {Name: "worker", Replicas: 2}}}, "-master-0", 3)
		for _, pod := range []struct {
			suffix, rank string
		}{{"-master-0", "0"}, {"-worker-0", "1"}, {"-worker-1", "2"}} {
			env := read(t, out, name+pod.suffix)
			addr := name + "-master-0" // the master's service
			if env["MASTER_ADDR"] != addr || env["MASTER_PORT"] != "23456" || env["WORLD_SIZE"] != "3" || env["RANK"] != pod.rank {
				t.Errorf("%s: %v, want MASTER_ADDR=%s MASTER_PORT=23456 WORLD_SIZE=3 RANK=%s", pod.suffix, env, addr, pod.rank)
			}
		}
	})
	t.Run("xgboostjob", func(t *testing.T) {
		name, out := run(t, k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "xgboostjob", Roles: []k8s.Role{
			{Name: "master", Replicas: 1}, {Name: "worker", Replicas: 1}}}, "-master-0", 2)
		for _, pod := range []struct {
			suffix, rank string
		}{{"-master-0", "0"}, {"-worker-0", "1"}} {
			env := read(t, out, name+pod.suffix)
			if env["MASTER_ADDR"] != name+"-master-0" || env["MASTER_PORT"] != "9999" || env["WORLD_SIZE"] != "2" || env["RANK"] != pod.rank {
				t.Errorf("%s: %v, want MASTER_ADDR=%s-master-0 MASTER_PORT=9999 WORLD_SIZE=2 RANK=%s", pod.suffix, env, name, pod.rank)
			}
		}
	})
	t.Run("paddlejob", func(t *testing.T) {
		name, out := run(t, k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "paddlejob", Roles: []k8s.Role{
			{Name: "master", Replicas: 1}, {Name: "worker", Replicas: 2}}}, "-master-0", 3)
		for _, suffix := range []string{"-master-0", "-worker-0", "-worker-1"} {
			env := read(t, out, name+suffix)
			if !strings.Contains(env["PADDLE_MASTER"], ":36543") || env["PADDLE_NNODES"] != "3" {
				t.Errorf("%s: %v, want PADDLE_MASTER on port 36543, PADDLE_NNODES=3", suffix, env)
			}
		}
	})
}

// TestKubeflowConditions: success and failure come from the conditions
// the real operator writes. A failed worker fails the TFJob (restartPolicy
// Never; no backoffLimit, which would make the operator delete the failed
// pod); the trial's pod is kept (cleanPodPolicy Running), so its exit code
// and log are read; the ps still running is deleted.
func TestKubeflowConditions(t *testing.T) {
	need(t)
	ns := namespace(t, "conditions")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	code := smallCodeDir(t)
	p := newCRD(t, k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "tfjob", Roles: []k8s.Role{
		{Name: "worker", Replicas: 1}, {Name: "ps", Replicas: 1, Command: "sleep 1000"}}}, ns)
	h, err := p.Start(ctx, providers.StartRequest{Experiment: "cond", TrialID: "bad", Shell: "echo doomed >&2; exit 3", CodeDir: code, Lineage: "L"})
	if err != nil {
		t.Fatal(err)
	}
	var o providers.Observation
	for {
		if o, err = p.Read(ctx, providers.ReadRequest{Experiment: "cond", TrialID: "bad"}); err != nil {
			t.Fatal(err)
		}
		if o.Phase.Ended() || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if o.Phase != providers.PhaseFailed || o.ExitCode == nil || *o.ExitCode != 3 || !strings.Contains(o.Reason, "exit status 3") {
		code := "<nil>"
		if o.ExitCode != nil {
			code = strconv.Itoa(*o.ExitCode)
		}
		t.Fatalf("phase %s (%q), exit code %s; want failed, exit status 3\n%s", o.Phase, o.Reason, code, cp.Log("training-operator"))
	}
	obj, err := dyn(t).Resource(k8stest.TFJobs).Namespace(ns).Get(ctx, h["name"], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	failed := ""
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == "Failed" && m["status"] == "True" {
			failed, _ = m["message"].(string)
		}
	}
	if !strings.Contains(failed, "1 Worker replica(s) failed") {
		t.Errorf("the operator's Failed condition: %q (conditions %v)", failed, conds)
	}
	var logs strings.Builder
	if err := p.Logs(ctx, providers.LogsRequest{Experiment: "cond", TrialID: "bad", Out: &logs}); err != nil || !strings.Contains(logs.String(), "doomed") {
		t.Errorf("logs of the failed trial (%v): %q", err, logs.String())
	}
	for { // cleanPodPolicy Running: the ps goes
		if _, err := cp.Client.CoreV1().Pods(ns).Get(ctx, h["name"]+"-ps-0", metav1.GetOptions{}); err != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the ps pod outlived the failed TFJob")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := p.PurgeExperiment(ctx, "cond", "L"); err != nil {
		t.Fatal(err)
	}
	noneLeft(t, ns, k8stest.TFJobs)
}

// TestKubeflowStopPurgeServices: the operator makes a Service per replica
// (owned by the job); a stopped trial's (its job deleted with orphan
// propagation) go with the purge as its pods do.
func TestKubeflowStopPurgeServices(t *testing.T) {
	need(t)
	ns := namespace(t, "stop-services")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := newCRD(t, k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "tfjob", Roles: []k8s.Role{{Name: "worker", Replicas: 2}}}, ns)
	if _, err := p.Start(ctx, providers.StartRequest{Experiment: "stopsvc", TrialID: "t0", Shell: "sleep 1000", CodeDir: smallCodeDir(t), Lineage: "L"}); err != nil {
		t.Fatal(err)
	}
	for {
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: "stopsvc", TrialID: "t0"})
		if err != nil {
			t.Fatal(err)
		}
		svcs, _ := cp.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if o.Phase == providers.PhaseRunning && len(svcs.Items) == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("not running with 2 services: %s, %d services", o.Phase, len(svcs.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := p.Stop(ctx, providers.StopRequest{Experiment: "stopsvc", TrialID: "t0", Grace: time.Second, Reason: "test stop"}); err != nil {
		t.Fatal(err)
	}
	if err := p.PurgeExperiment(ctx, "stopsvc", "L"); err != nil {
		t.Fatal(err)
	}
	noneLeft(t, ns, k8stest.TFJobs)
	deadline := time.Now().Add(20 * time.Second)
	for {
		svcs, err := cp.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(svcs.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range svcs.Items {
				names = append(names, s.Name)
			}
			t.Fatalf("services left after the purge: %v", names)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
