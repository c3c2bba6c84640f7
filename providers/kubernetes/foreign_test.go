package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/providers"
)

// A handle of an object in another namespace than the platform's is
// foreign (state push refuses it: Read and Stop look in the platform's
// namespace only, so plan would call the trial LOST and run it again);
// one in the platform's namespace, or without one, is not. Nothing is
// contacted.
func TestForeignNamespace(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := New(Config{Kubeconfig: kc, Namespace: "team-b"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for _, h := range []providers.Handle{{"namespace": "team-b", "job": "j"}, {}} {
		if why := k.Foreign(h); why != "" {
			t.Errorf("Foreign(%v) = %q, want none", h, why)
		}
	}
	if why := k.Foreign(providers.Handle{"namespace": "team-a", "job": "j"}); !strings.Contains(why, `namespace "team-a", and the platform works in namespace "team-b"`) {
		t.Errorf("Foreign of another namespace = %q", why)
	}
}
