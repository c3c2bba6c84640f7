package kubernetes_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
)

// runToEnd starts a trial running script and reads it as refreshes do (a
// new process each time, the offsets the state keeps, nothing read once
// the trial ended) until it ended; it returns every metric read and the
// last observation.
func runToEnd(t *testing.T, ns, exp, script, regex string) ([]providers.Metric, providers.Observation) {
	ms, o, _ := runToEndWith(t, cp.Config, ns, exp, script, regex)
	return ms, o
}

// runToEndWith is runToEnd through rc; it also returns the warnings of
// the providers that read.
func runToEndWith(t *testing.T, rc *rest.Config, ns, exp, script, regex string) ([]providers.Metric, providers.Observation, []string) {
	t.Helper()
	share := t.TempDir()
	code := filepath.Join(share, "code")
	os.MkdirAll(code, 0o755)
	if err := os.WriteFile(filepath.Join(code, "train.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	py, _ := filepathLookPython()
	cfg := k8s.Config{Rest: rc, Namespace: ns, MetricsInterval: time.Millisecond,
		NFS: &k8s.NFS{Server: "127.0.0.1", Path: share, MountPath: share, LocalPath: share}}
	p, err := k8s.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	h, err := p.Start(ctx, providers.StartRequest{Experiment: exp, ExperimentID: "eid", TrialID: "t0", Params: map[string]any{"x": 1},
		Args: []string{py, "train.py"}, CodeDir: code, Lineage: "L", MetricRegex: regex})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(context.Background(), providers.StopRequest{Experiment: exp, TrialID: "t0", Purge: true, Grace: time.Second})
	})
	var all []providers.Metric
	var warned []string
	var off map[string]int64
	for {
		p, err := k8s.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: "t0", Handle: h, MetricsOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		off = o.MetricsOffset
		all = append(all, o.Metrics...)
		warned = append(warned, p.Warnings()...)
		if again := p.Warnings(); len(again) != 0 {
			t.Errorf("warned twice: %q", again)
		}
		if o.Phase.Ended() || o.Phase == providers.PhaseLost {
			return all, o, warned
		}
		if ctx.Err() != nil {
			dump(t, ns)
			t.Fatal("the trial did not end")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func finals(ms []providers.Metric) []string {
	var out []string
	for _, m := range ms {
		if m.Type == "FINAL" {
			out = append(out, m.Value)
		}
	}
	return out
}

// TestRegexFinalPastALongLog: the synthetic final result of metric_regex
// is the last value printed, even past 8 MiB of log (it was the last one
// in the first 8 MiB).
func TestRegexFinalPastALongLog(t *testing.T) {
	need(t)
	ns := namespace(t, "regexlong")
	// The filler comes in two halves more than a second apart, so that no
	// second of the log holds more than one read's worth.
	ms, o := runToEnd(t, ns, "rl", `import sys, time
print("loss=0.9", flush=True)
half = ("x" * 99 + "\n") * 50000
sys.stdout.write(half)
sys.stdout.flush()
time.sleep(2.1)
sys.stdout.write(half)
print("loss=0.1", flush=True)
`, `loss=(?P<value>[0-9.]+)`)
	if o.Phase != providers.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want succeeded", o.Phase, o.Reason)
	}
	if f := finals(ms); len(f) != 1 || f[0] != `{"default":0.1}` {
		t.Fatalf("final results %q, want the last value printed, {\"default\":0.1}", f)
	}
}

// TestMetricsPastABurstOfLog: more than a read's worth of log in one
// second (the cursor's sinceTime) does not stop the reader: the results
// printed after it are read, before the trial is left as ended.
func TestMetricsPastABurstOfLog(t *testing.T) {
	need(t)
	ns := namespace(t, "logburst")
	ms, o := runToEnd(t, ns, "lb", `import nni, sys
nni.get_next_parameter()
sys.stdout.write(("y" * 99 + "\n") * 200000)
sys.stdout.flush()
for i in range(5):
    nni.report_intermediate_result(i)
nni.report_final_result(42)
`, "")
	if o.Phase != providers.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want succeeded", o.Phase, o.Reason)
	}
	n := 0
	for _, m := range ms {
		if m.Type == "PERIODICAL" {
			n++
		}
	}
	if f := finals(ms); n != 5 || len(f) != 1 || f[0] != "42" {
		t.Fatalf("%d intermediate results, final %q; want 5 and 42 (note %q)", n, f, o.Note)
	}
}

// TestForbiddenLogSaysSo: a log the account may not read (no get on
// pods/log) is not silently taken for an empty one: the trial's note
// names the missing permission, and the platform warns once.
func TestForbiddenLogSaysSo(t *testing.T) {
	need(t)
	ns := namespace(t, "logforbidden")
	rc := rest.CopyConfig(cp.Config)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/log") {
				body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"x\" is forbidden: User \"alice\" cannot get resource \"pods/log\"","reason":"Forbidden","code":403}`
				return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
			}
			return rt.RoundTrip(r)
		})
	})
	_, o, w := runToEndWith(t, rc, ns, "lf", `import time
print("loss=0.5", flush=True)
time.sleep(1)
`, `loss=(?P<value>[0-9.]+)`)
	want := "get pods/log in namespace " + ns
	if !strings.Contains(o.Note, "metrics could not be read") || !strings.Contains(o.Note, want) {
		t.Errorf("note %q, want it to say the metrics could not be read, and %q", o.Note, want)
	}
	if len(w) == 0 || !strings.Contains(w[0], want) {
		t.Errorf("warnings %q, want one naming %q", w, want)
	}
}

// TestNaNFinalOnce: a final result that is not a number is returned once,
// not once from the log and again from the termination message.
func TestNaNFinalOnce(t *testing.T) {
	need(t)
	ns := namespace(t, "nanfinal")
	ms, _ := runToEnd(t, ns, "nf", `import nni
nni.get_next_parameter()
nni.report_final_result(float("nan"))
`, "")
	n := 0
	for _, m := range ms {
		if m.Type == "FINAL" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d final results, want 1: %+v", n, ms)
	}
}
