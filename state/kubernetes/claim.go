package k8sstate

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/trialform/trialform/controller/election"
	"github.com/trialform/trialform/internal/duration"
	"github.com/trialform/trialform/state"
)

// The controller claim (state.Claimer): the Lease trialform-claim-SUFFIX,
// apart from the lock Leases (its role label is "claim", not "lock"), so
// it excludes another claim only, never a person's plan or apply nor an
// experiment's lock, and `show` does not list it as a lock. It has no
// session to end with its holder, so it is held as a leader election's
// Lease is (controller/election's algorithm, shared): its holder renews
// it every claimDuration/6; another controller that finds it not renewed
// for claimDuration (on its own clock, from when it saw it change) takes
// it over, with an update conditional on the version it read. The holder
// counts itself in doubt (Lost wraps state.ErrUnavailable) once it could
// not renew it for claimDuration*2/3, before anyone may take it over, and
// finds at its next renewal whether it is still its own (it goes on) or
// another's, or deleted by force-unlock (lost for good). Unlock deletes it,
// so a standby takes it at its next pass.

// defaultClaimDuration is how long a claim not renewed stays its
// holder's, as -leader-elect-lease-duration's default.
const defaultClaimDuration = 15 * time.Second

// SetClaimDuration sets how long this client's claim not renewed stays
// its own (trialform controller -claim-duration; call it before Claim). It
// is recorded in the claim's Lease, whose readers go by the duration
// recorded there: controllers given different durations still agree.
func (b *Backend) SetClaimDuration(d time.Duration) { b.claimDuration = d }

const roleClaim = "claim"

func (b *Backend) claimLease() string { return "trialform-claim-" + b.suffix }

// claimLeases is the backend's client as election's LeaseClient.
type claimLeases struct{ c *client }

func (l claimLeases) GetLease(ctx context.Context, name string) (*coordv1.Lease, error) {
	return l.c.getLease(ctx, name)
}

func (l claimLeases) CreateLease(ctx context.Context, x *coordv1.Lease) (*coordv1.Lease, error) {
	return l.c.createLease(ctx, x)
}

func (l claimLeases) UpdateLease(ctx context.Context, x *coordv1.Lease) (*coordv1.Lease, error) {
	return l.c.updateLease(ctx, x)
}

// claimHeld is a claim this client holds.
type claimHeld struct {
	b        *Backend
	info     state.LockInfo
	cand     election.Candidate
	every    time.Duration // renewed this often
	deadline time.Duration // in doubt when not renewed for this long

	mu      sync.Mutex
	renewed time.Time // when the last successful renewal was sent (wall clock)
	rv      string    // the Lease's version last written
	lost    error     // why it is not this client's any more, for good
	stop    chan struct{}
	done    chan struct{}
}

// wallNow is the time on the wall clock only: a process paused (SIGSTOP)
// or a machine suspended finds the time gone by when it resumes.
func wallNow() time.Time { return time.Now().Round(0) }

// Claim takes the controller claim at once, or returns a
// *state.LockedError naming its holder: a claim held and renewed is
// another's; one not renewed for the claim duration (its holder was
// killed, or cut off from the apiserver) is taken over.
func (b *Backend) Claim(ctx context.Context, operation, version string) (*state.Lock, error) {
	info := state.NewLockInfo(operation, version, b.Location())
	info.Backend = Name
	info.Experiments = []string{state.ClaimName}
	id, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	d := b.claimDuration
	h := &claimHeld{b: b, info: info, every: max(d/6, 50*time.Millisecond), deadline: d * 2 / 3,
		stop: make(chan struct{}), done: make(chan struct{})}
	h.cand = election.Candidate{Leases: claimLeases{b.c}, Observed: &b.claimObs, Namespace: b.ns, Name: b.claimLease(),
		Identity: string(id), LeaseDuration: d, Labels: b.labels(roleClaim)}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	at := wallNow()
	cur, ok, other, err := h.cand.TryAcquireOrRenew(cctx, false)
	if !ok && other {
		if err != nil {
			// Another took or made it meanwhile: name that one.
			if l, gerr := b.c.getLease(cctx, b.claimLease()); gerr == nil {
				cur = l
			}
		}
		li, _ := leaseInfo(cur)
		return nil, &state.LockedError{Info: li}
	}
	if !ok {
		return nil, fmt.Errorf(`claim the state: backend "kubernetes" (%s): %w`, b.Location(), err)
	}
	h.renewed, h.rv = at, cur.ResourceVersion
	go h.renew()
	return state.NewClaimLock(info, h.release, h.lostErr), nil
}

// renew renews the claim until it is released or lost.
func (h *claimHeld) renew() {
	defer close(h.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(h.every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		if p := h.b.claimPause; p != nil {
			p() // a test pauses the holder here
		}
		at := wallNow()
		rctx, rcancel := context.WithTimeout(ctx, 2*h.every)
		cur, ok, other, err := h.cand.TryAcquireOrRenew(rctx, true)
		rcancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case ok:
			h.mu.Lock()
			h.renewed, h.rv = at, cur.ResourceVersion
			h.mu.Unlock()
			if failing {
				failing = false
				h.b.reportf("the controller claim %s is renewed again", h.info.ID)
			}
		case other:
			h.mu.Lock()
			since := at.Sub(h.renewed).Round(time.Second)
			h.mu.Unlock()
			var why error
			if li, known := leaseInfo(cur); known {
				why = fmt.Errorf(`backend "kubernetes" (%s): the controller claim %s (Lease %s/%s) is held by %s now: it was taken over `+
					`while this controller could not renew it (for %s; the apiserver could not be reached?)`, h.b.Location(), h.info.ID,
					h.b.ns, h.b.claimLease(), state.ClaimHolder(li), duration.Format(since))
			} else {
				why = fmt.Errorf(`backend "kubernetes" (%s): the controller claim %s was released by someone else (force-unlock?): its Lease %s/%s is gone`,
					h.b.Location(), h.info.ID, h.b.ns, h.b.claimLease())
			}
			h.mu.Lock()
			h.lost = why
			h.mu.Unlock()
			return
		default:
			if !failing {
				failing = true
				h.b.reportf("cannot renew the controller claim %s (tried again every %s): %v", h.info.ID, h.every, err)
			}
		}
	}
}

// lostErr is the claim's Lost: nil while renewed within the deadline.
func (h *claimHeld) lostErr() error {
	h.mu.Lock()
	lost, renewed := h.lost, h.renewed
	h.mu.Unlock()
	if lost != nil {
		return lost
	}
	if since := wallNow().Sub(renewed); since > h.deadline {
		return state.Unavailable(fmt.Errorf(`backend "kubernetes" (%s): the controller claim %s (Lease %s/%s) was last renewed %s ago `+
			`(the apiserver cannot be reached?): whether it is still this controller's is not known until it is renewed again`,
			h.b.Location(), h.info.ID, h.b.ns, h.b.claimLease(), duration.Format(since.Round(time.Second))))
	}
	return nil
}

// release stops renewing the claim and deletes its Lease, if still ours.
func (h *claimHeld) release() error {
	close(h.stop)
	<-h.done
	h.mu.Lock()
	lost, rv := h.lost, h.rv
	h.mu.Unlock()
	if lost != nil {
		return nil
	}
	b := h.b
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := b.c.deleteLease(ctx, b.claimLease(), rv)
	if apierrors.IsConflict(err) {
		// Changed since: still ours (a renewal whose answer was lost),
		// or another's.
		cur, gerr := b.c.getLease(ctx, b.claimLease())
		if gerr == nil && cur.Spec.HolderIdentity != nil && *cur.Spec.HolderIdentity == h.cand.Identity {
			err = b.c.deleteLease(ctx, b.claimLease(), cur.ResourceVersion)
		} else {
			err = nil
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release the controller claim %s: %w (its Lease %s/%s stays; another controller takes it over once it is not renewed for %s)",
			h.info.ID, err, b.ns, b.claimLease(), duration.Format(b.claimDuration))
	}
	return nil
}

// CurrentClaim returns the controller claim's holder, nil when nobody
// holds it (a claim whose holder stopped renewing it is still named).
func (b *Backend) CurrentClaim() (*state.LockInfo, error) {
	ctx, cancel := background()
	defer cancel()
	l, err := b.c.getLease(ctx, b.claimLease())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the controller claim: %w", err)
	}
	li, ok := leaseInfo(l)
	if !ok {
		return nil, nil
	}
	return &li, nil
}

// forceUnlockClaim deletes the claim's Lease when its ID is id; ok is
// false when the claim is not id's.
func (b *Backend) forceUnlockClaim(ctx context.Context, id string) (ok bool, err error) {
	for range 5 {
		l, err := b.c.getLease(ctx, b.claimLease())
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("force-unlock: %w", err)
		}
		if li, _ := leaseInfo(l); li.ID != id {
			return false, nil
		}
		// Only the version read: a renewal meanwhile is read again.
		err = b.c.deleteLease(ctx, l.Name, l.ResourceVersion)
		if err == nil || apierrors.IsNotFound(err) {
			return true, nil
		}
		if !apierrors.IsConflict(err) {
			return true, fmt.Errorf("force-unlock the controller claim %s: %w", id, err)
		}
	}
	return true, fmt.Errorf("force-unlock the controller claim %s: its Lease %s/%s keeps changing: try again", id, b.ns, b.claimLease())
}

var _ state.Claimer = (*Backend)(nil)
