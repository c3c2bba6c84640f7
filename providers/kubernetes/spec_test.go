package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/trialform/trialform/providers"
)

func specTestPlatform() *Kubernetes {
	return &Kubernetes{namespace: "ml", cfg: Config{
		Image: "python:3.11", CPU: "0.5", Memory: "1Gi", ServiceAccount: "trials",
		NodeSelector:     map[string]string{"pool": "gpu", "arch": "amd64"},
		Tolerations:      []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		ImagePullSecrets: []string{"regcred"},
		NFS:              &NFS{Server: "10.0.0.5", Path: "/export", MountPath: "/nfs", LocalPath: "/mnt/nfs"},
	}}
}

func specTestRequest() providers.StartRequest {
	return providers.StartRequest{
		Experiment: "svm", ExperimentID: "abcd1234", TrialID: "t0003", Seq: 3, ParameterID: 3,
		Params: map[string]any{"C": 0.5}, Shell: "python3 train.py --C 0.5", Env: map[string]string{"PYTHONHASHSEED": "0"},
		CodeDir: "/mnt/nfs/code/svm", GPUs: 1,
	}
}

const specTestWant = `image: python:3.11
command:
  - "/bin/sh"
  - "-c"
  - <trialform's wrapper script>
  - "trialform-trial"
  - "/bin/sh"
  - "-c"
  - "python3 train.py --C 0.5"
workingDir: /nfs/code/svm
env:
  ADAPTDL_TENSORBOARD_LOGDIR: "/nfs/code/svm/.trialform/k8s/svm/t0003/output/tensorboard"
  NNI_OUTPUT_DIR: "/nfs/code/svm/.trialform/k8s/svm/t0003/output"
  NNI_PLATFORM: "kubernetes"
  NNI_SYS_DIR: "/trialform/sys"
  NNI_TRIAL_JOB_ID: "t0003"
  NNI_TRIAL_SEQ_ID: "3"
  PYTHONHASHSEED: "0"
  PYTHONPATH: "/trialform/spec/lib"
  TRIALFORM_EXPERIMENT: "svm"
  TRIALFORM_OUTPUT_DIR: "/nfs/code/svm/.trialform/k8s/svm/t0003/output"
  TRIALFORM_PARAMS: "/trialform/sys/params.json"
  TRIALFORM_SPEC_DIR: "/trialform/spec"
  TRIALFORM_TENSORBOARD_DIR: "/nfs/code/svm/.trialform/k8s/svm/t0003/output/tensorboard/t0003"
  TRIALFORM_TERMINATION_LOG: "/dev/termination-log"
  TRIALFORM_TRIAL_ID: "t0003"
resources:
  limits:
    cpu: 500m
    memory: 1Gi
    nvidia.com/gpu: 1
  requests:
    cpu: 500m
    memory: 1Gi
    nvidia.com/gpu: 1
volumeMounts:
  /nfs: nfs
  /trialform/spec: spec (read-only)
  /trialform/sys: sys
volumes:
  nfs: nfs 10.0.0.5:/export
  spec: configMap tf-svm-t0003-` + "HASH" + `
  sys: emptyDir
nodeSelector:
  arch: "amd64"
  pool: "gpu"
tolerations:
  - key="gpu" operator=Exists effect=NoSchedule
serviceAccountName: trials
imagePullSecrets: regcred
`

// The canonical rendering of what Start would create, and of a live Job
// the apiserver defaulted: equal, so an unchanged trial shows no drift.
func TestSpecRendering(t *testing.T) {
	k := specTestPlatform()
	req := specTestRequest()
	got, err := k.Spec(req)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(specTestWant, "tf-svm-t0003-HASH", JobName("svm", "t0003"), 1)
	if got != want {
		t.Fatalf("Spec =\n%s\nwant\n%s", got, want)
	}

	// What the apiserver returns: defaults filled in, quantities as it
	// formats them, env in another order.
	_, live, err := k.objects(req, JobName(req.Experiment, req.TrialID), 2, true)
	if err != nil {
		t.Fatal(err)
	}
	ps := &live.Spec.Template.Spec
	ps.DNSPolicy = corev1.DNSClusterFirst
	ps.SchedulerName = "default-scheduler"
	ps.SecurityContext = &corev1.PodSecurityContext{}
	for i := range ps.Volumes {
		if cm := ps.Volumes[i].ConfigMap; cm != nil {
			cm.DefaultMode = ptr.To[int32](0o644)
		}
	}
	c := &ps.Containers[0]
	c.TerminationMessagePath = "/dev/termination-log"
	c.ImagePullPolicy = corev1.PullAlways
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi"), "nvidia.com/gpu": resource.MustParse("1")}
	c.Env[0], c.Env[len(c.Env)-1] = c.Env[len(c.Env)-1], c.Env[0]
	if r := renderSpec(live); r != got {
		t.Errorf("live job renders differently:\n%s\nwant\n%s", r, got)
	}

	// What a changed platform block asks for differs in those lines.
	k.cfg.Image, k.cfg.Memory = "python:3.12", "2Gi"
	now, err := k.Spec(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(now, "image: python:3.12\n") || !strings.Contains(now, "    memory: 2Gi\n") || now == got {
		t.Errorf("changed spec:\n%s", now)
	}
	// The experiment instance id is identity, not spec.
	req.ExperimentID = "other"
	if again, _ := k.Spec(req); again != now {
		t.Error("NNI_EXP_ID changed the rendering")
	}
}

func BenchmarkSpec(b *testing.B) {
	k, req := specTestPlatform(), specTestRequest()
	for i := 0; i < b.N; i++ {
		if _, err := k.Spec(req); err != nil {
			b.Fatal(err)
		}
	}
}
