package state

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
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
// for their backend note) holds the claim file's flock for a moment to
// see whether anyone does; a controller claiming the state at that moment
// was told it was held (by a holder that is gone: its file stays after
// kill -9) and stood by for a pass, naming that dead holder. The hooks
// make the moment certain: the probe holds the flock until the claim has
// found it taken, and is done before the claim tries again.
func TestClaimNotRefusedByAProbe(t *testing.T) {
	m := NewManager(t.TempDir())
	// A claim left by a holder killed with SIGKILL: its file, no flock.
	if err := os.WriteFile(m.claimPath(), []byte(`{"ID":"dead"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	held, release, probed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var once sync.Once
	testProbeHeld = func() { close(held); <-release }
	testClaimBusy = func() { once.Do(func() { close(release); <-probed }) }
	defer func() { testProbeHeld, testClaimBusy = nil, nil }()
	go func() {
		defer close(probed)
		if li, err := m.CurrentClaim(); err != nil || li != nil {
			t.Errorf("CurrentClaim of a dead holder's file: %+v, %v; want none", li, err)
		}
	}()
	<-held
	lk, err := m.Claim(context.Background(), "controller", "test")
	if err != nil {
		t.Fatalf("a claim of a free state while another process read the claim: %v", err)
	}
	lk.Unlock()
}
