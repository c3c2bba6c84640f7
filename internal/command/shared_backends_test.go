package command_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/internal/pgtest"
	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
)

// The servers of the shared backends the fault tests (shared_faults_test.go)
// and TestKillAnywhere run against, each started once for the test binary
// by the first test that needs it and stopped by TestMain.

var (
	serversMu   sync.Mutex
	stopServers []func()
)

// stopSharedServers stops what the tests started (TestMain calls it).
func stopSharedServers() {
	serversMu.Lock()
	defer serversMu.Unlock()
	for i := len(stopServers) - 1; i >= 0; i-- {
		stopServers[i]()
	}
	stopServers = nil
}

func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return "f" + hex.EncodeToString(b[:])
}

// The kubernetes backend: the state in Secrets of a namespace of a real
// control plane (etcd and kube-apiserver only).
var (
	k8sOnce sync.Once
	k8sCP   *k8stest.ControlPlane
	k8sErr  error
	k8sKC   string
)

func k8sControlPlane(t *testing.T) *k8stest.ControlPlane {
	t.Helper()
	k8sOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		k8sCP, k8sErr = k8stest.Start(ctx, k8stest.Options{NoScheduler: true, NoControllerManager: true})
		if k8sErr == nil {
			serversMu.Lock()
			stopServers = append(stopServers, k8sCP.Stop)
			serversMu.Unlock()
		}
	})
	if errors.Is(k8sErr, k8stest.ErrNotBuilt) {
		testdeps.Require(t, "the test Kubernetes control plane", k8sErr.Error())
	}
	if k8sErr != nil {
		t.Fatal(k8sErr)
	}
	return k8sCP
}

func kubernetesShared(t *testing.T) sharedBackend {
	cp := k8sControlPlane(t)
	return sharedBackend{
		setup: func(t *testing.T) (string, []string) {
			ns := "faults-" + randomSuffix()
			if _, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			kc := filepath.Join(t.TempDir(), "kubeconfig")
			if err := os.WriteFile(kc, []byte(k8stest.KubeconfigYAML(cp.URL, cp.CACert, cp.Token, ns)), 0o600); err != nil {
				t.Fatal(err)
			}
			suffix := randomSuffix()
			t.Cleanup(func() { sharedSuffix.Delete(t.Name()) })
			sharedSuffix.Store(t.Name(), [2]string{ns, suffix})
			return `backend "kubernetes" {
  namespace     = "` + ns + `"
  secret_suffix = "` + suffix + `"
}
`, []string{"KUBECONFIG=" + kc}
		},
		stop: func(t *testing.T) { cp.StopComponent("kube-apiserver") },
		start: func(t *testing.T) {
			if err := cp.RestartComponent("kube-apiserver"); err != nil {
				t.Fatal(err)
			}
		},
		// The index Secret deleted by hand: the state is gone, its parts
		// and series are still there.
		tamper: func(t *testing.T, exp string) *regexp.Regexp {
			v, _ := sharedSuffix.Load(t.Name())
			ns, suffix := v.([2]string)[0], v.([2]string)[1]
			if err := cp.Client.CoreV1().Secrets(ns).Delete(context.Background(), "trialform-state-"+suffix, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			return regexp.MustCompile(`there is no state .*, but what a lost state left is still there`)
		},
	}
}

// sharedSuffix: the namespace and suffix setup made, by test name.
var sharedSuffix sync.Map

// The pg backend: a fresh database of a real PostgreSQL server
// (internal/pgtest) of the test's own, since a test stops and starts it,
// reached with libpq's PG* variables, as a person's shell would.
func pgShared(t *testing.T) sharedBackend {
	srv := pgtest.NewServer(t)
	var db string
	return sharedBackend{
		setup: func(t *testing.T) (string, []string) {
			conn := srv.NewDB(t)
			db = conn[strings.LastIndex(conn, "/")+1:]
			db, _, _ = strings.Cut(db, "?")
			var env []string
			for k, v := range srv.Env(db) {
				env = append(env, k+"="+v)
			}
			return "backend \"pg\" {}\n", env
		},
		stop:  func(t *testing.T) { srv.Stop(t) },
		start: func(t *testing.T) { srv.Start(t) },
		// A trial's row edited by SQL into what trialform never writes.
		tamper: func(t *testing.T, exp string) *regexp.Regexp {
			if err := srv.Exec(context.Background(), db, `UPDATE trialform.trials SET body = '{"id": 7, "seq": "x"}' WHERE experiment = $1 AND id = 't0000'`, exp); err != nil {
				t.Fatal(err)
			}
			return regexp.MustCompile(`cannot be read as trialform wrote it: .*; it was not modified\. No save writes over it\. Someone or something changed it behind trialform's back: .*state push -force FILE`)
		},
	}
}

// sharedBackends lists the shared backends the fault tests run against.
var sharedBackends = []namedBackend{
	{"pg", pgShared},
	{"kubernetes", kubernetesShared},
}
