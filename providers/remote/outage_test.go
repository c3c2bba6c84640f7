package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// savedOutages is what unreadable.json in state holds (none when there
// is no file).
func savedOutages(t *testing.T, state string) map[string]unreadInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "unreadable.json"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]unreadInfo
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unreadable.json: %v: %s", err, b)
	}
	return m
}

// A purge forgets the saved outages of the purged experiment's trials
// (unreadable.json), not those of another experiment's: a trial of the
// same id in the experiment created again must not inherit an outage
// that began before it existed.
func TestPurgeForgetsTrialOutages(t *testing.T) {
	state := t.TempDir()
	r, key, _, hangNew := hungLab(t, func(c *Config) { c.LostGrace = time.Hour; c.StateDir = state })
	defer func(d time.Duration) { sftpTimeout = d }(sftpTimeout)
	sftpTimeout = time.Second
	if _, err := r.Start(ctx(t), trialReq("keep", "t1", "echo hello", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	handles := map[string]providers.Handle{
		"hang": waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded).Handle,
		"keep": waitPhase(t, r, "keep", "t1", providers.PhaseSucceeded).Handle,
	}
	// hang/t1 and keep/t1: both status files hang.
	hangNew("/t1/" + statusFile)
	r.machines[0].close()
	for _, exp := range []string{"hang", "keep"} {
		deadline := time.Now().Add(time.Minute)
		for savedOutages(t, state)[key+" "+exp+"/t1"].Since.IsZero() {
			if time.Now().After(deadline) {
				t.Fatalf("no outage of %s/t1 saved in a minute of reads: %v", exp, savedOutages(t, state))
			}
			err := returns(t, "Read", func() error {
				_, err := r.Read(context.Background(), providers.ReadRequest{Experiment: exp, TrialID: "t1", Handle: handles[exp]})
				return err
			})
			t.Logf("read %s/t1: %v", exp, err)
			r.Warnings() // the end of a refresh
			time.Sleep(100 * time.Millisecond)
		}
	}
	hangNew("no such path") // the sftp-servers answer again
	r.Close()
	rc := newRemote(t, r.cfg) // destroy, in the next command
	if err := rc.PurgeExperiment(ctx(t), "hang", "lin"); err != nil {
		t.Fatal(err)
	}
	saved := savedOutages(t, state)
	if _, ok := saved[key+" hang/t1"]; ok {
		t.Errorf("unreadable.json after the purge of hang: %v, want no outage of hang/t1", saved)
	}
	if _, ok := saved[key+" keep/t1"]; !ok {
		t.Errorf("unreadable.json after the purge of hang: %v, want keep/t1's outage kept", saved)
	}
}

// A trial's outage starts at its first read that got nothing, even when
// that read was refused at once because its machine was known down (the
// re-dial gate: within a second of a failure, or backed off after a
// failed dial), not only at a read that hung on its own: when the
// machine answers again (another trial reads fine) and the trial's own
// status file hangs, it is LOST once lost_grace has passed since that
// first read, in the same command and in the next one. Before, such an
// outage was the machine's alone: dropped when the machine answered, and
// not saved, so the trial's lost_grace began again at its first hang.
func TestGatedReadStartsTrialOutage(t *testing.T) {
	t.Run("backed off", func(t *testing.T) { testGatedReadStartsTrialOutage(t, false, false) })
	t.Run("backed off, next command", func(t *testing.T) { testGatedReadStartsTrialOutage(t, false, true) })
	t.Run("hung", func(t *testing.T) { testGatedReadStartsTrialOutage(t, true, false) })
}

// testGatedReadStartsTrialOutage: the machine goes away (sshd stopped,
// or hung: another trial's status file hangs), t1 is read and refused at
// once, the machine answers (another trial reads fine) and t1's status
// file hangs.
func testGatedReadStartsTrialOutage(t *testing.T, hung, nextCommand bool) {
	const grace = 3 * time.Second
	state := t.TempDir()
	r, srv, _, hangNew := hungLabServer(t, func(c *Config) {
		c.LostGrace, c.StateDir = grace, state
		c.Redial, c.RedialMax = time.Hour, time.Hour // the test ends the back-off (clock)
	})
	var clock atomic.Int64 // the back-off's clock: seconds added to now
	r.now = func() time.Time { return time.Now().Add(time.Duration(clock.Load()) * time.Second) }
	defer func(d time.Duration) { sftpTimeout = d }(sftpTimeout)
	sftpTimeout = time.Second
	o := waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
	if _, err := r.Start(ctx(t), trialReq("hang", "ok", "echo hello", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	ok := providers.ReadRequest{Experiment: "hang", TrialID: "ok", Handle: waitPhase(t, r, "hang", "ok", providers.PhaseSucceeded).Handle}
	rr := providers.ReadRequest{Experiment: "hang", TrialID: "t1", Handle: o.Handle}
	var first time.Time
	if hung {
		// x1's status file hangs: the machine is down, and t1's read
		// right after is refused at once (within a second of the hang;
		// on a machine so loaded that it is not, t1's own status file
		// hangs too).
		if _, err := r.Start(ctx(t), trialReq("hang", "x1", "echo hello", t.TempDir())); err != nil {
			t.Fatal(err)
		}
		x1 := providers.ReadRequest{Experiment: "hang", TrialID: "x1", Handle: waitPhase(t, r, "hang", "x1", providers.PhaseSucceeded).Handle}
		hangNew("1/" + statusFile)
		r.machines[0].close()
		for _, rr := range []providers.ReadRequest{x1, rr} {
			first = time.Now() // (the machine is down from x1's hang on)
			err := returns(t, "Read", func() error { _, err := r.Read(context.Background(), rr); return err })
			if err == nil {
				t.Fatalf("read of %s: no error", rr.TrialID)
			}
			t.Logf("read of %s: %v", rr.TrialID, err)
		}
		r.Warnings()
	} else {
		// The machine goes away: the first read's dial fails, the next
		// is refused at once (backed off).
		srv.Stop()
		r.machines[0].close()
		first = time.Now()
		for i := 0; i < 2; i++ {
			if _, err := r.Read(ctx(t), rr); err == nil {
				t.Fatalf("read %d of t1 on a stopped machine: no error", i+1)
			} else {
				t.Logf("read %d of t1: %v", i+1, err)
			}
		}
		r.Warnings() // the end of a refresh
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
	}
	// It answers again, but t1's status file hangs there now.
	hangNew("/t1/" + statusFile)
	if nextCommand {
		r.Close()
		r = newRemote(t, r.cfg)
	} else {
		clock.Add(2 * 3600) // the back-off ends
	}
	readsFine(t, r, ok) // the machine answers
	if wait := grace - time.Since(first); wait > 0 {
		time.Sleep(wait + 100*time.Millisecond)
	}
	var got providers.Observation
	err := returns(t, "Read of t1", func() (err error) {
		got, err = r.Read(context.Background(), rr)
		return err
	})
	if err != nil || got.Phase != providers.PhaseLost {
		t.Fatalf("t1 unread for %s since its first read (lost_grace %s), its status file hanging: %+v %v, want LOST",
			time.Since(first).Round(time.Second), grace, got, err)
	}
	wantOutage(t, got.Reason, grace)
	if !strings.Contains(got.Reason, "/t1/"+statusFile) {
		t.Errorf("reason %q: want the file that hangs named", got.Reason)
	}
	t.Logf("LOST: %s", got.Reason)
}

// A machine whose every file read hangs, with many trials, writes
// unreadable.json once in a refresh as their outages begin, and once as
// they end, not once per trial each time: a refresh's reads (16 at once)
// and then its Warnings, the end of a refresh. Every trial's outage is
// saved by then.
func TestTrialOutagesWrittenOncePerRefresh(t *testing.T) {
	const n = 60
	state := t.TempDir()
	r, key, _, hangNew := hungLab(t, func(c *Config) { c.LostGrace = time.Hour; c.StateDir = state })
	m := r.machines[0]
	writes := func() int {
		r.downMu.Lock()
		defer r.downMu.Unlock()
		return r.unreadWrites
	}
	// refresh reads the n trials (absent: none was started), 16 at once,
	// as plan.Refresh does, all under c, then asks for the warnings. It
	// returns how many reads failed and how many times unreadable.json
	// was written.
	refresh := func(c context.Context) (failed, wrote int) {
		before := writes()
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := 0; i < n; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(id string) {
				defer wg.Done()
				defer func() { <-sem }()
				if _, err := r.Read(c, providers.ReadRequest{Experiment: "many", TrialID: id, Handle: providers.Handle{"machine": key}}); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}(fmt.Sprintf("t%02d", i))
		}
		wg.Wait()
		r.Warnings()
		return failed, writes() - before
	}
	// Every sftp-server hangs after the SFTP handshake; the connection
	// is dialled first, so that the 16 first reads all hang on it until
	// the refresh's deadline.
	hangNew("")
	m.close()
	if _, _, err := m.connected(ctx(t)); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	failed, wrote := returnsTwo(t, func() (int, int) { return refresh(c) })
	cancel()
	saved := savedOutages(t, state)
	t.Logf("the machine hangs: %d reads failed, unreadable.json written %d times, %d outages saved", failed, wrote, len(saved))
	if failed != n || len(saved) != n {
		t.Fatalf("%d of %d reads failed, %d outages saved: want all", failed, n, len(saved))
	}
	if wrote > 1 {
		t.Errorf("unreadable.json written %d times in one refresh as %d trials' outages began, want once", wrote, n)
	}
	// The sftp-servers answer again: the trials read (absent), their
	// outages end.
	hangNew("no such path")
	m.close()
	deadline := time.Now().Add(eventWait)
	for {
		if _, _, err := m.connected(ctx(t)); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the machine does not answer again: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	failed, wrote = returnsTwo(t, func() (int, int) { return refresh(ctx(t)) })
	saved = savedOutages(t, state)
	t.Logf("the machine answers: %d reads failed, unreadable.json written %d times, %d outages saved", failed, wrote, len(saved))
	if failed != 0 || len(saved) != 0 {
		t.Fatalf("%d reads failed, %d outages saved: want none", failed, len(saved))
	}
	if wrote > 1 {
		t.Errorf("unreadable.json written %d times in one refresh as %d trials' outages ended, want once", wrote, n)
	}
}

// returnsTwo is returns for a function of two results.
func returnsTwo(t *testing.T, f func() (int, int)) (a, b int) {
	t.Helper()
	_ = returns(t, "refresh", func() error { a, b = f(); return nil })
	return a, b
}

// An outage that began while its machine was down is saved before the
// machine's own record goes (the machine answers again), even before
// the refresh ends: a command killed then loses no outage's start,
// which until then the machine's record held.
func TestTrialOutageSavedBeforeMachineRecordGoes(t *testing.T) {
	state := t.TempDir()
	r, srv, _, _ := hungLabServer(t, func(c *Config) {
		c.LostGrace, c.StateDir = time.Hour, state
		c.Redial, c.RedialMax = time.Hour, time.Hour
	})
	var clock atomic.Int64 // the back-off's clock: seconds added to now
	r.now = func() time.Time { return time.Now().Add(time.Duration(clock.Load()) * time.Second) }
	o := waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
	if _, err := r.Start(ctx(t), trialReq("hang", "ok", "echo hello", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	ok := providers.ReadRequest{Experiment: "hang", TrialID: "ok", Handle: waitPhase(t, r, "hang", "ok", providers.PhaseSucceeded).Handle}
	r.Warnings()
	srv.Stop()
	r.machines[0].close()
	if _, err := r.Read(ctx(t), providers.ReadRequest{Experiment: "hang", TrialID: "t1", Handle: o.Handle}); err == nil {
		t.Fatal("read of t1 on a stopped machine: no error")
	}
	if _, err := os.Stat(filepath.Join(state, "unreachable.json")); err != nil {
		t.Fatalf("the machine's record: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	clock.Add(2 * 3600)
	readsFine(t, r, ok) // the machine answers: its record goes
	if _, err := os.Stat(filepath.Join(state, "unreachable.json")); !os.IsNotExist(err) {
		t.Fatalf("the machine answers, its record stays: %v", err)
	}
	key := r.machines[0].key
	if saved := savedOutages(t, state); saved[key+" hang/t1"].Since.IsZero() {
		t.Fatalf("unreadable.json once the machine's record went: %v, want t1's outage", saved)
	}
}

// A purge (destroy) that finds a trial directory it cannot read (its
// files hang) fails naming it, and leaves it for the next destroy, which
// purges it once it reads: before, the listing left it out without a
// word, the purge succeeded, and the directory (and whatever the trial
// ran) outlived the experiment's record. A refresh's listing says so too.
func TestPurgeOfAHungTrialFails(t *testing.T) {
	r, _, _, hangNew := hungLab(t, func(c *Config) { c.LostGrace = time.Hour })
	defer func(d time.Duration) { sftpTimeout = d }(sftpTimeout)
	sftpTimeout = time.Second
	if _, err := r.Start(ctx(t), trialReq("hang", "t2", "echo hello", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded)
	waitPhase(t, r, "hang", "t2", providers.PhaseSucceeded)
	hangNew("/t1/" + statusFile)
	r.machines[0].close()
	var err error
	returns(t, "List", func() error { _, err = r.List(context.Background(), "hang"); return nil })
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, "trial t1") || !strings.Contains(w, "its state is unknown") {
		t.Errorf("List's warnings %q: want t1 named as not listed", w)
	}
	// Past the re-dial gate (a second after a failure), as a destroy in
	// the next command would be: its listing dials again and meets the
	// hang.
	time.Sleep(1500 * time.Millisecond)
	err = returns(t, "PurgeExperiment", func() error { return r.PurgeExperiment(context.Background(), "hang", "lin") })
	if err == nil || !strings.Contains(err.Error(), "trial t1") || !strings.Contains(err.Error(), "not purged") {
		t.Fatalf("a purge with t1 unreadable: %v, want it to fail naming t1", err)
	}
	hangNew("no such path") // the sftp-servers answer again
	r.Close()
	rc := newRemote(t, r.cfg) // destroy again, in the next command
	// (t2 too may be left: its read may have met t1's hung sftp-server.)
	obs, err := rc.List(ctx(t), "hang")
	if err != nil || len(obs) == 0 || obs[0].TrialID != "t1" {
		t.Fatalf("after the failed purge: %+v, %v; want t1 there", obs, err)
	}
	if err := rc.PurgeExperiment(ctx(t), "hang", "lin"); err != nil {
		t.Fatal(err)
	}
	if obs, err := rc.List(ctx(t), "hang"); err != nil || len(obs) != 0 {
		t.Fatalf("after the second purge: %+v, %v; want none", obs, err)
	}
}
