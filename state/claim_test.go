package state

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

// TestClaimLocal: a second claim is refused naming the holder; Unlock
// frees it; CurrentClaim names the holder while it is held.
func TestClaimLocal(t *testing.T) {
	m := NewManager(t.TempDir())
	ctx := context.Background()
	a, err := m.Claim(ctx, "controller", "test")
	if err != nil {
		t.Fatal(err)
	}
	if li, err := m.CurrentClaim(); err != nil || li == nil || li.ID != a.Info().ID {
		t.Fatalf("CurrentClaim while held: %+v, %v; want %s", li, err, a.Info().ID)
	}
	var le *LockedError
	if _, err := m.Claim(ctx, "controller", "test"); !errors.As(err, &le) || le.Info.ID != a.Info().ID {
		t.Fatalf("second claim: %v; want a LockedError naming %s", err, a.Info().ID)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if li, err := m.CurrentClaim(); err != nil || li != nil {
		t.Fatalf("CurrentClaim after Unlock: %+v, %v; want none", li, err)
	}
}

// TestClaimNotRefusedByAProbe: CurrentClaim (show, trials and ui call it
// for their backend note) tries the claim file's flock for a moment; a
// controller claiming the state at that moment was told it was held (by
// a holder that is gone: its file stays after kill -9) and stood by for a
// pass, naming that dead holder.
func TestClaimNotRefusedByAProbe(t *testing.T) {
	m := NewManager(t.TempDir())
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			m.CurrentClaim()
			time.Sleep(50 * time.Microsecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	refused := 0
	for range 3000 {
		// A claim left by a holder killed with SIGKILL: its file, no flock.
		if err := os.WriteFile(m.claimPath(), []byte(`{"ID":"dead"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		lk, err := m.Claim(ctx, "controller", "test")
		if err != nil {
			refused++
			continue
		}
		lk.Unlock()
	}
	if refused > 0 {
		t.Errorf("%d of 3000 claims of a free state refused while another process read the claim", refused)
	}
}
