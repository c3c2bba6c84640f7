package kubernetes

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/providers"
)

// Logs copies the newest pod's log (stdout and stderr, as the kubelet keeps
// them) to req.Out; with Follow it waits for the pod to start and follows
// the log until the container ends.
func (k *Kubernetes) Logs(ctx context.Context, req providers.LogsRequest) error {
	name := JobName(req.Experiment, req.TrialID)
	job, err := k.client.BatchV1().Jobs(k.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && job.Annotations[AnnTrial] != req.TrialID) {
		return fmt.Errorf("trial %s/%s: %w (no job %s in namespace %s)", req.Experiment, req.TrialID, providers.ErrNotFound, name, k.namespace)
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", name, err)
	}
	for {
		pods, err := k.jobPods(ctx, job)
		if err != nil {
			return err
		}
		if len(pods) > 0 {
			pod := pods[len(pods)-1]
			if pod.Status.Phase != corev1.PodPending || terminated(&pod) != nil {
				return k.streamLog(ctx, &pod, req.Follow, req.Out)
			}
		}
		if ph, _ := jobPhase(job, nil); ph.Ended() || !req.Follow {
			return nil // never ran: nothing to show
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if job, err = k.client.BatchV1().Jobs(k.namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get job %s: %w", name, err)
		}
	}
}

// streamLog copies a pod's trial container log to out (following it with
// follow).
func (k *Kubernetes) streamLog(ctx context.Context, pod *corev1.Pod, follow bool, out io.Writer) error {
	rc, err := k.stream.CoreV1().Pods(k.namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: trialContainer(pod), Follow: follow}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("logs of pod %s: %w", pod.Name, err)
	}
	defer rc.Close()
	_, err = io.Copy(out, rc)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
