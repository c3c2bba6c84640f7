package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
)

// TestBenchKubeflow200 (TRIALFORM_K8S_BENCH=1, `make bench`) starts 200
// TFJob trials of 2 workers each on nodes simulated by kwok, the real
// training operator making their pods, and prints the time until every
// trial is Running (the operator's Running condition; target 60 s).
func TestBenchKubeflow200(t *testing.T) {
	if os.Getenv("TRIALFORM_K8S_BENCH") == "" {
		t.Skip("set TRIALFORM_K8S_BENCH=1 (make bench)")
	}
	need(t)
	n := 200
	if s := os.Getenv("TRIALFORM_KUBEFLOW_BENCH_TRIALS"); s != "" {
		fmt.Sscan(s, &n)
	}
	ctx := context.Background()
	nodeLabel := startKwok(t, "kwok-kf", 4)
	ns := namespace(t, "bench-kubeflow")
	cfg := k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "tfjob", Roles: []k8s.Role{{Name: "worker", Replicas: 2}},
		Config: k8s.Config{Rest: cp.Config, Namespace: ns, CodeDir: "/app", Image: "python:3.11-slim",
			NodeSelector: map[string]string{"type": nodeLabel},
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}
	p, err := k8s.NewCRD(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exp := "bench-kf"
	begin := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int32
	sem := make(chan struct{}, 32)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := p.Start(ctx, providers.StartRequest{Experiment: exp, ExperimentID: "b", TrialID: fmt.Sprintf("t%04d", i),
				Params: map[string]any{"x": i}, Shell: "sleep 3600", CodeDir: "/app", Lineage: "L"})
			if err != nil && failed.Add(1) == 1 {
				t.Errorf("start: %v", err)
			}
		}(i)
	}
	wg.Wait()
	created := time.Since(begin)
	var running int
	for {
		obs, err := p.List(ctx, exp)
		if err != nil {
			t.Fatal(err)
		}
		running = 0
		for _, o := range obs {
			if o.Phase == providers.PhaseRunning {
				running++
			}
		}
		if running == n || time.Since(begin) > 180*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	allRunning := time.Since(begin)
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("kubeflow bench: %d TFJob trials x 2 workers (real training operator, kwok nodes): created in %.1fs, %d trials Running (%d pods) after %.1fs (target < 60s)\n",
		n, created.Seconds(), running, len(pods.Items), allRunning.Seconds())
	if running != n || len(pods.Items) != 2*n {
		t.Errorf("%d of %d trials running, %d pods; operator log:\n%s", running, n, len(pods.Items), cp.Log("training-operator"))
	}
	if err := p.PurgeExperiment(ctx, exp, "L"); err != nil {
		t.Error(err)
	}
}

// startKwok runs kwok for nodes NAME-0..count-1 labelled type=NAME (pods
// on them become Running and stay so until deleted) and returns the label.
func startKwok(t *testing.T, name string, count int) string {
	t.Helper()
	bin, _ := k8stest.BinDir()
	kwok := filepath.Join(bin, "kwok")
	if _, err := os.Stat(kwok); err != nil {
		testdeps.Require(t, "kwok", "not built: run scripts/build-k8s.sh")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kwok.yaml"), []byte(fmt.Sprintf(kwokConfig, filepath.Join(dir, "empty.log"))), 0o644); err != nil {
		t.Fatal(err)
	}
	crt, key, err := cp.IssueCert(name, name, "", "IP:127.0.0.3")
	if err != nil {
		t.Fatal(err)
	}
	port, err := k8stest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kwok, "--kubeconfig="+cp.Kubeconfig, "--manage-nodes-with-label-selector=type="+name,
		"--node-ip=127.0.0.3", "--cidr=10.2.0.1/16", "--config="+filepath.Join(dir, "kwok.yaml"),
		fmt.Sprintf("--server-address=127.0.0.3:%d", port), fmt.Sprintf("--node-port=%d", port),
		"--tls-cert-file="+crt, "--tls-private-key-file="+key)
	logf, _ := os.Create(filepath.Join(dir, "kwok.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; i < count; i++ {
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"), corev1.ResourcePods: resource.MustParse("1000")}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: map[string]string{"type": name}, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
			Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := cp.Client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return name
}
