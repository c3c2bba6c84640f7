package backendtest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendtest"
)

// The local backend (the files of a .trialform directory) through the
// suite. Its faults are what a crash or a person does to those files.
func TestLocalBackend(t *testing.T) {
	// The suite skips a fault case only for a backend that cannot be put
	// in that fault; the local backend can be put in every one, so none of
	// its cases may skip.
	st := localStore(t)
	if st.TearLastChange == nil || st.CorruptChange == nil || st.LoseState == nil || st.TearMetrics == nil {
		t.Fatal("the local store must provide every fault: its suite would skip a case")
	}
	backendtest.Run(t, localStore)
}

// localStore is a fresh local store with its faults.
func localStore(t *testing.T) *backendtest.Store {
	dir := filepath.Join(t.TempDir(), ".trialform")
	journal := filepath.Join(dir, state.JournalName)
	// records returns the journal's records, each with its newline.
	records := func(t *testing.T) [][]byte {
		data, err := os.ReadFile(journal)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	}
	write := func(t *testing.T, path string, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &backendtest.Store{
		Open: func() state.Backend { return state.Open(dir) },
		// A record's write interrupted: part of its line, no newline.
		TearLastChange: func(t *testing.T, keep float64) {
			recs := records(t)
			last := recs[len(recs)-1]
			cut := min(max(1, int(keep*float64(len(last)))), len(last)-1)
			recs[len(recs)-1] = last[:cut]
			write(t, journal, bytes.Join(recs, nil))
		},
		// A byte of record n's payload flipped.
		CorruptChange: func(t *testing.T, n int) {
			recs := records(t)
			if n >= len(recs) {
				t.Fatalf("the journal has %d records: %d is the last or past it", len(recs), n)
			}
			rec := bytes.Clone(recs[n-1])
			rec[len(rec)/2] ^= 0x01
			recs[n-1] = rec
			write(t, journal, bytes.Join(recs, nil))
		},
		// state.json deleted (by hand, or a lost disk's copy).
		LoseState: func(t *testing.T) {
			if err := os.Remove(filepath.Join(dir, state.FileName)); err != nil {
				t.Fatal(err)
			}
		},
		// An append interrupted: a point without its newline.
		TearMetrics: func(t *testing.T, experiment, trial string) {
			f, err := os.OpenFile(filepath.Join(dir, "metrics", experiment, trial+".jsonl"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(`{"type":"PERIODICAL","seque`); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// Broken backends: the local one with one promise of the contract broken.
// Each must fail the suite, in the case that checks that promise.
var breakages = map[string]struct {
	wrap func(state.Backend) state.Backend
	want string // the failing case
}{
	"no-lock":        {func(b state.Backend) state.Backend { return noLock{b} }, "LockContention"},
	"sorted-series":  {func(b state.Backend) state.Backend { return sortedSeries{b} }, "MetricSeries"},
	"torn-is-error":  {func(b state.Backend) state.Backend { return tornIsError{b} }, "TornChange/keep=0.5"},
	"forgets-marks":  {func(b state.Backend) state.Backend { return forgetsMarks{b} }, "RefreshMarks"},
	"no-lost-checks": {func(b state.Backend) state.Backend { return noLost{b} }, "LostState"},
}

type noLock struct{ state.Backend }

func (noLock) Lock(ctx context.Context, op, version string, timeout time.Duration) (*state.Lock, error) {
	return state.NewLock(state.NewLockInfo(op, version, "nowhere"), func() error { return nil }), nil
}

type sortedSeries struct{ state.Backend }

func (b sortedSeries) ReadMetrics(e, id string) ([]state.MetricPoint, error) {
	pts, err := b.Backend.ReadMetrics(e, id)
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].Sequence < pts[j].Sequence })
	return pts, err
}

type tornIsError struct{ state.Backend }

func (b tornIsError) Load() (*state.State, error) {
	s, err := b.Backend.Load()
	if err == nil && len(b.Warnings()) > 0 {
		return nil, errors.New("torn")
	}
	return s, err
}

type forgetsMarks struct{ state.Backend }

func (forgetsMarks) RefreshedAt(string) map[string]time.Time { return map[string]time.Time{} }

type noLost struct{ state.Backend }

func (noLost) Lost() (*state.LostState, error) { return nil, nil }

// TestBrokenBackend runs the suite against one broken backend (named by
// BACKENDTEST_BROKEN); TestSuiteCatchesBrokenBackends runs it.
func TestBrokenBackend(t *testing.T) {
	name := os.Getenv("BACKENDTEST_BROKEN")
	if name == "" {
		t.Skip("run by TestSuiteCatchesBrokenBackends")
	}
	br := breakages[name]
	backendtest.Run(t, func(t *testing.T) *backendtest.Store {
		st := localStore(t)
		open := st.Open
		st.Open = func() state.Backend { return br.wrap(open()) }
		return st
	})
}

// The suite can fail: each broken backend fails it, in the case meant to
// catch it.
func TestSuiteCatchesBrokenBackends(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per broken backend")
	}
	for name, br := range breakages {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenBackend$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "BACKENDTEST_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a backend with %s:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBrokenBackend/"+br.want+" ") {
				t.Fatalf("the suite did not fail %s for a backend with %s:\n%s", br.want, name, out)
			}
		})
	}
}
