package platforms

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/internal/docs"
)

var update = flag.Bool("update", false, "rewrite docs/platforms' generated parts from the registry")

const how = "from the registry by `go test ./providers/platforms -update`"

// TestReadmePlatformReference fails when a platform's page
// (docs/platforms/KIND.md) or the index of them is not what the
// registered kinds' docs make; -update rewrites them (and starts the
// page of a new kind).
func TestReadmePlatformReference(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "platforms")
	r := Registry()
	check := func(path, name, want string) {
		msg, err := docs.CheckGenerated(path, name, how, want, *update)
		if err != nil {
			t.Fatal(err)
		}
		if msg != "" {
			t.Errorf("%s\nrun go test ./providers/platforms -run TestReadmePlatformReference -update", msg)
		}
	}
	check(filepath.Join(dir, "README.md"), "platform index", Index(r))
	for _, k := range r.Kinds() {
		path := filepath.Join(dir, k.Name+".md")
		if _, err := os.Stat(path); os.IsNotExist(err) && *update {
			page := fmt.Sprintf("# The `%s` platform\n\n## Settings\n\n<!-- BEGIN platform reference: -->\n<!-- END platform reference -->\n", k.Name)
			if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		check(path, "platform reference", KindReference(r, k))
	}
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
		"#### `platform \"kubernetes\"`", "- `nfs.server` (a string): **required**; NFS server",
		"It takes every setting of [`kubernetes`](kubernetes.md), and:", "`task_role \"NAME\" { }` (block, repeatable)",
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
