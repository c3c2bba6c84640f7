package backends

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendreg"
)

func TestOpenLocal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".trialform")
	b, err := Open("local", nil, backendreg.Env{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != state.LocalBackend || b.Location() != dir {
		t.Fatalf("got %s at %s, want local at %s", b.Name(), b.Location(), dir)
	}
}

func TestOpenUnknownNamesTheKinds(t *testing.T) {
	_, err := Open("postgres-ish", nil, backendreg.Env{StateDir: t.TempDir()})
	if err == nil {
		t.Fatal("an unknown kind opened")
	}
	for _, n := range Names() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name kind %s", err, n)
		}
	}
}

// Every kind is complete: a name, a summary, an opener, and settings the
// schema can read.
func TestKindsAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if k.Name == "" || k.Summary == "" || k.Open == nil {
			t.Errorf("kind %+v lacks a name, summary or Open", k)
		}
		if seen[k.Name] {
			t.Errorf("kind %s listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.Config != nil && k.Config() == nil {
			t.Errorf("kind %s: Config returns nil", k.Name)
		}
	}
	if !seen[state.LocalBackend] {
		t.Error("no local kind")
	}
}
