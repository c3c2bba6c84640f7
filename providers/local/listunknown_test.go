package local

import (
	"context"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/trialform/trialform/providers"
)

// opens watches dirs with inotify and returns a func that reports how
// many files were opened in each since (an open queues its event before
// the open returns, so nothing is waited for).
func opens(t *testing.T, dirs ...string) func() map[string]int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	wd := map[int32]string{}
	for _, d := range dirs {
		w, err := unix.InotifyAddWatch(fd, d, unix.IN_OPEN)
		if err != nil {
			t.Fatal(err)
		}
		wd[int32(w)] = d
	}
	return func() map[string]int {
		n := map[string]int{}
		buf := make([]byte, 64<<10)
		for {
			k, err := unix.Read(fd, buf)
			if err != nil || k <= 0 {
				return n
			}
			for off := 0; off+unix.SizeofInotifyEvent <= k; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				n[wd[ev.Wd]]++
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// ListUnknown finds the trials the caller does not know and opens no file
// of those it knows: a refresh over a long finished history costs one
// directory listing (issue 30), not a read of every trial directory.
func TestListUnknownOpensNoKnownTrial(t *testing.T) {
	l := newLocal(t, nil)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := l.Start(ctx, req(l, "exp", id, "exit 0")); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		waitEnded(t, l, "exp", id)
	}
	dir := func(id string) string { return filepath.Join(l.cfg.Root, "exp", id) }
	seen := opens(t, dir("a"), dir("b"), dir("c"))
	known := map[string]bool{"a": true, "c": true}
	obs, err := l.ListUnknown(ctx, "exp", func(id string) bool { return known[id] })
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 1 || obs[0].TrialID != "b" || obs[0].Phase != providers.PhaseSucceeded {
		t.Fatalf("ListUnknown = %+v, want only b, succeeded", obs)
	}
	n := seen()
	if n[dir("a")] != 0 || n[dir("c")] != 0 {
		t.Errorf("ListUnknown opened files of known trials: %v", n)
	}
	if n[dir("b")] == 0 {
		t.Errorf("no open of b's files seen (%v): the watch sees nothing, so the check above proves nothing", n)
	}
	// List still lists every trial.
	all, err := l.List(ctx, "exp")
	if err != nil || len(all) != 3 {
		t.Fatalf("List = %d trials, %v; want 3", len(all), err)
	}
}
