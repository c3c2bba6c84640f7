package cloudjob

import (
	"context"
	"time"
)

// Retry is the shared retry policy around API calls: 429 (waiting what
// Retry-After says), 5xx, timeouts and dropped connections are retried with
// exponential backoff up to Attempts calls and MaxElapsed in all;
// providers.Permanent errors (401/403, bad requests) and ErrNotFound are not.
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
