package ui

import (
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// plainBackend is a backend with none of the optional capabilities (no
// stamps) that counts its loads: what a backend other than local looks
// like to the dashboard.
type plainBackend struct {
	state.Backend
	loads atomic.Int32
}

func (b *plainBackend) Load() (*state.State, error) {
	b.loads.Add(1)
	return b.Backend.Load()
}

// The dashboard reads the state, the metric series and the refresh marks
// through the backend contract, never by path: given a backend whose
// state lives elsewhere than StateDir, it sees all of it.
func TestStoreReadsThroughTheBackend(t *testing.T) {
	m := state.NewManager(filepath.Join(t.TempDir(), ".trialform"))
	st := state.New()
	st.Experiments["e"] = &state.Experiment{Name: "e", ID: "abcdefgh", Metric: "acc", Trials: map[string]*state.Trial{
		"t0000": {ID: "t0000", Status: state.Running},
	}}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := m.AppendMetrics("e", "t0000", []state.MetricPoint{
		{Type: "PERIODICAL", Sequence: 0, Value: json.RawMessage(`0.5`), Time: at},
		{Type: "PERIODICAL", Sequence: 1, Value: json.RawMessage(`0.75`), Time: at},
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.MarkRefreshed(st.Lineage, []string{"e"}, at); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		b    state.Backend
	}{{"local", m}, {"without stamps", &plainBackend{Backend: m}}} {
		t.Run(tc.name, func(t *testing.T) {
			// StateDir is an empty directory: nothing may be read from it.
			d := newStore(Options{StateDir: t.TempDir(), Backend: tc.b})
			sn := d.current()
			if sn.err != nil || sn.st.Serial != st.Serial || sn.st.Experiments["e"] == nil {
				t.Fatalf("snapshot: %+v, %v", sn.st, sn.err)
			}
			e := sn.st.Experiments["e"]
			pts := d.series(e, e.Trials["t0000"])
			if len(pts) != 2 || pts[0].Value != 0.5 || pts[1].Value != 0.75 {
				t.Fatalf("series: %+v", pts)
			}
			sum := d.summary(sn, e, nil)
			if sum.Refreshed == nil || !sum.Refreshed.Equal(at) {
				t.Fatalf("refreshed: %v, want %v", sum.Refreshed, at)
			}
			// A change saved through the backend is seen.
			e2 := st.Clone()
			e2.Experiments["e"].Trials["t0001"] = &state.Trial{ID: "t0001", Status: state.Waiting}
			if err := m.Save(e2); err != nil {
				t.Fatal(err)
			}
			st = e2
			if sn := d.current(); sn.err != nil || len(sn.st.Experiments["e"].Trials) != len(st.Experiments["e"].Trials) {
				t.Fatalf("after a save: %+v, %v", sn.st, sn.err)
			}
		})
	}
}
