package local

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// Issue 11, bug 15: when a final result arrives on both channels (NNI's
// file and stdout), the one reported last wins, whichever channel.
func TestLastFinalResultWins(t *testing.T) {
	l := newLocal(t, nil)
	code := filepath.Dir(l.cfg.Root)
	script := `
import sys, time
import nni
first, then = sys.argv[1], sys.argv[2]
def report(how, v):
    if how == "file":
        nni.report_final_result(v)
    else:
        print("trialform: %s" % v, flush=True)
report(first, 0.1)
time.sleep(0.5)
report(then, 0.7)
`
	if err := os.WriteFile(filepath.Join(code, "twice.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][2]string{{"stdout", "file"}, {"file", "stdout"}} {
		id := tc[0] + "-then-" + tc[1]
		runToEnd(t, l, req(l, "last", id, "python3 twice.py "+tc[0]+" "+tc[1]))
		o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "last", TrialID: id})
		if err != nil {
			t.Fatal(err)
		}
		last := ""
		for _, m := range o.Metrics {
			if m.Type == "FINAL" {
				last = m.Value
			}
		}
		if o.Phase != providers.PhaseSucceeded || last != "0.7" {
			t.Errorf("%s: phase %s, the last final result read is %q, want the one reported last, 0.7 (%+v)", id, o.Phase, last, o.Metrics)
		}
	}
}

// Issue 11, bug 15: a process a trial started in a new session is killed
// by Stop even when the supervisor (which would kill it) is gone.
func TestStopKillsNewSessionWithoutSupervisor(t *testing.T) {
	l := newLocal(t, nil)
	mark := filepath.Join(filepath.Dir(l.cfg.Root), "daemon.pid")
	h, err := l.Start(context.Background(), req(l, "sess", "t1", "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > "+mark+".tmp; mv "+mark+".tmp "+mark+"; wait"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(eventWait); ; {
		if b, err := os.ReadFile(mark); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the trial did not start its daemon")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sup, _ := strconv.Atoi(h["supervisor_pid"])
	_ = syscall.Kill(sup, syscall.SIGKILL)
	for alive(sup, 0) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Stop(context.Background(), providers.StopRequest{Experiment: "sess", TrialID: "t1", Grace: time.Second, Purge: true}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(eventWait); alive(pid, 0); {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the daemon %d the trial started with setsid outlived Stop", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A trial's end does not read NNI's metric file whole to find whether it
// reported a final result (a host supervises every trial of a run, and the
// file may hold hundreds of MB of intermediate results): what finish
// allocates stays far below the file's size, and it still finds the final
// result behind them, or that there is none.
func TestFinishStreamsNNIMetrics(t *testing.T) {
	dir := t.TempDir()
	var rec []byte
	for i := range 1000 {
		rec = append(rec, trialproto.EncodeMetricRecord(providers.Metric{ParameterID: 3, Sequence: i, Type: trialproto.TypePeriodical, Value: "0.5"}, "t1")...)
	}
	fin := trialproto.EncodeMetricRecord(providers.Metric{ParameterID: 3, Sequence: 0, Type: trialproto.TypeFinal, Value: "0.8"}, "t1")
	const size = 32 << 20
	for _, withFinal := range []bool{true, false} {
		nni := filepath.Join(dir, "metrics"+strconv.FormatBool(withFinal))
		f, err := os.Create(nni)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < size; n += len(rec) {
			if _, err := f.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		if withFinal {
			if _, err := f.Write(fin); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		stdout := filepath.Join(dir, "stdout")
		if err := os.WriteFile(stdout, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "metrics.stdout"+strconv.FormatBool(withFinal))
		sp := &spec{TrialID: "t1", ParameterID: 3}
		tl, err := newTailer(stdout, out, regexp.MustCompile(`(?P<name>loss)=(?P<value>[0-9.]+)`), sp)
		if err != nil {
			t.Fatal(err)
		}
		tl.nni = &nniFollower{path: nni}
		tl.line([]byte("loss=0.25"))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err = tl.finish(nni)
		runtime.ReadMemStats(&after)
		tl.close()
		if err != nil {
			t.Fatal(err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
			t.Errorf("finish allocated %d bytes for a %d-byte NNI file", alloc, size)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		recs, _, _ := trialproto.ParseMetricRecords(b)
		synthetic := 0
		for _, m := range recs {
			if m.Type == trialproto.TypeFinal {
				synthetic++
			}
		}
		if want := map[bool]int{true: 0, false: 1}[withFinal]; synthetic != want {
			t.Errorf("NNI file with a final result %v: %d synthetic final results, want %d", withFinal, synthetic, want)
		}
	}
}
