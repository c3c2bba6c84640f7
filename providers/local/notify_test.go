package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Changed signals a trial's end; Close closes the channel (listeners that
// range over it stop), may be called twice, and a trial ending after Close
// signals nothing instead of panicking. (The second trial ends only once
// the test has closed: one ending before would rightly signal.)
func TestChangedClosedByClose(t *testing.T) {
	l := newLocal(t, nil)
	c := l.Changed()
	if _, err := l.Start(context.Background(), req(l, "exp", "before", "true")); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-c:
		if !ok {
			t.Fatal("Changed closed before Close")
		}
	case <-time.After(eventWait):
		t.Fatal("no change signal 60s after a trial of `true` started")
	}

	gate := filepath.Join(t.TempDir(), "closed")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) })
	if _, err := l.Start(context.Background(), req(l, "exp", "after", "while [ ! -e '"+gate+"' ]; do sleep 0.01; done")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case _, ok := <-c:
		if ok {
			t.Fatal("Changed sent a value after Close")
		}
	case <-time.After(eventWait):
		t.Fatal("Changed not closed by Close")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The trial started before Close ends after it; its supervisor's exit
	// must not send on the closed channel (that would panic).
	if o := waitEnded(t, l, "exp", "after"); !o.Phase.Ended() {
		t.Fatalf("trial after Close: %+v", o)
	}
}
