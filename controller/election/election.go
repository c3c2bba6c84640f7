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

	mu           sync.Mutex
	observed     coordv1.LeaseSpec
	observedRV   string
	observedTime time.Time
	leader       string
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

// Run takes part in the election until ctx ends or, after leading, until
// this replica could not renew the Lease for RenewDeadline. A leader
// whose ctx ends gives the Lease up, so a standby takes over at once.
func (e *Elector) Run(ctx context.Context) {
	for !e.tryAcquireOrRenew(ctx) {
		if !sleep(ctx, jitter(e.c.RetryPeriod)) {
			return
		}
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if e.c.OnStartedLeading != nil {
		go e.c.OnStartedLeading(lctx)
	}
	defer func() {
		if e.c.OnStoppedLeading != nil {
			e.c.OnStoppedLeading()
		}
	}()
	for {
		if !sleep(ctx, e.c.RetryPeriod) {
			cancel()
			e.release()
			return
		}
		deadline := time.Now().Add(e.c.RenewDeadline)
		renewed := false
		for !renewed && time.Now().Before(deadline) && ctx.Err() == nil {
			rctx, rcancel := context.WithDeadline(ctx, deadline)
			renewed = e.tryAcquireOrRenew(rctx)
			rcancel()
			if !renewed && !sleep(ctx, e.c.RetryPeriod) {
				break
			}
		}
		if ctx.Err() != nil {
			cancel()
			e.release()
			return
		}
		if !renewed {
			// Lost: another replica may take the Lease once it expires.
			cancel()
			return
		}
	}
}

// tryAcquireOrRenew takes the Lease when it is free, expired or ours,
// and reports whether this replica holds it now.
func (e *Elector) tryAcquireOrRenew(ctx context.Context) bool {
	now := metav1.NowMicro()
	me := e.c.Identity
	secs := int32(e.c.LeaseDuration / time.Second)
	var lease coordv1.Lease
	err := e.leases().Get().Name(e.c.Name).Do(ctx).Into(&lease)
	if apierrors.IsNotFound(err) {
		zero := int32(0)
		lease = coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: e.c.Name, Namespace: e.c.Namespace},
			Spec: coordv1.LeaseSpec{HolderIdentity: &me, LeaseDurationSeconds: &secs,
				AcquireTime: &now, RenewTime: &now, LeaseTransitions: &zero},
		}
		var out coordv1.Lease
		if err := e.leases().Post().Body(&lease).Do(ctx).Into(&out); err != nil {
			return false
		}
		e.observe(&out)
		return true
	}
	if err != nil {
		return false
	}
	e.observe(&lease)
	holder := deref(lease.Spec.HolderIdentity)
	e.mu.Lock()
	expires := e.observedTime.Add(time.Duration(deref(lease.Spec.LeaseDurationSeconds)) * time.Second)
	e.mu.Unlock()
	if holder != "" && holder != me && time.Now().Before(expires) {
		return false
	}
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
	var out coordv1.Lease
	// An update conditional on the resourceVersion read: of two replicas
	// that found the Lease expired, one wins.
	if err := e.leases().Put().Name(e.c.Name).Body(&lease).Do(ctx).Into(&out); err != nil {
		return false
	}
	e.observe(&out)
	return true
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

// observe records the Lease as read, and when it changed since: the
// expiry is judged on this replica's clock from the time it saw the
// last change, never from the writer's timestamps (clocks differ).
func (e *Elector) observe(l *coordv1.Lease) {
	e.mu.Lock()
	changed := l.ResourceVersion != e.observedRV
	if changed {
		e.observed, e.observedRV, e.observedTime = l.Spec, l.ResourceVersion, time.Now()
	}
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
