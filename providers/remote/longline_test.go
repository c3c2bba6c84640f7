package remote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// readAll reads a trial until it ended (and once more) and returns its
// metrics.
func readAll(t *testing.T, r *Remote, exp, id string) []providers.Metric {
	t.Helper()
	var ms []providers.Metric
	off := map[string]int64{}
	for ended := false; ; {
		o, err := r.Read(ctx(t), providers.ReadRequest{Experiment: exp, TrialID: id, MetricsOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, o.Metrics...)
		off = o.MetricsOffset
		if ended {
			return ms
		}
		ended = o.Phase.Ended()
	}
}

// A metric line longer than 1 MiB is not read, as on local, and says so;
// the lines after it are read. With the output cap freeing its middle too.
func TestOverlongMetricLine(t *testing.T) {
	l := testLab(t)
	for _, c := range []struct {
		name  string
		limit int64
	}{{"uncapped", 0}, {"capped", 1 << 20}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := labConfig(t, l)
			cfg.Machines = cfg.Machines[:1]
			cfg.OutputLimit = c.limit
			r := newRemote(t, cfg)
			code := t.TempDir()
			prog := `import os, sys, time
print("trialform: intermediate 1")
sys.stdout.write('trialform: {"a": "' + "x" * (3 << 20) + '"}\n')
sys.stdout.flush()
while ` + map[bool]string{true: "not", false: ""}[c.limit > 0] + ` os.path.exists("../stdout.cut"):
    time.sleep(0.02)
print("trialform: intermediate 2")
print("trialform: 0.5")
`
			if err := os.WriteFile(filepath.Join(code, "long.py"), []byte(prog), 0o644); err != nil {
				t.Fatal(err)
			}
			h, err := r.Start(ctx(t), trialReq("long", "t", "python3 long.py", code))
			if err != nil {
				t.Fatal(err)
			}
			// Read once it ended: with the cap, once its middle is freed.
			waitFile(t, filepath.Join(h["dir"], statusFile), "state=ended")
			var got []string
			for _, m := range readAll(t, r, "long", "t") {
				if m.Garbage != "" {
					got = append(got, "garbage "+m.Garbage)
				} else {
					got = append(got, m.Type+" "+m.Value)
				}
			}
			want := []string{"PERIODICAL 1", `garbage a metric line longer than 1048576 bytes was not read ("trialform: {\"a\": \"xxxxxxxxxxxxxxxxxxxxxx"...)`, "PERIODICAL 2", "FINAL 0.5"}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("metrics:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// An overlong line read while it is still being written: its rest, read
// later, is skipped as well.
func TestOverlongMetricLineAcrossReads(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	code := t.TempDir()
	prog := `import os, sys, time
sys.stdout.write('trialform: {"a": "' + "x" * (2 << 20))
sys.stdout.flush()
while not os.path.exists("go"):
    time.sleep(0.02)
sys.stdout.write("x" * (2 << 20) + '"}\ntrialform: 0.5\n')
`
	if err := os.WriteFile(filepath.Join(code, "long.py"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := r.Start(ctx(t), trialReq("long", "t", "python3 long.py", code))
	if err != nil {
		t.Fatal(err)
	}
	goFile := filepath.Join(h["dir"], "code", "go")
	defer os.WriteFile(goFile, nil, 0o644) // (a failed test's trial ends too)
	out := filepath.Join(h["dir"], stdoutFile)
	deadline := time.Now().Add(eventWait)
	for {
		if fi, err := os.Stat(out); err == nil && fi.Size() > 2<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the trial never wrote its first 2 MiB")
		}
		time.Sleep(20 * time.Millisecond)
	}
	o, err := r.Read(ctx(t), providers.ReadRequest{Experiment: "long", TrialID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Metrics) != 1 || !strings.HasPrefix(o.Metrics[0].Garbage, "a metric line longer than 1048576 bytes was not read") {
		t.Fatalf("first read: %+v", o.Metrics)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(h["dir"], statusFile), "state=ended")
	o, err = r.Read(ctx(t), providers.ReadRequest{Experiment: "long", TrialID: "t", MetricsOffset: o.MetricsOffset})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Metrics) != 1 || o.Metrics[0].Type != "FINAL" || o.Metrics[0].Value != "0.5" {
		t.Errorf("after the line's end: %+v", o.Metrics)
	}
}
