package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

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
		{"a message that merely says EOF", errors.New("kubeconfig: unexpected EOF in the token file"), false},
		{"a message that says connection refused", fmt.Errorf("webhook said: connection refused"), false},
	} {
		if got, _ := transient(tc.err); got != tc.want {
			t.Errorf("%s: transient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// A delete with a UID precondition that conflicts (the object was
// replaced) is not retried: the same call would fail the same way for the
// whole retry budget.
func TestConflictNotRetriedBlindly(t *testing.T) {
	cs := fake.NewSimpleClientset()
	deletes := 0
	cs.PrependReactor("delete", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deletes++
		return true, nil, apierrors.NewConflict(corev1.Resource("jobs"), "j", errors.New("precondition failed: UID"))
	})
	k := &Kubernetes{client: cs, namespace: "ns"}
	err := k.deleteJob(context.Background(), "j", types.UID("old"))
	if !apierrors.IsConflict(err) || deletes != 1 {
		t.Fatalf("deleteJob: %v after %d calls; want the conflict after 1", err, deletes)
	}
}

// A write that conflicts is done again after reading the object again:
// ensureConfigMap's Update that lost a race re-reads, then succeeds.
func TestConflictRereads(t *testing.T) {
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ResourceVersion: "1"}, Data: map[string]string{"a": "old"}}
	cs := fake.NewSimpleClientset(old)
	gets, updates := 0, 0
	cs.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		return false, nil, nil
	})
	cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		if updates == 1 {
			return true, nil, apierrors.NewConflict(corev1.Resource("configmaps"), "cm", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	k := &Kubernetes{client: cs, namespace: "ns"}
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"a": "new"}}
	if err := k.ensureConfigMap(context.Background(), want, nil); err != nil {
		t.Fatal(err)
	}
	if gets != 2 || updates != 2 {
		t.Errorf("%d gets, %d updates; want the conflicting update re-read: 2 and 2", gets, updates)
	}
	got, err := cs.CoreV1().ConfigMaps("ns").Get(context.Background(), "cm", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "new" {
		t.Errorf("configmap data %v, %v; want a=new", got.Data, err)
	}
}
