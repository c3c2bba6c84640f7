package apply

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
)

// listingRecorder is a recorder that also lists, counting the listings.
type listingRecorder struct {
	*recorder
	mu    sync.Mutex
	lists int
}

func (l *listingRecorder) List(context.Context, string) ([]providers.Observation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists++
	return nil, nil
}

func (l *listingRecorder) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lists
}

// Within a run, an experiment is listed at its first pass and then once
// per ListInterval; without one (a single plan or apply) every refresh
// lists.
func TestRefreshListsOncePerInterval(t *testing.T) {
	store := &memStore{}
	s, rec := newSession(config(2, 4), store)
	lr := &listingRecorder{recorder: rec}
	s.Providers = oneProvider{lr}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	pass := func() {
		t.Helper()
		p, err := s.Plan(context.Background(), plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	pass()
	if n := lr.count(); n != 2 {
		t.Fatalf("without a list interval: %d listings in 2 passes, want 2", n)
	}
	s.ListInterval = 10 * time.Second
	pass()
	before := lr.count()
	now = now.Add(time.Second)
	pass()
	pass()
	if n := lr.count(); n != before {
		t.Fatalf("within the interval: %d more listings, want 0", n-before)
	}
	now = now.Add(10 * time.Second)
	pass()
	if n := lr.count(); n != before+1 {
		t.Fatalf("after the interval: %d more listings, want 1", n-before)
	}
}
