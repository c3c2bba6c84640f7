// Package election elects one leader among the replicas of a controller
// on a coordination.k8s.io/v1 Lease, with the algorithm and the Lease
// fields of client-go's tools/leaderelection (holderIdentity,
// leaseDurationSeconds, acquireTime, renewTime, leaseTransitions), so
// that kubectl and other tools read the Lease as they read any leader
// Lease.
//
// It is not client-go's package because that one imports the full
// clientset: every one of Kubernetes' API groups would be compiled,
// linked and registered at each start of the binary (16 MB more;
// cmd/trialform's TestLinksOnlyUsedAPIGroups). Here a REST client of the
// one group does the three calls the algorithm needs: get, create and
// update of one Lease.
package election

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// JitterFactor spreads the retries of the replicas, as client-go's.
const JitterFactor = 1.2

// Config is one replica's part in an election.
type Config struct {
	Rest      *rest.Config
	Namespace string
	Name      string // the Lease
	Identity  string // this replica (unique among the replicas)

	// A standby takes the Lease once it was not renewed for
	// LeaseDuration; the leader gives up when it could not renew for
	// RenewDeadline; both try every RetryPeriod (jittered).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// OnStartedLeading runs (in its own goroutine) when this replica
	// becomes the leader; ctx ends when it stops leading.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading runs when Run returns after leading.
	OnStoppedLeading func()
	// OnNewLeader runs when the leader seen changes (this replica
	// included).
	OnNewLeader func(identity string)
}

// Check says what is wrong with the durations.
func (c *Config) Check() error {
	if c.Name == "" || c.Namespace == "" || c.Identity == "" {
		return errors.New("leader election needs a Lease name, a namespace and an identity")
	}
	if c.LeaseDuration < time.Second {
		return fmt.Errorf("the lease duration (%s) must be at least 1s", c.LeaseDuration)
	}
	if !(c.LeaseDuration > c.RenewDeadline && float64(c.RenewDeadline) > JitterFactor*float64(c.RetryPeriod) && c.RetryPeriod > 0) {
		return fmt.Errorf("leader election needs lease duration (%s) > renew deadline (%s) > %.1f × retry period (%s)",
			c.LeaseDuration, c.RenewDeadline, JitterFactor, c.RetryPeriod)
	}
	return nil
}

// Elector runs one replica's election.
type Elector struct {
	c      Config
	client rest.Interface

	obs Observed // the Lease as last changed

	mu     sync.Mutex
	leader string
	// While leading: when this replica last renewed the Lease (wall
	// clock, no monotonic reading: a suspended machine's monotonic clock
	// stops), and stop, which ends the leading context.
	leading   bool
	renewedAt time.Time
	stop      context.CancelFunc

	// pause, in tests, is called at each turn of the renew loop and of
	// the watchdog (a test blocks it to pause the leader).
	pause func()
}

// New makes the elector (it does not connect).
func New(c Config) (*Elector, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	s := runtime.NewScheme()
	if err := coordv1.AddToScheme(s); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	rc := rest.CopyConfig(c.Rest)
	gv := coordv1.SchemeGroupVersion
	rc.GroupVersion, rc.APIPath = &gv, "/apis"
	rc.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if rc.UserAgent == "" {
		rc.UserAgent = "trialform (controller leader election)"
	}
	client, err := rest.RESTClientFor(rc)
	if err != nil {
		return nil, err
	}
	return &Elector{c: c, client: client}, nil
}

// Leader is the identity of the leader last seen ("" when none).
func (e *Elector) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader
}

// wallNow is the time on the wall clock only: comparisons of two such
// times count a pause (SIGSTOP) and a suspend of the machine alike.
func wallNow() time.Time { return time.Now().Round(0) }

// Leading reports whether this replica leads now: it became the leader,
// has not stopped, and renewed the Lease within the renew deadline (on
// the wall clock), however long its goroutines were not scheduled. Call
// it right before each write made as the leader.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading && wallNow().Before(e.renewedAt.Add(e.c.RenewDeadline))
}

// Confirm reads the Lease now and reports whether this replica still
// leads; a Lease held by another ends its leading at once.
func (e *Elector) Confirm(ctx context.Context) bool {
	if !e.Leading() {
		return false
	}
	var lease coordv1.Lease
	if err := e.leases().Get().Name(e.c.Name).Do(ctx).Into(&lease); err != nil {
		return false
	}
	e.observe(&lease)
	if deref(lease.Spec.HolderIdentity) != e.c.Identity {
		e.stopLeading()
		return false
	}
	return e.Leading()
}

// stopLeading ends the leading context (once).
func (e *Elector) stopLeading() {
	e.mu.Lock()
	e.leading = false
	stop := e.stop
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// renewDeadline is when leading ends without another renewal.
func (e *Elector) renewDeadline() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.renewedAt.Add(e.c.RenewDeadline)
}

func (e *Elector) renewed(at time.Time) {
	e.mu.Lock()
	e.renewedAt = at
	e.mu.Unlock()
}

// Run takes part in the election until ctx ends or, after leading, until
// this replica stops leading: the renew deadline passed since its last
// successful renewal (measured on the wall clock, from the time of the
// renewal's request, so that a process paused in between finds its term
// over when it resumes), or it saw the Lease held by another replica. A
// leader whose ctx ends gives the Lease up, so a standby takes over at
// once.
func (e *Elector) Run(ctx context.Context) {
	for {
		at := wallNow()
		if ok, _ := e.tryAcquireOrRenew(ctx, false); ok {
			e.renewed(at)
			break
		}
		if !sleep(ctx, jitter(e.c.RetryPeriod)) {
			return
		}
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.mu.Lock()
	e.leading, e.stop = true, cancel
	e.mu.Unlock()
	defer e.stopLeading()
	go e.watchdog(lctx)
	if e.c.OnStartedLeading != nil {
		go e.c.OnStartedLeading(&leadingCtx{Context: lctx, e: e})
	}
	defer func() {
		if e.c.OnStoppedLeading != nil {
			e.c.OnStoppedLeading()
		}
	}()
	for e.renew(lctx) {
	}
	e.stopLeading()
	if ctx.Err() != nil {
		e.release()
	}
}

// renew renews the Lease once, retrying until the renew deadline; it
// reports whether this replica still leads.
func (e *Elector) renew(lctx context.Context) bool {
	if e.pause != nil {
		e.pause()
	}
	if !sleep(lctx, e.c.RetryPeriod) {
		return false
	}
	for e.Leading() && lctx.Err() == nil {
		if e.pause != nil {
			e.pause()
		}
		at := wallNow()
		rctx, rcancel := context.WithDeadline(lctx, e.renewDeadline())
		ok, other := e.tryAcquireOrRenew(rctx, true)
		rcancel()
		if ok {
			e.renewed(at)
			return e.Leading()
		}
		if other {
			// Another replica took the Lease: this term is over.
			return false
		}
		if !sleep(lctx, e.c.RetryPeriod) {
			return false
		}
	}
	return false
}

// watchdog ends the leading context once the renew deadline passed, even
// while the renew loop waits on a request.
func (e *Elector) watchdog(lctx context.Context) {
	for {
		if e.pause != nil {
			e.pause()
		}
		if !e.Leading() {
			e.stopLeading()
			return
		}
		wait := min(time.Until(e.renewDeadline()), e.c.RetryPeriod)
		if !sleep(lctx, max(wait, time.Millisecond)) {
			return
		}
	}
}

// leadingCtx is the leading context: besides being cancelled when this
// replica stops leading, its Err says so as soon as the renew deadline
// has passed, before the watchdog ran.
type leadingCtx struct {
	context.Context
	e *Elector
}

func (c *leadingCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !c.e.Leading() {
		return context.Canceled
	}
	return nil
}

// tryAcquireOrRenew takes the Lease when it is free, expired or ours,
// and reports whether this replica holds it now; other, whether another
// replica holds it. A leader renewing (renewing) never takes the Lease
// from another holder, even one that looks expired: its own term is over.
func (e *Elector) tryAcquireOrRenew(ctx context.Context, renewing bool) (ok, other bool) {
	c := Candidate{Leases: restLeases{e}, Observed: &e.obs, Namespace: e.c.Namespace, Name: e.c.Name, Identity: e.c.Identity,
		LeaseDuration: e.c.LeaseDuration, Seen: e.seen}
	_, ok, other, _ = c.TryAcquireOrRenew(ctx, renewing)
	return ok, other
}

// LeaseClient is what the algorithm calls: get, create and update (an
// update conditional on the resourceVersion it carries) of one Lease; a
// Lease that does not exist is an apierrors NotFound error.
type LeaseClient interface {
	GetLease(ctx context.Context, name string) (*coordv1.Lease, error)
	CreateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error)
	UpdateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error)
}

// Observed is a candidate's record of a Lease as it last changed: the
// expiry is judged on this candidate's clock from the time it saw the
// last change, never from the writer's timestamps (clocks differ). A
// candidate that tries several times keeps one Observed across its tries.
type Observed struct {
	mu   sync.Mutex
	rv   string
	at   time.Time
	spec coordv1.LeaseSpec
}

// Observe records l as read now.
func (o *Observed) Observe(l *coordv1.Lease) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if l.ResourceVersion != o.rv {
		o.spec, o.rv, o.at = l.Spec, l.ResourceVersion, time.Now()
	}
}

// Expires is when the Lease as last observed expires.
func (o *Observed) Expires() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.at.Add(time.Duration(deref(o.spec.LeaseDurationSeconds)) * time.Second)
}

// Candidate is one try of one candidate to take or renew a Lease, with
// the algorithm of client-go's leader election: shared by the Elector
// and by whoever holds a Lease the same way without an Elector's loop
// (the kubernetes state backend's controller claim).
type Candidate struct {
	Leases        LeaseClient
	Observed      *Observed
	Namespace     string
	Name          string // the Lease
	Identity      string // its holderIdentity while this candidate holds it
	LeaseDuration time.Duration
	// Labels are set on a Lease the candidate creates (optional).
	Labels map[string]string
	// Seen, when set, is called with every Lease read or written.
	Seen func(*coordv1.Lease)
}

// TryAcquireOrRenew takes the Lease when it is free, expired or ours,
// and reports whether this candidate holds it now (ok); other, whether
// another holds it (or, renewing, whether it was deleted: someone ended
// this term); cur is the Lease as last read or written (nil when none
// was read), err why neither could be told. A holder renewing
// (renewing) never takes the Lease from another holder, even one that
// looks expired: its own term is over.
func (c *Candidate) TryAcquireOrRenew(ctx context.Context, renewing bool) (cur *coordv1.Lease, ok, other bool, err error) {
	now := metav1.NowMicro()
	me := c.Identity
	secs := int32(c.LeaseDuration / time.Second)
	seen := func(l *coordv1.Lease) {
		c.Observed.Observe(l)
		if c.Seen != nil {
			c.Seen(l)
		}
	}
	lease, err := c.Leases.GetLease(ctx, c.Name)
	if apierrors.IsNotFound(err) {
		if renewing {
			return nil, false, true, nil // deleted: someone ended this term
		}
		zero := int32(0)
		nl := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: c.Labels},
			Spec: coordv1.LeaseSpec{HolderIdentity: &me, LeaseDurationSeconds: &secs,
				AcquireTime: &now, RenewTime: &now, LeaseTransitions: &zero},
		}
		out, err := c.Leases.CreateLease(ctx, nl)
		if err != nil {
			return nil, false, apierrors.IsAlreadyExists(err), err
		}
		seen(out)
		return out, true, false, nil
	}
	if err != nil {
		return nil, false, false, err
	}
	seen(lease)
	holder := deref(lease.Spec.HolderIdentity)
	if renewing && holder != me {
		return lease, false, true, nil
	}
	if holder != "" && holder != me && time.Now().Before(c.Observed.Expires()) {
		return lease, false, true, nil
	}
	lease = lease.DeepCopy()
	spec := lease.Spec
	spec.HolderIdentity, spec.LeaseDurationSeconds, spec.RenewTime = &me, &secs, &now
	if holder != me {
		t := deref(lease.Spec.LeaseTransitions)
		if holder != "" || lease.Spec.AcquireTime != nil {
			t++
		}
		spec.AcquireTime, spec.LeaseTransitions = &now, &t
	}
	lease.Spec = spec
	// An update conditional on the resourceVersion read: of two
	// candidates that found the Lease expired, one wins.
	out, err := c.Leases.UpdateLease(ctx, lease)
	if err != nil {
		return lease, false, apierrors.IsConflict(err), err
	}
	seen(out)
	return out, true, false, nil
}

// release gives the Lease up (it is ours): no holder, so a standby
// takes it at its next try instead of waiting for it to expire.
func (e *Elector) release() {
	ctx, cancel := context.WithTimeout(context.Background(), e.c.RenewDeadline)
	defer cancel()
	var lease coordv1.Lease
	if err := e.leases().Get().Name(e.c.Name).Do(ctx).Into(&lease); err != nil {
		return
	}
	if deref(lease.Spec.HolderIdentity) != e.c.Identity {
		return
	}
	now := metav1.NowMicro()
	empty, one := "", int32(1)
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &empty, &one, &now
	var out coordv1.Lease
	if err := e.leases().Put().Name(e.c.Name).Body(&lease).Do(ctx).Into(&out); err == nil {
		e.observe(&out)
	}
}

// observe records the Lease as read (Observed), and the leader it names.
func (e *Elector) observe(l *coordv1.Lease) {
	e.obs.Observe(l)
	e.seen(l)
}

// seen notes the leader a Lease read names.
func (e *Elector) seen(l *coordv1.Lease) {
	e.mu.Lock()
	holder := deref(l.Spec.HolderIdentity)
	newLeader := holder != "" && holder != e.leader
	if newLeader {
		e.leader = holder
	}
	e.mu.Unlock()
	if newLeader && e.c.OnNewLeader != nil {
		go e.c.OnNewLeader(holder)
	}
}

// restLeases is the LeaseClient of an Elector's REST client.
type restLeases struct{ e *Elector }

func (r restLeases) GetLease(ctx context.Context, name string) (*coordv1.Lease, error) {
	var l coordv1.Lease
	if err := r.e.leases().Get().Name(name).Do(ctx).Into(&l); err != nil {
		return nil, err
	}
	return &l, nil
}

func (r restLeases) CreateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	var out coordv1.Lease
	if err := r.e.leases().Post().Body(l).Do(ctx).Into(&out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (r restLeases) UpdateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	var out coordv1.Lease
	if err := r.e.leases().Put().Name(l.Name).Body(l).Do(ctx).Into(&out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (e *Elector) leases() *leaseRequests { return &leaseRequests{e} }

type leaseRequests struct{ e *Elector }

func (r *leaseRequests) Get() *rest.Request {
	return r.e.client.Get().Namespace(r.e.c.Namespace).Resource("leases")
}
func (r *leaseRequests) Post() *rest.Request {
	return r.e.client.Post().Namespace(r.e.c.Namespace).Resource("leases")
}
func (r *leaseRequests) Put() *rest.Request {
	return r.e.client.Put().Namespace(r.e.c.Namespace).Resource("leases")
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*(JitterFactor-1)*float64(d))
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
