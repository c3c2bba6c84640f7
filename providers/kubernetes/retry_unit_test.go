package kubernetes

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/providers"
)

// transient decides by the error's type, never its text, and leaves
// what client-go retried by itself alone.
func TestTransientByType(t *testing.T) {
	gr := corev1.Resource("configmaps")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"conflict", apierrors.NewConflict(gr, "x", errors.New("changed")), false},
		{"429 without Retry-After", apierrors.NewTooManyRequestsError("slow down"), true},
		{"429 with Retry-After (client-go retried it)", apierrors.NewTooManyRequests("slow down", 2), false},
		{"503", apierrors.NewServiceUnavailable("down"), true},
		{"500", apierrors.NewInternalError(errors.New("boom")), true},
		{"504 with Retry-After (client-go retried it)", apierrors.NewServerTimeout(gr, "get", 3), false},
		{"not found", apierrors.NewNotFound(gr, "x"), false},
		{"forbidden", apierrors.NewForbidden(gr, "x", errors.New("rbac")), false},
		{"permanent", providers.Permanent(apierrors.NewServiceUnavailable("down")), false},
		{"POST dropped", &url.Error{Op: "Post", URL: "https://k8s/api", Err: io.EOF}, true},
		{"GET dropped (client-go retried it)", &url.Error{Op: "Get", URL: "https://k8s/api", Err: io.ErrUnexpectedEOF}, false},
		{"connection reset on a DELETE", &url.Error{Op: "Delete", URL: "https://k8s/api", Err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}}, true},
		{"connection refused", &url.Error{Op: "Get", URL: "https://k8s/api", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, true},
		{"a certificate not trusted (a *url.Error is a net.Error: it was retried)", &url.Error{Op: "Get", URL: "https://k8s/api", Err: x509.UnknownAuthorityError{}}, false},
		{"an unknown host", &url.Error{Op: "Get", URL: "https://k8s/api", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "k8s", IsNotFound: true}}}, false},
		{"a message that merely says EOF", errors.New("kubeconfig: unexpected EOF in the token file"), false},
		{"a message that says connection refused", fmt.Errorf("webhook said: connection refused"), false},
	} {
		if got, _ := transient(tc.err); got != tc.want {
			t.Errorf("%s: transient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// fakeAPI is an apiserver double for unit tests: handle answers each
// request (method, path), with the status and object it returns.
type fakeAPI struct {
	t      *testing.T
	handle func(method, path string, body []byte) (int, any)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	code, obj := f.handle(r.Method, r.URL.Path, body)
	if se, ok := obj.(*apierrors.StatusError); ok {
		st := se.ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		obj = &st
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

// client returns a provider talking to the double.
func (f *fakeAPI) client() *Kubernetes {
	srv := httptest.NewServer(f)
	f.t.Cleanup(srv.Close)
	// The fake speaks JSON only (the client asks for protobuf by default).
	cs, err := newClientset(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		f.t.Fatal(err)
	}
	return &Kubernetes{client: cs, stream: cs, namespace: "ns"}
}

// A delete with a UID precondition that conflicts (the object was
// replaced) is not retried: the same call would fail the same way for the
// whole retry budget.
func TestConflictNotRetriedBlindly(t *testing.T) {
	deletes := 0
	var sent metav1.DeleteOptions
	f := &fakeAPI{t: t, handle: func(method, path string, body []byte) (int, any) {
		if method != "DELETE" || path != "/apis/batch/v1/namespaces/ns/jobs/j" {
			return 404, apierrors.NewNotFound(corev1.Resource("x"), path)
		}
		deletes++
		_ = json.Unmarshal(body, &sent)
		return 409, apierrors.NewConflict(corev1.Resource("jobs"), "j", errors.New("precondition failed: UID"))
	}}
	err := f.client().deleteJob(context.Background(), "j", types.UID("old"))
	if !apierrors.IsConflict(err) || deletes != 1 {
		t.Fatalf("deleteJob: %v after %d calls; want the conflict after 1", err, deletes)
	}
	if sent.Preconditions == nil || sent.Preconditions.UID == nil || *sent.Preconditions.UID != "old" {
		t.Errorf("the delete sent %+v; want the UID precondition old", sent)
	}
}

// A write that conflicts is done again after reading the object again:
// ensureConfigMap's Update that lost a race re-reads, then succeeds.
func TestConflictRereads(t *testing.T) {
	cur := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ResourceVersion: "1"}, Data: map[string]string{"a": "old"}}
	gets, updates := 0, 0
	const at = "/api/v1/namespaces/ns/configmaps"
	f := &fakeAPI{t: t, handle: func(method, path string, body []byte) (int, any) {
		switch {
		case method == "POST" && path == at:
			return 409, apierrors.NewAlreadyExists(corev1.Resource("configmaps"), "cm")
		case method == "GET" && path == at+"/cm":
			gets++
			return 200, cur
		case method == "PUT" && path == at+"/cm":
			updates++
			if updates == 1 {
				return 409, apierrors.NewConflict(corev1.Resource("configmaps"), "cm", errors.New("the object has been modified"))
			}
			var cm corev1.ConfigMap
			if err := json.Unmarshal(body, &cm); err != nil {
				return 400, apierrors.NewBadRequest(err.Error())
			}
			cur = &cm
			return 200, cur
		}
		return 404, apierrors.NewNotFound(corev1.Resource("x"), path)
	}}
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"a": "new"}}
	if err := f.client().ensureConfigMap(context.Background(), want, nil); err != nil {
		t.Fatal(err)
	}
	if gets != 2 || updates != 2 {
		t.Errorf("%d gets, %d updates; want the conflicting update re-read: 2 and 2", gets, updates)
	}
	if cur.Data["a"] != "new" {
		t.Errorf("configmap data %v; want a=new", cur.Data)
	}
}
