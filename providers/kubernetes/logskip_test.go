package kubernetes_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
)

// countLogs wraps a rest config so that it counts the pod log requests
// made through it.
func countLogs(rc *rest.Config) (*rest.Config, *atomic.Int64) {
	var n atomic.Int64
	c := rest.CopyConfig(rc)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/log") {
				n.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	return c, &n
}

// TestNoLogReadBeforeTheContainerStarts: a pod the kubelet reports
// Running whose trial container still waits (an init container or the
// image pull) has no log, and Read does not ask for one; once the
// container runs, it does.
func TestNoLogReadBeforeTheContainerStarts(t *testing.T) {
	need(t)
	ns := namespace(t, "logskip")
	rc, logs := countLogs(cp.Config)
	// No node has this label: the pod stays unscheduled, and the test
	// writes its status as a kubelet would.
	p, err := k8s.New(k8s.Config{Rest: rc, Namespace: ns, CodeDir: "/app", NodeSelector: map[string]string{"trialform.io/test": "nowhere"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := p.Start(ctx, providers.StartRequest{Experiment: "ls", ExperimentID: "eid", TrialID: "t0", Params: map[string]any{"x": 1},
		Shell: "true", CodeDir: "/app", Lineage: "L"}); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	for {
		list, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelTrial + "=t0"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 1 {
			pod = list.Items[0]
			break
		}
		if ctx.Err() != nil {
			dump(t, ns)
			t.Fatal("the job made no pod")
		}
		time.Sleep(50 * time.Millisecond)
	}
	setState := func(st corev1.ContainerState) {
		t.Helper()
		// The job controller and the scheduler write the pod too: take
		// the latest version again when the update loses that race.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := cp.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Phase = corev1.PodRunning
			cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: cur.Spec.Containers[0].Name, Image: cur.Spec.Containers[0].Image, State: st}}
			_, err = cp.Client.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func() providers.Observation {
		t.Helper()
		// A new process each time: no metrics_interval in the way.
		p, err := k8s.New(k8s.Config{Rest: rc, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: "ls", TrialID: "t0"})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	setState(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}})
	logs.Store(0)
	if o := read(); o.Phase != providers.PhaseRunning {
		t.Fatalf("phase %s, want running (the pod is)", o.Phase)
	}
	if n := logs.Load(); n != 0 {
		t.Errorf("%d log requests for a container that has not started, want 0", n)
	}
	setState(corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}})
	read()
	if n := logs.Load(); n != 1 {
		t.Errorf("%d log requests for a running container, want 1", n)
	}
}

// TestLineAfterSkippedReadIsCollected: a Read within metrics_interval
// skips the log (no request); a line the trial prints after that decision
// is collected by the next refresh (a new process given the offsets the
// state keeps, past metrics_interval), once, with nothing read twice.
func TestLineAfterSkippedReadIsCollected(t *testing.T) {
	need(t)
	ns := namespace(t, "skipline")
	share := t.TempDir()
	code := filepath.Join(share, "code")
	os.MkdirAll(code, 0o755)
	if err := os.WriteFile(filepath.Join(code, "train.py"), []byte(`import nni, os, time, sys
nni.get_next_parameter()
nni.report_intermediate_result(1)
sys.stdout.flush()
while not os.path.exists("go"):
    time.sleep(0.05)
nni.report_intermediate_result(2)
print("second reported", flush=True)
time.sleep(120)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	py, _ := filepathLookPython()
	rc, logs := countLogs(cp.Config)
	cfg := k8s.Config{Rest: rc, Namespace: ns, MetricsInterval: time.Hour,
		NFS: &k8s.NFS{Server: "127.0.0.1", Path: share, MountPath: share, LocalPath: share}}
	p, err := k8s.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := p.Start(ctx, providers.StartRequest{Experiment: "sl", ExperimentID: "eid", TrialID: "t0", Params: map[string]any{"x": 1},
		Args: []string{py, "train.py"}, CodeDir: code, Lineage: "L"}); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), providers.StopRequest{Experiment: "sl", TrialID: "t0", Purge: true, Grace: time.Second})
	var off map[string]int64
	for {
		p1, err := k8s.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		o, err := p1.Read(ctx, providers.ReadRequest{Experiment: "sl", TrialID: "t0"})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Metrics) > 0 {
			if len(o.Metrics) != 1 || o.Metrics[0].Value != "1" {
				t.Fatalf("first read: %+v", o.Metrics)
			}
			off, p = o.MetricsOffset, p1
			break
		}
		if ctx.Err() != nil {
			dump(t, ns)
			t.Fatal("no metric arrived")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The skip decision: within metrics_interval, no log request.
	logs.Store(0)
	o, err := p.Read(ctx, providers.ReadRequest{Experiment: "sl", TrialID: "t0", MetricsOffset: off})
	if err != nil || len(o.Metrics) != 0 || o.Phase != providers.PhaseRunning {
		t.Fatalf("a read within metrics_interval: %v, %s, metrics %+v", err, o.Phase, o.Metrics)
	}
	if n := logs.Load(); n != 0 {
		t.Fatalf("a read within metrics_interval made %d log requests, want 0", n)
	}
	off = o.MetricsOffset
	// Only now does the trial print its second result.
	if err := os.WriteFile(filepath.Join(code, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(ctx, t, p, ns, "sl", "t0", "second reported")
	// The next refresh, past metrics_interval (1 ms) since the last line
	// read.
	cfg.MetricsInterval = time.Millisecond
	p2, err := k8s.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o, err = p2.Read(ctx, providers.ReadRequest{Experiment: "sl", TrialID: "t0", MetricsOffset: off})
	if err != nil || len(o.Metrics) != 1 || o.Metrics[0].Value != "2" {
		t.Fatalf("the next refresh: %v, metrics %+v (want only the second)", err, o.Metrics)
	}
}

// TestMetricsAcrossANewContainer: the trial's container is replaced (its
// Job deleted outside trialform, the trial resumed in a new pod) while the
// state keeps the old container's log cursor: the new container's lines
// are read from its start, none skipped by the old cursor.
func TestMetricsAcrossANewContainer(t *testing.T) {
	need(t)
	ns := namespace(t, "newcontainer")
	share := t.TempDir()
	code := filepath.Join(share, "code")
	os.MkdirAll(code, 0o755)
	// Each run reports its run number (a file on the share counts them).
	if err := os.WriteFile(filepath.Join(code, "train.py"), []byte(`import nni, os, time, sys
nni.get_next_parameter()
n = len(os.listdir("runs")) + 1 if os.path.isdir("runs") else 1
os.makedirs("runs", exist_ok=True)
open(os.path.join("runs", str(n)), "w").close()
nni.report_intermediate_result(n)
sys.stdout.flush()
time.sleep(120)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	py, _ := filepathLookPython()
	cfg := k8s.Config{Rest: cp.Config, Namespace: ns, MetricsInterval: time.Hour,
		NFS: &k8s.NFS{Server: "127.0.0.1", Path: share, MountPath: share, LocalPath: share}}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := providers.StartRequest{Experiment: "nc", ExperimentID: "eid", TrialID: "t0", Params: map[string]any{"x": 1},
		Args: []string{py, "train.py"}, CodeDir: code, Lineage: "L"}
	start := func() map[string]string {
		t.Helper()
		p, err := k8s.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h, err := p.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	handle := start()
	defer func() {
		p, _ := k8s.New(cfg)
		p.Stop(context.Background(), providers.StopRequest{Experiment: "nc", TrialID: "t0", Purge: true, Grace: time.Second})
	}()
	// until reads with fresh processes (the next refreshes) and the
	// offsets the state would keep, until a metric arrives.
	var off map[string]int64
	until := func(what string) []providers.Metric {
		t.Helper()
		for {
			p, err := k8s.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			o, err := p.Read(ctx, providers.ReadRequest{Experiment: "nc", TrialID: "t0", Handle: handle, MetricsOffset: off})
			if err != nil {
				t.Fatal(err)
			}
			if o.MetricsOffset != nil {
				off = o.MetricsOffset
			}
			if len(o.Metrics) > 0 {
				return o.Metrics
			}
			if ctx.Err() != nil {
				dump(t, ns)
				t.Fatalf("%s: no metric arrived", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if m := until("first container"); len(m) != 1 || m[0].Value != "1" {
		t.Fatalf("first container: %+v", m)
	}
	name := k8s.JobName("nc", "t0")
	bg := metav1.DeletePropagationBackground
	if err := cp.Client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := cp.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the job was not deleted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	handle = start() // the resume plan makes
	if m := until("new container"); len(m) != 1 || m[0].Value != "2" {
		t.Fatalf("new container: %+v (want its one result, 2)", m)
	}
}
