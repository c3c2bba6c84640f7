package kubernetes_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
)

// TestCheckpointClaimSurvivesResume gives a trial a checkpoint claim
// (bound by the controller-manager's volume binder to a static volume of
// the storage class, as a provisioner would), loses its Job mid-run, and
// resumes it: the new pod mounts the same claim and finds the checkpoint
// the first one saved in NNI_OUTPUT_DIR. Destroy then removes the claim.
func TestCheckpointClaimSurvivesResume(t *testing.T) {
	need(t)
	ns := namespace(t, "checkpoint")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "dfs"}, Provisioner: "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	if _, err := cp.Client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "ckpt-pv-0"}, Spec: corev1.PersistentVolumeSpec{
		StorageClassName: "dfs", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.TempDir()}},
	}}
	if _, err := cp.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "train.py"), []byte(`import nni, os, time
p = nni.get_next_parameter()
ck = os.path.join(os.environ["NNI_OUTPUT_DIR"], "ckpt")
if os.path.exists(ck):
    nni.report_final_result(int(open(ck).read()) + 100)
else:
    with open(ck, "w") as f:
        f.write(str(p["x"]))
    print("saved", flush=True)
    time.sleep(120)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	py, _ := filepathLookPython()
	p, err := k8s.New(k8s.Config{Rest: cp.Config, Namespace: ns, Checkpoint: &k8s.Checkpoint{StorageClass: "dfs", Size: "1Gi"}})
	if err != nil {
		t.Fatal(err)
	}
	req := providers.StartRequest{Experiment: "ck", ExperimentID: "eid", TrialID: "t0", ParameterID: 0,
		Params: map[string]any{"x": 7}, Args: []string{py, "train.py"}, CodeDir: code, Lineage: "L"}
	if _, err := p.Start(ctx, req); err != nil {
		t.Fatal(err)
	}
	name := k8s.JobName("ck", "t0")
	waitLog(ctx, t, p, ns, "ck", "t0", "saved")
	claim, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || claim.Spec.VolumeName != "ckpt-pv-0" || claim.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim %s: %v %+v", name, err, claim)
	}
	bg := metav1.DeletePropagationBackground
	if err := cp.Client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	for {
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: "ck", TrialID: "t0"})
		if err != nil {
			t.Fatal(err)
		}
		if o.Phase == providers.PhaseLost {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("deleted job still reads as %s", o.Phase)
		}
		time.Sleep(100 * time.Millisecond)
	}
	req.Resume = true
	if _, err := p.Start(ctx, req); err != nil {
		t.Fatal(err)
	}
	var final string
	var off map[string]int64
	for final == "" {
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: "ck", TrialID: "t0", MetricsOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		off = o.MetricsOffset
		for _, m := range o.Metrics {
			if m.Type == "FINAL" {
				final = m.Value
			}
		}
		if o.Phase.Ended() && final == "" {
			dump(t, ns)
			t.Fatalf("resumed trial ended %s (%s) without a final result", o.Phase, o.Reason)
		}
		if ctx.Err() != nil {
			t.Fatal("the resumed trial never reported")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if final != "107" {
		t.Fatalf("resumed trial reported %s, want 107 (checkpoint 7 + 100)", final)
	}
	again, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || again.UID != claim.UID {
		t.Fatalf("the resume did not keep the claim: %v", err)
	}
	if err := p.Stop(ctx, providers.StopRequest{Experiment: "ck", TrialID: "t0", Purge: true}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("destroy left the claim: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
