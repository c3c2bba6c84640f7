package k8stest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/trialform/trialform/internal/fsx"
)

// The real Kubeflow training operator (github.com/kubeflow/training-operator,
// built by scripts/build-k8s.sh beside the control plane) runs out of the
// cluster as one more component. Its webhooks run as upstream runs them:
// the operator's cert rotator generates a CA and a serving certificate for
// training-operator.kubeflow.svc into the secret below and injects the CA
// into the ValidatingWebhookConfiguration below. Out of a cluster three
// things stand in for what a Deployment has:
//   - the secret exists before it starts and the configuration once the
//     files below are written (its manifests create both; the rotator
//     only fills them, and the operator serves its webhooks only once the
//     configuration has the CA);
//   - nothing mounts the secret, so StartTrainingOperator copies its files
//     into controller-runtime's cert dir ($TMPDIR/k8s-webhook-server/
//     serving-certs, with a TMPDIR of the operator's own), refreshes them
//     whenever the secret changes (as the kubelet does), and makes sure
//     the rotator's fixed /tmp/k8s-webhook-server/serving-certs/tls.crt
//     exists, which it only checks for;
//   - the Service training-operator in kubeflow is an ExternalName service
//     for localhost: the apiserver calls the webhooks through it on the
//     operator's port on 127.0.0.1, verifying the certificate against
//     training-operator.kubeflow.svc as in a cluster.
const (
	TrainingOperatorNamespace = "kubeflow"
	trainingOperatorService   = "training-operator"
	trainingOperatorSecret    = "training-operator-webhook-cert"
	trainingOperatorVWC       = "validator.training-operator.kubeflow.org"
)

// Kubeflow training operator kinds.
var (
	TFJobs      = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "tfjobs"}
	PyTorchJobs = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	MPIJobs     = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "mpijobs"}
	XGBoostJobs = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "xgboostjobs"}
	PaddleJobs  = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "paddlejobs"}
	MXJobs      = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "mxjobs"}
)

// trainingOperatorFiles finds the operator binary and its CRD manifests in
// the bin dir.
func trainingOperatorFiles(bin string) (exe string, crds []string, err error) {
	exe = filepath.Join(bin, "training-operator")
	if _, err := os.Stat(exe); err != nil {
		return "", nil, fmt.Errorf("%w (training-operator missing)", ErrNotBuilt)
	}
	crds, _ = filepath.Glob(filepath.Join(bin, "training-operator-crds", "kubeflow.org_*.yaml"))
	if len(crds) == 0 {
		return "", nil, fmt.Errorf("%w (training-operator-crds missing)", ErrNotBuilt)
	}
	sort.Strings(crds)
	return exe, crds, nil
}

// installTrainingOperatorCRDs creates the operator's own CRDs (TFJob,
// PyTorchJob, MPIJob, XGBoostJob, PaddleJob, MXJob) and waits until they
// are served.
func installTrainingOperatorCRDs(ctx context.Context, cp *ControlPlane, dyn dynamic.Interface) error {
	_, files, err := trainingOperatorFiles(cp.bin)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(b, &obj.Object); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := dyn.Resource(crdGVR).Create(ctx, &obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("install %s: %w", filepath.Base(f), err)
		}
		if err := waitEstablished(ctx, cp, dyn, &obj); err != nil {
			return fmt.Errorf("install %s: %w", filepath.Base(f), err)
		}
	}
	return nil
}

// StartTrainingOperator runs the real training operator (its CRDs must be
// installed: Options.CRDs) with its validating webhooks, and returns once
// the apiserver denies an invalid TFJob through them. Stop (or
// StopComponent("training-operator")) stops it.
func StartTrainingOperator(ctx context.Context, cp *ControlPlane) error {
	exe, _, err := trainingOperatorFiles(cp.bin)
	if err != nil {
		return err
	}
	c := cp.Client
	ns := TrainingOperatorNamespace
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	if _, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: trainingOperatorSecret}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: trainingOperatorService},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}}
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	tmp := filepath.Join(cp.Dir, "training-operator-tmp")
	certDir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	env := append(os.Environ(), "TMPDIR="+tmp, "MY_POD_NAMESPACE="+ns)
	if err := cp.runEnv("training-operator", exe, env,
		"--kubeconfig="+cp.Kubeconfig,
		"--webhook-server-port="+strconv.Itoa(port),
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--controller-threads=4", "--zap-log-level=info", "--zap-devel=false",
	); err != nil {
		return err
	}
	// The rotator fills the secret; "mount" it, and keep mirroring it as
	// the kubelet does for a mounted secret: the rotator may write a new
	// certificate after the first one (two of its reconciles racing on a
	// stale cache, or a rotation), and the operator's cert watcher then
	// reloads the files.
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, err := c.CoreV1().Secrets(ns).Get(ctx, trainingOperatorSecret, metav1.GetOptions{})
		if err == nil && len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 {
			if err := mountWebhookCerts(certDir, s.Data); err != nil {
				return err
			}
			// The rotator checks this fixed path (only that it exists).
			fixed := "/tmp/k8s-webhook-server/serving-certs"
			if _, err := os.Stat(filepath.Join(fixed, "tls.crt")); err != nil {
				if err := os.MkdirAll(fixed, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(fixed, "tls.crt"), s.Data["tls.crt"], 0o644); err != nil {
					return err
				}
			}
			break
		}
		if !cp.Alive("training-operator") {
			return fmt.Errorf("training-operator exited:\n%s", cp.Log("training-operator"))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("training-operator: no certificate in secret %s/%s after 60s:\n%s", ns, trainingOperatorSecret, cp.Log("training-operator"))
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	cp.startSecretMirror(certDir)
	// Only now the webhook configuration: the operator registers its
	// webhooks and starts serving them (reading the files above) once its
	// rotator has injected the CA into it. The webhooks are those of the
	// operator's manifests (config/webhook), on the service above at the
	// operator's port.
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	vwc := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: trainingOperatorVWC}}
	for _, kind := range []string{"mxjob", "paddlejob", "pytorchjob", "tfjob", "xgboostjob"} {
		path := "/validate-kubeflow-org-v1-" + kind
		p := int32(port)
		ops := []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}
		vwc.Webhooks = append(vwc.Webhooks, admissionv1.ValidatingWebhook{
			Name:                    "validator." + kind + ".training-operator.kubeflow.org",
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: ns, Name: trainingOperatorService, Path: &path, Port: &p}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			Rules: []admissionv1.RuleWithOperations{{Operations: ops, Rule: admissionv1.Rule{
				APIGroups: []string{"kubeflow.org"}, APIVersions: []string{"v1"}, Resources: []string{kind + "s"}}}},
		})
	}
	vwcs := c.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if old, err := vwcs.Get(ctx, trainingOperatorVWC, metav1.GetOptions{}); err == nil {
		vwc.ResourceVersion = old.ResourceVersion // a restart: another port
		if _, err := vwcs.Update(ctx, vwc, metav1.UpdateOptions{}); err != nil {
			return err
		}
	} else if _, err := vwcs.Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		return err
	}

	// Should the operator have exited all the same (it did when the
	// configuration existed before the files: the rotator only checks
	// that the fixed path exists, which an earlier run may have left, and
	// controller-runtime then failed to read its own cert dir), its second
	// start finds the secret valid (no new certificate) and the files in
	// place.
	if err := waitWebhook(ctx, cp); err != nil && !cp.Alive("training-operator") {
		if err := cp.RestartComponent("training-operator"); err != nil {
			return err
		}
		return waitWebhook(ctx, cp)
	} else if err != nil {
		return err
	}
	return nil
}

// waitWebhook returns once the apiserver denies, through the operator's
// webhook, a TFJob whose container is not named tensorflow (a dry run).
func waitWebhook(ctx context.Context, cp *ControlPlane) error {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
		"metadata": map[string]any{"name": "webhook-probe"},
		"spec": map[string]any{"tfReplicaSpecs": map[string]any{"Worker": map[string]any{"replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "not-tensorflow", "image": "x"}}}}}}},
	}}
	deadline := time.Now().Add(90 * time.Second)
	var last error
	var notes []string
	lastNudge := time.Now()
	for time.Now().Before(deadline) {
		_, err := dyn.Resource(TFJobs).Namespace(TrainingOperatorNamespace).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "denied the request") {
			return nil
		}
		last = err
		if !cp.Alive("training-operator") {
			return fmt.Errorf("training-operator exited:\n%s", cp.Log("training-operator"))
		}
		// The apiserver does not trust the served certificate: the CA in
		// the webhook configuration is missing or not the secret's. The
		// rotator injects it when it reconciles the secret, which it may
		// have skipped while its cache was stale; any change of the
		// secret makes it reconcile again.
		if err != nil && strings.Contains(err.Error(), "x509") && time.Since(lastNudge) > 10*time.Second {
			if note := nudgeRotator(ctx, cp); note != "" && (len(notes) == 0 || notes[len(notes)-1] != note) {
				notes = append(notes, note)
			}
			lastNudge = time.Now()
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	if last == nil {
		last = errors.New("an invalid TFJob was admitted")
	}
	return fmt.Errorf("training-operator webhook not serving after 90s (%v; %s):\n%s", last, strings.Join(notes, "; "), cp.Log("training-operator"))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// mountWebhookCerts writes the secret's files into the operator's cert
// dir, each atomically, and reports whether anything changed.
func mountWebhookCerts(certDir string, data map[string][]byte) error {
	_, err := mountWebhookCertsChanged(certDir, data)
	return err
}

func mountWebhookCertsChanged(certDir string, data map[string][]byte) (bool, error) {
	changed := false
	// The key first: the cert watcher reloads on the certificate.
	for _, n := range []string{"tls.key", "ca.crt", "tls.crt"} {
		old, _ := os.ReadFile(filepath.Join(certDir, n))
		if bytes.Equal(old, data[n]) {
			continue
		}
		if err := fsx.WriteFileAtomic(filepath.Join(certDir, n), data[n], 0o600); err != nil {
			return changed, err
		}
		changed = true
	}
	return changed, nil
}

// startSecretMirror copies the webhook secret into certDir whenever it
// changes, until Stop, as the kubelet refreshes a mounted secret.
func (cp *ControlPlane) startSecretMirror(certDir string) {
	cp.mu.Lock()
	if cp.stopMirror != nil {
		cp.stopMirror()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cp.stopMirror = cancel
	cp.mu.Unlock()
	go func() {
		for {
			if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
				return
			}
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			s, err := cp.Client.CoreV1().Secrets(TrainingOperatorNamespace).Get(c, trainingOperatorSecret, metav1.GetOptions{})
			cancel()
			if err != nil || len(s.Data["tls.crt"]) == 0 || len(s.Data["tls.key"]) == 0 {
				continue
			}
			if changed, err := mountWebhookCertsChanged(certDir, s.Data); err == nil && changed {
				cp.note("training-operator", "k8stest: the webhook secret changed; its files were refreshed")
			}
		}
	}()
}

// nudgeRotator compares the CA of the webhook configuration with the
// secret's and, when they differ, touches the secret so that the rotator
// reconciles it (and injects its CA). It returns what it found.
func nudgeRotator(ctx context.Context, cp *ControlPlane) string {
	c := cp.Client
	s, err := c.CoreV1().Secrets(TrainingOperatorNamespace).Get(ctx, trainingOperatorSecret, metav1.GetOptions{})
	if err != nil {
		return "secret: " + err.Error()
	}
	vwc, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, trainingOperatorVWC, metav1.GetOptions{})
	if err != nil {
		return "webhook configuration: " + err.Error()
	}
	stale := 0
	for _, w := range vwc.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, s.Data["ca.crt"]) {
			stale++
		}
	}
	if stale == 0 {
		return "the configuration has the secret's CA"
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations["trialform.test/reconcile"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	if _, err := c.CoreV1().Secrets(TrainingOperatorNamespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Sprintf("%d webhooks without the secret's CA; touching the secret: %v", stale, err)
	}
	cp.note("training-operator", fmt.Sprintf("k8stest: %d webhooks without the secret's CA; touched the secret so that the rotator reconciles it", stale))
	return fmt.Sprintf("%d webhooks without the secret's CA; touched the secret", stale)
}
