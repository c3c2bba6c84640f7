package k8stest

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/internal/testdeps"
)

// TestRestartAPIServer stops and starts kube-apiserver: clients made
// before work again afterwards.
func TestRestartAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{})
	if errors.Is(err, ErrNotBuilt) {
		testdeps.Require(t, "the test Kubernetes control plane", err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	if _, err := cp.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	cp.StopComponent("kube-apiserver")
	t.Logf("stopped in %s", time.Since(begin))
	if err := cp.RestartComponent("kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	if err := cp.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("ready again after %s", time.Since(begin))
	time.Sleep(5 * time.Second)
	for _, n := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if !cp.Alive(n) {
			t.Errorf("%s died after the apiserver restart:\n%s", n, cp.Log(n))
		}
	}
	for i := 0; i < 5; i++ {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := cp.Client.CoreV1().Namespaces().Get(c, "default", metav1.GetOptions{})
		cancel()
		if err != nil {
			t.Fatalf("get %d after the restart: %v\n%s", i, err, cp.Log("kube-apiserver"))
		}
	}
}
