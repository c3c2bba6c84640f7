package remote

import (
	"testing"

	"github.com/trialform/trialform/providers"
)

// lastFinal returns the value of the last valid final result in ms.
func lastFinal(ms []providers.Metric) string {
	v := ""
	for _, m := range ms {
		if m.Type == "FINAL" && m.Garbage == "" {
			v = m.Value
		}
	}
	return v
}

// A final result written to NNI's file after one printed on stdout wins,
// as on the local platform, though a refresh sees both at once.
func TestFinalInNNIFileAfterStdoutWins(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	// The trial prints its final result, waits until the supervisor has
	// seen stdout grow (or 5s), then writes another to NNI's file.
	shell := `echo 'trialform: 1'
i=0
while [ $i -lt 500 ] && ! awk '$1 > 0 { f = 1 } END { exit !f }' "$NNI_SYS_DIR/ticks" 2>/dev/null; do sleep 0.01; i=$((i + 1)); done
j='{"parameter_id": 1, "trial_job_id": "t", "type": "FINAL", "sequence": 0, "value": "2"}'
printf 'ME%06d%s' ${#j} "$j" >>"$NNI_SYS_DIR/.nni/metrics"
`
	if _, err := r.Start(ctx(t), trialReq("order", "t", shell, t.TempDir())); err != nil {
		t.Fatal(err)
	}
	o := waitPhase(t, r, "order", "t", providers.PhaseSucceeded)
	if got := lastFinal(o.Metrics); got != "2" {
		t.Fatalf("last final result %q, want 2 (NNI's file, written last); metrics %+v", got, o.Metrics)
	}
}

// And one printed on stdout after one in NNI's file wins too.
func TestFinalOnStdoutAfterNNIFileWins(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	shell := `j='{"parameter_id": 1, "trial_job_id": "t", "type": "FINAL", "sequence": 0, "value": "2"}'
printf 'ME%06d%s' ${#j} "$j" >>"$NNI_SYS_DIR/.nni/metrics"
i=0
while [ $i -lt 500 ] && ! awk '$2 > 0 { f = 1 } END { exit !f }' "$NNI_SYS_DIR/ticks" 2>/dev/null; do sleep 0.01; i=$((i + 1)); done
echo 'trialform: 1'
`
	if _, err := r.Start(ctx(t), trialReq("order", "t2", shell, t.TempDir())); err != nil {
		t.Fatal(err)
	}
	o := waitPhase(t, r, "order", "t2", providers.PhaseSucceeded)
	if got := lastFinal(o.Metrics); got != "1" {
		t.Fatalf("last final result %q, want 1 (stdout, written last); metrics %+v", got, o.Metrics)
	}
}
