package kubernetes_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
)

// TestMetricsIntervalAndCursor runs a trial that reports one result, then
// another, through the node agent: a second Read by the same process
// within metrics_interval does not fetch the log (no new metrics though the
// trial printed one), and a new process given the offsets the state keeps
// reads only the new line, through the kubelet's sinceTime, but not while
// the last line it read is younger than metrics_interval.
func TestMetricsIntervalAndCursor(t *testing.T) {
	need(t)
	ns := namespace(t, "interval")
	// The code dir is on the "NFS share" (the same path for the node
	// agent), so the test can tell the trial when to go on.
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
	cfg := k8s.Config{Rest: cp.Config, Namespace: ns, MetricsInterval: time.Hour,
		NFS: &k8s.NFS{Server: "127.0.0.1", Path: share, MountPath: share, LocalPath: share}}
	p, err := k8s.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := providers.StartRequest{Experiment: "iv", ExperimentID: "eid", TrialID: "t0", Params: map[string]any{"x": 1},
		Args: []string{py, "train.py"}, CodeDir: code, Lineage: "L"}
	if _, err := p.Start(ctx, req); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), providers.StopRequest{Experiment: "iv", TrialID: "t0", Purge: true, Grace: time.Second})
	// A process that reads before the trial printed anything has not read
	// the log either: use fresh processes until the first metric is in.
	var off map[string]int64
	for {
		p1, err := k8s.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		o, err := p1.Read(ctx, providers.ReadRequest{Experiment: "iv", TrialID: "t0"})
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
	// A new process given those offsets (the next `plan`) does not ask
	// for the log while the last line read from it is younger than
	// metrics_interval: it was read after that line was written.
	counted, logs := countLogs(cp.Config)
	fresh := cfg
	fresh.Rest = counted
	pf, err := k8s.New(fresh)
	if err != nil {
		t.Fatal(err)
	}
	o, err := pf.Read(ctx, providers.ReadRequest{Experiment: "iv", TrialID: "t0", MetricsOffset: off})
	if err != nil || o.Phase != providers.PhaseRunning || len(o.Metrics) != 0 || logs.Load() != 0 {
		t.Fatalf("a new process within metrics_interval of the last line read: %v, %s, metrics %+v, %d log requests (want none)", err, o.Phase, o.Metrics, logs.Load())
	}
	if !maps.Equal(o.MetricsOffset, off) {
		t.Fatalf("a skipped read changed the cursor: %v, was %v", o.MetricsOffset, off)
	}
	// Past metrics_interval (here 1 ms), it asks.
	fresh.MetricsInterval = time.Millisecond
	if pf, err = k8s.New(fresh); err != nil {
		t.Fatal(err)
	}
	if o, err = pf.Read(ctx, providers.ReadRequest{Experiment: "iv", TrialID: "t0", MetricsOffset: off}); err != nil || len(o.Metrics) != 0 || logs.Load() != 1 {
		t.Fatalf("a new process past metrics_interval: %v, metrics %+v, %d log requests (want 1, nothing new)", err, o.Metrics, logs.Load())
	}
	if err := os.WriteFile(filepath.Join(code, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(ctx, t, p, ns, "iv", "t0", "second reported")
	o, err = p.Read(ctx, providers.ReadRequest{Experiment: "iv", TrialID: "t0", MetricsOffset: off})
	if err != nil || len(o.Metrics) != 0 || o.Phase != providers.PhaseRunning {
		t.Fatalf("a read within metrics_interval: %v, %s, metrics %+v (want none: the log is not due)", err, o.Phase, o.Metrics)
	}
	off = o.MetricsOffset
	// A new process past metrics_interval (1 ms) since the last line read.
	cfg.MetricsInterval = time.Millisecond
	// A plan (ReadRequest.SkipRunningMetrics) does not ask for a running
	// pod's log at all: no request, no metrics, the cursor as it was.
	logs.Store(0)
	fresh.MetricsInterval = time.Millisecond
	if pf, err = k8s.New(fresh); err != nil {
		t.Fatal(err)
	}
	o, err = pf.Read(ctx, providers.ReadRequest{Experiment: "iv", TrialID: "t0", MetricsOffset: off, SkipRunningMetrics: true})
	if err != nil || o.Phase != providers.PhaseRunning || len(o.Metrics) != 0 || logs.Load() != 0 || !maps.Equal(o.MetricsOffset, off) {
		t.Fatalf("a plan's read of a running pod: %v, %s, metrics %+v, %d log requests (want none), cursor %v (was %v)", err, o.Phase, o.Metrics, logs.Load(), o.MetricsOffset, off)
	}
	p2, err := k8s.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o, err = p2.Read(ctx, providers.ReadRequest{Experiment: "iv", TrialID: "t0", MetricsOffset: off})
	if err != nil || len(o.Metrics) != 1 || o.Metrics[0].Value != "2" {
		t.Fatalf("a new process with the kept offsets: %v, metrics %+v (want only the second)", err, o.Metrics)
	}
}
