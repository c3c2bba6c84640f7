package cloudjob

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/trialform/trialform/providers"
)

// HTTPError is a service's non-2xx answer. Classify retries 429 (after
// RetryAfter when the service said) and 5xx; CheckResponse makes 401/403
// Permanent and 404 an ErrNotFound instead.
type HTTPError struct {
	Op         string // "submit job trial-abc"
	Status     int
	RetryAfter time.Duration // from a Retry-After header (0: none)
	Body       string        // the answer's first 512 bytes
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d %s", e.Op, e.Status, http.StatusText(e.Status))
	if b := strings.TrimSpace(e.Body); b != "" {
		msg += ": " + b
	}
	return msg
}

type transient struct{ err error }

func (t transient) Error() string { return t.err.Error() }
func (t transient) Unwrap() error { return t.err }

// Retryable marks err as worth retrying (the service said so in its own
// terms: a throttling code in a 400 answer, a "busy" error).
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return transient{err}
}

// Credential names where a platform's credentials come from, for the
// message a refused credential gives ("attribute token of platform
// \"openpai\" \"lab\"", "the environment variable ALIBABA_CLOUD_ACCESS_KEY_ID").
type Credential string

// AuthError is the Permanent error of a refused credential: it names the
// credential source and what to do, never the credential's value.
func AuthError(op string, status int, cred Credential) error {
	what := "refused the credentials"
	if status == http.StatusForbidden {
		what = "refused access with the credentials"
	}
	return providers.Permanent(fmt.Errorf("%s: the service %s (HTTP %d) from %s: check that value (and that it has not expired or lost its rights) and run again",
		op, what, status, cred))
}

// CheckResponse turns a service's answer into an error: nil for 2xx, an
// AuthError for 401/403, ErrNotFound for 404 (wrapped), a retryable
// *HTTPError for 429 and 5xx, and a Permanent *HTTPError for any other 4xx.
// On error it reads and closes the body.
func CheckResponse(op string, resp *http.Response, cred Credential) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_ = resp.Body.Close()
	he := &HTTPError{Op: op, Status: resp.StatusCode, Body: string(b), RetryAfter: RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return AuthError(op, resp.StatusCode, cred)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %w", providers.ErrNotFound, he)
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return he
	default:
		return providers.Permanent(he)
	}
}

// RetryAfter parses a Retry-After header (seconds or an HTTP date); 0 when
// absent or unreadable.
func RetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
