package fsx

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	for _, content := range []string{"one", "two, longer", ""} {
		if err := WriteFileAtomic(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("perm %v", fi.Mode().Perm())
	}
	assertOnly(t, dir, "f.json")
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "f"), nil, 0o644); err == nil {
		t.Error("want an error for a missing directory")
	}
}

// Writers of one file at once each use their own temporary file: every
// write succeeds, the file holds one of them whole, and nothing is left
// behind. (A fixed name such as path+".tmp" fails here: one writer's
// rename takes the file another is writing or about to rename.)
func TestWriteFileAtomicConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "plan.json")
	const n = 16
	want := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		content := strings.Repeat(fmt.Sprintf("writer %d\n", i), 2000)
		want[content] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := WriteFileAtomic(p, []byte(content), 0o644); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || !want[string(got)] {
		t.Fatalf("read %d bytes (%.20q...), %v: not one writer's content", len(got), got, err)
	}
	assertOnly(t, dir, "plan.json")
}

// A write that cannot be put in place leaves the old file as it was and
// no temporary file.
func TestReplaceFileFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	// A non-empty directory in the file's place: the rename fails.
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("new"), 0o644); err == nil {
		t.Fatal("replaced a directory")
	} else if !strings.Contains(err.Error(), p) {
		t.Errorf("error %q does not name %s", err, p)
	}
	assertOnly(t, dir, "f")

	// A pending file that is never committed is removed by Cleanup.
	q := filepath.Join(dir, "g")
	if err := WriteFileAtomic(q, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := NewPendingFile(q, 0o644, Options{TempPrefix: ".g.custom-"})
	if err != nil {
		t.Fatal(err)
	}
	if base := filepath.Base(pf.Name()); !strings.HasPrefix(base, ".g.custom-") || filepath.Dir(pf.Name()) != dir {
		t.Errorf("temporary file %s: want .g.custom-* in %s", pf.Name(), dir)
	}
	if _, err := pf.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	pf.Cleanup()
	pf.Cleanup() // twice is harmless
	assertOnly(t, dir, "f", "g")
	if b, _ := os.ReadFile(q); string(b) != "old" {
		t.Errorf("g = %q after an abandoned write, want old", b)
	}
	if err := pf.Commit(); err == nil {
		t.Error("Commit after Cleanup succeeded")
	}
}

// The options that loosen durability still replace the file atomically
// under a unique name.
func TestReplaceFileOptions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "spec.json")
	for _, o := range []Options{{NoSync: true}, {NoSyncDir: true}, {NoSync: true, NoSyncDir: true, TempPrefix: ".x-"}} {
		content := fmt.Sprintf("%+v", o)
		if err := ReplaceFile(p, []byte(content), 0o600, o); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Errorf("%+v: read %q", o, b)
		}
	}
	if err := SyncDir(dir); err != nil {
		t.Error(err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("SyncDir of a missing directory succeeded")
	}
	assertOnly(t, dir, "spec.json")
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}
