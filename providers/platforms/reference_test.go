package platforms

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/decl"
)

var update = flag.Bool("update", false, "rewrite README.md's platform reference from the registry")

const (
	refBegin = "<!-- BEGIN platform reference: generated from the registry by `go test ./providers/platforms -update`; do not edit -->\n"
	refEnd   = "<!-- END platform reference -->\n"
)

// TestReadmePlatformReference fails when README.md's platform reference
// is not what the registered kinds' docs make; -update rewrites it.
func TestReadmePlatformReference(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, refBegin), strings.Index(readme, refEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no platform reference between %q and %q", refBegin, refEnd)
	}
	want := Reference(Registry())
	got := readme[i+len(refBegin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(readme[:i+len(refBegin)]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's platform reference is stale: run go test ./providers/platforms -run TestReadmePlatformReference -update\n--- README\n%s\n--- registry\n%s", got, want)
}

// Every attribute and block of every registered kind has a doc string,
// so the reference never has an empty row.
func TestEveryAttributeIsDocumented(t *testing.T) {
	var walk func(kind, prefix string, s *decl.Schema)
	walk = func(kind, prefix string, s *decl.Schema) {
		for _, a := range s.Attrs {
			if a.Doc == "" {
				t.Errorf("%s: %s%s has no doc tag", kind, prefix, a.Name)
			}
		}
		for _, b := range s.Blocks {
			if b.Doc == "" {
				t.Errorf("%s: block %s%s has no doc tag", kind, prefix, b.Name)
			}
			walk(kind, prefix+b.Name+".", b.Schema)
		}
	}
	for _, k := range Registry().Kinds() {
		if k.Summary == "" {
			t.Errorf("%s has no summary", k.Name)
		}
		if k.Config != nil {
			s, err := decl.SchemaOf(k.Config())
			if err != nil {
				t.Fatal(err)
			}
			walk(k.Name, "", s)
		}
	}
}

// The reference shows a nested block's attributes and leaves out what a
// kind inherits.
func TestReferenceShape(t *testing.T) {
	ref := Reference(Registry())
	for _, want := range []string{
		"#### `platform \"kubernetes\"`", "| `nfs.server` | a string | **required**; NFS server |",
		"It takes every setting of `kubernetes`, and:", "| `task_role \"NAME\" { }` | block, repeatable |",
		"#### `platform \"dlts\"`",
	} {
		if !strings.Contains(ref, want) {
			t.Errorf("reference lacks %q", want)
		}
	}
	kf := ref[strings.Index(ref, "#### `platform \"kubeflow\"`"):]
	kf = kf[:strings.Index(kf, "#### `platform \"adaptdl\"`")]
	if strings.Contains(kf, "`namespace`") || !strings.Contains(kf, "`worker.replicas`") {
		t.Errorf("kubeflow's reference repeats kubernetes' settings or lacks its own:\n%s", kf)
	}
}
