package kubernetes

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/providers"
)

// logPod is a pod of a distributed trial: running, or ended with code at
// the given second.
func logPod(name string, running bool, code int32, at int) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: containerName}}}}
	p.Status.Phase = corev1.PodRunning
	cs := corev1.ContainerStatus{Name: containerName}
	if running {
		cs.State.Running = &corev1.ContainerStateRunning{}
	} else {
		p.Status.Phase = corev1.PodFailed
		if code == 0 {
			p.Status.Phase = corev1.PodSucceeded
		}
		cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code,
			FinishedAt: metav1.NewTime(time.Date(2026, 11, 28, 8, 0, at, 0, time.UTC))}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p
}

// TestLogPods: the pods whose logs `trialform logs` shows for a trial of
// a distributed job. A TFJob whose worker 1 failed while worker 0 (the
// results pod) ran is failed at once, and its operator stops worker 0;
// until worker 0 is gone, `logs` showed only worker 0's log ("Terminated")
// and not the one that says why the trial failed (seen in CI).
func TestLogPods(t *testing.T) {
	names := func(show []shownPod) string {
		var s []string
		for _, sp := range show {
			s = append(s, sp.pod.Name+"("+sp.header+")")
		}
		return strings.Join(s, " ")
	}
	w0run, w0killed, w0failed := logPod("w-0", true, 0, 0), logPod("w-0", false, 143, 5), logPod("w-0", false, 1, 1)
	w1failed, w1ok := logPod("w-1", false, 1, 2), logPod("w-1", false, 0, 2)
	for _, tc := range []struct {
		name  string
		main  *corev1.Pod
		pods  []corev1.Pod
		phase providers.Phase
		want  string
	}{
		{"running", &w0run, []corev1.Pod{w0run, w1ok}, providers.PhaseRunning, "w-0()"},
		{"succeeded", &w1ok, []corev1.Pod{w0run, w1ok}, providers.PhaseSucceeded, "w-1()"},
		{"another replica failed, the results pod still runs", &w0run, []corev1.Pod{w0run, w1failed}, providers.PhaseFailed,
			"w-0(the trial's results pod) w-1(a replica that failed; the trial failed with it)"},
		{"another replica failed first, the results pod stopped after it", &w0killed, []corev1.Pod{w0killed, w1failed}, providers.PhaseFailed,
			"w-0(the trial's results pod) w-1(a replica that failed; the trial failed with it)"},
		{"the results pod failed first", &w0failed, []corev1.Pod{w0failed, w1failed}, providers.PhaseFailed, "w-0()"},
		{"the results pod is gone", nil, []corev1.Pod{w1failed}, providers.PhaseFailed, "w-1(the trial's results pod is gone; this replica's log)"},
		{"gone, nothing failed", nil, []corev1.Pod{w1ok}, providers.PhaseKilled, "w-1(the trial's results pod is gone; this replica's log)"},
		{"not started", nil, nil, providers.PhasePending, ""},
	} {
		if got := names(logPods(tc.main, tc.pods, tc.phase)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
