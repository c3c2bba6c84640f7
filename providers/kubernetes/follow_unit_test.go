package kubernetes

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// TestFollowerTrustsTheCopyOnlyOnceCaughtUp: the watched copy of a Job
// answers only once it holds the version this process last read or
// wrote, or, after a deletion, once it lost that Job (a new Job of the
// same name is another UID).
func TestFollowerTrustsTheCopyOnlyOnceCaughtUp(t *testing.T) {
	f := &follower{floors: map[string]floor{}, watching: map[string]bool{},
		objs: cache.NewSharedIndexInformer(&cache.ListWatch{}, &batchv1.Job{}, 0, cache.Indexers{})}
	store := f.objs.GetStore()
	put := func(rv, uid string) {
		t.Helper()
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", ResourceVersion: rv, UID: types.UID(uid),
			Annotations: map[string]string{AnnExperiment: "e"}}}
		if err := store.Update(j); err != nil {
			t.Fatal(err)
		}
	}
	trusted := func() bool {
		_, ok := f.job("ns", "j")
		return ok
	}
	put("5", "a")
	if !trusted() {
		t.Fatal("no floor: the copy answers")
	}
	f.floors["j"] = floor{exp: "e", rv: "7", at: time.Now()}
	if trusted() || f.caughtUpAll("ns", "e") {
		t.Fatal("the copy at version 5 answered for a Job this process knows at 7")
	}
	if !f.caughtUpAll("ns", "other") {
		t.Fatal("another experiment's list waits on this Job")
	}
	put("12", "a") // a newer version than ours: caught up
	if !trusted() {
		t.Fatal("the copy at 12 is not trusted for a Job known at 7")
	}
	if _, left := f.floors["j"]; left {
		t.Fatal("the floor stays once the copy caught up")
	}
	f.floors["j"] = floor{exp: "e", deleted: "a", at: time.Now()}
	if trusted() {
		t.Fatal("the copy answered with the Job this process deleted")
	}
	put("20", "b") // a new Job of the same name
	if !trusted() {
		t.Fatal("a new Job of the name is not trusted after the old one's deletion")
	}
	f.floors["j"] = floor{exp: "e", deleted: "b", at: time.Now()}
	store.Delete(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"}})
	if !trusted() {
		t.Fatal("the copy without the deleted Job is not trusted")
	}
	// A floor the copy never reaches (the watch broke without an error)
	// expires.
	f.floors["j"] = floor{exp: "e", rv: "99", at: time.Now().Add(-floorTTL - time.Second)}
	if !trusted() {
		t.Fatal("an expired floor still holds")
	}
	for _, c := range []struct {
		have, want string
		ok         bool
	}{{"10", "9", true}, {"9", "10", false}, {"10", "10", true}, {"x", "x", true}, {"x", "y", false}, {"10", "x", false}} {
		if got := versionAtLeast(c.have, c.want); got != c.ok {
			t.Errorf("versionAtLeast(%q, %q) = %v", c.have, c.want, got)
		}
	}
}

// TestFollowKeepsClientGoLogsOffStderr: a watch that fails makes
// client-go log an error through klog, which writes errors to stderr
// unless a logger takes them; a following session (watch, apply -wait)
// must not print them over its own output.
func TestFollowKeepsClientGoLogsOffStderr(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = stderr }()
	quietKlog()
	klog.ErrorS(errors.New("forbidden"), "Failed to watch", "reflector", "jobs")
	klog.Error("failed to list *v1.Pod: connection refused")
	klog.Flush()
	os.Stderr = stderr
	w.Close()
	b, _ := io.ReadAll(r)
	if len(b) != 0 {
		t.Errorf("klog wrote to stderr: %q", b)
	}
}
