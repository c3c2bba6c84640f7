package local

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"

	"golang.org/x/sys/unix"
)

// waitGone waits until pid is gone or a zombie.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(eventWait); alive(pid, 0); {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still there", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTrialEndsWithoutSupervisor kills -9 the supervisor of a running
// trial (real processes), then lets the trial report its final result and
// exit 0. Its exit was not recorded, but it reported its final result:
// it ends succeeded with a note saying so, never lost (and resumed), and
// its final result is returned once. A trial that ends without a final
// result stays lost, as before.
func TestTrialEndsWithoutSupervisor(t *testing.T) {
	nniFinal := `
mkdir -p "$NNI_SYS_DIR/.nni"
rec='{"parameter_id": 3, "trial_job_id": "t1", "type": "FINAL", "sequence": 0, "value": "0.75"}'
printf 'ME%06d%s\n' $(( ${#rec} + 1 )) "$rec" >> "$NNI_SYS_DIR/.nni/metrics"`
	stdoutFinal := `echo 'trialform: 0.75'`
	for _, tc := range []struct {
		name string
		// before: reported before the kill (seen by the supervisor);
		// after: after it.
		before, after string
		want          providers.Phase
	}{
		{name: "NNIFileAfterKill", after: nniFinal, want: providers.PhaseSucceeded},
		{name: "StdoutAfterKill", after: stdoutFinal, want: providers.PhaseSucceeded},
		{name: "StdoutBeforeKill", before: stdoutFinal, want: providers.PhaseSucceeded},
		{name: "NoFinal", after: `echo 'trialform: intermediate 0.5'`, want: providers.PhaseLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLocal(t, nil)
			code := t.TempDir()
			script := `echo 'some output'
` + tc.before + `
echo yes > "$NNI_OUTPUT_DIR/running"
while [ ! -e go ]; do sleep 0.01; done
` + tc.after + `
exit 0`
			r := req(l, "exp", "t1", script)
			r.CodeDir = code
			h, err := l.Start(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(l.cfg.Root, "exp", "t1")
			waitFile(t, filepath.Join(dir, outputDir, "running"))
			var off map[string]int64
			var finals []string
			read := func() providers.Observation {
				t.Helper()
				o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1", MetricsOffset: off})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range o.Metrics {
					if m.Type == trialproto.TypeFinal && m.Garbage == "" {
						finals = append(finals, m.Value)
					}
				}
				off = o.MetricsOffset
				return o
			}
			if tc.before != "" {
				// The supervisor saw the final result before it was killed.
				for deadline := time.Now().Add(eventWait); len(finals) == 0; time.Sleep(10 * time.Millisecond) {
					if read(); time.Now().After(deadline) {
						t.Fatal("the final result reported before the kill was not read")
					}
				}
			}
			sup, _ := strconv.Atoi(h["supervisor_pid"])
			pid, _ := strconv.Atoi(h["pid"])
			if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitGone(t, sup)
			if err := os.WriteFile(filepath.Join(code, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			waitGone(t, pid)
			o := waitEnded(t, l, "exp", "t1")
			read()
			if o.Phase != tc.want {
				t.Fatalf("phase %s, want %s: %+v", o.Phase, tc.want, o)
			}
			if tc.want == providers.PhaseLost {
				if len(finals) != 0 {
					t.Errorf("final results %v, want none", finals)
				}
				if !strings.Contains(o.Reason, "without reporting a final result") {
					t.Errorf("reason %q does not say why it is lost", o.Reason)
				}
				return
			}
			if len(finals) != 1 || finals[0] != "0.75" {
				t.Errorf("final results %q, want one, 0.75", finals)
			}
			if o.ExitCode != nil {
				t.Errorf("exit code %d: nobody recorded it", *o.ExitCode)
			}
			for _, s := range []string{o.Reason, o.Note} {
				if !strings.Contains(s, "exit status was not recorded") || !strings.Contains(s, "final result") {
					t.Errorf("reason/note %q does not say the exit was not recorded after its final result", s)
				}
			}
			// Stable: read again, and as List sees it.
			if o := read(); o.Phase != providers.PhaseSucceeded {
				t.Errorf("read again: %+v", o)
			}
			if len(finals) != 1 {
				t.Errorf("final results %q after a second read, want one", finals)
			}
			obs, err := l.List(context.Background(), "exp")
			if err != nil || len(obs) != 1 || obs[0].Phase != providers.PhaseSucceeded {
				t.Errorf("List: %+v, %v", obs, err)
			}
		})
	}
}

// TestEndRecordRetried makes the supervisor's write of the trial's end
// fail, then work again, with real processes: the trial ends while the
// supervisor cannot write its status log; the supervisor keeps the record
// and retries, so the trial is never lost meanwhile, and once writes work
// again its exit status (0) is recorded, once. Tests may run as root,
// where a chmod of the trial dir does not stop writes (and the status log
// is written through a descriptor opened before): the supervisor's writes
// are made to fail with a file size limit (RLIMIT_FSIZE, set on it with
// prlimit, to the status log's size: EFBIG), a real failure of the same
// write.
func TestEndRecordRetried(t *testing.T) {
	for _, mode := range []string{"host", "per-trial"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "per-trial" {
				t.Setenv(hostModeEnv, "per-trial")
			}
			l := newLocal(t, nil)
			code := t.TempDir()
			script := `
echo yes > "$NNI_OUTPUT_DIR/running"
while [ ! -e go ]; do sleep 0.01; done
mkdir -p "$NNI_SYS_DIR/.nni"
rec='{"parameter_id": 3, "trial_job_id": "t1", "type": "FINAL", "sequence": 0, "value": "0.75"}'
printf 'ME%06d%s\n' $(( ${#rec} + 1 )) "$rec" >> "$NNI_SYS_DIR/.nni/metrics"
exit 0`
			r := req(l, "exp", "t1", script)
			r.CodeDir = code
			h, err := l.Start(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(l.cfg.Root, "exp", "t1")
			waitFile(t, filepath.Join(dir, outputDir, "running"))
			sup, _ := strconv.Atoi(h["supervisor_pid"])
			pid, _ := strconv.Atoi(h["pid"])
			var old unix.Rlimit
			if err := unix.Prlimit(sup, unix.RLIMIT_FSIZE, nil, &old); err != nil {
				t.Fatal(err)
			}
			// Every append to status.log fails; the supervisor's log,
			// shorter, takes its message.
			fi, err := os.Stat(filepath.Join(dir, statusLog))
			if err != nil {
				t.Fatal(err)
			}
			tiny := unix.Rlimit{Cur: uint64(fi.Size()), Max: old.Max}
			if err := unix.Prlimit(sup, unix.RLIMIT_FSIZE, &tiny, nil); err != nil {
				t.Fatal(err)
			}
			restored := false
			restore := func() {
				if !restored {
					restored = true
					if err := unix.Prlimit(sup, unix.RLIMIT_FSIZE, &old, nil); err != nil {
						t.Errorf("restore the supervisor's file size limit: %v", err)
					}
				}
			}
			defer restore()
			if err := os.WriteFile(filepath.Join(code, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			waitGone(t, pid)
			// The supervisor says it cannot record the end, and retries.
			logPath := filepath.Join(dir, supervisorLog)
			if mode == "host" {
				logPath = filepath.Join(l.cfg.Root, hostLogName)
			}
			for deadline := time.Now().Add(eventWait); ; time.Sleep(10 * time.Millisecond) {
				b, _ := os.ReadFile(logPath)
				if strings.Contains(string(b), "cannot record the trial's end") {
					break
				}
				o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
				if err != nil {
					t.Fatal(err)
				}
				if o.Phase != providers.PhaseRunning {
					t.Fatalf("while its end cannot be written: %+v\n%s: %s", o, logPath, b)
				}
				if time.Now().After(deadline) {
					t.Fatalf("the supervisor did not say it cannot record the end\n%s: %s", logPath, b)
				}
			}
			for i := 0; i < 10; i++ {
				o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
				if err != nil || o.Phase != providers.PhaseRunning {
					t.Fatalf("while the supervisor retries: %+v, %v", o, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			restore()
			o := waitEnded(t, l, "exp", "t1")
			if o.Phase != providers.PhaseSucceeded || o.ExitCode == nil || *o.ExitCode != 0 || strings.Contains(o.Note, "not recorded") {
				t.Fatalf("after writes work again: %+v", o)
			}
			b, _ := os.ReadFile(filepath.Join(dir, statusLog))
			if n := strings.Count(string(b), `"state":"ended"`); n != 1 {
				t.Errorf("%d end records, want 1:\n%s", n, b)
			}
			if st := lastStatus(b); st == nil || st.State != stateEnded || st.Attempt != 1 {
				t.Errorf("last status %+v:\n%s", st, b)
			}
		})
	}
}
