package workcopy

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestIdentify: the id is created once, kept across calls and a move of
// the directory; concurrent first calls agree on one id; another
// directory has another id.
func TestIdentify(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", ".trialform")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w, err := Identify(dir)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = w.ID
		}(i)
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("concurrent first calls gave ids %q", ids)
		}
	}
	w, err := Identify(dir)
	if err != nil || w.ID != ids[0] {
		t.Fatalf("second call: %v %v", w, err)
	}
	if !strings.HasSuffix(w.Where, ":"+dir) {
		t.Fatalf("where = %q", w.Where)
	}
	moved := filepath.Join(root, "b")
	if err := os.Rename(filepath.Join(root, "a"), moved); err != nil {
		t.Fatal(err)
	}
	w2, err := Identify(filepath.Join(moved, ".trialform"))
	if err != nil || w2.ID != ids[0] || !strings.HasSuffix(w2.Where, ":"+filepath.Join(moved, ".trialform")) {
		t.Fatalf("after a move: %v %v", w2, err)
	}
	other, err := Identify(filepath.Join(root, "c", ".trialform"))
	if err != nil || other.ID == ids[0] {
		t.Fatalf("another working copy: %v %v", other, err)
	}
	// A damaged id is an error naming the file, not a new identity.
	os.WriteFile(filepath.Join(moved, ".trialform", IDFile), []byte("\n"), 0o644)
	if _, err := Identify(filepath.Join(moved, ".trialform")); err == nil || !strings.Contains(err.Error(), IDFile) {
		t.Fatalf("damaged id: %v", err)
	}
}
