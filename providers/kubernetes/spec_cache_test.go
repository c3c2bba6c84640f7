package kubernetes

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestCachedSpec: a Job's spec is rendered once per UID and generation (a
// changed template comes with a new generation), and a Job without a UID
// (a CRD's pod template held as a Job) is rendered every time.
func TestCachedSpec(t *testing.T) {
	job := &batchv1.Job{}
	job.UID, job.Generation = "uid-cached-spec", 1
	job.Spec.Template.Spec.Containers = []corev1.Container{{Name: containerName, Image: "a:1"}}
	if s := cachedSpec(job); !strings.Contains(s, "image: a:1") {
		t.Fatalf("first render: %q", s)
	}
	job.Spec.Template.Spec.Containers[0].Image = "b:2"
	if s := cachedSpec(job); !strings.Contains(s, "image: a:1") {
		t.Errorf("same UID and generation rendered again: %q", s)
	}
	job.Generation = 2
	if s := cachedSpec(job); !strings.Contains(s, "image: b:2") {
		t.Errorf("a new generation kept the old render: %q", s)
	}
	job.UID = ""
	job.Spec.Template.Spec.Containers[0].Image = "c:3"
	if s := cachedSpec(job); !strings.Contains(s, "image: c:3") {
		t.Errorf("a Job without a UID was not rendered: %q", s)
	}
}
