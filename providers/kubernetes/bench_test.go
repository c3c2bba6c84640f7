package kubernetes_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/internal/testdeps"
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
		testdeps.Require(t, "kwok", "not built: run scripts/build-k8s.sh")
	}
	ctx := context.Background()
	// The test operator (TestMain) lists every pod of the cluster every
	// 150 ms: with 1,000 pods that alone keeps the apiserver busy. The
	// bench measures trialform's requests, so it pauses the operator.
	operator.Stop()
	defer func() {
		var err error
		if operator, err = k8stest.StartOperator(cp); err != nil {
			t.Error(err)
		}
	}()
	// kwok keeps the pods running (our pod stages: ready, delete; not its
	// default completion of Job pods) and serves every trial container
	// the same CRI log, as a kubelet would, so each Read fetches a real
	// log through the apiserver.
	dir := t.TempDir()
	logFile := filepath.Join(dir, "trial.log")
	var logb strings.Builder
	t0 := time.Now().Add(-time.Minute).UTC()
	for i := 0; i < 20; i++ {
		ts := t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)
		fmt.Fprintf(&logb, "%s stdout F epoch %d\n", ts, i)
		fmt.Fprintf(&logb, "%s stdout F NNISDK_MEb'{\"type\": \"PERIODICAL\", \"sequence\": %d, \"value\": \"%g\"}'\n", ts, i, 0.5+float64(i)/100)
	}
	if err := os.WriteFile(logFile, []byte(logb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kwok.yaml"), []byte(fmt.Sprintf(kwokConfig, logFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	crt, key, err := cp.IssueCert("kwok", "kwok", "", "IP:127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	port, err := k8stest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kwok, "--kubeconfig="+cp.Kubeconfig, "--manage-nodes-with-label-selector=type=kwok",
		"--node-ip=127.0.0.2", "--cidr=10.1.0.1/16", "--config="+filepath.Join(dir, "kwok.yaml"),
		fmt.Sprintf("--server-address=127.0.0.2:%d", port), fmt.Sprintf("--node-port=%d", port),
		"--tls-cert-file="+crt, "--tls-private-key-file="+key)
	kwokLog := filepath.Join(dir, "kwok.log")
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
	// Count the API requests of each refresh.
	var requests atomic.Int64
	rc := rest.CopyConfig(cp.Config)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	})
	cfg := k8s.Config{Rest: rc, Namespace: ns, CodeDir: "/app",
		NodeSelector: map[string]string{"type": "kwok"},
		// No node lifecycle controller runs to lift the not-ready taint
		// the apiserver puts on new nodes: tolerate it.
		Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
	p, err := k8s.New(cfg)
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
	// The job controller catches up on the Jobs' status (ready counts)
	// after the pods run: wait for it, so that the refreshes are not
	// measured against its writes, and print what the cluster uses idle.
	for time.Since(begin) < 120*time.Second {
		jobs, err := cp.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, j := range jobs.Items {
			if j.Status.Ready != nil && *j.Status.Ready == 1 {
				ready++
			}
		}
		if ready == n {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The controllers' events of the 1,000 starts drain (rate-limited) for
	// a while after: wait until fewer than 10 a second are posted.
	for i := 0; i < 60; i++ {
		r0 := apiRequests(ctx)
		time.Sleep(time.Second)
		r1 := apiRequests(ctx)
		var ev float64
		for k, v := range r1 {
			// keys: component, resource, subresource, verb
			if f := strings.Fields(k); len(f) >= 2 && f[len(f)-2] == "events" && (f[len(f)-1] == "POST" || f[len(f)-1] == "PATCH") {
				ev += v - r0[k]
			}
		}
		if ev < 10 {
			break
		}
	}
	idle0, reqs0 := cpuTimes(), apiRequests(ctx)
	time.Sleep(time.Second)
	idle := cpuDelta(idle0, cpuTimes())
	idleReqs := requestDelta(reqs0, apiRequests(ctx))
	par := p.ReadParallelism()
	if s := os.Getenv("TRIALFORM_K8S_BENCH_PARALLEL"); s != "" {
		fmt.Sscan(s, &par)
	}

	// A refresh as plan.Refresh does it: List, then Read every trial,
	// ReadParallelism at a time. The first reads every running pod's log;
	// a second one within metrics_interval (watch, apply -wait) only
	// lists.
	// TRIALFORM_K8S_BENCH_PARALLEL_B=N: the repeated cursorless refreshes
	// alternate between par and N Reads at once, on the same cluster in
	// the same minutes (a shared machine's speed moves between runs).
	parB := 0
	if s := os.Getenv("TRIALFORM_K8S_BENCH_PARALLEL_B"); s != "" {
		fmt.Sscan(s, &parB)
	}
	readsAtOnce := par
	planOnly := false // a plan's refresh (ReadRequest.SkipRunningMetrics)
	offsets := make([]map[string]int64, n)
	var metrics atomic.Int64
	var cpuNotes []string
	refresh := func(p *k8s.Kubernetes) (list, all time.Duration, calls int64) {
		requests.Store(0)
		cpu0 := cpuTimes()
		if dir := os.Getenv("TRIALFORM_K8S_BENCH_PROFILE"); dir != "" {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("refresh%d.pprof", len(cpuNotes)+1)))
			if err != nil {
				t.Fatal(err)
			}
			pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
		defer func() { cpuNotes = append(cpuNotes, cpuDelta(cpu0, cpuTimes())) }()
		rbegin := time.Now()
		if _, err := p.List(ctx, exp); err != nil {
			t.Fatal(err)
		}
		list = time.Since(rbegin)
		sem := make(chan struct{}, readsAtOnce)
		for i := 0; i < n; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(i int) {
				defer wg.Done()
				defer func() { <-sem }()
				o, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: fmt.Sprintf("t%04d", i), MetricsOffset: offsets[i], SkipRunningMetrics: planOnly})
				if err != nil && failed.Add(1) == 1 {
					t.Errorf("read: %v", err)
				}
				offsets[i] = o.MetricsOffset // as the state keeps it
				metrics.Add(int64(len(o.Metrics)))
			}(i)
		}
		wg.Wait()
		return list, time.Since(rbegin), requests.Load()
	}
	load := loadavg()
	listTook, first, firstCalls := refresh(p)
	if got := metrics.Load(); got != int64(20*n) {
		t.Errorf("the first refresh read %d metrics from the pod logs, want %d", got, 20*n)
	}
	_, second, secondCalls := refresh(p)
	// A new process (the next `plan`) with the cursors the state kept:
	// every log is due again, but each read asks only for what is new.
	p2, err := k8s.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	metrics.Store(0)
	_, third, thirdCalls := refresh(p2)
	if got := metrics.Load(); got != 0 {
		t.Errorf("a refresh with the kept cursors read %d metrics again", got)
	}
	// The first refresh again, on a warm cluster: a new process without
	// cursors (a state that lost them) reads every whole log.
	p3, err := k8s.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clear(offsets)
	metrics.Store(0)
	_, fourth, fourthCalls := refresh(p3)
	if got := metrics.Load(); got != int64(20*n) {
		t.Errorf("a refresh without cursors read %d metrics, want %d", got, 20*n)
	}
	// `plan` (and ui, watch without -auto-approve) of an experiment
	// without an assessor keeps nothing of a running trial but its
	// status: a new process without cursors, five times.
	var plans []time.Duration
	var planCalls int64
	planOnly = true
	for r := 0; r < 5; r++ {
		pp, err := k8s.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		clear(offsets)
		metrics.Store(0)
		_, took, calls := refresh(pp)
		plans, planCalls = append(plans, took), calls
		if got := metrics.Load(); got != 0 {
			t.Errorf("a plan's refresh read %d metrics of running trials, want none", got)
		}
	}
	planOnly = false
	clear(offsets)
	// A session that refreshes again and again (apply -wait, watch, the
	// controller) follows: the time for its copies to fill, then a
	// refresh within metrics_interval from them.
	pf, err := k8s.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	// Twice: the first GC only moves the pooled log buffers to the
	// pool's victim cache; the second frees them, so they are not
	// counted before and freed after.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	followBegin := time.Now()
	pf.Follow()
	for !pf.FollowReady() {
		if time.Since(followBegin) > time.Minute {
			t.Fatal("the watches never became ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	followReady := time.Since(followBegin)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	followHeap := int64(ms1.HeapAlloc) - int64(ms0.HeapAlloc)
	_, _, _ = refresh(pf) // reads every log (the same as the first refresh)
	var followed []time.Duration
	var followedCalls int64
	for r := 0; r < 5; r++ {
		_, took, calls := refresh(pf)
		followed, followedCalls = append(followed, took), followedCalls+calls
	}
	pf.Close()
	// The cursorless and the kept-cursors refreshes again, each by a new
	// process, TRIALFORM_K8S_BENCH_REPEAT times (default 5): their
	// medians, as a shared machine's load moves.
	repeat := 5
	if s := os.Getenv("TRIALFORM_K8S_BENCH_REPEAT"); s != "" {
		fmt.Sscan(s, &repeat)
	}
	var firsts, kepts, firstsB []time.Duration
	var firstCPU, keptCPU, firstCPUB []time.Duration
	for r := 0; r < repeat; r++ {
		variants := []bool{false, true}
		if parB > 0 {
			variants = []bool{false, false}
		}
		for v, cursors := range variants {
			readsAtOnce = par
			if parB > 0 && (v+r)%2 == 1 {
				readsAtOnce = parB
			}
			pr, err := k8s.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !cursors {
				clear(offsets)
			}
			metrics.Store(0)
			c0 := cpuTotal(cpuTimes())
			_, took, _ := refresh(pr)
			c := cpuTotal(cpuTimes()) - c0
			if cursors {
				kepts, keptCPU = append(kepts, took), append(keptCPU, c)
			} else {
				if readsAtOnce != par {
					firstsB, firstCPUB = append(firstsB, took), append(firstCPUB, c)
				} else {
					firsts, firstCPU = append(firsts, took), append(firstCPU, c)
				}
				if got := metrics.Load(); got != int64(20*n) {
					t.Errorf("a refresh without cursors read %d metrics, want %d", got, 20*n)
				}
			}
		}
	}
	fmt.Printf("kubernetes bench: %d trials: created in %.1fs, %d running after %.1fs (target < 60s); refresh: List %.2fs, List + %d Reads with logs %.2fs (%d requests), again within metrics_interval %.2fs (%d requests), a new process with the kept cursors %.2fs (%d requests) (target < 1s); load average %s\n",
		n, created.Seconds(), running, allRunning.Seconds(), listTook.Seconds(), n, first.Seconds(), firstCalls, second.Seconds(), secondCalls, third.Seconds(), thirdCalls, load)
	fmt.Printf("kubernetes bench: the first refresh again (a new process without cursors, warm cluster) %.2fs (%d requests)\n", fourth.Seconds(), fourthCalls)
	fmt.Printf("kubernetes bench: the first refresh of a plan (a new process without cursors, no assessor: running pods' logs not read) median %.2fs (%s), %d requests\n",
		median(plans).Seconds(), spread(plans), planCalls)
	fmt.Printf("kubernetes bench: following (apply -wait, watch, the controller): copies of the %d Jobs and pods filled in %.2fs, %.1f KiB of heap a trial; a refresh within metrics_interval from them median %.3fs (%s), %d requests in 5\n",
		n, followReady.Seconds(), float64(followHeap)/1024/float64(n), median(followed).Seconds(), spread(followed), followedCalls)
	fmt.Printf("kubernetes bench: %d Reads at once; CPU of the cluster idle for 1 s before: %s; its requests: %s\n", par, idle, idleReqs)
	for i, c := range cpuNotes[:min(4, len(cpuNotes))] {
		fmt.Printf("kubernetes bench: CPU of refresh %d: %s\n", i+1, c)
	}
	if repeat > 0 && parB > 0 {
		fmt.Printf("kubernetes bench: %d times more, each by a new process without cursors, alternating %d and %d Reads at once: median %.2fs (%s), CPU of all processes %.2fs; against median %.2fs (%s), CPU %.2fs; load average %s\n",
			2*repeat, par, parB, median(firsts).Seconds(), spread(firsts), median(firstCPU).Seconds(), median(firstsB).Seconds(), spread(firstsB), median(firstCPUB).Seconds(), loadavg())
	} else if repeat > 0 {
		fmt.Printf("kubernetes bench: %d times more, each by a new process: the first refresh (no cursors) median %.2fs (%s), CPU of all processes %.2fs; with the kept cursors median %.2fs (%s), CPU %.2fs; load average %s\n",
			repeat, median(firsts).Seconds(), spread(firsts), median(firstCPU).Seconds(), median(kepts).Seconds(), spread(kepts), median(keptCPU).Seconds(), loadavg())
	}
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

// cpuTotal is the CPU time of the client and the cluster together.
func cpuTotal(m map[string]time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range m {
		sum += d
	}
	return sum
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// spread is the durations in seconds, in order.
func spread(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%.2f", d.Seconds()))
	}
	return strings.Join(parts, " ")
}

// loadavg is the machine's 1, 5 and 15 minute load averages.
func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// cpuTimes is the CPU time (user + system) used so far by this process
// (the client) and by each of its child processes (the control plane and
// kwok), by command name, from /proc.
func cpuTimes() map[string]time.Duration {
	out := map[string]time.Duration{}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		out["client"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	me := strconv.Itoa(os.Getpid())
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15)
		s := string(b)
		i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(s[j+1:])
		if len(f) < 13 || f[1] != me {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		out[s[i+1:j]] += time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
	}
	return out
}

func cpuDelta(a, b map[string]time.Duration) string {
	var names []string
	for n := range b {
		if b[n]-a[n] >= 10*time.Millisecond {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.2fs", n, (b[n]-a[n]).Seconds()))
	}
	return strings.Join(parts, ", ")
}

// apiRequests is the apiserver's request counters (apiserver_request_total
// by verb, resource, subresource and client) from its /metrics.
func apiRequests(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	raw, err := cp.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		var v float64
		fmt.Sscan(line[i+1:], &v)
		var key []string
		for _, kv := range strings.Split(line[len("apiserver_request_total{"):i-1], ",") {
			k, val, _ := strings.Cut(kv, "=")
			if k == "verb" || k == "resource" || k == "subresource" || k == "component" {
				key = append(key, strings.Trim(val, `"`))
			}
		}
		out[strings.Join(key, " ")] += v
	}
	return out
}

func requestDelta(a, b map[string]float64) string {
	var parts []string
	for k, v := range b {
		if d := v - a[k]; d >= 1 {
			parts = append(parts, fmt.Sprintf("%s: %.0f", strings.TrimSpace(k), d))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// kwokConfig: pods become ready and stay running until deleted; every
// "trial" container's log is the file %s (CRI format).
const kwokConfig = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: trial-pod-running
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.podIP'
      operator: 'DoesNotExist'
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
      startTime: {{ $now | Quote }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName false ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      conditions:
      - {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        restartCount: 0
        state: {running: {startedAt: {{ $now | Quote }}}}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: trial-pod-gone
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
  next:
    finalizers: {empty: true}
    delete: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: trial-logs
spec:
  selector: {}
  logs:
  - containers: [trial]
    logsFile: %s
`
