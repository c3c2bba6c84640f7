package remote

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/providers"
)

// fill makes n entries in dir (directories when dirs).
func fill(t *testing.T, dir string, n int, dirs bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("junk%06d", i))
		var err error
		if dirs {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A machine's directory with far more entries than trialform writes
// there (an experiment's trials dir, a trial's TensorBoard dir with
// millions of files) is not read whole into this machine's memory: a
// listing keeps at most maxListing bytes of the server's answers, uses
// what it got and says what it left out. (Before, every entry was kept:
// 10 million of them, GBs.) The test's bound is small, the entries few.
func TestHugeDirectoryListingBounded(t *testing.T) {
	l := testLab(t)
	defer func(n int64) { maxListing = n }(maxListing)
	maxListing = 64 << 10 // some 500 entries
	r := newRemote(t, labConfig(t, l))
	m := r.machines[0]
	code := t.TempDir()
	h, err := r.Start(ctx(t), trialReq("big", "t1", `d="$TRIALFORM_TENSORBOARD_DIR"; mkdir -p "$d" && printf abc > "$d/events.1"`, code))
	if err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "big", "t1", providers.PhaseSucceeded)

	// An experiment's trials dir with 5,000 more entries.
	fill(t, filepath.Join(m.work, "trials", "big"), 5000, true)
	obs, err := r.List(ctx(t), "big")
	ws := lines(r.Warnings())
	if err != nil || !strings.Contains(ws, "more than") || !strings.Contains(ws, filepath.Join(m.work, "trials", "big")) {
		t.Fatalf("List of an experiment dir with 5,000 entries: %d trials, %v; warnings:\n%s\nwant one that says the listing was cut", len(obs), err, ws)
	}
	t.Log(ws)

	// A trial's TensorBoard dir with 5,000 files.
	tb := filepath.Join(m.trialDir("big", "t1"), "output", "tensorboard", "t1", "many")
	fill(t, tb, 5000, false)
	dest := t.TempDir()
	st, err := r.SyncTensorBoard(ctx(t), providers.SyncRequest{Experiment: "big", TrialID: "t1", Handle: h, Dest: dest})
	if err == nil || !strings.Contains(err.Error(), "t1") || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("sync of 5,000 files with a 64 KiB listing bound: %+v, %v; want an error naming the trial and the bound", st, err)
	}
	t.Logf("%+v: %v", st, err)
	if st.Files >= 5000 {
		t.Fatalf("%d files copied, want what the bounded listing found", st.Files)
	}
}

// The listings keep their SFTP session between calls: a refresh (List)
// after another opens no new session and starts no new sftp-server on the
// machine (each did, some 3 ms here and three round trips on a real
// network); a listing that was cut closes it, and the next opens one.
func TestListingSessionKept(t *testing.T) {
	l := testLab(t)
	defer func(n int64) { maxListing = n }(maxListing)
	r := newRemote(t, labConfig(t, l))
	m := r.machines[0]
	if _, err := r.Start(ctx(t), trialReq("keep", "t1", "true", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "keep", "t1", providers.PhaseSucceeded)
	kept := func() *lister {
		m.listMu.Lock()
		defer m.listMu.Unlock()
		return m.lst
	}
	if _, err := r.List(ctx(t), "keep"); err != nil {
		t.Fatal(err)
	}
	first := kept()
	if first == nil {
		t.Fatal("no listing session kept after a List")
	}
	for range 3 {
		if _, err := r.List(ctx(t), "keep"); err != nil {
			t.Fatal(err)
		}
		if got := kept(); got != first {
			t.Fatalf("a List opened another listing session (%p, was %p)", got, first)
		}
	}
	fill(t, filepath.Join(m.work, "trials", "keep"), 3000, true)
	maxListing = 32 << 10
	if _, err := r.List(ctx(t), "keep"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lines(r.Warnings()), "more than") {
		t.Fatal("the listing of 3,000 entries with a 32 KiB bound was not cut")
	}
	if got := kept(); got != nil {
		t.Fatal("the session of a cut listing was kept (answers may still be in flight on it)")
	}
	maxListing = 16 << 20
	obs, err := r.List(ctx(t), "keep")
	if err != nil || len(obs) != 1 || kept() == nil {
		t.Fatalf("the List after a cut one: %d trials, %v, session kept: %v; want t1 and a new session", len(obs), err, kept() != nil)
	}
	if ws := lines(r.Warnings()); ws != "" {
		t.Fatalf("warnings after the bound was raised: %s", ws)
	}
}
