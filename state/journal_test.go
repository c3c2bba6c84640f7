package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// journalHistory saves sampleState(4) and then n changes (one trial's
// status or a new trial each), returning a copy of the state after every
// save (index = serial).
func journalHistory(t *testing.T, m *Manager, n int) []*State {
	t.Helper()
	s := sampleState(4)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	hist := make([]*State, 2)
	hist[1] = s.Clone()
	for i := range n {
		e := s.Experiments["mnist"]
		switch i % 3 {
		case 0:
			id := fmt.Sprintf("n%04d", i)
			e.Trials[id] = sampleTrial(id, 100+i)
			e.NextSeq++
		case 1:
			e.Trials["t00001"].Attempts++
		case 2:
			delete(e.Trials, fmt.Sprintf("n%04d", i-2))
		}
		if err := m.Save(s); err != nil {
			t.Fatal(err)
		}
		if s.Serial != uint64(len(hist)) {
			t.Fatalf("serial %d after save %d", s.Serial, len(hist))
		}
		hist = append(hist, s.Clone())
	}
	return hist
}

func TestJournalSaveAppendsAndLoadReplays(t *testing.T) {
	m := newManager(t)
	hist := journalHistory(t, m, 30)
	path := m.Path()
	fi1, _ := os.Stat(path)
	more := hist[len(hist)-1].Clone()
	more.Experiments["mnist"].Trials["t00002"].Status = Failed
	if err := m.Save(more); err != nil {
		t.Fatal(err)
	}
	// O(change): state.json was not rewritten; the journal holds one line
	// per change.
	if fi2, _ := os.Stat(path); !os.SameFile(fi1, fi2) || fi1.Size() != fi2.Size() {
		t.Error("a save rewrote state.json")
	}
	j := readFile(t, filepath.Join(m.Dir(), JournalName))
	if n := bytes.Count(j, []byte("\n")); n != 31 {
		t.Errorf("journal has %d records, want 31", n)
	}
	if got := dirNames(t, m); !reflect.DeepEqual(got, []string{"state.journal", "state.json"}) {
		t.Errorf("directory = %v", got)
	}
	for name, mm := range map[string]*Manager{"fresh manager": NewManager(m.Dir()), "writer": m} {
		got, err := mm.Load()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, more) {
			t.Errorf("%s: loaded state differs from the saved one", name)
		}
	}
	// An unchanged state is not written: no record, serial kept.
	m2 := NewManager(m.Dir())
	s2, _ := m2.Load()
	if err := m2.Save(s2); err != nil || s2.Serial != more.Serial {
		t.Errorf("unchanged save: %v, serial %d want %d", err, s2.Serial, more.Serial)
	}
	if j2 := readFile(t, filepath.Join(m.Dir(), JournalName)); !bytes.Equal(j, j2) {
		t.Error("an unchanged save appended to the journal")
	}
	// A stale state (loaded before the last save) is refused.
	if err := m2.Save(hist[5]); !errors.As(err, new(*ConflictError)) {
		t.Errorf("stale save: %v, want a ConflictError", err)
	}
}

func TestJournalCompaction(t *testing.T) {
	m := newManager(t)
	m.journalLimit = 2000
	hist := journalHistory(t, m, 40)
	last := hist[len(hist)-1]
	jpath := filepath.Join(m.Dir(), JournalName)
	if fi, err := os.Stat(jpath); err != nil || fi.Size() >= 2000 {
		t.Fatalf("journal not compacted: %v %v", fi, err)
	}
	st := readFile(t, m.Path())
	if serialOf(t, st) < 10 {
		t.Errorf("state.json serial %d: never compacted", serialOf(t, st))
	}
	if _, err := os.Stat(m.Path() + ".backup"); err != nil {
		t.Errorf("compaction kept no backup: %v", err)
	}
	got, err := NewManager(m.Dir()).Load()
	if err != nil || !reflect.DeepEqual(got, last) {
		t.Fatalf("after compaction the state differs: %v", err)
	}

	// A compaction that crashed after replacing state.json but before
	// emptying the journal: the records state.json holds are skipped.
	m3 := newManager(t)
	m3.journalLimit = 1 << 30
	h3 := journalHistory(t, m3, 12)
	old := readFile(t, filepath.Join(m3.Dir(), JournalName))
	m3.journalLimit = 1
	s := h3[len(h3)-1].Clone()
	s.Experiments["cifar"].Paused = true
	if err := m3.Save(s); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(m3.Dir(), JournalName)); fi.Size() != 0 {
		t.Fatalf("journal not emptied by compaction (%d bytes)", fi.Size())
	}
	if err := os.WriteFile(filepath.Join(m3.Dir(), JournalName), old, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = NewManager(m3.Dir()).Load()
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("journal left by a crashed compaction: %v (serial %d, want %d)", err, got.Serial, s.Serial)
	}
}

// TestJournalTornLastRecord cuts the journal at every byte offset of its
// last record: the state is the one before that record, with a warning,
// and the next save cuts the torn record off and goes on.
func TestJournalTornLastRecord(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	hist := journalHistory(t, m, 6)
	jpath := filepath.Join(m.Dir(), JournalName)
	full := readFile(t, jpath)
	start := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	for cut := start; cut < len(full); cut++ {
		if err := os.WriteFile(jpath, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		m2 := NewManager(m.Dir())
		got, err := m2.Load()
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		want := hist[len(hist)-2]
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("cut at %d: state is not the one before the last record (serial %d, want %d)", cut, got.Serial, want.Serial)
		}
		w := m2.Warnings()
		if cut > start && (len(w) != 1 || !strings.Contains(w[0], "record (6,") || !strings.Contains(w[0], "dropped")) {
			t.Fatalf("cut at %d: warnings %q", cut, w)
		}
		if cut == start && len(w) != 0 {
			t.Fatalf("cut at a record boundary: warnings %q", w)
		}
		got.Experiments["cifar"].Paused = true
		if err := m2.Save(got); err != nil {
			t.Fatalf("cut at %d: save: %v", cut, err)
		}
		again, err := NewManager(m.Dir()).Load()
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("cut at %d: the save after a torn record did not stick: %v", cut, err)
		}
	}
}

// TestJournalCorruptRecord changes every byte of a record in the middle:
// an error naming the record and its offset, and no save writes over
// anything.
func TestJournalCorruptRecord(t *testing.T) {
	m := newManager(t)
	m.journalLimit = 1 << 30
	hist := journalHistory(t, m, 6)
	jpath := filepath.Join(m.Dir(), JournalName)
	full := readFile(t, jpath)
	lines := bytes.SplitAfter(full, []byte("\n"))
	start := len(lines[0]) + len(lines[1]) // record 3
	end := start + len(lines[2])
	stateBefore := readFile(t, m.Path())
	for at := start; at < end; at++ {
		bad := bytes.Clone(full)
		bad[at] ^= 0x01
		if at == end-1 {
			bad[at] = 'x' // the newline: records 3 and 4 run together
		}
		if err := os.WriteFile(jpath, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		m2 := NewManager(m.Dir())
		_, err := m2.Load()
		var je *JournalError
		if !errors.As(err, &je) || je.Record != 3 || je.Offset != int64(start) {
			t.Fatalf("byte %d changed: Load: %v, want an error naming record 3 at offset %d", at, err, start)
		}
		if !strings.Contains(err.Error(), "record 3 (byte offset") || !strings.Contains(err.Error(), "state.json.backup") {
			t.Fatalf("error does not name the record and the backup: %v", err)
		}
		if err := m2.Save(hist[len(hist)-1].Clone()); !errors.As(err, &je) {
			t.Fatalf("byte %d changed: Save: %v, want the journal error", at, err)
		}
		if err := m.Save(hist[len(hist)-1].Clone()); !errors.As(err, &je) {
			t.Fatalf("byte %d changed: Save by the writer: %v, want the journal error", at, err)
		}
		if j := readFile(t, jpath); !bytes.Equal(j, bad) {
			t.Fatal("the corrupt journal was written over")
		}
		if st := readFile(t, m.Path()); !bytes.Equal(st, stateBefore) {
			t.Fatal("state.json was written over")
		}
	}
}

// A journal of another lineage (left by a lost state) is ignored with a
// warning and kept aside by the next save.
func TestJournalOfAnotherLineage(t *testing.T) {
	m := newManager(t)
	journalHistory(t, m, 3)
	jpath := filepath.Join(m.Dir(), JournalName)
	old := readFile(t, jpath)
	oldState, _ := NewManager(m.Dir()).Load()
	if err := os.Remove(m.Path()); err != nil {
		t.Fatal(err)
	}
	if ls, err := m.Lost(); err != nil || ls == nil || !strings.Contains(ls.String(), "state.journal") {
		t.Fatalf("Lost() does not show the journal: %v %v", ls, err)
	}
	m2 := NewManager(m.Dir())
	s := sampleState(1)
	if err := m2.Save(s); err != nil {
		t.Fatal(err)
	}
	aside := jpath + "." + oldState.Lineage[:8]
	if b := readFile(t, aside); !bytes.Equal(b, old) {
		t.Error("the old journal was not kept aside")
	}
	if _, err := os.Stat(jpath); err == nil {
		t.Error("the old journal is still in place")
	}
	first := s.Clone()
	s.Experiments["cifar"].Paused = true
	if err := m2.Save(s); err != nil {
		t.Fatal(err)
	}
	got, err := NewManager(m.Dir()).Load()
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("new state: %v", err)
	}
	// A journal of another lineage put back by hand (over this state's
	// own) is ignored: the state is state.json alone.
	s = first
	if err := os.WriteFile(jpath, old, 0o644); err != nil {
		t.Fatal(err)
	}
	m3 := NewManager(m.Dir())
	got, err = m3.Load()
	if err != nil || !reflect.DeepEqual(got, s) || len(m3.Warnings()) != 1 || !strings.Contains(m3.Warnings()[0], "another state") {
		t.Fatalf("foreign journal: %v, warnings %q", err, m3.Warnings())
	}
}

// The journal applies only on top of the state.json it continues: an
// older state.json (a backup copied back) with the journal is an error
// that says so, not a silently wrong state.
func TestJournalOverOlderStateFile(t *testing.T) {
	m := newManager(t)
	m.journalLimit = 3000
	journalHistory(t, m, 40)
	if _, err := os.Stat(m.Path() + ".backup"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.Dir(), JournalName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := m.Load()
	s.Experiments["cifar"].Paused = true
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	os.Rename(m.Path()+".backup", m.Path())
	_, err := NewManager(m.Dir()).Load()
	var je *JournalError
	if !errors.As(err, &je) || !strings.Contains(err.Error(), "does not continue state.json") {
		t.Fatalf("Load = %v, want a JournalError saying the journal does not continue state.json", err)
	}
}

// Upgrading from the format before the journal (state.json alone, and the
// v0 draft): loaded as is, the first change starts the journal (a v0 file
// is first rewritten in the current format).
func TestJournalUpgradeFromStateFileAlone(t *testing.T) {
	for _, fixture := range []string{"v1-nojournal.json", "v0.json"} {
		m := newManager(t)
		if err := os.MkdirAll(m.Dir(), 0o755); err != nil {
			t.Fatal(err)
		}
		data := readFile(t, filepath.Join("testdata", fixture))
		if err := os.WriteFile(m.Path(), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := m.Load()
		if err != nil {
			t.Fatalf("%s: %v", fixture, err)
		}
		ntrials := 0
		for _, e := range s.Experiments {
			ntrials += len(e.Trials)
			for _, tr := range e.Trials {
				tr.Attempts++
				break
			}
		}
		if ntrials == 0 {
			t.Fatalf("%s: no trials", fixture)
		}
		if err := m.Save(s); err != nil {
			t.Fatalf("%s: %v", fixture, err)
		}
		for _, e := range s.Experiments {
			for _, tr := range e.Trials {
				tr.Reason = "second change"
				break
			}
		}
		if err := m.Save(s); err != nil {
			t.Fatalf("%s: %v", fixture, err)
		}
		if _, err := os.Stat(filepath.Join(m.Dir(), JournalName)); err != nil {
			t.Errorf("%s: no journal after two changes: %v", fixture, err)
		}
		got, err := NewManager(m.Dir()).Load()
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Errorf("%s: reloaded state differs: %v", fixture, err)
		}
	}
}

// A state.json and journal written by this format (testdata/journal):
// the format is read as it was written.
func TestJournalFixture(t *testing.T) {
	m := NewManager(filepath.Join("testdata", "journal"))
	s, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := s.Experiments["mnist"]
	if s.Serial != 4 || e == nil || len(e.Trials) != 3 || e.Trials["t00001"].Status != Succeeded || *e.Trials["t00001"].Value != 0.93 || e.Trials["t00000"] != nil || s.Experiments["cifar"] != nil {
		t.Fatalf("fixture state: serial %d, %+v", s.Serial, e)
	}
}

// Lock-free readers (plan, show, trials) loading while a writer saves
// always see a state the writer saved, never a mix.
func TestJournalReadersSeeSavedStates(t *testing.T) {
	m := newManager(t)
	m.journalLimit = 6000 // compactions too, while readers read
	// The writer holds the lock, as apply does: a reader that finds a
	// record half written waits for it rather than calling it interrupted
	// (a preempted writer on a loaded machine made the reader warn).
	lk, err := m.Lock(context.Background(), "apply", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	s := sampleState(2)
	s.Experiments["mnist"].NextSeq = 0
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	const n = 150
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewManager(m.Dir())
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := r.Load()
				if err != nil {
					errs <- err
					return
				}
				if w := r.Warnings(); len(w) > 0 {
					errs <- fmt.Errorf("reader warned: %q", w)
					return
				}
				// Serial k holds exactly k-1 added trials.
				e := got.Experiments["mnist"]
				if len(e.Trials) != 2+int(got.Serial)-1 || e.NextSeq != int(got.Serial)-1 {
					errs <- fmt.Errorf("reader saw serial %d with %d trials, next_seq %d", got.Serial, len(e.Trials), e.NextSeq)
					return
				}
			}
		}()
	}
	for i := range n {
		e := s.Experiments["mnist"]
		id := fmt.Sprintf("x%04d", i)
		e.Trials[id] = sampleTrial(id, i)
		e.NextSeq++
		if err := m.Save(s); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Unlock compacts: the next command finds state.json whole, with the
// serial it had, and a copy of it as the backup (what a lost state.json
// is recovered from).
func TestUnlockCompacts(t *testing.T) {
	m := newManager(t)
	lk, err := m.Lock(t.Context(), "test", "dev", 0)
	if err != nil {
		t.Fatal(err)
	}
	hist := journalHistory(t, m, 5)
	last := hist[len(hist)-1]
	if err := lk.Unlock(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(m.Dir(), JournalName)); err != nil || fi.Size() != 0 {
		t.Fatalf("journal after Unlock: %v %v", fi, err)
	}
	if serialOf(t, readFile(t, m.Path())) != last.Serial {
		t.Errorf("state.json serial %d, want %d", serialOf(t, readFile(t, m.Path())), last.Serial)
	}
	if b := readFile(t, m.Path()+".backup"); !bytes.Equal(b, readFile(t, m.Path())) {
		t.Error("the backup is not a copy of the compacted state")
	}
	got, err := NewManager(m.Dir()).Load()
	if err != nil || !reflect.DeepEqual(got, last) {
		t.Fatalf("after Unlock: %v", err)
	}
	// The writer goes on from there.
	last.Experiments["cifar"].Paused = true
	if err := m.Save(last); err != nil {
		t.Fatal(err)
	}
}

// TestPrepareTrialsWritesNamedChanges: a Save that names the trials it
// changed records them (and experiment heads), and a change the names do
// not account for (a trial added that is not named) is still found, by a
// full comparison.
func TestPrepareTrialsWritesNamedChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".trialform")
	m := NewManager(dir)
	s := sampleState(50)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	save := func(refs []TrialRef) {
		t.Helper()
		commit, err := m.PrepareTrials(s, refs)
		if err != nil {
			t.Fatal(err)
		}
		if commit != nil {
			if err := commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	mn := s.Experiments["mnist"]
	// Named: one modified, one removed, one added; a head change.
	mn.Trials["t00003"].Status = Failed
	delete(mn.Trials, "t00004")
	mn.Trials["new1"] = sampleTrial("new1", 99)
	mn.NextSeq = 1000
	save([]TrialRef{{"mnist", "t00003"}, {"mnist", "t00004"}, {"mnist", "new1"}, {"mnist", "t00003"}})
	// Not named: an added trial the refs do not explain (count mismatch).
	mn.Trials["new2"] = sampleTrial("new2", 100)
	save([]TrialRef{})
	// Named trial unchanged: nothing to write.
	serial := s.Serial
	save([]TrialRef{{"mnist", "t00007"}})
	if s.Serial != serial {
		t.Errorf("an unchanged named trial bumped the serial %d -> %d", serial, s.Serial)
	}
	if fi, err := os.Stat(filepath.Join(dir, JournalName)); err != nil || fi.Size() == 0 {
		t.Fatalf("no journal written: %v", err)
	}
	got, err := NewManager(dir).Load()
	if err != nil {
		t.Fatal(err)
	}
	g := got.Experiments["mnist"]
	if g.Trials["t00003"].Status != Failed || g.Trials["t00004"] != nil || g.Trials["new1"] == nil || g.Trials["new2"] == nil || g.NextSeq != 1000 {
		t.Errorf("loaded after named saves: t00003 %s, t00004 %v, new1 %v, new2 %v, next_seq %d",
			g.Trials["t00003"].Status, g.Trials["t00004"], g.Trials["new1"], g.Trials["new2"], g.NextSeq)
	}
	if len(g.Trials) != len(mn.Trials) || got.Serial != s.Serial {
		t.Errorf("loaded %d trials at serial %d, saved %d at %d", len(g.Trials), got.Serial, len(mn.Trials), s.Serial)
	}
}

// TestDiffTrialsComparesOnlyNamed: the named diff does not look at trials
// it was not told about (that is what makes it O(change)), and gives up
// (ok false) when the trial count says something unnamed was added.
func TestDiffTrialsComparesOnlyNamed(t *testing.T) {
	old := sampleState(10)
	s := old.Clone()
	s.Experiments["mnist"].Trials["t00001"].Attempts = 42 // not named
	s.Experiments["mnist"].Trials["t00002"].Attempts = 43
	rec, ok, err := diffTrials(old, s, []TrialRef{{"mnist", "t00002"}})
	if err != nil || !ok || rec == nil {
		t.Fatalf("diffTrials = %v, %v, %v", rec, ok, err)
	}
	if len(rec.Trials["mnist"]) != 1 || rec.Trials["mnist"]["t00002"] == nil {
		t.Errorf("record trials %v, want only t00002", rec.Trials)
	}
	s.Experiments["mnist"].Trials["x"] = sampleTrial("x", 1)
	if _, ok, err := diffTrials(old, s, []TrialRef{{"mnist", "t00002"}}); ok || err != nil {
		t.Errorf("an unnamed added trial: ok %v, err %v; want a fallback", ok, err)
	}
}

// The error names what the state is without the bad record in words that
// read right for its first records too (it said "records 1-0").
func TestJournalErrorNamesTheStateWithout(t *testing.T) {
	for rec, want := range map[int]string{1: "is state.json alone;", 2: "is state.json plus record 1;", 5: "is state.json plus records 1-4;"} {
		if got := (&JournalError{Path: "j", Record: rec, Problem: "is garbage"}).Error(); !strings.Contains(got, want) {
			t.Errorf("record %d: %q lacks %q", rec, got, want)
		}
	}
}

// TestReaderWaitsForARecordBeingWritten: a lock-free reader that finds
// the journal's last record incomplete while the lock's holder still
// runs takes it for a write in progress (a writer preempted mid-write on
// a loaded machine): it reads the state without it, quietly. When the
// holder is gone, the record was cut short: it is dropped with a warning.
func TestReaderWaitsForARecordBeingWritten(t *testing.T) {
	m := newManager(t)
	lk, err := m.Lock(context.Background(), "apply", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	s := sampleState(2)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	s.Experiments["mnist"].NextSeq++
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	want := s.Serial
	f, err := os.OpenFile(m.journalPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`0badc0de {"lineage":"`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r := NewManager(m.Dir())
	got, err := r.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.Serial != want || len(r.Warnings()) > 0 {
		t.Fatalf("while the writer runs: serial %d (want %d), warnings %q", got.Serial, want, r.Warnings())
	}

	// The holder gone (its pid no longer runs): an interrupted write.
	info, err := m.CurrentLock()
	if err != nil || info == nil {
		t.Fatalf("lock info %v, %v", info, err)
	}
	dead := *info
	dead.PID = 1 << 30
	b, _ := json.Marshal(dead)
	if err := os.WriteFile(m.lockPath(), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = NewManager(m.Dir())
	if got, err = r.Load(); err != nil || got.Serial != want {
		t.Fatalf("holder gone: serial %v, %v", got, err)
	}
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, "is incomplete, its write was interrupted") {
		t.Fatalf("holder gone: warnings %q", w)
	}
}

// TestLockHolderDoesNotWaitForItself: a last record cut short by a writer
// that died (kill -9 mid-append, or an append the disk had no room for) is
// read by the next command after it took the lock. That reader is the
// lock's holder, so no other writer can be in the middle of the record:
// it is dropped at once, with the warning. It waited for itself instead,
// about 2000 reads of the state (11 s for a 40 KiB journal on a loaded
// machine) on every load, as if another process were writing: `apply`
// on a full disk took 11 s to fail, and printed nothing meanwhile.
func TestLockHolderDoesNotWaitForItself(t *testing.T) {
	m := newManager(t)
	s := sampleState(2)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	lk, err := m.Lock(context.Background(), "apply", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Experiments["mnist"].NextSeq++
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	want := s.Serial
	f, err := os.OpenFile(m.journalPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`0badc0de {"lineage":"`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The writer dies: its lock goes (removed first, so that releasing
	// it does not compact the journal, as a dead writer would not).
	if err := m.ForceUnlock(lk.Info().ID); err != nil {
		t.Fatal(err)
	}
	lk.Unlock()

	next := NewManager(m.Dir())
	lk, err = next.Lock(context.Background(), "apply", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	got, err := next.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.Serial != want {
		t.Fatalf("serial %d, want %d", got.Serial, want)
	}
	if w := strings.Join(next.Warnings(), "\n"); !strings.Contains(w, "is incomplete, its write was interrupted") {
		t.Fatalf("the lock's holder read the torn record as one being written (it waited for itself): warnings %q", w)
	}
}
