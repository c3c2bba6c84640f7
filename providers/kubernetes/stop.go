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
	defer k.invalidate(req.Experiment)
	job, err := k.getJob(ctx, name)
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
		patched, err := k.client.BatchV1().Jobs(k.namespace).Patch(ctx, job.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			k.follower().knows(patched)
		}
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
			k.follower().gone(k.namespace, job.Name)
			return nil
		}
		if err == nil {
			k.follower().knows(j)
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

// PurgeExperiment deletes every Job (background propagation: pods and
// ConfigMaps go with them), ConfigMap and checkpoint claim labelled with
// the experiment whose lineage is the given one (or unset), and waits for
// the Jobs to be gone.
func (k *Kubernetes) PurgeExperiment(ctx context.Context, experiment, lineage string) error {
	defer k.invalidate(experiment)
	opts := metav1.ListOptions{LabelSelector: labels.Set{LabelExperiment: LabelValue(experiment)}.String()}
	ours := func(m metav1.Object) bool {
		a := m.GetAnnotations()
		return (a[AnnLineage] == "" || a[AnnLineage] == lineage) && (a[AnnExperiment] == "" || a[AnnExperiment] == experiment)
	}
	bg := metav1.DeletePropagationBackground
	del := func(kind, name string, f func() error) error {
		if err := retry(ctx, f); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s: %w", kind, name, err)
		}
		return nil
	}
	var jobs *batchv1.JobList
	if err := retry(ctx, func() (err error) {
		jobs, err = k.client.BatchV1().Jobs(k.namespace).List(ctx, opts)
		return err
	}); err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	var deleted []string
	for _, j := range jobs.Items {
		if !ours(&j) {
			continue
		}
		uid := j.UID
		if err := del("job", j.Name, func() error {
			return k.client.BatchV1().Jobs(k.namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid}})
		}); err != nil {
			return err
		}
		k.follower().deleted(experiment, j.Name, uid)
		deleted = append(deleted, j.Name)
		k.markSeen(experiment, j.Annotations[AnnTrial], false)
	}
	if err := k.purgeOwned(ctx, opts, ours); err != nil {
		return err
	}
	for _, n := range deleted {
		if err := k.waitGone(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// purgeOwned deletes the ConfigMaps and checkpoint claims that opts
// selects and ours accepts.
func (k *Kubernetes) purgeOwned(ctx context.Context, opts metav1.ListOptions, ours func(metav1.Object) bool) error {
	del := func(kind, name string, f func() error) error {
		if err := retry(ctx, f); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s: %w", kind, name, err)
		}
		return nil
	}
	cms, err := k.client.CoreV1().ConfigMaps(k.namespace).List(ctx, opts)
	if err != nil {
		return fmt.Errorf("list configmaps: %w", err)
	}
	for _, c := range cms.Items {
		if ours(&c) {
			if err := del("configmap", c.Name, func() error {
				return k.client.CoreV1().ConfigMaps(k.namespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
			}); err != nil {
				return err
			}
		}
	}
	pvcs, err := k.client.CoreV1().PersistentVolumeClaims(k.namespace).List(ctx, opts)
	if err != nil {
		return fmt.Errorf("list claims: %w", err)
	}
	for _, c := range pvcs.Items {
		if ours(&c) {
			if err := del("claim", c.Name, func() error {
				return k.client.CoreV1().PersistentVolumeClaims(k.namespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
			}); err != nil {
				return err
			}
		}
	}
	return nil
}
