package k8sstate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendtest"
)

// One control plane for the package's tests (started by the first test
// that needs it).
var (
	cpOnce sync.Once
	cp     *k8stest.ControlPlane
	cpErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv(backendtest.HoldEnv) != "" {
		// A holder process of the suite's ExperimentLockKilledHolder:
		// the store its environment names.
		cfg := &rest.Config{Host: os.Getenv("K8SSTATE_HOST"), BearerToken: os.Getenv("K8SSTATE_TOKEN"), TLSClientConfig: rest.TLSClientConfig{CAFile: os.Getenv("K8SSTATE_CA")}}
		b, err := New(cfg, os.Getenv("K8SSTATE_NS"), os.Getenv("K8SSTATE_SUFFIX"))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		backendtest.Hold(b)
	}
	code := m.Run()
	if cp != nil {
		cp.Stop()
	}
	os.Exit(code)
}

// controlPlane returns the running control plane, or skips when its
// binaries are not built (testdeps: with TRIALFORM_REQUIRE_ALL=1 it fails).
func controlPlane(t testing.TB) *k8stest.ControlPlane {
	t.Helper()
	cpOnce.Do(func() {
		cp, cpErr = k8stest.Start(context.Background(), k8stest.Options{NoScheduler: true, NoControllerManager: true})
	})
	if errors.Is(cpErr, k8stest.ErrNotBuilt) {
		testdeps.Require(t, "the test Kubernetes control plane", cpErr.Error())
	}
	if cpErr != nil {
		t.Fatal(cpErr)
	}
	return cp
}

// namespace makes a namespace (once per name).
var nsMade sync.Map

func namespace(t testing.TB, name string) string {
	t.Helper()
	c := controlPlane(t)
	if _, ok := nsMade.Load(name); ok {
		return name
	}
	_, err := c.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	nsMade.Store(name, true)
	return name
}

func newSuffix() string { return "t" + randomID() }

// store is a fresh state (its own suffix) in ns, opened with cfg.
func store(t *testing.T, cfg *rest.Config, ns string) *backendtest.Store {
	suffix := newSuffix()
	admin := controlPlane(t).Client
	open := func() state.Backend {
		b, err := New(cfg, ns, suffix)
		if err != nil {
			t.Fatal(err)
		}
		b.SetReporter(func(msg string) { t.Log(msg) })
		return b
	}
	return &backendtest.Store{
		Open: open,
		// A process that takes a lock and is killed: its Leases stay
		// (stale, once no longer renewed) until force-unlock.
		Holder: func(t *testing.T) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "K8SSTATE_HOST="+cfg.Host, "K8SSTATE_TOKEN="+cfg.BearerToken,
				"K8SSTATE_CA="+cfg.TLSClientConfig.CAFile, "K8SSTATE_NS="+ns, "K8SSTATE_SUFFIX="+suffix)
			return cmd
		},
		DeadHolderKeepsLock: true,
		// The index Secret deleted (by hand, or a namespace restored
		// without it).
		LoseState: func(t *testing.T) {
			if err := admin.CoreV1().Secrets(ns).Delete(context.Background(), "trialform-state-"+suffix, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		// A byte of a trial part of mnist flipped where it lies.
		CorruptChange: func(t *testing.T, n int) {
			ctx := context.Background()
			sec, err := admin.CoreV1().Secrets(ns).Get(ctx, "trialform-state-"+suffix, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			idx, err := decodeIndex(sec)
			if err != nil {
				t.Fatal(err)
			}
			p := idx.Experiments["mnist"].Parts["t0"]
			part, err := admin.CoreV1().Secrets(ns).Get(ctx, p.Secrets[0], metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d := part.Data[keyChunk]
			d[len(d)/2] ^= 0x01
			if _, err := admin.CoreV1().Secrets(ns).Update(ctx, part, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// The backend through the suite every backend passes, with the admin's
// credentials. (TestRBAC runs it with a namespace-bound service account.)
func TestBackendSuite(t *testing.T) {
	t.Parallel()
	c := controlPlane(t)
	ns := namespace(t, "tfstate")
	backendtest.Run(t, func(t *testing.T) *backendtest.Store { return store(t, c.Config, ns) })
}
