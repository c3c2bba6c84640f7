package kubernetes

import (
	"context"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trialform/trialform/providers"
)

var (
	_ providers.Importer   = (*CRD)(nil)
	_ providers.SpecDiffer = (*CRD)(nil)
)

// Import adopts a trial's object into the state of req.Lineage as the Job
// platform does: parameters from the ConfigMap's parameter.cfg, the
// sequence number from the trial pod template's NNI_TRIAL_SEQ_ID, then the
// lineage annotation of the object, its ConfigMap and its checkpoint claim
// is patched. The pods are not touched.
func (c *CRD) Import(ctx context.Context, req providers.ImportRequest) (providers.Imported, error) {
	name := JobName(req.Experiment, req.TrialID)
	defer c.invalidate(req.Experiment)
	obj, err := c.get(ctx, req.Experiment, req.TrialID)
	if err != nil {
		return providers.Imported{}, err
	}
	if obj == nil || obj.GetDeletionTimestamp() != nil {
		return providers.Imported{}, fmt.Errorf("no %s %s in namespace %s holds trial %s of experiment %s: %w",
			c.kind.gvk().Kind, name, c.k.namespace, req.TrialID, req.Experiment, providers.ErrNotFound)
	}
	pid, params, err := c.k.trialParams(ctx, name, req.TrialID)
	if err != nil {
		return providers.Imported{}, err
	}
	holder, err := c.trialJob(obj)
	if err != nil {
		return providers.Imported{}, err
	}
	seq, err := templateSeq(obj.GetKind()+" "+name, &holder.Spec.Template.Spec)
	if err != nil {
		return providers.Imported{}, err
	}
	imp := providers.Imported{Seq: seq, ParameterID: pid, Params: params, PreviousLineage: obj.GetAnnotations()[AnnLineage], Previous: ownerOf(obj.GetAnnotations())}
	if patch := reownPatch(obj.GetAnnotations(), req, params); patch != nil {
		if err := retry(ctx, func() error {
			o, err := c.res().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			if err == nil {
				obj = o
			}
			return err
		}); err != nil {
			return providers.Imported{}, fmt.Errorf("%s %s: set its lineage: %w", obj.GetKind(), name, err)
		}
		if err := c.k.reownParts(ctx, name, patch); err != nil {
			return providers.Imported{}, err
		}
	}
	pods, err := c.pods(ctx, req.Experiment, req.TrialID, obj)
	if err != nil {
		return providers.Imported{}, err
	}
	imp.Observation = c.observe(obj, pods)
	return imp, nil
}

// Spec renders the pod template of the trial's own role in the object
// Start would create for req now, as Read renders a live object's.
func (c *CRD) Spec(req providers.StartRequest) (string, error) {
	if err := validateStart(req); err != nil {
		return "", err
	}
	ts, err := c.k.trialObjects(req, JobName(req.Experiment, req.TrialID), 1, false)
	if err != nil {
		return "", err
	}
	t, err := c.podTemplate(ts, c.mainRole())
	if err != nil {
		return "", err
	}
	holder, err := templateJob(t)
	if err != nil {
		return "", err
	}
	return renderSpec(holder), nil
}

// mainRole is the role whose first pod runs the trial.
func (c *CRD) mainRole() Role {
	for _, pref := range []string{"master", "worker"} {
		for _, r := range c.cfg.Roles {
			if c.cfg.Kind == KindKubeflow && r.Name == pref {
				return r
			}
		}
	}
	if len(c.cfg.Roles) > 0 {
		return c.cfg.Roles[0]
	}
	return Role{}
}

// trialJob is the pod template of the object's trial role in a Job, the
// shape renderSpec and templateSeq read.
func (c *CRD) trialJob(obj *unstructured.Unstructured) (*batchv1.Job, error) {
	t := c.kind.template(obj)
	if t == nil {
		return nil, fmt.Errorf("%s %s has no pod template for the trial", obj.GetKind(), obj.GetName())
	}
	return templateJob(t)
}

func templateJob(t map[string]any) (*batchv1.Job, error) {
	var pt corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(t, &pt); err != nil {
		return nil, fmt.Errorf("pod template: %w", err)
	}
	return &batchv1.Job{Spec: batchv1.JobSpec{Template: pt}}, nil
}

// kubeflowTemplate is the master's (or chief's) replica template, else
// the worker's.
func kubeflowTemplate(specs map[string]any) map[string]any {
	for _, pref := range []string{"master", "chief", "worker"} {
		for k, v := range specs {
			if strings.EqualFold(k, pref) {
				m, _ := v.(map[string]any)
				t, _ := m["template"].(map[string]any)
				return t
			}
		}
	}
	return nil
}
