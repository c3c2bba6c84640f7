package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

var _ providers.Importer = (*Kubernetes)(nil)

// Import adopts a trial's Job into the state of req.Lineage: the
// parameters come from the parameter.cfg in its ConfigMap (what the trial
// read), the sequence number from the container's NNI_TRIAL_SEQ_ID; the
// lineage annotation of the Job, its ConfigMap and its checkpoint claim is
// then patched to req.Lineage. The running pod is not touched.
func (k *Kubernetes) Import(ctx context.Context, req providers.ImportRequest) (providers.Imported, error) {
	name := JobName(req.Experiment, req.TrialID)
	defer k.invalidate(req.Experiment)
	job, err := k.getJob(ctx, name)
	if apierrors.IsNotFound(err) || (err == nil && (job.Annotations[AnnExperiment] != req.Experiment || job.Annotations[AnnTrial] != req.TrialID)) {
		return providers.Imported{}, fmt.Errorf("no job %s in namespace %s holds trial %s of experiment %s: %w", name, k.namespace, req.TrialID, req.Experiment, providers.ErrNotFound)
	}
	if err != nil {
		return providers.Imported{}, fmt.Errorf("get job %s: %w", name, err)
	}
	if job.DeletionTimestamp != nil {
		return providers.Imported{}, fmt.Errorf("job %s/%s is being deleted: %w", k.namespace, name, providers.ErrNotFound)
	}
	pid, params, err := k.trialParams(ctx, name, req.TrialID)
	if err != nil {
		return providers.Imported{}, err
	}
	seq, err := jobSeq(job)
	if err != nil {
		return providers.Imported{}, err
	}
	imp := providers.Imported{Seq: seq, ParameterID: pid, Params: params, PreviousLineage: job.Annotations[AnnLineage], Previous: ownerOf(job.Annotations)}
	if patch := reownPatch(job.Annotations, req, params); patch != nil {
		if err := k.reown(ctx, job, patch); err != nil {
			return providers.Imported{}, err
		}
	}
	pods, err := k.jobPods(ctx, job)
	if err != nil {
		return providers.Imported{}, err
	}
	imp.Observation = observe(job, pods)
	return imp, nil
}

// trialParams reads the parameter.cfg the trial got from its ConfigMap.
func (k *Kubernetes) trialParams(ctx context.Context, name, trial string) (int, map[string]any, error) {
	var cm *corev1.ConfigMap
	err := retry(ctx, func() error {
		var err error
		cm, err = k.client.CoreV1().ConfigMaps(k.namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("configmap %s/%s of trial %s (its parameter.cfg): %w", k.namespace, name, trial, err)
	}
	pid, params, err := trialproto.ParseParameterCfg([]byte(cm.Data["parameter.cfg"]))
	if err != nil {
		return 0, nil, fmt.Errorf("configmap %s/%s: %w", k.namespace, name, err)
	}
	return pid, params, nil
}

// getJob gets a Job by name, retrying transient errors.
func (k *Kubernetes) getJob(ctx context.Context, name string) (*batchv1.Job, error) {
	var job *batchv1.Job
	err := retry(ctx, func() error {
		var err error
		job, err = k.client.BatchV1().Jobs(k.namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	switch {
	case err == nil:
		k.follower().knows(job)
	case apierrors.IsNotFound(err):
		k.follower().gone(k.namespace, name)
	}
	return job, err
}

// jobSeq reads NNI_TRIAL_SEQ_ID from the trial container's environment.
func jobSeq(job *batchv1.Job) (int, error) {
	return templateSeq("job "+job.Name, &job.Spec.Template.Spec)
}

// templateSeq reads NNI_TRIAL_SEQ_ID from the environment of a pod
// template's trial container (the first, or the one named "trial").
func templateSeq(what string, ps *corev1.PodSpec) (int, error) {
	for i, c := range ps.Containers {
		if c.Name != containerName && i > 0 {
			continue
		}
		for _, e := range c.Env {
			if e.Name == trialproto.EnvTrialSeqID {
				n, err := strconv.Atoi(e.Value)
				if err != nil {
					return 0, fmt.Errorf("%s: %s=%q is not a number", what, e.Name, e.Value)
				}
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("%s has no %s in its trial container: not a trial trialform started", what, trialproto.EnvTrialSeqID)
}

// ownerAnnotations are the annotations that record an ownership marker.
func ownerAnnotations(o providers.Owner) map[string]string {
	a := map[string]string{AnnLineage: o.Lineage}
	if o.ExperimentID != "" {
		a[AnnExperimentID] = o.ExperimentID
	}
	if o.Generation > 0 {
		a[AnnGeneration] = strconv.Itoa(o.Generation)
	}
	if o.ParamsDigest != "" {
		a[AnnParamsDigest] = o.ParamsDigest
	}
	return a
}

// ownerOf reads the ownership marker from an object's annotations.
func ownerOf(a map[string]string) providers.Owner {
	gen, _ := strconv.Atoi(a[AnnGeneration])
	return providers.Owner{Lineage: a[AnnLineage], ExperimentID: a[AnnExperimentID], Generation: gen, ParamsDigest: a[AnnParamsDigest]}
}

// reownPatch is the merge patch that re-owns an object annotated a to the
// importing state, experiment instance and generation (nil when nothing
// changes); params are the trial's, digested when the object lacks it.
func reownPatch(a map[string]string, req providers.ImportRequest, params map[string]any) []byte {
	o := ownerOf(a)
	want := o
	want.Lineage = req.Lineage
	if req.ExperimentID != "" {
		want.ExperimentID = req.ExperimentID
	}
	if req.Generation > 0 {
		want.Generation = req.Generation
	}
	if want.ParamsDigest == "" {
		want.ParamsDigest = providers.ParamsDigest(params)
	}
	if want == o {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ownerAnnotations(want)}})
	return patch
}

// reown applies an ownership patch (reownPatch) to the trial's Job,
// ConfigMap and checkpoint claim (those that exist).
func (k *Kubernetes) reown(ctx context.Context, job *batchv1.Job, patch []byte) error {
	name := job.Name
	if err := retry(ctx, func() error {
		j, err := k.client.BatchV1().Jobs(k.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			*job = *j
		}
		return err
	}); err != nil {
		return fmt.Errorf("job %s: set its lineage: %w", name, err)
	}
	return k.reownParts(ctx, name, patch)
}

// reownParts applies a lineage patch to the trial's ConfigMap and
// checkpoint claim (those that exist).
func (k *Kubernetes) reownParts(ctx context.Context, name string, patch []byte) error {
	if err := retry(ctx, func() error {
		_, err := k.client.CoreV1().ConfigMaps(k.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("configmap %s: set its lineage: %w", name, err)
	}
	if err := retry(ctx, func() error {
		_, err := k.client.CoreV1().PersistentVolumeClaims(k.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("checkpoint claim %s: set its lineage: %w", name, err)
	}
	return nil
}
