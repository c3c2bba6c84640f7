package kubeerr

import (
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Errors are classified by type: an apiserver out of reach or failing is
// retried; a refusal, and what client-go retried itself, are not.
func TestTransientByType(t *testing.T) {
	gr := schema.GroupResource{Resource: "secrets"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", &url.Error{Op: "Put", URL: "https://x", Err: syscall.ECONNREFUSED}, true},
		{"refused GET", &url.Error{Op: "Get", URL: "https://x", Err: syscall.ECONNREFUSED}, true},
		{"dropped PUT", &url.Error{Op: "Put", URL: "https://x", Err: io.EOF}, true},
		{"dropped GET (client-go retried it)", &url.Error{Op: "Get", URL: "https://x", Err: io.ErrUnexpectedEOF}, false},
		{"unavailable", apierrors.NewServiceUnavailable("etcd gone"), true},
		{"timeout", apierrors.NewTimeoutError("slow", 0), true},
		{"throttled with Retry-After (client-go waited)", apierrors.NewTooManyRequests("slow down", 2), false},
		{"internal", apierrors.NewInternalError(errors.New("x")), true},
		{"forbidden", apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		{"conflict", apierrors.NewConflict(gr, "x", errors.New("rv")), false},
		{"not found", apierrors.NewNotFound(gr, "x"), false},
		{"text that looks like an outage", errors.New("connection refused"), false},
		{"refused, as net/http returns it", &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, true},
		{"a certificate not trusted", &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}, false},
		{"an unknown host", &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}}, false},
		{"a DNS server that did not answer", &url.Error{Op: "Get", URL: "https://x", Err: &net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}}, true},
	} {
		if got, _ := Transient(c.err); got != c.want {
			t.Errorf("%s: transient = %v, want %v", c.name, got, c.want)
		}
	}
}
