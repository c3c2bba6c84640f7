package state

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
)

func encodeForTest(t *testing.T, s *State) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A reader that follows the local state reads only the journal records
// appended since it last read: the state it gets equals a whole Load, it
// says which trials changed, and the version it had is left as it was.
func TestFollowReadsOnlyNewJournalRecords(t *testing.T) {
	m := newManager(t)
	hist := journalHistory(t, m, 6)
	r := NewManager(m.Dir()) // another process's reader
	s, cur, ch, err := r.Follow(nil, nil)
	if err != nil || ch != nil {
		t.Fatalf("first follow: changes %v, %v (want a whole read: nil changes)", ch, err)
	}
	if got, want := encodeForTest(t, s), encodeForTest(t, hist[len(hist)-1]); got != want {
		t.Fatalf("first follow differs from the state saved")
	}
	// Nothing written: the same state, nothing changed.
	s2, cur2, ch, err := r.Follow(s, cur)
	if err != nil || ch == nil || !ch.Empty() || s2 != s || !reflect.DeepEqual(cur2, cur) {
		t.Fatalf("follow without a change: %v, %v, same state %v", ch, err, s2 == s)
	}
	w := hist[len(hist)-1].Clone()
	w.Serial = s.Serial
	e := w.Experiments["mnist"]
	e.Trials["t00002"].Status = Failed
	e.Trials["new1"] = sampleTrial("new1", 500)
	if err := m.Save(w); err != nil {
		t.Fatal(err)
	}
	delete(w.Experiments["mnist"].Trials, "t00001")
	w.Experiments["mnist"].MaxTrials++
	if err := m.Save(w); err != nil {
		t.Fatal(err)
	}
	before := encodeForTest(t, s)
	s3, cur3, ch, err := r.Follow(s, cur)
	if err != nil {
		t.Fatal(err)
	}
	if ch == nil {
		t.Fatal("follow read the whole state: want only the journal's new records")
	}
	want := &Changes{Experiments: []string{"mnist"}, Trials: []TrialRef{{"mnist", "new1"}, {"mnist", "t00001"}, {"mnist", "t00002"}}}
	if !reflect.DeepEqual(ch, want) {
		t.Errorf("changes %+v, want %+v", ch, want)
	}
	if encodeForTest(t, s) != before {
		t.Error("follow modified the state it was given")
	}
	loaded, err := NewManager(m.Dir()).Load()
	if err != nil {
		t.Fatal(err)
	}
	if encodeForTest(t, s3) != encodeForTest(t, loaded) {
		t.Errorf("followed state differs from Load:\n%s\n%s", encodeForTest(t, s3), encodeForTest(t, loaded))
	}
	if s3.Experiments["mnist"].Trials["t00003"] != s.Experiments["mnist"].Trials["t00003"] {
		t.Error("an unchanged trial was copied: the followed state should share it")
	}
	if cur3.offset <= cur.offset {
		t.Errorf("cursor did not advance: %d -> %d", cur.offset, cur3.offset)
	}

	// A record being written (no newline yet) is left for the next read.
	w.Experiments["mnist"].Trials["t00003"].Attempts = 9
	if err := m.Save(w); err != nil {
		t.Fatal(err)
	}
	jp := m.journalPath()
	data, err := os.ReadFile(jp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jp, data[:len(data)-5], 0o644); err != nil {
		t.Fatal(err)
	}
	s4, cur4, ch, err := r.Follow(s3, cur3)
	if err != nil || ch == nil || !ch.Empty() || s4.Serial != s3.Serial {
		t.Fatalf("torn record: serial %d, changes %v, %v (want it left for later)", s4.Serial, ch, err)
	}
	if err := os.WriteFile(jp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s5, cur5, ch, err := r.Follow(s4, cur4)
	if err != nil || ch == nil || len(ch.Trials) != 1 || s5.Experiments["mnist"].Trials["t00003"].Attempts != 9 {
		t.Fatalf("completed record: changes %+v, %v", ch, err)
	}

	// A compaction replaces state.json: the next follow reads it whole.
	if _, _, ch, err := r.Follow(s5, cur5); err != nil || ch == nil || !ch.Empty() {
		t.Fatalf("follow after the completed record: %v, %v", ch, err)
	}
	if err := m.Compact(); err != nil {
		t.Fatal(err)
	}
	s6, _, ch, err := r.Follow(s5, cur5)
	if err != nil || ch != nil {
		t.Fatalf("after a compaction: changes %v, %v (want a whole read)", ch, err)
	}
	if encodeForTest(t, s6) != encodeForTest(t, s5) {
		t.Error("the compacted state differs from the followed one")
	}
	// ... and comparing says nothing changed (a reader does not resend
	// every trial after a compaction).
	if ch := Diff(s5, s6); !ch.Empty() {
		t.Errorf("a compaction changed %+v", ch)
	}
}

// A journal record that does not check out is not applied by a follow:
// it reads the whole state, which reports the error as Load does.
func TestFollowBadRecordReadsWhole(t *testing.T) {
	m := newManager(t)
	journalHistory(t, m, 3)
	r := NewManager(m.Dir())
	s, cur, _, err := r.Follow(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(m.journalPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "00000000 {\"lineage\":%q,\"serial\":%d}\n", s.Lineage, s.Serial+1)
	f.Close()
	if _, _, _, err := r.Follow(s, cur); err == nil {
		t.Fatal("a corrupt record was followed without an error")
	} else if _, lerr := NewManager(m.Dir()).Load(); lerr == nil || lerr.Error() != err.Error() {
		t.Errorf("follow's error %q, Load's %v", err, lerr)
	}
}

func TestDiff(t *testing.T) {
	a := sampleState(3)
	b := a.Clone()
	if ch := Diff(a, b); !ch.Empty() {
		t.Fatalf("equal states: %+v", ch)
	}
	b.Experiments["mnist"].Trials["t00001"].Status = Failed
	delete(b.Experiments["mnist"].Trials, "t00002")
	b.Experiments["mnist"].Trials["x"] = sampleTrial("x", 50)
	b.Experiments["mnist"].Concurrency++
	want := &Changes{Experiments: []string{"mnist"}, Trials: []TrialRef{{"mnist", "t00001"}, {"mnist", "t00002"}, {"mnist", "x"}}}
	if ch := Diff(a, b); !reflect.DeepEqual(ch, want) {
		t.Errorf("changes %+v, want %+v", ch, want)
	}
}
