// Package kubeerr classifies the errors of calls to a Kubernetes
// apiserver: one rule for the kubernetes platform (providers/kubernetes)
// and the kubernetes state backend (state/kubernetes), so both retry the
// same outages and neither retries a wrong configuration.
package kubeerr

import (
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Transient classifies an error by its type (never its text): the
// apiserver could not be reached (refused, reset or dropped connection, a
// network error) or could not answer now (unavailable, timed out,
// throttled, failing): worth calling again. A refusal (forbidden,
// invalid, conflict, not found) is final, and so is what client-go
// already retried (an answer with Retry-After, a GET whose connection
// dropped): its retries are not multiplied by these.
func Transient(err error) (bool, time.Duration) {
	if err == nil {
		return false, 0
	}
	if _, ok := apierrors.SuggestsClientDelay(err); ok {
		return false, 0
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsInternalError(err) {
		return true, 0
	}
	dropped := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
	var ue *url.Error
	if dropped && errors.As(err, &ue) && ue.Op == "Get" {
		return false, 0
	}
	if dropped || errors.Is(err, syscall.ECONNREFUSED) {
		return true, 0
	}
	// A network error is transient when the network failed (an
	// operation on a socket, a timeout, a DNS server that did not
	// answer), not when the configuration is wrong: an unknown host, a
	// certificate not trusted (a *url.Error is a net.Error too).
	var de *net.DNSError
	if errors.As(err, &de) {
		return de.IsTimeout || de.IsTemporary, 0
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true, 0
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout(), 0
}
