package cloudjob

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/trialform/trialform/providers"
)

// Retry is the shared retry policy around API calls: 429 (waiting what
// Retry-After says), 5xx, timeouts and dropped connections are retried with
// exponential backoff up to Attempts calls and MaxElapsed in all;
// providers.Permanent errors (401/403, bad requests), ErrNotFound and the
// caller's cancelled context are not.
type Retry struct {
	Attempts   int           // calls in all (0: 6)
	Base       time.Duration // first backoff (0: 200ms)
	Max        time.Duration // backoff cap, Retry-After included (0: 30s)
	MaxElapsed time.Duration // give up once this much time passed (0: 2m)
	// Sleep waits d or until ctx ends (nil: a timer); tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultRetry is the policy when Options.Retry is zero.
var DefaultRetry = Retry{Attempts: 6, Base: 200 * time.Millisecond, Max: 30 * time.Second, MaxElapsed: 2 * time.Minute}

func (r Retry) withDefaults() Retry {
	d := DefaultRetry
	if r.Attempts > 0 {
		d.Attempts = r.Attempts
	}
	if r.Base > 0 {
		d.Base = r.Base
	}
	if r.Max > 0 {
		d.Max = r.Max
	}
	if r.MaxElapsed > 0 {
		d.MaxElapsed = r.MaxElapsed
	}
	d.Sleep = r.Sleep
	if d.Sleep == nil {
		d.Sleep = sleep
	}
	return d
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Do calls f until it succeeds, fails in a way retrying cannot fix, or the
// policy's bounds are reached; it returns f's last error.
func (r Retry) Do(ctx context.Context, f func(ctx context.Context) error) error {
	r = r.withDefaults()
	start := time.Now()
	for i := 1; ; i++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		retry, after := Classify(err)
		if !retry || i >= r.Attempts {
			return err
		}
		wait := r.Base << (i - 1)
		if wait <= 0 || wait > r.Max {
			wait = r.Max
		}
		wait = wait/2 + rand.N(wait/2+1) // jitter: half to all of the backoff
		if after > 0 {
			wait = min(after, r.Max)
		}
		if time.Since(start)+wait > r.MaxElapsed {
			return err
		}
		if r.Sleep(ctx, wait) != nil {
			return err
		}
	}
}

// Classify says whether err is worth retrying and, for a throttled call,
// how long the service asked to wait (0: back off as usual).
func Classify(err error) (retry bool, after time.Duration) {
	if err == nil || providers.IsPermanent(err) || errors.Is(err, providers.ErrNotFound) || errors.Is(err, ErrUnsupported) {
		return false, 0
	}
	var t transient
	if errors.As(err, &t) {
		return true, 0
	}
	var he *HTTPError
	if errors.As(err, &he) {
		if he.Status == 429 {
			return true, he.RetryAfter
		}
		return he.Status >= 500 || he.Status == 408, he.RetryAfter
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) {
		return true, 0
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true, 0
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		var op *net.OpError
		return errors.As(err, &op), 0
	}
	return false, 0
}
