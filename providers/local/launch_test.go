package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// The readiness pipe and its variable stay between Start and the
// supervisor: the trial sees neither.
func TestTrialDoesNotInheritReadyPipe(t *testing.T) {
	l := newLocal(t, nil)
	shell := `if [ -e /dev/fd/3 ]; then echo fd3-open; fi; env | grep -c READY_FD || true`
	h, err := l.Start(context.Background(), req(l, "exp", "t1", shell))
	if err != nil {
		t.Fatal(err)
	}
	if h["pid"] == "" {
		t.Errorf("Start returned before the trial started: %v", h)
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseSucceeded {
		t.Fatalf("%+v", o)
	}
	out, err := os.ReadFile(filepath.Join(l.cfg.Root, "exp", "t1", stdoutFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "0" {
		t.Errorf("trial output %q, want 0 (no fd 3, no %s)", got, readyFDEnv)
	}
}

// List decodes a trial's files once but still sees every replacement.
func TestListSeesReplacedFiles(t *testing.T) {
	l := newLocal(t, nil)
	dir := filepath.Join(l.cfg.Root, "exp", "t1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	code := 0
	steps := []struct {
		name   string
		sp     *spec
		st     *status
		phase  providers.Phase
		reason string
	}{
		{"spec only", &spec{Experiment: "exp", TrialID: "t1", Attempt: 1, Lineage: "a"}, nil, providers.PhaseLost, "the supervisor never started the trial"},
		{"unchanged", nil, nil, providers.PhaseLost, "the supervisor never started the trial"},
		{"ended", nil, &status{Attempt: 1, State: stateEnded, Outcome: outcomeExited, ExitCode: &code, EndedAt: &now}, providers.PhaseSucceeded, ""},
		{"unchanged again", nil, nil, providers.PhaseSucceeded, ""},
		{"new attempt", &spec{Experiment: "exp", TrialID: "t1", Attempt: 2, Lineage: "a"}, nil, providers.PhaseLost, "the supervisor never started the trial"},
		{"stopped", nil, &status{Attempt: 2, State: stateEnded, Outcome: outcomeStopped, Reason: "bye", EndedAt: &now}, providers.PhaseKilled, "bye"},
	}
	for _, s := range steps {
		if s.sp != nil {
			if err := writeJSON(filepath.Join(dir, specFile), s.sp); err != nil {
				t.Fatal(err)
			}
		}
		if s.st != nil {
			f, err := openStatusLog(dir)
			if err != nil {
				t.Fatal(err)
			}
			err = appendStatus(f, s.st, false)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		obs, err := l.List(context.Background(), "exp")
		if err != nil {
			t.Fatal(err)
		}
		if len(obs) != 1 || obs[0].Phase != s.phase || obs[0].Reason != s.reason || obs[0].Lineage != "a" {
			t.Fatalf("%s: List = %+v, want phase %s, reason %q", s.name, obs, s.phase, s.reason)
		}
		// Observations never share the cached status.
		if obs[0].EndedAt != nil {
			*obs[0].EndedAt = time.Time{}
		}
	}
	obs, err := l.List(context.Background(), "exp")
	if err != nil || len(obs) != 1 || obs[0].EndedAt == nil || !obs[0].EndedAt.Equal(now) {
		t.Fatalf("List after a caller changed an observation = %+v, %v", obs, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if obs, err := l.List(context.Background(), "exp"); err != nil || len(obs) != 0 {
		t.Fatalf("List after purge = %+v, %v", obs, err)
	}
}

// A status log's last complete record is the status; a record cut short
// by a crash is skipped; a trial dir from before status.log (status.json
// only) is still read.
func TestStatusLogRecords(t *testing.T) {
	dir := t.TempDir()
	if st, err := readStatus(dir); err != nil || st != nil {
		t.Fatalf("empty dir: %+v, %v", st, err)
	}
	if err := writeJSON(filepath.Join(dir, statusFile), &status{Attempt: 1, State: stateEnded, Outcome: outcomeExited}); err != nil {
		t.Fatal(err)
	}
	if st, err := readStatus(dir); err != nil || st == nil || st.Attempt != 1 || st.State != stateEnded {
		t.Fatalf("legacy status.json alone: %+v, %v", st, err)
	}
	f, err := openStatusLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Start creates the log before it launches a new attempt: until that
	// attempt's first record there is no status (not the old attempt's).
	if st, err := readStatus(dir); err != nil || st != nil {
		t.Fatalf("legacy status.json beside an empty log: %+v, %v", st, err)
	}
	for _, st := range []status{{Attempt: 2, State: stateStarting}, {Attempt: 2, State: stateRunning, PID: 42}} {
		if err := appendStatus(f, &st, false); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := readStatus(dir); err != nil || st == nil || st.Attempt != 2 || st.State != stateRunning || st.PID != 42 {
		t.Fatalf("log over legacy file: %+v, %v", st, err)
	}
	// A torn last record (a crash mid-write), then garbage ending a line.
	for _, torn := range []string{`{"attempt":2,"state":"ended","outc`, "\n{not json\n"} {
		if _, err := f.WriteString(torn); err != nil {
			t.Fatal(err)
		}
		if st, err := readStatus(dir); err != nil || st == nil || st.State != stateRunning || st.PID != 42 {
			t.Fatalf("after %q: %+v, %v", torn, st, err)
		}
	}
	if err := appendStatus(f, &status{Attempt: 2, State: stateEnded, Outcome: outcomeExited}, true); err != nil {
		t.Fatal(err)
	}
	if st, err := readStatus(dir); err != nil || st == nil || st.State != stateEnded {
		t.Fatalf("after the end record: %+v, %v", st, err)
	}
}

// A machine crash can leave spec.json empty (it is not fsynced): the trial
// reads as not there (the state then resumes it), and its next attempt is
// numbered past what status.log kept.
func TestEmptySpecAfterACrash(t *testing.T) {
	l := newLocal(t, nil)
	r := req(l, "exp", "t1", `echo 'trialform: {"default": 0.5}'`)
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, l, "exp", "t1")
	dir := filepath.Join(l.cfg.Root, "exp", "t1")
	if err := os.WriteFile(filepath.Join(dir, specFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := l.Read(context.Background(), providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	if err != nil || o.Exists {
		t.Fatalf("Read with an empty spec.json: %+v, %v", o, err)
	}
	r.Resume = true
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatalf("Start over an empty spec.json: %v", err)
	}
	if o := waitEnded(t, l, "exp", "t1"); o.Phase != providers.PhaseSucceeded || o.Handle["attempt"] != "2" {
		t.Fatalf("after the resume: %+v", o)
	}
}

// parameter.cfg, written by the supervisor from spec.json, shows the
// planned numbers exactly: an integer past 2^53 is not rounded through a
// float64.
func TestParameterCfgKeepsBigIntegers(t *testing.T) {
	l := newLocal(t, nil)
	r := req(l, "exp", "t1", `cat "$NNI_SYS_DIR/parameter.cfg" > /dev/null`)
	r.Params = map[string]any{"n": int64(9007199254740993), "lr": 0.1}
	if _, err := l.Start(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, l, "exp", "t1")
	dir := filepath.Join(l.cfg.Root, "exp", "t1")
	b, err := os.ReadFile(filepath.Join(dir, paramCfgFile))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"parameter_id":3,"parameter_source":"algorithm","parameters":{"lr":0.1,"n":9007199254740993},"parameter_index":0}`
	if string(b) != want {
		t.Errorf("parameter.cfg = %s\nwant %s", b, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, paramsFile)); err != nil || string(b) != `{"lr":0.1,"n":9007199254740993}` {
		t.Errorf("params.json = %s, %v", b, err)
	}
}
