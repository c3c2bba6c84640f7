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

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
)

// TestBench1000 (TRIALFORM_K8S_BENCH=1, `make bench`) starts 1,000 trials
// as Jobs on nodes simulated by kwok and prints the time until every pod
// runs (target 60 s) and the time of a refresh as the planner does it:
// List plus a Read of every trial (target 1 s).
func TestBench1000(t *testing.T) {
	if os.Getenv("TRIALFORM_K8S_BENCH") == "" {
		t.Skip("set TRIALFORM_K8S_BENCH=1 (make bench)")
	}
	need(t)
	n := 1000
	if s := os.Getenv("TRIALFORM_K8S_BENCH_TRIALS"); s != "" {
		fmt.Sscan(s, &n)
	}
	bin, _ := k8stest.BinDir()
	kwok := filepath.Join(bin, "kwok")
	if _, err := os.Stat(kwok); err != nil {
		t.Skip("kwok is not built: run scripts/build-k8s.sh")
	}
	ctx := context.Background()
	cmd := exec.Command(kwok, "--kubeconfig="+cp.Kubeconfig, "--manage-nodes-with-label-selector=type=kwok",
		"--node-ip=127.0.0.2", "--cidr=10.1.0.1/16")
	kwokLog := filepath.Join(t.TempDir(), "kwok.log")
	logf, _ := os.Create(kwokLog)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for i := 0; i < 4; i++ {
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"), corev1.ResourcePods: resource.MustParse("1000")}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kwok-%d", i), Labels: map[string]string{"type": "kwok"}, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
			Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := namespace(t, "bench")
	p, err := k8s.New(k8s.Config{Rest: cp.Config, Namespace: ns, CodeDir: "/app",
		NodeSelector: map[string]string{"type": "kwok"},
		// No node lifecycle controller runs to lift the not-ready taint
		// the apiserver puts on new nodes: tolerate it.
		Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}})
	if err != nil {
		t.Fatal(err)
	}
	exp := "bench"
	begin := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int32
	sem := make(chan struct{}, 64)
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
			if o.Phase == providers.PhaseRunning || o.Phase.Ended() {
				running++
			}
		}
		if running == n || time.Since(begin) > 90*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	allRunning := time.Since(begin)

	// A refresh as plan.Refresh does it: List, then Read every trial,
	// ReadParallelism at a time. The first reads every running pod's log;
	// a second one within metrics_interval (watch, apply -wait) only
	// lists.
	refresh := func() (list, all time.Duration) {
		rbegin := time.Now()
		if _, err := p.List(ctx, exp); err != nil {
			t.Fatal(err)
		}
		list = time.Since(rbegin)
		sem := make(chan struct{}, p.ReadParallelism())
		for i := 0; i < n; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(i int) {
				defer wg.Done()
				defer func() { <-sem }()
				if _, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: fmt.Sprintf("t%04d", i)}); err != nil && failed.Add(1) == 1 {
					t.Errorf("read: %v", err)
				}
			}(i)
		}
		wg.Wait()
		return list, time.Since(rbegin)
	}
	listTook, first := refresh()
	_, second := refresh()
	fmt.Printf("kubernetes bench: %d trials: created in %.1fs, %d running after %.1fs (target < 60s); refresh: List %.2fs, List + %d Reads with logs %.2fs, again within metrics_interval %.2fs (target < 1s)\n",
		n, created.Seconds(), running, allRunning.Seconds(), listTook.Seconds(), n, first.Seconds(), second.Seconds())
	if running != n {
		b, _ := os.ReadFile(kwokLog)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		pods, _ := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 2})
		for _, p := range pods.Items {
			t.Logf("pod %s node %q: %s %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
		t.Errorf("%d of %d trials running; kwok log:\n%s", running, n, b)
	}
}
