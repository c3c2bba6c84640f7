package apply

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/state"
)

// slowFirstStart is a finisher whose first Start blocks until a later
// trial has started: it stands for a supervisor that is slow to launch
// while the other slot's trial already ended.
type slowFirstStart struct {
	*finisher
	once     sync.Once
	calls    int
	release  chan struct{}
	overlap  bool // a start began while the first one was blocked
	slowID   string
	blocking bool
}

func (f *slowFirstStart) Start(ctx context.Context, req providers.StartRequest) (providers.Handle, error) {
	f.mu.Lock()
	f.calls++
	first := f.calls == 1
	if first {
		f.slowID, f.blocking = req.TrialID, true
	} else if f.blocking && f.calls >= 3 {
		// The third start while the first still blocks: the run loop
		// filled the second slot again without waiting for it.
		f.overlap = true
		f.once.Do(func() { close(f.release) })
	}
	f.mu.Unlock()
	if first {
		<-f.release
		f.mu.Lock()
		f.blocking = false
		f.mu.Unlock()
	}
	return f.finisher.Start(ctx, req)
}

// apply -wait fills a slot as soon as its trial ended even while another
// trial's start has not returned (the launch-overhead latency of issue 17:
// a pass used to wait for the slowest start of its batch), and the trial
// being started is neither started twice nor read before its start returned.
func TestRunStartsWhileAnotherStartIsUnderWay(t *testing.T) {
	store := &memStore{}
	s, rec := newSession(config(2, 4), store)
	f := &slowFirstStart{finisher: &finisher{recorder: rec}, release: make(chan struct{})}
	s.Providers = oneProvider{f}
	// A safety net only: without pipelined starts the first start would
	// block the loop for ever.
	guard := time.AfterFunc(30*time.Second, func() { f.once.Do(func() { close(f.release) }) })
	defer guard.Stop()
	last, err := s.Run(context.Background(), RunOptions{Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !f.overlap {
		t.Fatal("no trial was started while the first trial's start was under way: the loop waited for the slowest start of its batch")
	}
	if !Finished(last) {
		t.Fatal("Run returned before the experiment finished")
	}
	e := store.last().Experiments["exp"]
	if len(e.Trials) != 4 {
		t.Fatalf("%d trials, want 4", len(e.Trials))
	}
	for id, tr := range e.Trials {
		if tr.Status != state.Succeeded || rec.started[id] != 1 {
			t.Fatalf("trial %s: %s, started %d times", id, tr.Status, rec.started[id])
		}
	}
}
