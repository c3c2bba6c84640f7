package kubernetes_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/conformance"
	k8s "github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
)

// The control plane and node agent every test of this package shares.
var (
	cp    *k8stest.ControlPlane
	agent *k8stest.NodeAgent
	// operator stands in for the operators of adaptdl and
	// frameworkcontroller; the kubeflow kinds run on the real training
	// operator.
	operator *k8stest.Operator
	skipWhy  string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	cp, err = k8stest.Start(ctx, k8stest.Options{CRDs: true})
	if errors.Is(err, k8stest.ErrNotBuilt) {
		skipWhy = err.Error()
		return m.Run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the control plane:", err)
		return 1
	}
	defer cp.Stop()
	agent, err = k8stest.StartNodeAgent(ctx, cp, "agent-0", k8stest.AgentOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the node agent:", err)
		return 1
	}
	defer agent.Stop()
	if err := k8stest.StartTrainingOperator(ctx, cp); err != nil {
		fmt.Fprintln(os.Stderr, "start the training operator:", err)
		return 1
	}
	operator, err = k8stest.StartOperator(cp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the test operator:", err)
		return 1
	}
	defer operator.Stop()
	return m.Run()
}

func need(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no control plane")
	}
	testdeps.Require(t, "the test Kubernetes control plane", skipWhy)
}

func namespace(t *testing.T, name string) string {
	t.Helper()
	_, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	return name
}

// TestConformance runs the provider suite on the real apiserver; trials
// run through the node agent. The code dirs live on the "NFS share" (the
// agent's nfs volumes are local paths), mounted at the same path, so the
// suite's marker files are visible to both sides.
func TestConformance(t *testing.T) {
	need(t)
	t.Parallel()
	jobConformance(t, "conformance", false)
}

// jobConformance runs the suite on Job platforms in namespace ns, each
// following its trials (follow_test.go) when follow is set.
func jobConformance(t *testing.T, ns string, following bool) {
	namespace(t, ns)
	share := t.TempDir()
	conformance.Run(t, func(t *testing.T) providers.Provider {
		p, err := k8s.New(k8s.Config{Rest: cp.Config, Namespace: ns, Image: "python:3.11-slim",
			NFS: &k8s.NFS{Server: "127.0.0.1", Path: share, MountPath: share, LocalPath: share}})
		if err != nil {
			t.Fatal(err)
		}
		if following {
			follow(t, p)
		}
		return p
	}, conformance.Options{
		NNIPlatform: "kubernetes",
		CodeDir:     codeDirsIn(share),
		Lose: func(t *testing.T, h providers.Handle) {
			bg := metav1.DeletePropagationBackground
			if err := cp.Client.BatchV1().Jobs(h["namespace"]).Delete(context.Background(), h["job"], metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
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
}

// nodeAgentSessions is why the Kubernetes platforms declare
// CapKillNewSession unimplemented here: the test node agent runs a pod's
// containers as plain processes and stops their process group, while a
// real kubelet's container runtime kills everything in the container
// (its cgroup and pid namespace), new sessions included.
const (
	k8sNoLocation        = "the handle names the Job or object; the platform names no place beyond it"
	k8sNoTensorBoardSync = "TensorBoard logs stay in the pod or on its checkpoint claim: trialform tensorboard copies nothing from a cluster"
)

const nodeAgentSessions = "the test node agent runs containers as plain processes and kills their process group; a real container runtime kills the whole container, new sessions included"

// codeDirsIn makes each test's code dir under share (the "NFS share").
func codeDirsIn(share string) func(t *testing.T) string {
	return func(t *testing.T) string {
		d, err := os.MkdirTemp(share, strings.ReplaceAll(t.Name(), "/", "-")+"-")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

// TestConfigMapCode ships a small code dir in the ConfigMap (honouring
// .trialformignore) and runs a Python trial using trialform's nni module.
func TestConfigMapCode(t *testing.T) {
	need(t)
	ns := namespace(t, "configmap")
	code := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(code, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("train.py", `import nni, os
p = nni.get_next_parameter()
assert not os.path.exists("data/big.bin"), "ignored file shipped"
nni.report_intermediate_result(p["x"] / 2)
nni.report_final_result({"default": p["x"] * 2, "loss": 0.5})
print("done")
`)
	write("data/big.bin", "ignored")
	write(".trialformignore", "data/\n")
	py, _ := filepathLookPython()
	p, err := k8s.New(k8s.Config{Rest: cp.Config, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	req := providers.StartRequest{Experiment: "cm", ExperimentID: "eid", TrialID: "t0", ParameterID: 3,
		Params: map[string]any{"x": 1.5}, Args: []string{py, "train.py"}, CodeDir: code, Lineage: "L"}
	if _, err := p.Start(ctx, req); err != nil {
		t.Fatal(err)
	}
	metrics := untilSucceeded(ctx, t, p, ns, "cm", "t0")
	if len(metrics) != 2 || metrics[0].Type != "PERIODICAL" || metrics[0].Value != "0.75" || metrics[1].Type != "FINAL" || metrics[1].ParameterID != 3 {
		t.Fatalf("metrics %+v", metrics)
	}
	// The final result is in the termination message too.
	pods, _ := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelTrial + "=t0"})
	if len(pods.Items) != 1 || !strings.Contains(pods.Items[0].Status.ContainerStatuses[0].State.Terminated.Message, `"FINAL"`) {
		t.Errorf("termination message: %+v", pods.Items)
	}
	if err := p.Stop(ctx, providers.StopRequest{Experiment: "cm", TrialID: "t0", Purge: true}); err != nil {
		t.Fatal(err)
	}
}

// untilSucceeded reads a trial until it ends, failing the test unless it
// succeeded, and returns its metrics.
func untilSucceeded(ctx context.Context, t *testing.T, p providers.Provider, ns, exp, trial string) []providers.Metric {
	t.Helper()
	var metrics []providers.Metric
	var off map[string]int64
	for {
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: trial, MetricsOffset: off})
		if err != nil {
			dump(t, ns)
			t.Fatal(err)
		}
		metrics = append(metrics, o.Metrics...)
		off = o.MetricsOffset
		if o.Phase.Ended() {
			if o.Phase != providers.PhaseSucceeded {
				var b strings.Builder
				if ls, ok := p.(providers.LogStreamer); ok {
					ls.Logs(ctx, providers.LogsRequest{Experiment: exp, TrialID: trial, Out: &b})
				}
				dump(t, ns)
				t.Fatalf("trial %s (%s): %s\noperator: %s\ntraining-operator: %s", o.Phase, o.Reason, b.String(), cp.Log("operator"), cp.Log("training-operator"))
			}
			return metrics
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func filepathLookPython() (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, "python3")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "python3", nil
}

// dump logs the namespace's jobs and pods (for failures).
func dump(t *testing.T, ns string) {
	ctx := context.Background()
	jobs, _ := cp.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	for _, j := range jobs.Items {
		t.Logf("job %s: status %+v", j.Name, j.Status)
	}
	pods, _ := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		t.Logf("pod %s node %q: status %+v", p.Name, p.Spec.NodeName, p.Status)
	}
	evs, _ := cp.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	for _, e := range evs.Items {
		t.Logf("event %s %s: %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	t.Logf("kube-controller-manager log:\n%s", cp.Log("kube-controller-manager"))
	t.Logf("kube-scheduler log:\n%s", cp.Log("kube-scheduler"))
}

// waitLog waits until the trial's log holds want.
func waitLog(ctx context.Context, t *testing.T, p providers.LogStreamer, ns, exp, trial, want string) {
	t.Helper()
	for {
		var b strings.Builder
		p.Logs(ctx, providers.LogsRequest{Experiment: exp, TrialID: trial, Out: &b})
		if strings.Contains(b.String(), want) {
			return
		}
		if ctx.Err() != nil {
			dump(t, ns)
			t.Fatalf("trial %s/%s never printed %q; log %q", exp, trial, want, b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
