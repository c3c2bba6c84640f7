package k8sstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/internal/duration"
	"github.com/trialform/trialform/internal/netretry"
	"github.com/trialform/trialform/state"
)

// The locks are Leases: trialform-lock-SUFFIX for the whole state,
// trialform-lock-SUFFIX-HASH for one experiment. A lock is taken by
// creating its Lease (the apiserver lets one create win), holds the
// LockInfo in its holderIdentity, is renewed every leaseDuration/4
// while held, and is released by deleting the Lease (only the version
// its holder last wrote). A Lease whose holder stopped renewing it is
// stale: it still holds the lock until `trialform force-unlock`, since a
// holder cut off from the apiserver may still be running.
//
// A whole-state lock and the experiment locks exclude each other: the
// whole-state locker creates its Lease and then lists the experiment
// Leases; an experiment locker creates its Leases and then reads the
// whole-state Lease. Whoever finds the other gives its Leases back, so
// at most one of two racing lockers wins (both may lose, and try again).

// defaultLeaseDuration is how long a Lease is the holder's without a
// renewal (it is renewed every quarter of it).
const defaultLeaseDuration = 60 * time.Second

const (
	labelScope  = "trialform.dev/lock-scope"
	scopeState  = "state"
	scopeExp    = "experiment"
	annotLockID = "trialform.dev/lock-id"
	// annotFence, on the index Secret, names the last lock force-unlocked
	// (fenceIndex).
	annotFence = "trialform.dev/force-unlocked"
)

// heldLocks are the locks this client holds.
type heldLocks struct {
	locks []*held
}

// held is one lock this client holds: its Leases, renewed.
type held struct {
	info   state.LockInfo
	whole  bool
	mu     sync.Mutex
	leases map[string]*coordv1.Lease // by name: the version last written
	// lost: someone deleted a Lease of it (force-unlock) while this client
	// held it; it is not taken again, and what this client writes under it
	// is refused from then on.
	lost bool
	// now is who holds it now, as last seen (nil: nobody, or not known).
	now  *state.LockInfo
	stop chan struct{}
	done chan struct{}
}

// scope returns the experiments this client may write: nil when it holds
// the whole state, or no lock at all (callers that do not lock write
// the whole state, checked by its serial). The caller holds b.mu.
func (b *Backend) scope() map[string]bool {
	if b.held == nil || len(b.held.locks) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, h := range b.held.locks {
		if h.whole {
			return nil
		}
		for _, e := range h.info.Experiments {
			out[e] = true
		}
	}
	return out
}

// Lock takes the whole-state lock.
func (b *Backend) Lock(ctx context.Context, operation, version string, timeout time.Duration) (*state.Lock, error) {
	return b.LockExperiments(ctx, nil, operation, version, timeout)
}

// LockExperiments takes the lock of the named experiments (the whole
// state when none is named), waiting up to timeout.
//
// A wait (timeout > 0) tries each call once: while the apiserver cannot
// be reached it tries again (0.2 s doubling to 2 s) until the timeout,
// however long the outage, and never past it (a call that hangs ends at
// the timeout), saying once that the apiserver cannot be reached and
// once that it is back. A wait that runs out names the holder it last
// met, or says that who holds the lock is not known. Without a wait, a
// call is retried for up to 2 minutes, as every call is.
func (b *Backend) LockExperiments(ctx context.Context, experiments []string, operation, version string, timeout time.Duration) (*state.Lock, error) {
	exps := slices.Clone(experiments)
	sort.Strings(exps)
	exps = slices.Compact(exps)
	info := state.NewLockInfo(operation, version, b.Location())
	info.Backend = Name
	info.Experiments = exps
	if timeout <= 0 {
		tctx, cancel := background()
		defer cancel()
		h, locked, err := b.tryLock(tctx, info, nil)
		if err != nil {
			return nil, err
		}
		if h != nil {
			return b.hold(h), nil
		}
		return nil, locked
	}
	deadline := time.Now().Add(timeout)
	wait := 20 * time.Millisecond
	var locked error       // the holder last met
	var down time.Time     // since when the apiserver cannot be reached; zero: it can
	var unreachable error  // its last error
	var away time.Duration // how long it could not be reached, in all
	tries := 0             // tries since it went away
	dirty := false         // a try may have left a Lease of this wait (created, not given back)
	for {
		// Never past the deadline, but a last try gets a moment.
		end := deadline
		if soon := time.Now().Add(2 * time.Second); soon.After(end) {
			end = soon
		}
		parent := ctx
		if ctx.Err() != nil {
			// One try even when ctx is done: the error then names the
			// holder.
			parent, end = context.WithoutCancel(ctx), time.Now().Add(5*time.Second)
		}
		tctx, cancel := context.WithDeadline(oneTry(parent), end)
		var leftLease bool
		h, l, err := b.tryLock(tctx, info, &leftLease)
		cancel()
		dirty = dirty || leftLease
		if err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("stopped waiting for the state lock (%w): %w", ctx.Err(), b.waitEnd(locked, down, away, unreachable, info, dirty))
		}
		var ue *unreachableError
		if err != nil && !errors.As(err, &ue) {
			return nil, err
		}
		if err != nil {
			if down.IsZero() {
				down, tries = time.Now(), 0
				b.reportf("the Kubernetes apiserver %s cannot be reached while waiting for the lock of %s (%v); retrying until the lock timeout (%s left)",
					b.c.host, state.LockedWhat(exps), shortErr(ue.err), duration.Format(max(0, time.Until(deadline)).Round(time.Second)))
			}
			unreachable = err
			tries++
		} else if !down.IsZero() {
			away += time.Since(down)
			b.reportf("the Kubernetes apiserver %s is back after %s; still waiting for the lock of %s", b.c.host,
				duration.Format(time.Since(down).Round(time.Second)), state.LockedWhat(exps))
			down = time.Time{}
		}
		if h != nil {
			return b.hold(h), nil
		}
		if err == nil {
			locked = l
			if le := (*state.LockedError)(nil); errors.As(l, &le) {
				b.waiting.Store(le)
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stopped waiting for the state lock (%w): %w", ctx.Err(), b.waitEnd(locked, down, away, unreachable, info, dirty))
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, state.GaveUp(timeout, b.waitEnd(locked, down, away, unreachable, info, dirty))
		}
		pause := min(wait, left)
		if !down.IsZero() {
			pause = min(netretry.Policy{Base: 200 * time.Millisecond, Max: 2 * time.Second}.Backoff(tries), left)
		}
		if netretry.Sleep(ctx, pause) != nil {
			continue // the loop ends it, naming the holder
		}
		if down.IsZero() {
			wait = min(2*wait, time.Second)
		}
	}
}

// waitEnd is why a lock wait ended without the lock: the holder it last
// met, and the outage if the apiserver could not be reached. A try that
// failed may have left a Lease of the wait (created, then not given back
// while the apiserver could not be reached): it is deleted, or named.
func (b *Backend) waitEnd(locked error, down time.Time, away time.Duration, unreachable error, info state.LockInfo, dirty bool) error {
	var end error
	switch {
	case !down.IsZero() && locked != nil:
		end = fmt.Errorf("%w; and then the Kubernetes apiserver %s could not be reached for the last %s: %w", locked, b.c.host,
			duration.Format(time.Since(down).Round(time.Second)), unreachable)
	case !down.IsZero():
		end = fmt.Errorf("the Kubernetes apiserver %s could not be reached for the last %s of the wait, so who holds the lock is not known: %w", b.c.host,
			duration.Format(time.Since(down).Round(time.Second)), unreachable)
	case away > 0:
		end = fmt.Errorf("%w (the Kubernetes apiserver %s could not be reached for %s of the wait)", locked, b.c.host, duration.Format(away.Round(time.Second)))
	default:
		end = locked
	}
	if dirty {
		ctx, cancel := context.WithTimeout(oneTry(context.Background()), 5*time.Second)
		defer cancel()
		if err := b.dropLeases(ctx, info.ID); err != nil {
			end = fmt.Errorf("%w. A Lease this wait created may be left (the apiserver could not be reached to delete it): "+
				"if `trialform show` lists the lock %s, release it with `trialform force-unlock %s`", end, info.ID, info.ID)
		}
	}
	return end
}

// dropLeases deletes the lock Leases of the lock ID id.
func (b *Backend) dropLeases(ctx context.Context, id string) error {
	leases, err := b.lockLeases(ctx)
	if err != nil {
		return err
	}
	for i := range leases {
		l := &leases[i]
		if info, _ := leaseInfo(l); info.ID != id && l.Annotations[annotLockID] != id {
			continue
		}
		if err := b.c.deleteLease(ctx, l.Name, l.ResourceVersion); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (b *Backend) newLease(name, scope, exp string, info state.LockInfo) *coordv1.Lease {
	id, _ := json.Marshal(info)
	holder := string(id)
	secs := int32(b.leaseDuration / time.Second)
	if secs < 1 {
		secs = 1
	}
	now := metav1.NewMicroTime(time.Now())
	l := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      b.labels(roleLock),
			Annotations: map[string]string{annotLockID: info.ID},
		},
		Spec: coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}
	l.Labels[labelScope] = scope
	if exp != "" {
		l.Annotations[annotExp] = exp
		l.Labels[labelExp] = hashName(exp)
	}
	return l
}

// tryLock makes one attempt: the lock, or the error naming its holder
// (a *state.LockedError, wrapped when the holder's Lease is stale). When
// it fails, *left (if not nil) says whether a Lease it created may be
// left: a create whose answer was lost, a give-back that failed.
func (b *Backend) tryLock(ctx context.Context, info state.LockInfo, left *bool) (*held, error, error) {
	h := &held{info: info, whole: len(info.Experiments) == 0, leases: map[string]*coordv1.Lease{}}
	mayBeLeft := func() {
		if left != nil {
			*left = true
		}
	}
	giveBack := func() {
		for n, l := range h.leases {
			if err := b.c.deleteLease(ctx, n, l.ResourceVersion); err != nil && !apierrors.IsNotFound(err) {
				mayBeLeft()
			}
		}
	}
	take := func(name, scope, exp string) (error, error) {
		l, err := b.c.createLease(ctx, b.newLease(name, scope, exp, info))
		if err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			if retry, _ := transient(err); retry || ctx.Err() != nil {
				mayBeLeft() // it may have reached the apiserver
			}
		}
		for range 5 {
			if !apierrors.IsAlreadyExists(err) {
				break
			}
			cur, gerr := b.c.getLease(ctx, name)
			if apierrors.IsNotFound(gerr) {
				// Released meanwhile: try again.
				l, err = b.c.createLease(ctx, b.newLease(name, scope, exp, info))
				continue
			}
			if gerr != nil {
				return nil, fmt.Errorf("lock state: %w", gerr)
			}
			if ci, ok := leaseInfo(cur); ok && ci.ID == info.ID {
				h.leases[name] = cur // our own create, retried
				return nil, nil
			}
			return b.lockedErr(cur), nil
		}
		if apierrors.IsAlreadyExists(err) {
			return b.lockedErr(nil), nil
		}
		if err != nil {
			return nil, fmt.Errorf("lock state: %w", err)
		}
		h.leases[name] = l
		return nil, nil
	}
	if h.whole {
		if locked, err := take(b.stateLease(), scopeState, ""); locked != nil || err != nil {
			return nil, locked, err
		}
		list, err := b.c.listLeases(ctx, b.selector(roleLock)+","+labelScope+"="+scopeExp)
		if err != nil {
			giveBack()
			return nil, nil, fmt.Errorf("lock state: %w", err)
		}
		if len(list.Items) > 0 {
			giveBack()
			items := list.Items
			sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
			return nil, b.lockedErr(&items[0]), nil
		}
		return h, nil, nil
	}
	for _, e := range info.Experiments {
		if locked, err := take(b.expLease(e), scopeExp, e); locked != nil || err != nil {
			giveBack()
			return nil, locked, err
		}
	}
	w, err := b.c.getLease(ctx, b.stateLease())
	if err == nil {
		giveBack()
		return nil, b.lockedErr(w), nil
	}
	if !apierrors.IsNotFound(err) {
		giveBack()
		return nil, nil, fmt.Errorf("lock state: %w", err)
	}
	return h, nil, nil
}

// leaseInfo reads the LockInfo a Lease carries.
func leaseInfo(l *coordv1.Lease) (state.LockInfo, bool) {
	var info state.LockInfo
	if l == nil || l.Spec.HolderIdentity == nil || json.Unmarshal([]byte(*l.Spec.HolderIdentity), &info) != nil || info.ID == "" {
		return info, false
	}
	return info, true
}

// StaleLockError is a lock held by a Lease its holder stopped renewing.
type StaleLockError struct {
	Locked  *state.LockedError
	Lease   string
	Renewed time.Time
	Every   time.Duration
}

func (e *StaleLockError) Error() string {
	ago := time.Since(e.Renewed).Round(time.Second)
	return fmt.Sprintf("%v. Its Lease %s is stale: it was last renewed %s ago (at %s) and its holder renews it every %s, so the holder has stopped (it crashed, or lost its connection to the apiserver). A stale Lease still holds the lock; if its holder is gone, release it with `trialform force-unlock %s`",
		e.Locked, e.Lease, ago, e.Renewed.Format(time.RFC3339), e.Every, e.Locked.Info.ID)
}

func (e *StaleLockError) Unwrap() error { return e.Locked }

// lockedErr is the error naming a Lease's holder (nil: unknown, as a
// Lease released while it was read).
func (b *Backend) lockedErr(l *coordv1.Lease) error {
	info, _ := leaseInfo(l)
	le := &state.LockedError{Info: info}
	if l == nil {
		return le
	}
	if stale, renewed, every := leaseStale(l); stale {
		return &StaleLockError{Locked: le, Lease: b.ns + "/" + l.Name, Renewed: renewed, Every: every}
	}
	return le
}

// leaseStale reports whether a Lease was not renewed for its duration.
func leaseStale(l *coordv1.Lease) (bool, time.Time, time.Duration) {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false, time.Time{}, 0
	}
	d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	renewed := l.Spec.RenewTime.Time
	return time.Since(renewed) > d, renewed, d / 4
}

// hold starts renewing a lock just taken and returns it.
func (b *Backend) hold(h *held) *state.Lock {
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	b.mu.Lock()
	b.lockMu.Lock()
	if b.held == nil {
		b.held = &heldLocks{}
	}
	b.held.locks = append(b.held.locks, h)
	b.lockMu.Unlock()
	b.mu.Unlock()
	go b.renew(h)
	ctx, cancel := background()
	var exps []string
	if !h.whole {
		exps = h.info.Experiments
	}
	b.collectGarbage(ctx, exps)
	cancel()
	return state.NewLock(h.info, func() error { return b.unlock(h) })
}

// renew renews h's Leases every leaseDuration/4 until stopped.
func (b *Backend) renew(h *held) {
	defer close(h.done)
	every := max(b.leaseDuration/4, 50*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-h.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := b.renewOnce(ctx, h); err != nil && ctx.Err() == nil {
			b.reportf("%v", err)
		}
		cancel()
		h.mu.Lock()
		lost := h.lost
		h.mu.Unlock()
		if lost {
			return
		}
	}
}

// renewOnce renews h's Leases once; an error says why one could not be
// (the Lease still holds the lock: it is tried again at the next tick).
func (b *Backend) renewOnce(ctx context.Context, h *held) error {
	h.mu.Lock()
	leases := make(map[string]*coordv1.Lease, len(h.leases))
	for n, l := range h.leases {
		leases[n] = l
	}
	h.mu.Unlock()
	for n, l := range leases {
		nl := l.DeepCopy()
		now := metav1.NewMicroTime(time.Now())
		nl.Spec.RenewTime = &now
		out, err := b.c.updateLease(ctx, nl)
		if err == nil {
			h.mu.Lock()
			h.leases[n] = out
			h.mu.Unlock()
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			cur, gerr := b.c.getLease(ctx, n)
			if gerr == nil {
				if ci, ok := leaseInfo(cur); ok && ci.ID == h.info.ID {
					h.mu.Lock()
					h.leases[n] = cur
					h.mu.Unlock()
					continue
				}
			}
			var now *state.LockInfo
			if ci, ok := leaseInfo(cur); gerr == nil && ok {
				now = &ci
			}
			b.released(h, n, now)
			return nil
		}
		// Unreachable for longer than the client retries, or refused:
		// tried again at the next tick; the Lease goes stale but still
		// holds.
		return fmt.Errorf("cannot renew the state lock: %w", err)
	}
	return nil
}

// released records that a Lease of h (named lease) was deleted by
// someone else, or is another's now (who holds it, when known): h is
// lost for good. The holder is told once.
func (b *Backend) released(h *held, lease string, now *state.LockInfo) {
	h.mu.Lock()
	first := !h.lost
	h.lost = true
	if now != nil {
		h.now = now
	}
	h.mu.Unlock()
	if first {
		b.reportf("the lock %s (Lease %s/%s) was released by someone else (force-unlock?): this command no longer holds it, "+
			"and what it writes of %s is refused from then on", h.info.ID, b.ns, lease, state.LockedWhat(h.info.Experiments))
	}
}

// checkHeld, before a save or a Replace (what names it for the message)
// writes its index, reads the lock Leases (one list) and refuses it, for
// good, when a lock this client holds was released by someone else
// (force-unlock) since it took it: its Leases are gone, or another's. A
// Lease that went stale and was renewed by its holder is still its own.
// The caller holds b.mu.
func (b *Backend) checkHeld(ctx context.Context, what string) error {
	if b.held == nil || len(b.held.locks) == 0 {
		return nil
	}
	hs := slices.Clone(b.held.locks)
	leases, err := b.lockLeases(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	byName := map[string]*coordv1.Lease{}
	for i := range leases {
		byName[leases[i].Name] = &leases[i]
	}
	for _, h := range hs {
		h.mu.Lock()
		names := slices.Collect(maps.Keys(h.leases))
		h.mu.Unlock()
		sort.Strings(names)
		for _, n := range names {
			l := byName[n]
			ci, ok := leaseInfo(l)
			if ok && ci.ID == h.info.ID {
				continue
			}
			var now *state.LockInfo
			if ok {
				now = &ci
			}
			b.released(h, n, now)
			break
		}
		if err := b.lockGone(h, what); err != nil {
			return err
		}
	}
	return nil
}

// lockGone is the refusal, for good, of a write under h when someone
// released h with force-unlock; nil otherwise.
func (b *Backend) lockGone(h *held, what string) error {
	h.mu.Lock()
	lost, now := h.lost, h.now
	h.mu.Unlock()
	if !lost {
		return nil
	}
	holder := ""
	if now != nil {
		holder = fmt.Sprintf(" (%s holds it now)", lockLine(*now))
	}
	return fmt.Errorf(`%s: backend "kubernetes" (%s): this command no longer holds the lock %s (%s): someone released it with force-unlock; not writing%s. `+
		`Run the command again (it waits for whoever holds the lock now)`, what, b.Location(), h.info.ID, state.LockedWhat(h.info.Experiments), holder)
}

// checkMetrics refuses metric points of an experiment whose lock this
// client held and someone released with force-unlock: whoever holds it
// now reads those trials' points again from where they run, and may have
// removed the experiment's series. It reads only what the renewals and
// the saves found, no call.
func (b *Backend) checkMetrics(batches []state.MetricsBatch) error {
	b.lockMu.Lock()
	var hs []*held
	if b.held != nil {
		hs = slices.Clone(b.held.locks)
	}
	b.lockMu.Unlock()
	for _, h := range hs {
		if !state.LockCovers(h.whole, h.info.Experiments, batches) {
			continue
		}
		if err := b.lockGone(h, "append metric points"); err != nil {
			return err
		}
	}
	return nil
}

// lockLine names a lock's holder: what, by whom, since when, its ID.
func lockLine(li state.LockInfo) string {
	return fmt.Sprintf("%s by %s (pid %d, %s, since %s, lock ID %s)", state.LockedWhat(li.Experiments), li.Operation, li.PID, li.Who,
		li.Created.Format(time.RFC3339), li.ID)
}

// unlock stops renewing h and deletes its Leases, those still ours.
func (b *Backend) unlock(h *held) error {
	close(h.stop)
	<-h.done
	b.mu.Lock()
	b.lockMu.Lock()
	if b.held != nil {
		b.held.locks = slices.DeleteFunc(b.held.locks, func(x *held) bool { return x == h })
	}
	b.lockMu.Unlock()
	b.mu.Unlock()
	ctx, cancel := background()
	defer cancel()
	var errs []error
	h.mu.Lock()
	defer h.mu.Unlock()
	for n, l := range h.leases {
		err := b.c.deleteLease(ctx, n, l.ResourceVersion)
		if apierrors.IsConflict(err) {
			// Changed since: still ours (a renewal whose answer was
			// lost), or another holder's after a force-unlock.
			cur, gerr := b.c.getLease(ctx, n)
			if ci, ok := leaseInfo(cur); gerr == nil && ok && ci.ID == h.info.ID {
				err = b.c.deleteLease(ctx, n, cur.ResourceVersion)
			} else {
				err = nil
			}
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("unlock state: %w (the Lease stays until `trialform force-unlock %s`)", errors.Join(errs...), h.info.ID)
	}
	return nil
}

// lockLeases lists every lock Lease of the state.
func (b *Backend) lockLeases(ctx context.Context) ([]coordv1.Lease, error) {
	list, err := b.c.listLeases(ctx, b.selector(roleLock))
	if err != nil {
		return nil, fmt.Errorf("read state lock: %w", err)
	}
	return list.Items, nil
}

// CurrentLock returns the whole-state lock's holder, else the first
// experiment lock's; nil when nothing is locked.
func (b *Backend) CurrentLock() (*state.LockInfo, error) {
	ctx, cancel := background()
	defer cancel()
	l, err := b.c.getLease(ctx, b.stateLease())
	if err == nil {
		info, _ := leaseInfo(l)
		return &info, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read state lock: %w", err)
	}
	locks, err := b.CurrentLocks()
	if err != nil || len(locks) == 0 {
		return nil, err
	}
	return &locks[0], nil
}

// CurrentLocks lists every lock held: the whole-state one first, then
// the experiment locks, oldest first.
func (b *Backend) CurrentLocks() ([]state.LockInfo, error) {
	ctx, cancel := background()
	defer cancel()
	leases, err := b.lockLeases(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]*state.LockInfo{}
	var out []*state.LockInfo
	for i := range leases {
		info, ok := leaseInfo(&leases[i])
		if !ok {
			info = state.LockInfo{Path: b.ns + "/" + leases[i].Name, Backend: Name}
		}
		if byID[info.ID] != nil && info.ID != "" {
			continue
		}
		p := &info
		byID[info.ID] = p
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (len(out[i].Experiments) == 0) != (len(out[j].Experiments) == 0) {
			return len(out[i].Experiments) == 0
		}
		return out[i].Created.Before(out[j].Created)
	})
	var res []state.LockInfo
	for _, p := range out {
		res = append(res, *p)
	}
	return res, nil
}

// ForceUnlock deletes the Leases of the lock whose ID is id, or the
// controller claim's Lease when it is id's.
func (b *Backend) ForceUnlock(id string) error {
	ctx, cancel := background()
	defer cancel()
	if ok, err := b.forceUnlockClaim(ctx, id); ok || err != nil {
		return err
	}
	leases, err := b.lockLeases(ctx)
	if err != nil {
		return fmt.Errorf("force-unlock: %w", err)
	}
	if testForceUnlockListed != nil {
		testForceUnlockListed()
	}
	var held []string
	found := 0
	for i := range leases {
		l := &leases[i]
		info, _ := leaseInfo(l)
		if info.ID != id && l.Annotations[annotLockID] != id {
			held = append(held, fmt.Sprintf("%s (held by %s, pid %d, %s, since %s)", info.ID, info.Operation, info.PID, info.Who, info.Created.Format(time.RFC3339)))
			continue
		}
		found++
		if err := b.deleteLockLease(ctx, l, id); err != nil {
			return fmt.Errorf("force-unlock: %w", err)
		}
	}
	if found > 0 {
		return b.fenceIndex(ctx, id)
	}
	if len(held) == 0 {
		return fmt.Errorf("force-unlock: the state is not locked (no Lease of state %q in namespace %s)", b.suffix, b.ns)
	}
	held = slices.Compact(held)
	return fmt.Errorf("force-unlock: lock ID %q does not match a current lock: %s", id, strings.Join(held, "; "))
}

// testForceUnlockListed, a test hook, runs in ForceUnlock between the
// listing of the Leases and their deletion.
var testForceUnlockListed func()

// deleteLockLease deletes l, a Lease of the lock id, on the condition that
// it is the version read. A live holder renews its Leases (every quarter
// of the lease duration): a renewal between the read and the delete made
// force-unlock fail with the apiserver's conflict ("the object might have
// been modified"). It reads the Lease again and deletes it while it is
// still id's; one that went, or that another lock took meanwhile, is not
// id's to delete.
func (b *Backend) deleteLockLease(ctx context.Context, l *coordv1.Lease, id string) error {
	for range 10 {
		err := b.c.deleteLease(ctx, l.Name, l.ResourceVersion)
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		if l, err = b.c.getLease(ctx, l.Name); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		if info, _ := leaseInfo(l); info.ID != id && l.Annotations[annotLockID] != id {
			return nil
		}
	}
	return fmt.Errorf("Lease %s/%s of lock %s changed on every one of 10 tries to delete it; its holder still renews it: stop it, or run force-unlock again", b.ns, l.Name, id)
}

// fenceIndex changes the index Secret's resourceVersion once the Leases of
// the lock id are deleted: a save checks its locks before it writes the
// index on the condition that the index is still at the resourceVersion it
// read, so a holder that checked its lock before the force-unlock and
// writes after it is refused (its write fails on the resourceVersion; it
// reads the index again and checks its locks again, which are gone). The
// check and the write cannot be one operation (a Lease and a Secret are
// two objects): this makes the force-unlock the point after which a former
// holder writes nothing. A write by someone else meanwhile changed the
// resourceVersion as well: a conflict here is as good.
func (b *Backend) fenceIndex(ctx context.Context, id string) error {
	sec, err := b.c.getSecret(ctx, b.indexName())
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("force-unlock: the lock is released (its Leases are deleted), but the index Secret could not be read to refuse its former holder's writes: %w; "+
			"if that holder still runs, it may write the state once more: stop it", err)
	}
	if sec.Annotations == nil {
		sec.Annotations = map[string]string{}
	}
	sec.Annotations[annotFence] = id + " " + time.Now().UTC().Format(time.RFC3339Nano)
	if _, err := b.c.updateSecret(ctx, sec); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("force-unlock: the lock is released (its Leases are deleted), but the index Secret could not be changed to refuse its former holder's writes: %w; "+
			"if that holder still runs, it may write the state once more: stop it", err)
	}
	return nil
}
