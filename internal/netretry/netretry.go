// Package netretry is trialform's one retry policy for calls over the
// network: the cloud platforms' API calls (providers/cloudjob) and the
// Kubernetes API (providers/kubernetes). A call is retried only when its
// platform's classifier says the error is transient, by the error's type
// (an HTTP status, an API status reason, a syscall errno, io.EOF), never
// by its text; waits grow exponentially with jitter (so that many trials
// hit by one outage do not retry in step), a wait the service asked for
// (Retry-After) is honoured, and the policy gives up after a number of
// calls or a time, whichever comes first.
//
// A platform whose client library retries by itself (client-go retries a
// throttled call that says Retry-After, and a GET whose connection
// dropped) classifies those errors as final: the library's retries are
// not multiplied by this policy's.
package netretry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Classifier says whether err is worth retrying and, when the service
// asked for it (Retry-After), how long to wait first (0: back off as
// usual).
type Classifier func(err error) (retry bool, after time.Duration)

// Policy bounds the retries of one call. The zero value is Default.
type Policy struct {
	Attempts   int           // calls in all (0: Default's; negative: no limit but MaxElapsed)
	Base       time.Duration // first backoff (0: Default's)
	Max        time.Duration // backoff cap, Retry-After included (0: Default's)
	MaxElapsed time.Duration // give up once a wait would end past this much time (0: Default's)
	// Sleep waits d or until ctx ends (nil: a timer); tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Default is the policy a zero Policy stands for.
var Default = Policy{Attempts: 6, Base: 200 * time.Millisecond, Max: 30 * time.Second, MaxElapsed: 2 * time.Minute}

func (p Policy) withDefaults() Policy {
	d := Default
	if p.Attempts != 0 {
		d.Attempts = p.Attempts
	}
	if p.Base > 0 {
		d.Base = p.Base
	}
	if p.Max > 0 {
		d.Max = p.Max
	}
	if p.MaxElapsed > 0 {
		d.MaxElapsed = p.MaxElapsed
	}
	d.Sleep = p.Sleep
	if d.Sleep == nil {
		d.Sleep = Sleep
	}
	return d
}

// Sleep waits d, or until ctx ends (its error then).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff is the wait before call i+1 (i ≥ 1) after a transient failure:
// Base doubled i-1 times, capped at Max, then jittered to between half of
// it and all of it.
func (p Policy) Backoff(i int) time.Duration {
	p = p.withDefaults()
	wait := p.Base
	for n := 1; n < i && wait < p.Max; n++ {
		wait *= 2
	}
	if wait <= 0 || wait > p.Max {
		wait = p.Max
	}
	return wait/2 + rand.N(wait/2+1)
}

// Do calls f until it succeeds, fails in a way classify says retrying
// cannot fix, the context ends, or the policy's bounds are reached; it
// returns f's last error, unwrapped (callers test it with errors.Is/As
// and their platform's predicates).
func (p Policy) Do(ctx context.Context, classify Classifier, f func(ctx context.Context) error) error {
	p = p.withDefaults()
	start := time.Now()
	for i := 1; ; i++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		retry, after := classify(err)
		if !retry || (p.Attempts > 0 && i >= p.Attempts) {
			return err
		}
		wait := p.Backoff(i)
		if after > 0 {
			wait = min(after, p.Max)
		}
		if time.Since(start)+wait > p.MaxElapsed {
			return err
		}
		if p.Sleep(ctx, wait) != nil {
			return err
		}
	}
}
