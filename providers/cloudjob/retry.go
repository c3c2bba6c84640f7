package cloudjob

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/netretry"
	"github.com/trialform/trialform/providers"
)

// Retry is the retry policy around API calls, trialform's one policy for
// network calls (internal/netretry): what Classify calls transient — 429
// (waiting what Retry-After says), 5xx, timeouts and dropped connections —
// is retried with jittered exponential backoff up to Attempts calls and
// MaxElapsed in all; providers.Permanent errors (401/403, bad requests),
// ErrNotFound and the caller's cancelled context are not.
type Retry = netretry.Policy

// DefaultRetry is the policy when Options.Retry is zero.
var DefaultRetry = netretry.Default

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
