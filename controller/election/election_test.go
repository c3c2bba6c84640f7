package election

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
)

// TestPausedLeaderNeverWritesAgain pauses a leader's renew loop and
// watchdog (as SIGSTOP pauses the process) past the lease duration,
// while a standby takes over: the paused leader's writer, which checks
// Leading before each write, never writes once the standby leads, and
// when resumed the former leader does not lead again: its leading
// context is cancelled and Run returns, though the Lease it finds is
// held by another (it used to retry for a whole renew deadline measured
// from the resume, leading meanwhile).
func TestPausedLeaderNeverWritesAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := k8stest.Start(ctx, k8stest.Options{NoScheduler: true, NoControllerManager: true})
	if errors.Is(err, k8stest.ErrNotBuilt) {
		testdeps.Require(t, "the test Kubernetes control plane", err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()

	var mu sync.Mutex
	var events []string // "write r1", "started r2", … in order
	note := func(ev string) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}
	started := make(chan string, 4)
	newElector := func(id string) *Elector {
		var el *Elector
		el, err := New(Config{Rest: cp.Config, Namespace: "default", Name: "paused", Identity: id,
			// Long enough that a renewal on a heavily loaded machine
			// (the apiserver shares its cores) does not lose the lease.
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			OnStartedLeading: func(lctx context.Context) {
				note("started " + id)
				started <- id
				// The writer: a write is made only while Leading, checked
				// under the same lock as the write is noted.
				for lctx.Err() == nil {
					mu.Lock()
					if el.Leading() {
						events = append(events, "write "+id)
					}
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return el
	}
	r1 := newElector("r1")
	var paused sync.RWMutex // write-locked: r1's loops are paused
	r1.pause = func() { paused.RLock(); paused.RUnlock() }
	r1done := make(chan struct{})
	go func() { r1.Run(ctx); close(r1done) }()
	if id := <-started; id != "r1" {
		t.Fatalf("%s started leading first", id)
	}
	r2 := newElector("r2")
	r2ctx, r2cancel := context.WithCancel(ctx)
	defer r2cancel()
	go r2.Run(r2ctx)

	paused.Lock() // r1 stops renewing
	select {
	case id := <-started:
		if id != "r2" {
			t.Fatalf("%s started leading", id)
		}
	case <-time.After(time.Minute):
		t.Fatal("r2 never took over")
	}
	if r1.Leading() {
		t.Error("r1 says it leads after r2 took over")
	}
	time.Sleep(2 * time.Second)
	paused.Unlock() // resumed
	select {
	case <-r1done:
	case <-time.After(time.Minute):
		t.Fatal("the resumed former leader's Run did not return")
	}
	if r1.Leading() {
		t.Error("r1 leads again after it resumed")
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	r2at := -1
	for i, ev := range events {
		if ev == "started r2" {
			r2at = i
		}
		if r2at >= 0 && ev == "write r1" {
			t.Fatalf("r1 wrote after r2 started leading (event %d of %v)", i, events[max(0, r2at-3):i+1])
		}
	}
	if !r2.Leading() {
		t.Error("r2 does not lead")
	}
}
