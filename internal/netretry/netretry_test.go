package netretry

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errBusy = errors.New("busy")

func always(error) (bool, time.Duration) { return true, 0 }

// Waits double from Base to Max, each jittered to between half and all
// of it, so that callers failed by one outage do not retry in step.
func TestBackoffJitter(t *testing.T) {
	p := Policy{Base: 100 * time.Millisecond, Max: time.Second}
	for i := 1; i <= 8; i++ {
		full := min(100*time.Millisecond<<(i-1), time.Second)
		seen := map[time.Duration]bool{}
		for range 200 {
			w := p.Backoff(i)
			if w < full/2 || w > full {
				t.Fatalf("Backoff(%d) = %s, want within [%s, %s]", i, w, full/2, full)
			}
			seen[w] = true
		}
		if len(seen) < 2 {
			t.Errorf("Backoff(%d) is always %v: no jitter", i, seen)
		}
	}
}

// Negative Attempts retries until MaxElapsed would pass; Retry-After is
// honoured up to Max; a cancelled context stops the retries.
func TestDoBounds(t *testing.T) {
	var slept time.Duration
	var waits []time.Duration
	fake := func(ctx context.Context, d time.Duration) error { slept += d; waits = append(waits, d); return nil }
	p := Policy{Attempts: -1, Base: 100 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: time.Hour, Sleep: fake}
	calls := 0
	err := p.Do(context.Background(), always, func(context.Context) error {
		calls++
		if calls < 40 {
			return errBusy
		}
		return nil
	})
	if err != nil || calls != 40 {
		t.Fatalf("%d calls, %v: want 40 and success with no call limit", calls, err)
	}

	waits = nil
	calls = 0
	asked := func(error) (bool, time.Duration) { return true, 9 * time.Second }
	err = Policy{Attempts: 3, Max: 5 * time.Second, Sleep: fake}.Do(context.Background(), asked, func(context.Context) error { calls++; return errBusy })
	if !errors.Is(err, errBusy) || calls != 3 || len(waits) != 2 || waits[0] != 5*time.Second {
		t.Errorf("%d calls, waits %v, %v: want 3 calls, Retry-After capped at Max", calls, waits, err)
	}

	calls = 0
	never := func(error) (bool, time.Duration) { return false, 0 }
	if err := p.Do(context.Background(), never, func(context.Context) error { calls++; return errBusy }); !errors.Is(err, errBusy) || calls != 1 {
		t.Errorf("a final error: %d calls, %v", calls, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = Policy{Attempts: -1}.Do(ctx, always, func(context.Context) error {
		calls++
		cancel()
		return errBusy
	})
	if !errors.Is(err, errBusy) || calls != 1 {
		t.Errorf("after cancel: %d calls, %v", calls, err)
	}
}
