package ui

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// Saves append to the state journal and leave state.json as it is: the
// dashboard's cached snapshot must still see each of them.
func TestStoreSeesJournalChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".trialform")
	m := state.NewManager(dir)
	st := state.New()
	st.Experiments["e"] = &state.Experiment{Name: "e", ID: "abcdefgh", Trials: map[string]*state.Trial{}}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	d := newStore(Options{StateDir: dir})
	if sn := d.current(); sn.err != nil || sn.st.Serial != 1 {
		t.Fatalf("first snapshot: serial %d, %v", sn.st.Serial, sn.err)
	}
	for i, id := range []string{"t0000", "t0001", "t0002"} {
		st.Experiments["e"].Trials[id] = &state.Trial{ID: id, Status: state.Running}
		if err := m.Save(st); err != nil {
			t.Fatal(err)
		}
		sn := d.current()
		if sn.err != nil || sn.st.Serial != uint64(i+2) || len(sn.st.Experiments["e"].Trials) != i+1 {
			t.Fatalf("after save %d: serial %d, %d trials, %v", i+2, sn.st.Serial, len(sn.st.Experiments["e"].Trials), sn.err)
		}
	}
}

// stampedBackend has the stamps of the local backend but cannot follow:
// what pg and kubernetes look like to the dashboard (read whole, then
// compared).
type stampedBackend struct {
	state.Backend
	m *state.Manager
}

func (b stampedBackend) StateStamp() (state.Stamp, error) { return b.m.StateStamp() }

// Whatever the backend, an event names the trials that changed since the
// version a page shows (the local backend by its journal, the others by
// comparing), and a page behind what the log keeps is told to fetch
// everything.
func TestEventsOfEveryBackend(t *testing.T) {
	for _, name := range []string{"local", "stamped", "plain"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".trialform")
			m := state.NewManager(dir)
			st := state.New()
			st.Experiments["e"] = &state.Experiment{Name: "e", ID: "abcdefgh", Goal: "maximize", Metric: "acc", Trials: map[string]*state.Trial{}}
			for i := range 5 {
				id := fmt.Sprintf("t%04d", i)
				v := float64(i)
				st.Experiments["e"].Trials[id] = &state.Trial{ID: id, Seq: i, Status: state.Succeeded, Value: &v}
			}
			if err := m.Save(st); err != nil {
				t.Fatal(err)
			}
			var b state.Backend = m
			switch name {
			case "stamped":
				b = stampedBackend{Backend: m, m: m}
			case "plain":
				b = &plainBackend{Backend: m}
			}
			if _, ok := b.(state.Follower); ok != (name == "local") {
				t.Fatalf("%s backend follows: %v", name, ok)
			}
			s := New(Options{StateDir: dir, Backend: b, Poll: time.Hour})
			defer s.Close()
			first := s.data.current()
			v9 := 9.0
			st.Experiments["e"].Trials["t0002"] = &state.Trial{ID: "t0002", Seq: 2, Status: state.Succeeded, Value: &v9}
			st.Experiments["e"].Trials["t0005"] = &state.Trial{ID: "t0005", Seq: 5, Status: state.Running}
			delete(st.Experiments["e"].Trials, "t0000")
			if err := m.Save(st); err != nil {
				t.Fatal(err)
			}
			sn := s.data.current()
			if sn.ver != first.ver+1 {
				t.Fatalf("version %d after %d", sn.ver, first.ver)
			}
			var ev EventJSON
			if err := json.Unmarshal(s.event(sn, first.ver), &ev); err != nil {
				t.Fatal(err)
			}
			x := ev.Experiments["e"]
			if ev.Full || x == nil {
				t.Fatalf("event: %+v", ev)
			}
			var ids []string
			for _, r := range x.Rows {
				ids = append(ids, fmt.Sprintf("%s:%v", r.ID, r.Best))
			}
			// t0004 was the best, t0002 is now.
			if got, want := strings.Join(ids, ","), "t0002:true,t0004:false,t0005:false"; got != want || strings.Join(x.Removed, ",") != "t0000" || x.Total != 5 {
				t.Errorf("rows %s (want %s), removed %v, total %d", got, want, x.Removed, x.Total)
			}
			// Nothing changed: the same version.
			if again := s.data.current(); again.ver != sn.ver {
				t.Errorf("an unchanged state made version %d", again.ver)
			}
			// A page at a version the log does not know fetches everything.
			ev = EventJSON{}
			if err := json.Unmarshal(s.event(sn, first.ver-1), &ev); err != nil || !ev.Full {
				t.Errorf("event from an unknown version: %+v, %v", ev, err)
			}
		})
	}
}
