package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trialform/trialform/providers"
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
