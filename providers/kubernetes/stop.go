package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trialform/trialform/providers"
)

// Stop stops a running trial: it records the reason on the Job, deletes
// its pods with req.Grace (SIGTERM, SIGKILL after the grace) and ends the
// Job by lowering its activeDeadlineSeconds, then waits until the Job has
// failed. With Purge the Job is then deleted with background propagation
// (pods and ConfigMap go with it) and the checkpoint claim too.
func (k *Kubernetes) Stop(ctx context.Context, req providers.StopRequest) error {
	if err := checkName("trial id", req.TrialID); err != nil {
		return err
	}
	name := JobName(req.Experiment, req.TrialID)
	var job *batchv1.Job
	err := retry(ctx, func() error {
		var err error
		job, err = k.client.BatchV1().Jobs(k.namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get job %s: %w", name, err)
	}
	if err == nil && job.Annotations[AnnTrial] != req.TrialID {
		return nil
	}
	if err == nil && job.DeletionTimestamp == nil {
		pods, err := k.jobPods(ctx, job)
		if err != nil {
			return err
		}
		var pod *corev1.Pod
		if len(pods) > 0 {
			pod = &pods[len(pods)-1]
		}
		if ph, _ := jobPhase(job, pod); !ph.Ended() {
			if err := k.stopJob(ctx, job, req); err != nil {
				return err
			}
		}
	}
	if !req.Purge {
		return nil
	}
	if err == nil {
		if err := k.deleteJob(ctx, name, job.UID); err != nil {
			return err
		}
	}
	k.markSeen(req.Experiment, req.TrialID, false)
	// Owned by the Job, the ConfigMap goes with it; delete it anyway in
	// case the Job never got to own it. The claim is not owned (it
	// outlives attempts).
	for _, del := range []func() error{
		func() error {
			return k.client.CoreV1().ConfigMaps(k.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		},
		func() error {
			return k.client.CoreV1().PersistentVolumeClaims(k.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		},
	} {
		if err := retry(ctx, del); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (k *Kubernetes) stopJob(ctx context.Context, job *batchv1.Job, req providers.StopRequest) error {
	reason := req.Reason
	if reason == "" {
		reason = "stopped by trialform"
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{AnnStopReason: reason}},
		"spec":     map[string]any{"activeDeadlineSeconds": 1},
	})
	if err := retry(ctx, func() error {
		_, err := k.client.BatchV1().Jobs(k.namespace).Patch(ctx, job.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("stop job %s: %w", job.Name, err)
	}
	grace := int64(math.Ceil(req.Grace.Seconds()))
	sel := labels.Set{"batch.kubernetes.io/controller-uid": string(job.UID)}.String()
	if err := retry(ctx, func() error {
		return k.client.CoreV1().Pods(k.namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{LabelSelector: sel})
	}); err != nil {
		return fmt.Errorf("stop the pods of job %s: %w", job.Name, err)
	}
	// Wait for the Job to fail (its pods gone): the grace, plus time for
	// the controllers.
	deadline := time.Now().Add(req.Grace + 30*time.Second)
	for time.Now().Before(deadline) {
		j, err := k.client.BatchV1().Jobs(k.namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobComplete) && c.Status == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("stop job %s: it had not ended %s after its pods were deleted", job.Name, req.Grace+30*time.Second)
}
