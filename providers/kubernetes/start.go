package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/codedir"
	"github.com/trialform/trialform/providers/trialproto"
)

// Paths inside the trial container.
const (
	specMount   = "/trialform/spec"   // the ConfigMap
	sysMount    = "/trialform/sys"    // NNI_SYS_DIR (emptyDir)
	workMount   = "/trialform/work"   // the code copied from the ConfigMap (emptyDir)
	outputMount = "/trialform/output" // NNI_OUTPUT_DIR without NFS (emptyDir or the checkpoint PVC)

	// configMapCodeLimit bounds the code shipped in the ConfigMap (the
	// apiserver refuses objects over ~1.5 MiB).
	configMapCodeLimit = 900 << 10
)

// wrapper is the container's shell (paths come from the environment): it puts the protocol files in place,
// runs the trial ("$@") with its stdout copied to NNI_SYS_DIR/stdout,
// forwards SIGTERM to the trial's process group (PID 1 gets it, the trial
// must too), waits for the trial even when it ignores SIGTERM (so the grace
// period is honoured), writes the final metric lines to the termination
// message and exits with the trial's status.
const wrapper = `set -u
mkdir -p "$NNI_SYS_DIR" "$NNI_OUTPUT_DIR" || exit 125
cp "$TRIALFORM_SPEC_DIR/parameter.cfg" "$TRIALFORM_SPEC_DIR/params.json" "$NNI_SYS_DIR/" || exit 125
if [ -n "${TRIALFORM_CODE_FROM:-}" ]; then cp -R "$TRIALFORM_CODE_FROM/." . || exit 125; fi
out="$NNI_SYS_DIR/stdout"; rcf="$NNI_SYS_DIR/.rc"; rm -f "$rcf"
trap 'trap "" TERM INT; kill -TERM 0 2>/dev/null' TERM INT
( "$@"; echo $? > "$rcf" ) | ( trap '' TERM INT; exec tee -a "$out" ) &
pid=$!
wait $pid
while kill -0 $pid 2>/dev/null; do wait $pid; done
rc=143; [ -s "$rcf" ] && rc=$(cat "$rcf")
grep -a -e "NNISDK_MEb'" -e '^trialform: ' "$out" 2>/dev/null | grep -v -e '"PERIODICAL"' -e '^trialform: intermediate ' | tail -n 5 | tail -c 4000 > "$TRIALFORM_TERMINATION_LOG" 2>/dev/null
exit $rc
`

// Start creates or adopts the trial's Job (see the providers contract).
func (k *Kubernetes) Start(ctx context.Context, req providers.StartRequest) (providers.Handle, error) {
	if err := validateStart(req); err != nil {
		return nil, err
	}
	name := JobName(req.Experiment, req.TrialID)
	defer k.invalidate(req.Experiment)
	attempt := 1
	for {
		job, err := k.getJob(ctx, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get job %s: %w", name, err)
		}
		if err == nil {
			if job.Annotations[AnnExperiment] != req.Experiment || job.Annotations[AnnTrial] != req.TrialID {
				return nil, providers.Permanent(fmt.Errorf("job %s/%s exists but is not trial %s/%s", k.namespace, name, req.Experiment, req.TrialID))
			}
			if err := providers.CheckOwner("job "+k.namespace+"/"+name, req, ownerOf(job.Annotations)); err != nil {
				return nil, err
			}
			if n, err := strconv.Atoi(job.Annotations[AnnAttempt]); err == nil {
				attempt = n + 1
			}
			if job.DeletionTimestamp == nil {
				// A Job that failed without a container that exited (its
				// pod was deleted, evicted or lost with its node) is Lost:
				// to resume is to replace it too, not to adopt it again.
				ph, _ := jobPhase(job, nil)
				if !(ph.Ended() || ph == providers.PhaseLost) || !req.Resume {
					k.markSeen(req.Experiment, req.TrialID, true)
					return handle(job), nil
				}
			}
			// An ended or lost trial to resume: delete the old Job (its
			// pods and ConfigMap go with it; the checkpoint claim stays)
			// and wait for the name to be free.
			if err := k.deleteJob(ctx, name, job.UID); err != nil {
				return nil, err
			}
			if err := k.waitGone(ctx, name); err != nil {
				return nil, err
			}
			continue
		}
		h, err := k.create(ctx, req, name, attempt)
		if apierrors.IsAlreadyExists(err) {
			continue // someone else created it meanwhile: adopt
		}
		if err != nil {
			return nil, err
		}
		k.markSeen(req.Experiment, req.TrialID, true)
		return h, nil
	}
}

func handle(job *batchv1.Job) providers.Handle {
	return providers.Handle{"namespace": job.Namespace, "job": job.Name, "uid": string(job.UID)}
}

func (k *Kubernetes) deleteJob(ctx context.Context, name string, uid types.UID) error {
	bg := metav1.DeletePropagationBackground
	err := retry(ctx, func() error {
		return k.client.BatchV1().Jobs(k.namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid}})
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete job %s: %w", name, err)
	}
	k.follower().gone(k.namespace, name)
	return nil
}

func (k *Kubernetes) waitGone(ctx context.Context, name string) error {
	for {
		_, err := k.client.BatchV1().Jobs(k.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for job %s to go: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// create writes the ConfigMap, the checkpoint claim and the Job, then
// makes the Job own the ConfigMap.
func (k *Kubernetes) create(ctx context.Context, req providers.StartRequest, name string, attempt int) (providers.Handle, error) {
	cm, job, err := k.objects(req, name, attempt, true)
	if err != nil {
		return nil, err
	}
	if k.cfg.Checkpoint != nil {
		if err := k.ensureClaim(ctx, name, job.Labels, req.Lineage); err != nil {
			return nil, err
		}
	}
	return k.createObjects(ctx, cm, job)
}

// objects builds the trial's ConfigMap and Job. Without withCode the
// ConfigMap carries neither the code nor the Python helpers (Spec renders
// the Job only, and the volume's items are not part of that).
func (k *Kubernetes) objects(req providers.StartRequest, name string, attempt int, withCode bool) (*corev1.ConfigMap, *batchv1.Job, error) {
	ts, err := k.trialObjects(req, name, attempt, withCode)
	if err != nil {
		return nil, nil, err
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.namespace, Labels: ts.labels, Annotations: ts.ann},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Parallelism:  ptr.To[int32](1),
			Completions:  ptr.To[int32](1),
			Template:     ts.pod,
		},
	}
	if req.MaxDuration > 0 {
		// Whole seconds, rounded up, plus one: the Job's start time is
		// stored with second precision.
		job.Spec.ActiveDeadlineSeconds = ptr.To(int64(math.Ceil(req.MaxDuration.Seconds())) + 1)
	}
	return ts.cm, job, nil
}

// trialSpec is what every trial object is made of, whatever its kind: its
// labels and annotations, the ConfigMap and the pod template (one
// container running the wrapper).
type trialSpec struct {
	labels, ann map[string]string
	cm          *corev1.ConfigMap
	pod         corev1.PodTemplateSpec
}

// wrapped is the container command running argv through the wrapper.
func wrapped(argv []string) []string {
	return append([]string{"/bin/sh", "-c", wrapper, "trialform-trial"}, argv...)
}

// trialObjects builds the trial's ConfigMap and pod template (see objects
// for withCode).
func (k *Kubernetes) trialObjects(req providers.StartRequest, name string, attempt int, withCode bool) (*trialSpec, error) {
	labels := map[string]string{
		LabelExperiment: LabelValue(req.Experiment), LabelTrial: LabelValue(req.TrialID), LabelManagedBy: "trialform",
	}
	ann := map[string]string{
		AnnLineage: req.Lineage, AnnExperiment: req.Experiment, AnnTrial: req.TrialID,
		AnnParameterID: strconv.Itoa(req.ParameterID), AnnAttempt: strconv.Itoa(attempt),
	}
	for k, v := range ownerAnnotations(req.Owner()) {
		ann[k] = v
	}
	if req.MetricRegex != "" {
		ann[AnnMetricRegex] = req.MetricRegex
	}
	if req.MaxDuration > 0 {
		ann[AnnMaxDuration] = req.MaxDuration.String()
	}

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.namespace, Labels: labels, Annotations: map[string]string{
			AnnLineage: req.Lineage, AnnExperiment: req.Experiment, AnnTrial: req.TrialID, AnnAttempt: strconv.Itoa(attempt)}},
		Data: map[string]string{}, BinaryData: map[string][]byte{},
	}
	cm.Data["parameter.cfg"] = string(trialproto.ParameterCfg(req.ParameterID, req.Params))
	cm.Data["params.json"] = string(trialproto.ParamsJSON(req.Params))
	items := []corev1.KeyToPath{{Key: "parameter.cfg", Path: "parameter.cfg"}, {Key: "params.json", Path: "params.json"}}
	var libs map[string][]byte
	if withCode {
		libs = trialproto.PythonFiles()
	}
	var libNames []string
	for n := range libs {
		libNames = append(libNames, n)
	}
	sort.Strings(libNames)
	for i, n := range libNames {
		key := fmt.Sprintf("lib-%03d", i)
		cm.Data[key] = string(libs[n])
		items = append(items, corev1.KeyToPath{Key: key, Path: "lib/" + n})
	}

	// Where the code comes from and where the trial runs.
	workDir := workMount
	codeFrom := ""
	outputDir := outputMount
	var nfsRel string
	onNFS := false
	if k.cfg.NFS != nil {
		if rel, err := filepath.Rel(k.cfg.NFS.LocalPath, req.CodeDir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && req.CodeDir != "" {
			onNFS, nfsRel = true, filepath.ToSlash(rel)
		}
	}
	switch {
	case k.cfg.CodeDir != "":
		workDir = k.cfg.CodeDir
	case onNFS:
		workDir = path.Join(k.cfg.NFS.MountPath, nfsRel)
	default:
		if req.CodeDir == "" {
			return nil, providers.Permanent(fmt.Errorf("trial %s has no code dir", req.TrialID))
		}
		var files []codeFile
		if withCode {
			var err error
			if files, err = scanCode(req.CodeDir); err != nil {
				return nil, err
			}
		}
		total := 0
		for i, f := range files {
			total += len(f.data)
			if total > configMapCodeLimit {
				return nil, providers.Permanent(fmt.Errorf("code dir %s holds more than a ConfigMap can carry (%d KiB so far, limit %d KiB): put it on the NFS share (an nfs { } block) or in the image (code_dir), or exclude files in %s",
					req.CodeDir, total>>10, configMapCodeLimit>>10, codedir.IgnoreFile(req.CodeDir)))
			}
			key := fmt.Sprintf("code-%04d", i)
			if utf8.Valid(f.data) {
				cm.Data[key] = string(f.data)
			} else {
				cm.BinaryData[key] = f.data
			}
			it := corev1.KeyToPath{Key: key, Path: "code/" + f.rel}
			if f.mode&0o111 != 0 {
				it.Mode = ptr.To[int32](0o755)
			}
			items = append(items, it)
		}
		codeFrom = specMount + "/code"
	}
	if k.cfg.Checkpoint == nil && k.cfg.NFS != nil {
		base := path.Join(k.cfg.NFS.MountPath, "trialform-outputs")
		if onNFS {
			base = path.Join(k.cfg.NFS.MountPath, nfsRel, ".trialform", "k8s")
		}
		outputDir = path.Join(base, req.Experiment, req.TrialID, "output")
	}

	env := trialproto.Env(req, sysMount, outputDir, sysMount+"/params.json")
	env[trialproto.EnvPlatform] = "kubernetes"
	if k.nniPlatform != "" {
		env[trialproto.EnvPlatform] = k.nniPlatform
	}
	py := specMount + "/lib"
	if p := req.Env["PYTHONPATH"]; p != "" {
		py += ":" + p
	}
	env["PYTHONPATH"] = py
	env["TRIALFORM_TERMINATION_LOG"] = corev1.TerminationMessagePathDefault
	env["TRIALFORM_SPEC_DIR"] = specMount
	if codeFrom != "" {
		env["TRIALFORM_CODE_FROM"] = codeFrom
	}
	var envNames []string
	for n := range env {
		envNames = append(envNames, n)
	}
	sort.Strings(envNames)
	var envVars []corev1.EnvVar
	for _, n := range envNames {
		envVars = append(envVars, corev1.EnvVar{Name: n, Value: env[n]})
	}

	argv := req.Args
	if req.Shell != "" {
		argv = []string{"/bin/sh", "-c", req.Shell}
	}
	container := corev1.Container{
		Name: containerName, Image: k.cfg.Image,
		Command:                  wrapped(argv),
		WorkingDir:               workDir,
		Env:                      envVars,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "spec", MountPath: specMount, ReadOnly: true},
			{Name: "sys", MountPath: sysMount},
		},
	}
	volumes := []corev1.Volume{
		{Name: "spec", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items}}},
		{Name: "sys", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if codeFrom != "" {
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "work", MountPath: workMount})
		volumes = append(volumes, corev1.Volume{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if k.cfg.NFS != nil {
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "nfs", MountPath: k.cfg.NFS.MountPath})
		volumes = append(volumes, corev1.Volume{Name: "nfs", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: k.cfg.NFS.Server, Path: k.cfg.NFS.Path}}})
	}
	switch {
	case k.cfg.Checkpoint != nil:
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "output", MountPath: outputMount})
		volumes = append(volumes, corev1.Volume{Name: "output", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	case k.cfg.NFS == nil:
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "output", MountPath: outputMount})
		volumes = append(volumes, corev1.Volume{Name: "output", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	res := corev1.ResourceList{}
	if k.cfg.CPU != "" {
		res[corev1.ResourceCPU] = resource.MustParse(k.cfg.CPU)
	}
	if k.cfg.Memory != "" {
		res[corev1.ResourceMemory] = resource.MustParse(k.cfg.Memory)
	}
	if g := max(k.cfg.GPU, req.GPUs); g > 0 {
		res["nvidia.com/gpu"] = *resource.NewQuantity(int64(g), resource.DecimalSI)
	}
	if len(res) > 0 {
		container.Resources = corev1.ResourceRequirements{Requests: res, Limits: res}
	}
	var pullSecrets []corev1.LocalObjectReference
	for _, s := range k.cfg.ImagePullSecrets {
		pullSecrets = append(pullSecrets, corev1.LocalObjectReference{Name: s})
	}
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AnnLineage: req.Lineage}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ServiceAccountName:            k.cfg.ServiceAccount,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			ImagePullSecrets:              pullSecrets,
			NodeSelector:                  k.cfg.NodeSelector,
			Tolerations:                   k.cfg.Tolerations,
			TerminationGracePeriodSeconds: ptr.To[int64](10),
			Containers:                    []corev1.Container{container},
			Volumes:                       volumes,
		},
	}
	return &trialSpec{labels: labels, ann: ann, cm: cm, pod: pod}, nil
}

// createObjects writes the ConfigMap and the Job, then makes the Job own
// the ConfigMap.
func (k *Kubernetes) createObjects(ctx context.Context, cm *corev1.ConfigMap, job *batchv1.Job) (providers.Handle, error) {
	name := job.Name
	if err := k.ensureConfigMap(ctx, cm, k.jobAlive); err != nil {
		return nil, err
	}
	var created *batchv1.Job
	err := retry(ctx, func() error {
		var err error
		created, err = k.client.BatchV1().Jobs(k.namespace).Create(ctx, job, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			err = providers.Permanent(err)
		}
		return nil, fmt.Errorf("create job %s/%s: %w", k.namespace, name, err)
	}
	k.follower().knows(created)
	// The Job owns the ConfigMap: deleting it removes both.
	if err := k.own(ctx, cm, metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: created.Name, UID: created.UID}); err != nil {
		return nil, err
	}
	return handle(created), nil
}

// own makes the trial object ref the owner of the ConfigMap cm (created
// before it), creating cm again when it went meanwhile.
func (k *Kubernetes) own(ctx context.Context, cm *corev1.ConfigMap, ref metav1.OwnerReference) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{ref}}})
	if err := retryConflict(ctx, func() error {
		_, err := k.client.CoreV1().ConfigMaps(k.namespace).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			// Gone meanwhile (collected with an earlier attempt's object):
			// create it again, owned from the start.
			cm.OwnerReferences = []metav1.OwnerReference{ref}
			cm.ResourceVersion = ""
			_, err = k.client.CoreV1().ConfigMaps(k.namespace).Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, fmt.Errorf("recreated meanwhile"))
			}
		}
		return err
	}); err != nil {
		return fmt.Errorf("configmap %s: set its owner: %w", cm.Name, err)
	}
	return nil
}

// jobAlive reports whether the Job of an owner reference exists (same UID)
// and is not being deleted.
func (k *Kubernetes) jobAlive(ctx context.Context, o metav1.OwnerReference) (bool, error) {
	j, err := k.client.BatchV1().Jobs(k.namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return j.UID == o.UID && j.DeletionTimestamp == nil, nil
}

// ensureConfigMap creates cm or replaces the data of an existing one
// (left by an earlier attempt, or a concurrent Start). alive says whether
// the object an owner reference names is there and not being deleted.
func (k *Kubernetes) ensureConfigMap(ctx context.Context, cm *corev1.ConfigMap, alive func(context.Context, metav1.OwnerReference) (bool, error)) error {
	return retryConflict(ctx, func() error {
		_, err := k.client.CoreV1().ConfigMaps(k.namespace).Create(ctx, cm, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("create configmap %s: %w", cm.Name, err)
			}
			return nil
		}
		cur, err := k.client.CoreV1().ConfigMaps(k.namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, fmt.Errorf("deleted meanwhile"))
		}
		if err != nil {
			return err
		}
		if cur.DeletionTimestamp != nil {
			return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, fmt.Errorf("being deleted"))
		}
		for _, o := range cur.OwnerReferences {
			// Owned by a trial object: the current one (a concurrent
			// Start made both: leave it, creating the object will
			// adopt), or an old one whose garbage collection is
			// pending: delete it now.
			ok, err := alive(ctx, o)
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
			uid := cur.UID
			err = k.client.CoreV1().ConfigMaps(k.namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
			return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, fmt.Errorf("left by an earlier attempt"))
		}
		cur.Data, cur.BinaryData, cur.Annotations = cm.Data, cm.BinaryData, cm.Annotations
		_, err = k.client.CoreV1().ConfigMaps(k.namespace).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// ensureClaim creates the trial's checkpoint claim unless it exists.
func (k *Kubernetes) ensureClaim(ctx context.Context, name string, labels map[string]string, lineage string) error {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.namespace, Labels: labels, Annotations: map[string]string{AnnLineage: lineage}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(k.cfg.Checkpoint.Size)}},
		},
	}
	if k.cfg.Checkpoint.StorageClass != "" {
		pvc.Spec.StorageClassName = ptr.To(k.cfg.Checkpoint.StorageClass)
	}
	return retry(ctx, func() error {
		_, err := k.client.CoreV1().PersistentVolumeClaims(k.namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create checkpoint claim %s: %w", name, err)
		}
		return nil
	})
}
