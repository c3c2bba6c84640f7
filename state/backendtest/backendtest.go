// Package backendtest is the test suite every state backend passes: the
// same cases, run against each implementation of state.Backend (the way
// Terraform runs each of its backends through one TestBackendStates).
//
// A backend's own test calls Run with a Setup that makes a fresh, empty
// store and says how to damage it (the crash cases). The cases hold the
// backend to what the contract (package state's backend.go) promises:
//
//   - a snapshot saved is the snapshot loaded, by any client; an unchanged
//     save writes nothing and keeps the serial;
//   - a change written (Save, Prepare/PrepareTrials and commit) is read
//     back by a new client; a stale or foreign writer is refused;
//   - readers see whole versions while another client writes;
//   - the lock: contention names the holder (who, where, operation,
//     since); a waiter gets it when it is released; force-unlock needs the
//     holder's ID, and the old holder's Unlock leaves the next holder's
//     lock alone;
//   - metric series: read in the order appended, duplicates once, a torn
//     last point ignored and cut off by the next append; removed, moved;
//   - refresh marks, per lineage;
//   - lost state: what is left is found; an empty store has no lost state;
//   - experiment locks (ExperimentLocker): different experiments at once,
//     the same one excluded, the whole state against any, all or nothing,
//     waits, a killed holder; saves under them write only their
//     experiments and do not conflict with each other's;
//   - change notifications (ChangeNotifier) reach another client;
//   - held changes and their approvals (state.Hold, state.Approval) are
//     kept with the experiment: a hold written by one client is read by
//     another, whose approval, under the experiment lock, is read back;
//   - a reader beside a writer in one process (state.Peek through the
//     writer's client) neither makes the writer's save refuse its own
//     change nor hides someone else's change to its experiments from it;
//   - crashes: a change whose write was torn is dropped with a warning and
//     the next save goes on from the state before it; a damaged change
//     that is not the last is an error, and no save writes over it.
package backendtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// Store is one fresh, empty store of the backend under test.
type Store struct {
	// Open returns a new client of the store, as another process would
	// open it. Clients of one store share its state, lock and series.
	Open func() state.Backend

	// The faults: each damages the store as a crash or a person would.
	// A nil fault skips its cases (a backend whose writes cannot tear, a
	// database's transaction, has no torn change to test).

	// TearLastChange leaves the last change written as an interrupted
	// write leaves it: a part of it, keep (0 < keep < 1) of its length.
	TearLastChange func(t *testing.T, keep float64)
	// CorruptChange damages change n (1 is the first written after the
	// last whole snapshot) where it lies, as a bad disk or a hand edit
	// would; it is not the last change.
	CorruptChange func(t *testing.T, n int)
	// LoseState removes the state itself, leaving what a lost state
	// leaves behind (backups, series).
	LoseState func(t *testing.T)
	// TearMetrics leaves a part of a point at the end of a series, as an
	// interrupted append does.
	TearMetrics func(t *testing.T, experiment, trial string)

	// Holder, for a backend whose locks are held by a live process,
	// returns a command running this test binary as another client of
	// the store that calls Hold (the backend's TestMain runs Hold when
	// HoldEnv is set, opening the store the command's environment names).
	// nil skips the case of a holder killed.
	Holder func(t *testing.T) *exec.Cmd
	// DeadHolderKeepsLock says that a killed holder's lock stays until
	// force-unlock (a Lease), rather than going with its process.
	DeadHolderKeepsLock bool
}

// Setup makes a fresh store for one case.
type Setup func(t *testing.T) *Store

// Run runs every case against the backend setup makes.
func Run(t *testing.T, setup Setup) {
	cases := []struct {
		name string
		f    func(t *testing.T, s *Store)
	}{
		{"SnapshotRoundTrip", testSnapshotRoundTrip},
		{"ChangeWriteAndReread", testChangeWriteAndReread},
		{"WriteConflicts", testWriteConflicts},
		{"ReadersSeeWholeVersions", testReadersSeeWholeVersions},
		{"LockContention", testLockContention},
		{"LockWaiterGetsIt", testLockWaiter},
		{"ForceUnlock", testForceUnlock},
		{"MetricSeries", testMetricSeries},
		{"MetricSeriesTornPoint", testMetricSeriesTorn},
		{"MetricSeriesMoveRemove", testMetricSeriesMoveRemove},
		{"RefreshMarks", testRefreshMarks},
		{"LostState", testLostState},
		{"CorruptChange", testCorruptChange},
		{"ExperimentLocks", testExperimentLocks},
		{"ExperimentLockWaits", testExperimentLockWaits},
		{"ExperimentLockKilledHolder", testExperimentLockKilledHolder},
		{"ScopedSaves", testScopedSaves},
		{"ChangeNotifier", testChangeNotifier},
		{"HeldChanges", testHeldChanges},
		{"ReaderBetweenPrepareAndCommit", testReaderBetweenPrepareAndCommit},
		{"ReaderKeepsConflicts", testReaderKeepsConflicts},
		{"ReaderOfAnotherHoldersSave", testReaderOfAnotherHoldersSave},
		{"ContextReads", testContextReads},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.f(t, setup(t)) })
	}
	// A change torn at its start, its middle and its end, each in a
	// fresh store.
	for _, keep := range []float64{0.01, 0.5, 0.99} {
		t.Run(fmt.Sprintf("TornChange/keep=%g", keep), func(t *testing.T) {
			st := setup(t)
			// A fault this backend cannot be put in: not a dependency but a capability.
			if st.TearLastChange == nil {
				t.Skip("the backend's changes cannot tear")
			}
			tornChange(t, st, keep)
		})
	}
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Sample returns a state with two experiments and n trials in the first,
// with the fields a state carries filled in.
func Sample(n int) *state.State {
	s := state.New()
	done := t0.Add(time.Hour)
	s.Experiments["mnist"] = &state.Experiment{
		Name: "mnist", ID: "abcd1234", Platform: "local.default", Generation: 1,
		SpecHash: "h1", MaxTrials: 100, Concurrency: 4, Goal: "maximize", Metric: "acc",
		CreatedAt: t0, NextSeq: n, Trials: map[string]*state.Trial{},
	}
	s.Experiments["cifar"] = &state.Experiment{
		Name: "cifar", ID: "efgh5678", Platform: "local.default", Generation: 2,
		Goal: "minimize", Metric: "loss", CreatedAt: t0, DoneAt: &done, DoneReason: "budget used",
		Trials: map[string]*state.Trial{},
	}
	for i := range n {
		s.Experiments["mnist"].Trials[trialID(i)] = Trial(i)
	}
	return s
}

func trialID(i int) string { return fmt.Sprintf("t%04d", i) }

// Trial returns trial i of Sample.
func Trial(i int) *state.Trial {
	start := t0.Add(time.Duration(i) * time.Second)
	v := float64(i) / 100
	code := 0
	return &state.Trial{
		ID: trialID(i), Seq: i, ParameterID: i, Generation: 1, SpecHash: "h1",
		Params: map[string]any{"lr": 0.001 * float64(i+1), "opt": "adam"},
		Status: state.Succeeded, Attempts: 1, CreatedAt: start, StartedAt: &start, EndedAt: &start,
		ExitCode: &code, Value: &v, Final: map[string]float64{"acc": v},
		Handle: map[string]string{"pid": fmt.Sprint(1000 + i)},
	}
}

func load(t *testing.T, b state.Backend) *state.State {
	t.Helper()
	s, err := b.Load()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return s
}

func save(t *testing.T, b state.Backend, s *state.State) {
	t.Helper()
	if err := b.Save(s); err != nil {
		t.Fatalf("save: %v", err)
	}
}

func same(t *testing.T, what string, got, want *state.State) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%s: the state differs\n got: %.600s\nwant: %.600s", what, g, w)
	}
}

func testSnapshotRoundTrip(t *testing.T, st *Store) {
	b := st.Open()
	if ok, err := b.Exists(); err != nil || ok {
		t.Fatalf("a fresh store: Exists = %v, %v", ok, err)
	}
	if ls, err := b.Lost(); err != nil || ls != nil {
		t.Fatalf("a fresh store: Lost = %v, %v", ls, err)
	}
	empty := load(t, b)
	if empty.Lineage == "" || len(empty.Experiments) != 0 || empty.Serial != 0 {
		t.Fatalf("a fresh store loads %+v, want a new empty state", empty)
	}
	s := Sample(5)
	save(t, b, s)
	if s.Serial != 1 {
		t.Fatalf("serial after the first save: %d, want 1", s.Serial)
	}
	if ok, err := b.Exists(); err != nil || !ok {
		t.Fatalf("after a save: Exists = %v, %v", ok, err)
	}
	for name, c := range map[string]state.Backend{"the writer": b, "another client": st.Open()} {
		same(t, name, load(t, c), s)
		if w := c.Warnings(); len(w) != 0 {
			t.Fatalf("%s: warnings %q", name, w)
		}
	}
	// Unchanged: nothing written, the serial stays.
	again := load(t, st.Open())
	save(t, st.Open(), again)
	if again.Serial != 1 {
		t.Fatalf("an unchanged save bumped the serial to %d", again.Serial)
	}
	// A whole save (state mv) is a save like any other.
	again.Experiments["mnist"].Paused = true
	if err := state.SaveWhole(b, again); err != nil {
		t.Fatal(err)
	}
	same(t, "after SaveWhole", load(t, st.Open()), again)
}

func testChangeWriteAndReread(t *testing.T, st *Store) {
	b := st.Open()
	s := Sample(3)
	save(t, b, s)
	for i := range 6 {
		e := s.Experiments["mnist"]
		switch i % 3 {
		case 0:
			e.Trials[trialID(10+i)] = Trial(10 + i)
			e.NextSeq++
			save(t, b, s)
		case 1:
			e.Trials[trialID(0)].Attempts++
			commit, err := b.PrepareTrials(s, []state.TrialRef{{Experiment: "mnist", ID: trialID(0)}})
			if err != nil {
				t.Fatal(err)
			}
			if commit != nil {
				if err := commit(); err != nil {
					t.Fatal(err)
				}
			}
		case 2:
			delete(e.Trials, trialID(1+i))
			s.Experiments["cifar"].Concurrency++
			commit, err := b.Prepare(s)
			if err != nil {
				t.Fatal(err)
			}
			if commit != nil {
				if err := commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if s.Serial != uint64(i+2) {
			t.Fatalf("change %d: serial %d, want %d", i, s.Serial, i+2)
		}
		same(t, fmt.Sprintf("change %d, another client", i), load(t, st.Open()), s)
	}
	// A client that has read the state goes on writing changes to it.
	c := st.Open()
	s2 := load(t, c)
	s2.Experiments["cifar"].Trials[trialID(50)] = Trial(50)
	save(t, c, s2)
	same(t, "a second writer's change", load(t, st.Open()), s2)
	if lk, err := c.Lock(context.Background(), "test", "v0", 0); err == nil {
		// Releasing the lock may fold the changes into a snapshot
		// (the local backend compacts): nothing is lost by it.
		if err := lk.Unlock(); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Fatal(err)
	}
	same(t, "after the lock was released", load(t, st.Open()), s2)
}

func testWriteConflicts(t *testing.T, st *Store) {
	a, b := st.Open(), st.Open()
	save(t, a, Sample(2))
	sa, sb := load(t, a), load(t, b)
	sa.Experiments["mnist"].Paused = true
	save(t, a, sa)
	sb.Experiments["cifar"].Paused = true
	var ce *state.ConflictError
	if err := b.Save(sb); !errors.As(err, &ce) {
		t.Fatalf("a save over a state written since it was read: %v, want *state.ConflictError", err)
	}
	// Another lineage is never written over.
	other := Sample(1)
	if err := st.Open().Save(other); !errors.As(err, &ce) {
		t.Fatalf("a save of another lineage: %v, want *state.ConflictError", err)
	}
	same(t, "after refused saves", load(t, st.Open()), sa)
}

func testReadersSeeWholeVersions(t *testing.T, st *Store) {
	w := st.Open()
	s := Sample(1)
	save(t, w, s)
	const n = 30
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := st.Open()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := r.Load()
			if err == nil {
				// Serial k holds exactly trials t0000..t(k-1).
				if len(got.Experiments["mnist"].Trials) != int(got.Serial) {
					err = fmt.Errorf("serial %d with %d trials: a mix of two versions", got.Serial, len(got.Experiments["mnist"].Trials))
				}
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	for i := 1; i < n; i++ {
		s.Experiments["mnist"].Trials[trialID(i)] = Trial(i)
		save(t, w, s)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

func lockedBy(t *testing.T, err error) state.LockInfo {
	t.Helper()
	var le *state.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("lock: %v, want *state.LockedError", err)
	}
	return le.Info
}

func testLockContention(t *testing.T, st *Store) {
	ctx := context.Background()
	a, b := st.Open(), st.Open()
	if info, err := b.CurrentLock(); err != nil || info != nil {
		t.Fatalf("unlocked: CurrentLock = %v, %v", info, err)
	}
	before := time.Now().Add(-time.Second)
	lk, err := a.Lock(ctx, "apply", "v1.2.3", 0)
	if err != nil {
		t.Fatal(err)
	}
	info := lk.Info()
	if info.ID == "" || info.Operation != "apply" || info.Who == "" || info.Path == "" || info.Version != "v1.2.3" ||
		info.Created.Before(before.Truncate(time.Second)) || info.Created.After(time.Now()) {
		t.Fatalf("lock info %+v: want an ID, who, where, the operation, the version and since when", info)
	}
	for name, try := range map[string]func() error{
		"another client":  func() error { _, err := b.Lock(ctx, "plan", "v1.2.3", 0); return err },
		"the same client": func() error { _, err := a.Lock(ctx, "plan", "v1.2.3", 0); return err },
	} {
		if got := lockedBy(t, try()); got.ID != info.ID || got.Operation != "apply" || got.Who != info.Who || !got.Created.Equal(info.Created) {
			t.Fatalf("%s: held by %+v, want %+v", name, got, info)
		}
	}
	if cur, err := b.CurrentLock(); err != nil || cur == nil || cur.ID != info.ID || cur.Operation != "apply" {
		t.Fatalf("CurrentLock = %+v, %v, want the holder", cur, err)
	}
	// A deadline passes: an error wrapping the holder's.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Lock(short, "plan", "v", time.Hour); lockedBy(t, err).ID != info.ID {
		t.Fatal("a canceled wait does not name the holder")
	}
	if err := lk.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := lk.Unlock(); err != nil {
		t.Fatalf("a second Unlock: %v", err)
	}
	if cur, err := b.CurrentLock(); err != nil || cur != nil {
		t.Fatalf("after Unlock: CurrentLock = %+v, %v", cur, err)
	}
	lk2, err := b.Lock(ctx, "plan", "v", 0)
	if err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
	lk2.Unlock()
}

func testLockWaiter(t *testing.T, st *Store) {
	ctx := context.Background()
	lk, err := st.Open().Lock(ctx, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var waiter *state.Lock
	go func() {
		var err error
		waiter, err = st.Open().Lock(ctx, "destroy", "v", 10*time.Minute)
		got <- err
	}()
	if cur, err := st.Open().CurrentLock(); err != nil || cur == nil || cur.ID != lk.Info().ID {
		t.Fatalf("while the waiter waits: CurrentLock = %+v, %v, want the first holder", cur, err)
	}
	if err := lk.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	if cur, err := st.Open().CurrentLock(); err != nil || cur == nil || cur.Operation != "destroy" {
		t.Fatalf("CurrentLock = %+v, %v, want the waiter", cur, err)
	}
	waiter.Unlock()
}

func testForceUnlock(t *testing.T, st *Store) {
	ctx := context.Background()
	a := st.Open()
	old, err := a.Lock(ctx, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	b := st.Open()
	if err := b.ForceUnlock("not-the-id"); err == nil {
		t.Fatal("force-unlock with another ID succeeded")
	}
	if cur, err := b.CurrentLock(); err != nil || cur == nil || cur.ID != old.Info().ID {
		t.Fatalf("a refused force-unlock released the lock: %+v, %v", cur, err)
	}
	if err := b.ForceUnlock(old.Info().ID); err != nil {
		t.Fatal(err)
	}
	next, err := b.Lock(ctx, "plan", "v", 0)
	if err != nil {
		t.Fatalf("after force-unlock: %v", err)
	}
	// The old holder wakes up and unlocks: the new holder keeps its lock.
	if err := old.Unlock(); err != nil {
		t.Fatalf("the old holder's Unlock: %v", err)
	}
	if got := lockedBy(t, func() error { _, err := st.Open().Lock(ctx, "x", "v", 0); return err }()); got.ID != next.Info().ID {
		t.Fatalf("after the old holder's Unlock the lock is held by %+v, want the new holder", got)
	}
	if err := next.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := st.Open().ForceUnlock(next.Info().ID); err == nil {
		t.Fatal("force-unlock of a free state succeeded")
	}
}

func point(typ string, seq int, v string) state.MetricPoint {
	return state.MetricPoint{Type: typ, Sequence: seq, Value: json.RawMessage(v), Time: t0.Add(time.Duration(seq) * time.Millisecond)}
}

func seqs(pts []state.MetricPoint) []string {
	var out []string
	for _, p := range pts {
		out = append(out, fmt.Sprintf("%s/%d=%s", p.Type, p.Sequence, p.Value))
	}
	return out
}

func readSeries(t *testing.T, b state.Backend, e, id string) []string {
	t.Helper()
	pts, err := b.ReadMetrics(e, id)
	if err != nil {
		t.Fatalf("read %s/%s: %v", e, id, err)
	}
	return seqs(pts)
}

func wantSeries(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("%s: series %q, want %q", what, got, want)
	}
}

func testMetricSeries(t *testing.T, st *Store) {
	b := st.Open()
	if pts, err := b.ReadMetrics("mnist", "t0000"); err != nil || pts != nil {
		t.Fatalf("no series: %v, %v", pts, err)
	}
	if data, err := b.ReadMetricsFile("mnist", "t0000"); err != nil || data != nil {
		t.Fatalf("no series (raw): %q, %v", data, err)
	}
	// Two trials, interleaved, in batches; sequences out of order are
	// kept in the order appended.
	if err := b.AppendMetricsBatch([]state.MetricsBatch{
		{Experiment: "mnist", Trial: "t0000", Points: []state.MetricPoint{point("PERIODICAL", 0, "0.1"), point("PERIODICAL", 2, "0.3")}},
		{Experiment: "mnist", Trial: "t0001", Points: []state.MetricPoint{point("PERIODICAL", 0, `{"default":0.5,"loss":2}`)}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendMetricsBatch([]state.MetricsBatch{
		{Experiment: "mnist", Trial: "t0001", Points: []state.MetricPoint{point("FINAL", 1, "0.6")}},
		{Experiment: "mnist", Trial: "t0000", Points: []state.MetricPoint{point("PERIODICAL", 1, "0.2"), point("PERIODICAL", 2, "0.3")}},
		{Experiment: "mnist", Trial: "t0002"}, // no points: no series
	}); err != nil {
		t.Fatal(err)
	}
	c := st.Open()
	wantSeries(t, "t0000", readSeries(t, c, "mnist", "t0000"), "PERIODICAL/0=0.1", "PERIODICAL/2=0.3", "PERIODICAL/1=0.2")
	wantSeries(t, "t0001", readSeries(t, c, "mnist", "t0001"), `PERIODICAL/0={"default":0.5,"loss":2}`, "FINAL/1=0.6")
	wantSeries(t, "t0002", readSeries(t, c, "mnist", "t0002"))
	pts, _ := c.ReadMetrics("mnist", "t0000")
	if !pts[1].Time.Equal(t0.Add(2 * time.Millisecond)) {
		t.Fatalf("time %v, want %v", pts[1].Time, t0.Add(2*time.Millisecond))
	}
	// The raw series: JSON lines of MetricPoint, in the order appended.
	data, err := c.ReadMetricsFile("mnist", "t0001")
	if err != nil {
		t.Fatal(err)
	}
	var raw []string
	for _, l := range splitLines(data) {
		var p state.MetricPoint
		if err := json.Unmarshal(l, &p); err != nil {
			t.Fatalf("raw series line %q: %v", l, err)
		}
		raw = append(raw, seqs([]state.MetricPoint{p})...)
	}
	wantSeries(t, "raw t0001", raw, `PERIODICAL/0={"default":0.5,"loss":2}`, "FINAL/1=0.6")
	if _, err := c.ReadMetrics("mnist", "../escape"); err == nil {
		t.Fatal("a trial name with a slash was accepted")
	}
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := 0
		for i < len(data) && data[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, data[:i])
		}
		if i == len(data) {
			break
		}
		data = data[i+1:]
	}
	return out
}

func testMetricSeriesTorn(t *testing.T, st *Store) {
	// A fault this backend cannot be put in: not a dependency but a capability.
	if st.TearMetrics == nil {
		t.Skip("the backend's appends cannot tear")
	}
	b := st.Open()
	if err := b.AppendMetricsBatch([]state.MetricsBatch{{Experiment: "e", Trial: "t0000", Points: []state.MetricPoint{point("PERIODICAL", 0, "1"), point("PERIODICAL", 1, "2")}}}); err != nil {
		t.Fatal(err)
	}
	st.TearMetrics(t, "e", "t0000")
	wantSeries(t, "with a torn point", readSeries(t, st.Open(), "e", "t0000"), "PERIODICAL/0=1", "PERIODICAL/1=2")
	if err := st.Open().AppendMetricsBatch([]state.MetricsBatch{{Experiment: "e", Trial: "t0000", Points: []state.MetricPoint{point("FINAL", 2, "3")}}}); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, "appended after a torn point", readSeries(t, st.Open(), "e", "t0000"), "PERIODICAL/0=1", "PERIODICAL/1=2", "FINAL/2=3")
}

func testMetricSeriesMoveRemove(t *testing.T, st *Store) {
	b := st.Open()
	add := func(e, id string) {
		if err := b.AppendMetricsBatch([]state.MetricsBatch{{Experiment: e, Trial: id, Points: []state.MetricPoint{point("PERIODICAL", 0, "1")}}}); err != nil {
			t.Fatal(err)
		}
	}
	add("a", "t0000")
	add("a", "t0001")
	add("c", "t0000")
	if err := b.MoveMetrics("a", "b"); err != nil {
		t.Fatal(err)
	}
	c := st.Open()
	wantSeries(t, "moved away", readSeries(t, c, "a", "t0000"))
	wantSeries(t, "moved here", readSeries(t, c, "b", "t0001"), "PERIODICAL/0=1")
	if err := c.MoveMetrics("a", "b"); err != nil {
		t.Fatalf("moving what has moved: %v", err)
	}
	if err := c.MoveMetrics("b", "c"); err == nil {
		t.Fatal("a move over another experiment's series succeeded")
	}
	wantSeries(t, "not moved over", readSeries(t, c, "c", "t0000"), "PERIODICAL/0=1")
	if err := c.RemoveMetrics("b"); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, "removed", readSeries(t, st.Open(), "b", "t0001"))
	wantSeries(t, "another experiment's kept", readSeries(t, st.Open(), "c", "t0000"), "PERIODICAL/0=1")
}

func testRefreshMarks(t *testing.T, st *Store) {
	b := st.Open()
	s := Sample(1)
	save(t, b, s)
	if at := b.RefreshedAt(s.Lineage); len(at) != 0 {
		t.Fatalf("never refreshed: %v", at)
	}
	at := t0.Add(90 * time.Minute)
	if err := b.MarkRefreshed(s.Lineage, []string{"mnist", "cifar"}, at); err != nil {
		t.Fatal(err)
	}
	later := at.Add(time.Minute)
	if err := b.MarkRefreshed(s.Lineage, []string{"cifar"}, later); err != nil {
		t.Fatal(err)
	}
	got := st.Open().RefreshedAt(s.Lineage)
	if !got["mnist"].Equal(at) || !got["cifar"].Equal(later) || len(got) != 2 {
		t.Fatalf("refreshed at %v, want mnist %v, cifar %v", got, at, later)
	}
	if other := st.Open().RefreshedAt(state.New().Lineage); len(other) != 0 {
		t.Fatalf("another lineage sees marks %v", other)
	}
	// Marks are not the state: no serial bumped.
	if again := load(t, st.Open()); again.Serial != s.Serial {
		t.Fatalf("a mark changed the serial to %d", again.Serial)
	}
}

func testLostState(t *testing.T, st *Store) {
	// A fault this backend cannot be put in: not a dependency but a capability.
	if st.LoseState == nil {
		t.Skip("the backend cannot lose its state apart from the rest")
	}
	b := st.Open()
	s := Sample(3)
	save(t, b, s)
	s.Experiments["mnist"].Trials[trialID(3)] = Trial(3)
	save(t, b, s)
	if err := b.AppendMetricsBatch([]state.MetricsBatch{{Experiment: "mnist", Trial: "t0000", Points: []state.MetricPoint{point("PERIODICAL", 0, "1")}}}); err != nil {
		t.Fatal(err)
	}
	lk, err := b.Lock(context.Background(), "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	lk.Unlock()
	if ls, err := st.Open().Lost(); err != nil || ls != nil {
		t.Fatalf("a state that is there: Lost = %v, %v", ls, err)
	}
	st.LoseState(t)
	c := st.Open()
	if ok, err := c.Exists(); err != nil || ok {
		t.Fatalf("a lost state: Exists = %v, %v", ok, err)
	}
	ls, err := c.Lost()
	if err != nil || ls == nil {
		t.Fatalf("a lost state: Lost = %v, %v, want what it left", ls, err)
	}
	found := false
	for _, e := range ls.Experiments {
		found = found || e == "mnist"
	}
	if !found {
		t.Fatalf("Lost names experiments %v, want mnist", ls.Experiments)
	}
	if ls.String() == "" {
		t.Fatal("Lost says nothing")
	}
}

// history saves Sample(2) and then n changes, each adding a trial; it
// returns the state after each save (index: serial - 1).
func history(t *testing.T, b state.Backend, n int) []*state.State {
	s := Sample(2)
	save(t, b, s)
	hist := []*state.State{s.Clone()}
	for i := range n {
		s.Experiments["mnist"].Trials[trialID(10+i)] = Trial(10 + i)
		save(t, b, s)
		hist = append(hist, s.Clone())
	}
	return hist
}

func tornChange(t *testing.T, st *Store, keep float64) {
	hist := history(t, st.Open(), 4)
	st.TearLastChange(t, keep)
	b := st.Open()
	got := load(t, b)
	same(t, "with the last change torn", got, hist[len(hist)-2])
	if w := b.Warnings(); len(w) == 0 {
		t.Fatal("a torn change was dropped without a warning")
	}
	// The next save goes on from the state before the torn change.
	got.Experiments["cifar"].Paused = true
	save(t, b, got)
	c := st.Open()
	same(t, "the save after a torn change", load(t, c), got)
	if w := c.Warnings(); len(w) != 0 {
		t.Fatalf("after the save: warnings %q", w)
	}
}

func testCorruptChange(t *testing.T, st *Store) {
	// A fault this backend cannot be put in: not a dependency but a capability.
	if st.CorruptChange == nil {
		t.Skip("the backend's changes cannot be damaged apart")
	}
	hist := history(t, st.Open(), 5)
	st.CorruptChange(t, 2)
	b := st.Open()
	if _, err := b.Load(); err == nil {
		t.Fatal("a damaged change that is not the last loaded without an error")
	}
	next := hist[len(hist)-1].Clone()
	next.Experiments["cifar"].Paused = true
	if err := b.Save(next); err == nil {
		t.Fatal("a save over a damaged change succeeded")
	}
	if err := st.Open().Save(hist[len(hist)-1].Clone()); err == nil {
		t.Fatal("a save by a new client over a damaged change succeeded")
	}
	// Nothing was written over it: still an error.
	_, err := st.Open().Load()
	if err == nil {
		t.Fatal("after the refused saves the damage is gone: something was written over it")
	}
	// The error says what cannot be read, where, and a repair that works
	// on this backend: a shared backend keeps no file, nor a backup
	// beside it (the local backend's journal has its own error).
	if b.Name() != state.LocalBackend {
		var ce *state.CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("the error of a damaged state is %T (%v), want *state.CorruptError", err, err)
		}
		if msg := err.Error(); strings.Contains(msg, "state file") || strings.Contains(msg, "the file") || strings.Contains(msg, ".backup") || !strings.Contains(msg, "state push -force") {
			t.Errorf("the %s backend's error for a damaged state speaks of files or backups, or does not name `state push -force`: %v", b.Name(), err)
		}
	}
	// A good copy replaces it (state push -force), lineage and serial
	// kept. (The local backend's damaged journal is moved aside by hand,
	// as its error says.)
	r, ok := b.(state.Replacer)
	if !ok || b.Name() == state.LocalBackend {
		return
	}
	lk, err := b.Lock(context.Background(), "state push", "v1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	good := hist[len(hist)-1].Clone()
	if err := r.Replace(good); err != nil {
		t.Fatalf("replace a damaged state with a good copy: %v", err)
	}
	same(t, "after a damaged state was replaced", load(t, st.Open()), hist[len(hist)-1])
}

// testContextReads: LoadContext and PeekContext read what Load does; a
// backend that is a state.ContextReader gives a read up when its context
// has ended (a controller stopping while the server is down), with the
// context's error, and the client's next save goes on from what it
// loaded before.
func testContextReads(t *testing.T, st *Store) {
	b := st.Open()
	s := Sample(3)
	save(t, b, s)
	s = load(t, b)
	for name, read := range map[string]func(context.Context, state.SnapshotReader) (*state.State, error){
		"LoadContext": state.LoadContext, "PeekContext": state.PeekContext,
	} {
		got, err := read(context.Background(), st.Open())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		same(t, name, got, s)
		if _, ok := b.(state.ContextReader); !ok {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := read(ctx, b); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s with an ended context: %v, want context.Canceled", name, err)
		}
	}
	s.Experiments["mnist"].Paused = true
	save(t, b, s)
	same(t, "after reads given up", load(t, st.Open()), s)
}
