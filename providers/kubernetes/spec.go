package kubernetes

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

var _ providers.SpecDiffer = (*Kubernetes)(nil)

// Spec renders the pod template of the Job Start would create for req now,
// as renderSpec renders a live Job (Observation.Spec). It contacts nothing
// and reads no code.
func (k *Kubernetes) Spec(req providers.StartRequest) (string, error) {
	if err := validateStart(req); err != nil {
		return "", err
	}
	_, job, err := k.objects(req, JobName(req.Experiment, req.TrialID), 1, false)
	if err != nil {
		return "", err
	}
	return renderSpec(job), nil
}

// renderSpec is the canonical text of what a trial's Job runs: the trial
// container's image, command, working dir, environment, resources and
// mounts, and the pod's volumes, node selector, tolerations, service
// account and pull secrets; one setting a line, maps sorted, quantities in
// canonical form. Fields the apiserver defaults (pull policy, termination
// message path, volume modes, DNS policy, ...) and fields that identify
// rather than specify a trial (labels, annotations, NNI_EXP_ID, the
// ConfigMap's items, which list the code files) are left out, so a Job
// trialform created renders like the Job it would create from the same
// request.
// cachedSpec is renderSpec of a Job trialform or the cluster created (it
// has a UID), rendered once per UID and generation: a Job's pod template
// is immutable, and a refresh observes every Job twice (List, then Read).
func cachedSpec(job *batchv1.Job) string {
	if job.UID == "" {
		return renderSpec(job)
	}
	key := specKey{job.UID, job.Generation}
	specCache.Lock()
	s, ok := specCache.m[key]
	specCache.Unlock()
	if ok {
		return s
	}
	s = renderSpec(job)
	specCache.Lock()
	if len(specCache.m) >= maxCachedSpecs {
		clear(specCache.m) // bounded: the next refresh renders again
	}
	specCache.m[key] = s
	specCache.Unlock()
	return s
}

type specKey struct {
	uid types.UID
	gen int64
}

const maxCachedSpecs = 20000

var specCache = struct {
	sync.Mutex
	m map[specKey]string
}{m: map[specKey]string{}}

func renderSpec(job *batchv1.Job) string {
	ps := &job.Spec.Template.Spec
	var c *corev1.Container
	for i := range ps.Containers {
		if ps.Containers[i].Name == containerName {
			c = &ps.Containers[i]
		}
	}
	if c == nil && len(ps.Containers) > 0 {
		c = &ps.Containers[0]
	}
	var b strings.Builder
	line := func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat("  ", indent))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	if c != nil {
		line(0, "image: %s", c.Image)
		list := func(name string, vals []string) {
			if len(vals) == 0 {
				return
			}
			line(0, "%s:", name)
			for _, v := range vals {
				if v == wrapper {
					line(1, "- <trialform's wrapper script>")
					continue
				}
				line(1, "- %s", strconv.Quote(v))
			}
		}
		list("command", c.Command)
		list("args", c.Args)
		if c.WorkingDir != "" {
			line(0, "workingDir: %s", c.WorkingDir)
		}
		env := append([]corev1.EnvVar(nil), c.Env...)
		sort.SliceStable(env, func(i, j int) bool { return env[i].Name < env[j].Name })
		var envLines []string
		for _, e := range env {
			switch {
			case e.Name == trialproto.EnvExpID:
				// The experiment instance: identity, not spec.
			case e.ValueFrom != nil:
				envLines = append(envLines, fmt.Sprintf("%s: <from %s>", e.Name, valueSource(e.ValueFrom)))
			default:
				envLines = append(envLines, fmt.Sprintf("%s: %s", e.Name, strconv.Quote(e.Value)))
			}
		}
		if len(envLines) > 0 {
			line(0, "env:")
			for _, l := range envLines {
				line(1, "%s", l)
			}
		}
		resources := func(name string, rl corev1.ResourceList) {
			if len(rl) == 0 {
				return
			}
			line(1, "%s:", name)
			var keys []string
			for k := range rl {
				keys = append(keys, string(k))
			}
			sort.Strings(keys)
			for _, k := range keys {
				q := rl[corev1.ResourceName(k)]
				line(2, "%s: %s", k, q.String())
			}
		}
		if len(c.Resources.Requests)+len(c.Resources.Limits) > 0 {
			line(0, "resources:")
			resources("limits", c.Resources.Limits)
			resources("requests", c.Resources.Requests)
		}
		if len(c.VolumeMounts) > 0 {
			mounts := append([]corev1.VolumeMount(nil), c.VolumeMounts...)
			sort.SliceStable(mounts, func(i, j int) bool { return mounts[i].MountPath < mounts[j].MountPath })
			line(0, "volumeMounts:")
			for _, m := range mounts {
				ro := ""
				if m.ReadOnly {
					ro = " (read-only)"
				}
				sub := ""
				if m.SubPath != "" {
					sub = " subPath " + m.SubPath
				}
				line(1, "%s: %s%s%s", m.MountPath, m.Name, sub, ro)
			}
		}
	}
	if len(ps.Volumes) > 0 {
		vols := append([]corev1.Volume(nil), ps.Volumes...)
		sort.SliceStable(vols, func(i, j int) bool { return vols[i].Name < vols[j].Name })
		line(0, "volumes:")
		for _, v := range vols {
			line(1, "%s: %s", v.Name, volumeSource(v.VolumeSource))
		}
	}
	if len(ps.NodeSelector) > 0 {
		line(0, "nodeSelector:")
		var keys []string
		for k := range ps.NodeSelector {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			line(1, "%s: %s", k, strconv.Quote(ps.NodeSelector[k]))
		}
	}
	if len(ps.Tolerations) > 0 {
		var ts []string
		for _, t := range ps.Tolerations {
			op := t.Operator
			if op == "" {
				op = corev1.TolerationOpEqual // the default
			}
			s := fmt.Sprintf("key=%s operator=%s", strconv.Quote(t.Key), op)
			if t.Value != "" {
				s += " value=" + strconv.Quote(t.Value)
			}
			if t.Effect != "" {
				s += " effect=" + string(t.Effect)
			}
			if t.TolerationSeconds != nil {
				s += " seconds=" + strconv.FormatInt(*t.TolerationSeconds, 10)
			}
			ts = append(ts, s)
		}
		sort.Strings(ts)
		line(0, "tolerations:")
		for _, s := range ts {
			line(1, "- %s", s)
		}
	}
	if sa := ps.ServiceAccountName; sa != "" && sa != "default" {
		line(0, "serviceAccountName: %s", sa)
	}
	if len(ps.ImagePullSecrets) > 0 {
		var names []string
		for _, s := range ps.ImagePullSecrets {
			names = append(names, s.Name)
		}
		sort.Strings(names)
		line(0, "imagePullSecrets: %s", strings.Join(names, ", "))
	}
	return b.String()
}

func volumeSource(v corev1.VolumeSource) string {
	switch {
	case v.ConfigMap != nil:
		return "configMap " + v.ConfigMap.Name
	case v.EmptyDir != nil:
		s := "emptyDir"
		if v.EmptyDir.Medium != "" {
			s += " medium " + string(v.EmptyDir.Medium)
		}
		if v.EmptyDir.SizeLimit != nil {
			s += " sizeLimit " + v.EmptyDir.SizeLimit.String()
		}
		return s
	case v.NFS != nil:
		s := "nfs " + v.NFS.Server + ":" + v.NFS.Path
		if v.NFS.ReadOnly {
			s += " (read-only)"
		}
		return s
	case v.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim " + v.PersistentVolumeClaim.ClaimName
	case v.Secret != nil:
		return "secret " + v.Secret.SecretName
	case v.HostPath != nil:
		return "hostPath " + v.HostPath.Path
	}
	return "other"
}

func valueSource(v *corev1.EnvVarSource) string {
	switch {
	case v.FieldRef != nil:
		return "field " + v.FieldRef.FieldPath
	case v.ResourceFieldRef != nil:
		return "resource " + v.ResourceFieldRef.Resource
	case v.ConfigMapKeyRef != nil:
		return "configMap " + v.ConfigMapKeyRef.Name + " key " + v.ConfigMapKeyRef.Key
	case v.SecretKeyRef != nil:
		return "secret " + v.SecretKeyRef.Name + " key " + v.SecretKeyRef.Key
	}
	return "elsewhere"
}
