package k8sstate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/state"
)

// waitFor polls cond every 50ms until it holds; a generous deadline ends
// the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func claimBackend(t *testing.T, suffix string) *Backend {
	b := open(t, suffix)
	b.claimDuration = 6 * time.Second // renewed every 1s, in doubt after 4s
	return b
}

// The controller claim: one holder at a time, the second refused naming
// it; apart from the locks (a person's lock is taken beside it, and show
// does not list it); given back by Unlock.
func TestClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	suffix := newSuffix()
	a, b := claimBackend(t, suffix), claimBackend(t, suffix)
	la, err := a.Claim(ctx, "controller", "v1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Claim(ctx, "controller", "v1")
	var le *state.LockedError
	if !errors.As(err, &le) || le.Info.ID != la.Info().ID || le.Info.Operation != "controller" || le.Info.PID != la.Info().PID || le.Info.Who == "" {
		t.Fatalf("a second claim: %v, want a LockedError naming the holder %+v", err, la.Info())
	}
	if cur, err := b.CurrentClaim(); err != nil || cur == nil || cur.ID != la.Info().ID {
		t.Fatalf("CurrentClaim = %+v, %v; want %s", cur, err, la.Info().ID)
	}
	// Not a lock: the whole state and an experiment are locked beside it,
	// and no lock is listed.
	lk, err := b.Lock(ctx, "apply", "v1", 0)
	if err != nil {
		t.Fatalf("a lock beside the claim: %v", err)
	}
	if locks, err := b.CurrentLocks(); err != nil || len(locks) != 1 || locks[0].ID != lk.Info().ID {
		t.Fatalf("locks = %+v, %v; want the apply's only", locks, err)
	}
	lk.Unlock()
	if locks, err := b.CurrentLocks(); err != nil || len(locks) != 0 {
		t.Fatalf("locks = %+v, %v; want none (the claim is no lock)", locks, err)
	}
	lk, err = b.LockExperiments(ctx, []string{"mnist"}, "apply", "v1", 0)
	if err != nil {
		t.Fatalf("an experiment lock beside the claim: %v", err)
	}
	lk.Unlock()
	if err := la.Lost(); err != nil && !state.IsUnavailable(err) {
		t.Fatalf("a claim held and renewed: Lost = %v", err)
	}
	if err := la.Unlock(); err != nil {
		t.Fatal(err)
	}
	if cur, err := b.CurrentClaim(); err != nil || cur != nil {
		t.Fatalf("after Unlock: CurrentClaim = %+v, %v; want none", cur, err)
	}
	lb, err := b.Claim(ctx, "controller", "v1")
	if err != nil {
		t.Fatalf("a claim given back is taken at once: %v", err)
	}
	lb.Unlock()
}

// A holder that stops renewing its claim (paused, as a killed process or
// one cut off from the apiserver) is in doubt after 2/3 of the duration
// (Lost wraps ErrUnavailable), and a standby takes the claim over once
// it saw it unchanged for the duration; the holder, resumed, finds it
// another's: lost for good, and its Unlock leaves the new holder's.
func TestClaimTakenOverFromAHolderThatStopsRenewing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	suffix := newSuffix()
	a, b := claimBackend(t, suffix), claimBackend(t, suffix)
	paused, resume := make(chan struct{}), make(chan struct{})
	pausing := true
	a.claimPause = func() {
		if pausing {
			pausing = false
			close(paused)
			<-resume
		}
	}
	la, err := a.Claim(ctx, "controller", "v1")
	if err != nil {
		t.Fatal(err)
	}
	<-paused
	_, err = b.Claim(ctx, "controller", "v1")
	var le *state.LockedError
	if !errors.As(err, &le) || le.Info.ID != la.Info().ID {
		t.Fatalf("a claim not yet expired: %v, want it held by %s", err, la.Info().ID)
	}
	waitFor(t, "the paused holder to be in doubt", func() bool { return la.Lost() != nil })
	if err := la.Lost(); !state.IsUnavailable(err) || !strings.Contains(err.Error(), "last renewed") {
		t.Fatalf("a holder that could not renew: Lost = %v, want it unavailable", err)
	}
	var lb *state.Lock
	waitFor(t, "the standby to take the claim over", func() bool {
		lb, err = b.Claim(ctx, "controller", "v1")
		if err != nil && !errors.As(err, &le) {
			t.Fatal(err)
		}
		return err == nil
	})
	defer lb.Unlock()
	close(resume)
	waitFor(t, "the former holder to find its claim lost", func() bool {
		err := la.Lost()
		return err != nil && !state.IsUnavailable(err)
	})
	if err := la.Lost(); !strings.Contains(err.Error(), "is held by controller (pid") || !strings.Contains(err.Error(), "taken over") {
		t.Fatalf("Lost = %v, want it naming the new holder", err)
	}
	if err := la.Unlock(); err != nil {
		t.Fatal(err)
	}
	if cur, err := a.CurrentClaim(); err != nil || cur == nil || cur.ID != lb.Info().ID {
		t.Fatalf("after the former holder's Unlock: CurrentClaim = %+v, %v; want %s", cur, err, lb.Info().ID)
	}
	if err := lb.Lost(); err != nil && !state.IsUnavailable(err) {
		t.Fatalf("the new holder: Lost = %v", err)
	}
}

// force-unlock ID releases a claim: its holder's Lost says so (for good,
// not a renewal in doubt), another takes the claim at once, and the
// former holder's Unlock leaves it.
func TestClaimForceUnlocked(t *testing.T) {
	ctx := context.Background()
	suffix := newSuffix()
	a, b := claimBackend(t, suffix), claimBackend(t, suffix)
	la, err := a.Claim(ctx, "controller", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ForceUnlock(la.Info().ID); err != nil {
		t.Fatal(err)
	}
	if cur, err := b.CurrentClaim(); err != nil || cur != nil {
		t.Fatalf("after force-unlock: CurrentClaim = %+v, %v; want none", cur, err)
	}
	waitFor(t, "the holder to find its claim lost", func() bool { return la.Lost() != nil })
	if err := la.Lost(); state.IsUnavailable(err) || !strings.Contains(err.Error(), "force-unlock") {
		t.Fatalf("Lost = %v, want it released by force-unlock", err)
	}
	lb, err := b.Claim(ctx, "controller", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := la.Unlock(); err != nil {
		t.Fatal(err)
	}
	if cur, err := b.CurrentClaim(); err != nil || cur == nil || cur.ID != lb.Info().ID {
		t.Fatalf("CurrentClaim = %+v, %v; want %s", cur, err, lb.Info().ID)
	}
	if err := b.ForceUnlock("nope"); err == nil || !strings.Contains(err.Error(), "not locked") {
		t.Fatalf("force-unlock of an ID that is neither a lock nor the claim: %v", err)
	}
	lb.Unlock()
}

// The claim needs no verb beyond the documented Role's (roleVerbs): a
// ServiceAccount bound to it claims, is refused a second claim, force-
// unlocks and releases.
func TestClaimRBAC(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "tfstate-rbac-claim")
	cfg := serviceAccount(t, ns, "trialform", roleVerbs)
	suffix := newSuffix()
	mk := func() *Backend {
		b, err := New(cfg, ns, suffix)
		if err != nil {
			t.Fatal(err)
		}
		b.claimDuration = 6 * time.Second
		b.SetReporter(func(msg string) { t.Log(msg) })
		return b
	}
	a, b := mk(), mk()
	la, err := a.Claim(ctx, "controller", "v1")
	if err != nil {
		t.Fatal(err)
	}
	var le *state.LockedError
	if _, err := b.Claim(ctx, "controller", "v1"); !errors.As(err, &le) {
		t.Fatalf("a second claim: %v", err)
	}
	// Renewed under the Role: the Lease changes, and the claim is not lost.
	leases := controlPlane(t).Client.CoordinationV1().Leases(ns)
	first, err := leases.Get(ctx, a.claimLease(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a renewal", func() bool {
		l, err := leases.Get(ctx, a.claimLease(), metav1.GetOptions{})
		return err == nil && l.ResourceVersion != first.ResourceVersion
	})
	if err := la.Lost(); err != nil && !state.IsUnavailable(err) {
		t.Fatalf("Lost = %v", err)
	}
	if err := b.ForceUnlock(la.Info().ID); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Claim(ctx, "controller", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := lb.Unlock(); err != nil {
		t.Fatal(err)
	}
	la.Unlock()
}

// SetClaimDuration (trialform controller -claim-duration) is recorded in
// the claim's Lease, which a standby goes by whatever its own duration
// (election.Observed.Expires): controllers given different durations agree
// on when the claim expires.
func TestClaimDurationIsRecordedInTheLease(t *testing.T) {
	ctx := context.Background()
	suffix := newSuffix()
	a := open(t, suffix)
	a.SetClaimDuration(4 * time.Second)
	la, err := a.Claim(ctx, "controller", "v1")
	if err != nil {
		t.Fatal(err)
	}
	defer la.Unlock()
	l, err := a.c.getLease(ctx, a.claimLease())
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 4 {
		t.Fatalf("the claim's Lease records a duration of %v s, want 4", l.Spec.LeaseDurationSeconds)
	}
}

// The claim through an apiserver outage longer than the claim lasts: its
// holder is in doubt (Lost unavailable, reported once) while it cannot
// renew, and once the apiserver answers again exactly one of the holder
// and a standby that tries to claim holds it: the holder renewed it again
// (the standby refused, naming it) or the standby took it over (the holder
// told so, for good). Never both. Serial: it stops the package's apiserver.
func TestClaimThroughAnAPIServerOutage(t *testing.T) {
	c := controlPlane(t)
	ctx := context.Background()
	suffix := newSuffix()
	a, b := claimBackend(t, suffix), claimBackend(t, suffix)
	reports := make(chan string, 100)
	a.SetReporter(func(msg string) { t.Log(msg); reports <- msg })
	la, err := a.Claim(ctx, "controller", "v1")
	if err != nil {
		t.Fatal(err)
	}
	defer la.Unlock()
	c.StopComponent("kube-apiserver")
	restarted := false
	defer func() {
		if !restarted {
			c.RestartComponent("kube-apiserver")
		}
	}()
	outage := time.Now()
	waitFor(t, "the holder to be in doubt", func() bool { return la.Lost() != nil })
	if err := la.Lost(); !state.IsUnavailable(err) || !strings.Contains(err.Error(), "last renewed") {
		t.Fatalf("a holder that cannot renew: Lost = %v, want it unavailable", err)
	}
	// Past the claim's duration (6 s) since the last renewal: a standby
	// may take it over once the apiserver answers.
	if d := 7*time.Second - time.Since(outage); d > 0 {
		time.Sleep(d)
	}
	restarted = true
	if err := c.RestartComponent("kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	var lb *state.Lock
	var le *state.LockedError
	waitFor(t, "the standby's claim to be answered", func() bool {
		lb, err = b.Claim(ctx, "controller", "v1")
		return err == nil || errors.As(err, &le)
	})
	if lb != nil {
		defer lb.Unlock()
		waitFor(t, "the former holder to find its claim taken over", func() bool {
			err := la.Lost()
			return err != nil && !state.IsUnavailable(err)
		})
		if err := la.Lost(); !strings.Contains(err.Error(), "taken over") {
			t.Fatalf("the former holder: Lost = %v, want it taken over", err)
		}
		if cur, err := a.CurrentClaim(); err != nil || cur == nil || cur.ID != lb.Info().ID {
			t.Fatalf("CurrentClaim = %+v, %v; want the standby's %s", cur, err, lb.Info().ID)
		}
	} else {
		if le.Info.ID != la.Info().ID {
			t.Fatalf("the standby refused naming %s, want the holder %s", le.Info.ID, la.Info().ID)
		}
		waitFor(t, "the holder to renew its claim again", func() bool { return la.Lost() == nil })
		if cur, err := b.CurrentClaim(); err != nil || cur == nil || cur.ID != la.Info().ID {
			t.Fatalf("CurrentClaim = %+v, %v; want the holder's %s", cur, err, la.Info().ID)
		}
	}
	var saw []string
	for len(reports) > 0 {
		saw = append(saw, <-reports)
	}
	failed := 0
	for _, m := range saw {
		if strings.Contains(m, "cannot renew the controller claim") {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("reports %q: want one \"cannot renew\" for the outage", saw)
	}
	if lb == nil && !strings.Contains(strings.Join(saw, "\n"), "is renewed again") {
		t.Errorf("reports %q: want the renewal told", saw)
	}
}
