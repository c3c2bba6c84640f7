package remote

import (
	"strings"
	"testing"
	"time"

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
	// seen stdout grow (or 5 minutes), then writes another to NNI's file.
	shell := `echo 'trialform: 1'
i=0
while [ $i -lt 30000 ] && ! awk '$1 > 0 { f = 1 } END { exit !f }' "$NNI_SYS_DIR/ticks" 2>/dev/null; do sleep 0.01; i=$((i + 1)); done
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
while [ $i -lt 30000 ] && ! awk '$2 > 0 { f = 1 } END { exit !f }' "$NNI_SYS_DIR/ticks" 2>/dev/null; do sleep 0.01; i=$((i + 1)); done
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

// Issue 25, wrong numbers 3: results without a time of their own (stdout
// lines, NNI's file written by another library) are dated by the
// supervisor's tick-times: the last write that reached them, not the Read
// that found them. The trial reports on both channels with gaps of 0.5 s
// (files' times come from a coarser clock: 0.4 s is asserted),
// each after the supervisor has seen the one before (an event, not a
// time); one Read after its end sees them all.
func TestResultsDatedByTheSupervisor(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	shell := `d=$NNI_SYS_DIR
seen() { # seen FIELD FILE: wait until tick-times has FILE's size in FIELD
	s=$(wc -c <"$2")
	i=0
	while [ $i -lt 30000 ] && ! awk -v f="$1" -v s="$s" '$f >= s { ok = 1 } END { exit !ok }' "$d/tick-times" 2>/dev/null; do sleep 0.01; i=$((i + 1)); done
}
mkdir -p "$d/.nni"
for i in 0 1 2; do
	echo "trialform: intermediate $i"
	seen 1 "$d/stdout"
	j='{"parameter_id": 1, "trial_job_id": "t", "type": "PERIODICAL", "sequence": '$i', "value": "'$i'"}'
	printf 'ME%06d%s' ${#j} "$j" >>"$d/.nni/metrics"
	seen 2 "$d/.nni/metrics"
	sleep 0.5
done
echo 'trialform: 1'
`
	if _, err := r.Start(ctx(t), trialReq("dates", "t", shell, t.TempDir())); err != nil {
		t.Fatal(err)
	}
	o := waitPhase(t, r, "dates", "t", providers.PhaseSucceeded)
	// NNI's file comes first in a Read, then stdout.
	var nni, out []time.Time
	for _, m := range o.Metrics {
		switch {
		case m.Type != "PERIODICAL":
		case len(nni) < 3:
			nni = append(nni, m.Time)
		default:
			out = append(out, m.Time)
		}
	}
	for name, ts := range map[string][]time.Time{"NNI's file": nni, "stdout": out} {
		if len(ts) != 3 {
			t.Fatalf("%s: %d intermediate results, want 3: %+v", name, len(ts), o.Metrics)
		}
		for i, x := range ts {
			// The supervisor records the start just after it spawns the trial, so
			// a result printed at once may be dated up to a moment before it.
			if x.IsZero() || x.Before(o.StartedAt.Add(-time.Second)) || x.After(*o.EndedAt) {
				t.Errorf("%s result %d dated %v, outside the trial's run %v..%v", name, i, x, o.StartedAt, o.EndedAt)
			}
			if i > 0 && x.Sub(ts[i-1]) < 400*time.Millisecond {
				t.Errorf("%s results %d and %d dated %v apart, reported at least 0.4 s apart", name, i-1, i, x.Sub(ts[i-1]))
			}
		}
	}
}

// A trial that leaves a FIFO where NNI's metric file goes blocks no read
// over SFTP (the server's open(2) would wait for a writer for ever, and
// every request of the connection behind it): the FIFO is refused, the
// trial's other results still arrive, and its metrics report why the file
// was ignored (issue 25, item E).
func TestNNIFileFIFOBlocksNothing(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	shell := `mkdir -p "$NNI_SYS_DIR/.nni" && rm -f "$NNI_SYS_DIR/.nni/metrics" && mkfifo "$NNI_SYS_DIR/.nni/metrics"
echo 'trialform: 1'
`
	if _, err := r.Start(ctx(t), trialReq("fifo", "t", shell, t.TempDir())); err != nil {
		t.Fatal(err)
	}
	o := waitPhase(t, r, "fifo", "t", providers.PhaseSucceeded)
	if got := lastFinal(o.Metrics); got != "1" {
		t.Fatalf("last final result %q, want 1 (stdout); metrics %+v", got, o.Metrics)
	}
	said := false
	for _, m := range o.Metrics {
		said = said || strings.Contains(m.Garbage, ".nni/metrics is a named pipe (FIFO), not a regular file")
	}
	if !said {
		t.Fatalf("the metrics do not say the FIFO was ignored: %+v", o.Metrics)
	}
}
