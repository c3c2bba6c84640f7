package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// runToEnd starts a trial and waits, without reading its metrics, until
// its supervisor exited (the Changed event): the case of `apply` without
// -wait and a later refresh that finds everything waiting.
func runToEnd(t *testing.T, l *Local, r providers.StartRequest) {
	t.Helper()
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case <-l.Changed():
		case <-time.After(eventWait):
			t.Fatalf("trial %s did not end", r.TrialID)
		}
		obs, err := l.List(context.Background(), r.Experiment)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range obs {
			if o.TrialID == r.TrialID && o.Phase.Ended() {
				return
			}
		}
	}
}

func count(ms []providers.Metric) (periodical int, finals []string, garbage []string) {
	for _, m := range ms {
		switch {
		case m.Garbage != "":
			garbage = append(garbage, m.Garbage)
		case m.Type == "PERIODICAL":
			periodical++
		default:
			finals = append(finals, m.Value)
		}
	}
	return
}

// Issue 11, bug 11: a final result behind more than 64 MB of metric
// records is reached by one Read, which keeps at most MaxIntermediate
// intermediate results and says how many it dropped.
func TestFinalBehindManyMetricRecords(t *testing.T) {
	t.Parallel()
	l := newLocal(t, nil)
	// 700,000 NNI records (about 90 MB) in .nni/metrics, then the final.
	py := `
import os
d = os.path.join(os.environ["NNI_SYS_DIR"], ".nni")
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "metrics"), "ab") as f:
    def rec(t, seq, v):
        s = ('{"parameter_id": 3, "trial_job_id": "t1", "type": "%s", "sequence": %d, "value": "%s"}\n' % (t, seq, v)).encode()
        return b"ME%06d%b" % (len(s), s)
    f.write(b"".join(rec("PERIODICAL", i, "0.5") for i in range(700000)))
    f.write(rec("FINAL", 0, "0.25"))
`
	if err := os.WriteFile(filepath.Join(filepath.Dir(l.cfg.Root), "flood.py"), []byte(py), 0o644); err != nil {
		t.Fatal(err)
	}
	r := req(l, "big", "t1", "python3 flood.py")
	runToEnd(t, l, r)
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "big", TrialID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	p, finals, garbage := count(o.Metrics)
	if o.Phase != providers.PhaseSucceeded || len(finals) != 1 || finals[0] != "0.25" || len(garbage) != 0 {
		t.Fatalf("phase %s, finals %v, garbage %v", o.Phase, finals, garbage)
	}
	if p != providers.MaxIntermediate || !strings.Contains(o.Note, "600000 intermediate results past the first 100000") {
		t.Errorf("%d intermediate results, note %q", p, o.Note)
	}
	// Nothing more, and the note stays.
	o2, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "big", TrialID: "t1", MetricsOffset: o.MetricsOffset})
	if err != nil {
		t.Fatal(err)
	}
	if len(o2.Metrics) != 0 || o2.Note != o.Note {
		t.Errorf("second read: %d metrics, note %q", len(o2.Metrics), o2.Note)
	}
}

// The reproduction: metric_regex over 700,000 lines. The
// supervisor records at most MaxIntermediate of them, the final result
// (the last values) is reached.
func TestRegexFloodReachesFinal(t *testing.T) {
	t.Parallel()
	l := newLocal(t, nil)
	r := req(l, "big", "t2", "yes 'loss=0.5' | head -n 700000")
	r.MetricRegex = `(?P<name>loss)=(?P<value>[0-9.]+)`
	runToEnd(t, l, r)
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "big", TrialID: "t2"})
	if err != nil {
		t.Fatal(err)
	}
	p, finals, _ := count(o.Metrics)
	if o.Phase != providers.PhaseSucceeded || len(finals) != 1 || finals[0] != `{"loss":0.5}` {
		t.Fatalf("phase %s, finals %v", o.Phase, finals)
	}
	if p != providers.MaxIntermediate || !strings.Contains(o.Note, "600000 intermediate results") {
		t.Errorf("%d intermediate results, note %q", p, o.Note)
	}
	fi, err := os.Stat(filepath.Join(l.cfg.Root, "big", "t2", stdoutMetrics))
	if err != nil || fi.Size() > 20<<20 {
		t.Errorf("metrics.stdout: %v, %d bytes", err, fi.Size())
	}
}

// Trial stdout is capped on disk (first and latest half of OutputLimit);
// every metric line is still read, logs say what was cut.
func TestStdoutCapped(t *testing.T) {
	l := newLocal(t, func(c *Config) { c.OutputLimit = 1 << 20 })
	r := req(l, "big", "t3", "echo first-line; yes 'some output of the trial' | head -c 30000000; echo; echo 'trialform: intermediate 0.5'; echo last-line; echo 'trialform: 0.25'")
	runToEnd(t, l, r)
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "big", TrialID: "t3"})
	if err != nil {
		t.Fatal(err)
	}
	p, finals, _ := count(o.Metrics)
	if p != 1 || len(finals) != 1 || finals[0] != "0.25" {
		t.Errorf("%d intermediate, finals %v", p, finals)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(l.cfg.Root, "big", "t3", stdoutFile), &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 2<<20 {
		t.Errorf("stdout uses %d bytes on disk, want about 1 MiB", used)
	}
	if !strings.Contains(o.Note, "stdout is over the 1 MiB kept per trial") {
		t.Errorf("note %q", o.Note)
	}
	var b strings.Builder
	if err := l.Logs(context.Background(), providers.LogsRequest{Experiment: "big", TrialID: "t3", Out: &b}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if !strings.HasPrefix(s, "first-line\n") || !strings.Contains(s, "last-line\n") || !strings.Contains(s, "bytes of stdout not kept here") || len(s) > 2<<20 || strings.Contains(s, "\x00") {
		t.Errorf("logs: %d bytes, head %q", len(s), s[:min(len(s), 200)])
	}
}

// A metric line over the 1 MiB limit is not read, and the note of a trial
// that succeeds all the same (its final result came on a later line) says
// so, at every Read: the record that says it is returned once.
func TestOverlongMetricLineNote(t *testing.T) {
	l := newLocal(t, nil)
	r := req(l, "big", "t4", `printf 'trialform: {"default": 0.'; head -c 2097152 /dev/zero | tr '\0' 1; echo '}'; echo 'trialform: 0.8'`)
	runToEnd(t, l, r)
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "big", TrialID: "t4"})
	if err != nil {
		t.Fatal(err)
	}
	_, finals, garbage := count(o.Metrics)
	if o.Phase != providers.PhaseSucceeded || len(finals) != 1 || finals[0] != "0.8" || len(garbage) != 1 {
		t.Fatalf("phase %s, finals %v, garbage %v", o.Phase, finals, garbage)
	}
	const want = "a metric line longer than 1048576 bytes was not read"
	if o.Note != want {
		t.Errorf("note %q, want %q", o.Note, want)
	}
	o2, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "big", TrialID: "t4", MetricsOffset: o.MetricsOffset})
	if err != nil {
		t.Fatal(err)
	}
	if len(o2.Metrics) != 0 || o2.Note != want {
		t.Errorf("second read: %d metrics, note %q", len(o2.Metrics), o2.Note)
	}
}

// The lines the output cap tore at either edge of the freed middle are
// left out of logs: a secret printed on every line would otherwise show
// as a piece ("s3cr3t-To", "k3n-9f8e7d") that no mask recognises as it.
// The first edge (512 KiB) falls inside the 26-byte line's secret.
func TestStdoutCappedTearsNoLine(t *testing.T) {
	l := newLocal(t, func(c *Config) { c.OutputLimit = 1 << 20 })
	const line = "using s3cr3t-Tok3n-9f8e7d"
	r := req(l, "torn", "t1", "yes '"+line+"' | head -n 200000; echo 'trialform: 0.25'")
	runToEnd(t, l, r)
	var b strings.Builder
	if err := l.Logs(context.Background(), providers.LogsRequest{Experiment: "torn", TrialID: "t1", Out: &b}); err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, got := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		switch {
		case got == line || got == "trialform: 0.25":
		case strings.HasPrefix(got, "[trialform: ") && strings.Contains(got, "bytes of stdout not kept here"):
			notes++
		default:
			t.Errorf("logs show a torn line %q", got)
		}
	}
	if notes != 1 {
		t.Errorf("%d notes of the cut, want 1", notes)
	}
}
