package k8stest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/internal/testdeps"
)

// TestTrainingOperatorNewCertificate: when the rotator writes a new
// certificate after the first (here: the secret is emptied, so it makes a
// new CA and injects it), the operator serves the new one, as it does in a
// cluster where the kubelet refreshes the mounted secret. Without the
// harness mirroring the secret the operator kept serving the old
// certificate and the apiserver refused it ("x509: certificate signed by
// unknown authority"), which failed a clean CI run.
func TestTrainingOperatorNewCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{CRDs: true})
	if errors.Is(err, ErrNotBuilt) {
		testdeps.Require(t, "the test Kubernetes control plane", err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	if err := StartTrainingOperator(ctx, cp); err != nil {
		t.Fatal(err)
	}
	secrets := cp.Client.CoreV1().Secrets(TrainingOperatorNamespace)
	s, err := secrets.Get(ctx, trainingOperatorSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := s.Data["tls.crt"]
	s.Data = nil
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		s, err := secrets.Get(ctx, trainingOperatorSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Data["tls.crt"]) > 0 && !bytes.Equal(s.Data["tls.crt"], first) {
			break
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			t.Fatalf("the rotator wrote no new certificate:\n%s", cp.Log("training-operator"))
		}
	}
	if err := waitWebhook(ctx, cp); err != nil {
		t.Fatal(err)
	}
}
