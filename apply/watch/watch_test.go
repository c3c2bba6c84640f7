package watch

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// next waits up to d for a batch; nil if none came.
func next(t *testing.T, w *Watcher, d time.Duration) *Batch {
	t.Helper()
	select {
	case b, ok := <-w.C:
		if !ok {
			t.Fatal("watcher closed")
		}
		return &b
	case <-time.After(d):
		return nil
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// only waits for the next batch and checks it holds exactly paths: an
// earlier change that should have been dropped would show up in it or in
// a batch before it.
func only(t *testing.T, w *Watcher, what string, paths ...string) {
	t.Helper()
	b := next(t, w, 10*time.Second)
	if b == nil || !reflect.DeepEqual(b.Paths, paths) {
		t.Fatalf("%s: got batch %+v, want exactly %v", what, b, paths)
	}
}

func start(t *testing.T, o Options) *Watcher {
	t.Helper()
	if o.Quiet == 0 {
		o.Quiet = 50 * time.Millisecond
	}
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func modes(t *testing.T, fn func(t *testing.T, poll time.Duration)) {
	t.Run("inotify", func(t *testing.T) { fn(t, 0) })
	t.Run("poll", func(t *testing.T) { fn(t, 20*time.Millisecond) })
}

func TestWriteAndRenameSave(t *testing.T) {
	modes(t, func(t *testing.T, poll time.Duration) {
		dir := t.TempDir()
		main := filepath.Join(dir, "main.hcl")
		write(t, main, "a")
		w := start(t, Options{Dir: dir, Poll: poll})

		write(t, main, "bb")
		b := next(t, w, 5*time.Second)
		if b == nil || !reflect.DeepEqual(b.Paths, []string{main}) {
			t.Fatalf("after a write: %+v", b)
		}

		// An editor's atomic save: temp file, then rename over.
		tmp := filepath.Join(dir, "main.hcl.tmp")
		write(t, tmp, "ccc")
		if err := os.Rename(tmp, main); err != nil {
			t.Fatal(err)
		}
		b = next(t, w, 5*time.Second)
		if b == nil || !reflect.DeepEqual(b.Paths, []string{main}) {
			t.Fatalf("after a rename-save: %+v", b)
		}
	})
}

func TestIgnored(t *testing.T) {
	modes(t, func(t *testing.T, poll time.Duration) {
		dir := t.TempDir()
		main := filepath.Join(dir, "main.hcl")
		write(t, main, "a")
		w := start(t, Options{Dir: dir, Poll: poll})

		for _, n := range []string{".#main.hcl", "main.hcl~", ".main.hcl.swp", "4913", "#main.hcl#", "train.py", "notes.txt"} {
			write(t, filepath.Join(dir, n), "x")
		}
		if err := os.MkdirAll(filepath.Join(dir, ".trialform", "trials"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, ".trialform", "state.json"), "{}")
		if poll == 0 { // polling sees content, not modes
			if err := os.Chmod(main, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// A real change to another file: the first batch holds it alone.
		other := filepath.Join(dir, "other.hcl")
		write(t, other, "x")
		only(t, w, "irrelevant changes, then other.hcl", other)
	})
}

func TestDebounce(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl")
	w := start(t, Options{Dir: dir, Quiet: 500 * time.Millisecond, MaxDelay: 30 * time.Second})
	// A burst of writes to two files, far closer together than Quiet: one
	// batch.
	for i := 0; i < 5; i++ {
		write(t, a, string(rune('a'+i)))
		write(t, b, string(rune('a'+i)))
		time.Sleep(20 * time.Millisecond)
	}
	only(t, w, "burst", a, b)
	// The next change comes alone: the burst gave no second batch.
	c := filepath.Join(dir, "c.hcl")
	write(t, c, "x")
	only(t, w, "after the burst", c)
}

func TestMaxDelay(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.hcl")
	w := start(t, Options{Dir: dir, Quiet: 300 * time.Millisecond, MaxDelay: 400 * time.Millisecond})
	// Writes every 50ms never leave Quiet of silence; MaxDelay still
	// sends batches while the burst goes on.
	stop := time.Now().Add(3 * time.Second)
	got := 0
	for time.Now().Before(stop) {
		write(t, a, time.Now().String())
		select {
		case <-w.C:
			got++
		case <-time.After(50 * time.Millisecond):
		}
	}
	if got == 0 {
		t.Fatal("a continuous burst held every batch back past MaxDelay")
	}
}

func TestExtraFiles(t *testing.T) {
	modes(t, func(t *testing.T, poll time.Duration) {
		dir, other := t.TempDir(), t.TempDir()
		space := filepath.Join(other, "space.json")
		write(t, space, "{}")
		main := filepath.Join(dir, "main.hcl")
		w := start(t, Options{Dir: dir, Poll: poll})
		write(t, space, `{"x": 1}`)
		write(t, main, "1")
		only(t, w, "a file not (yet) referenced, then main.hcl", main)

		// Referring to a file is not a change of it.
		w.SetExtra([]string{space})
		write(t, main, "22")
		only(t, w, "SetExtra, then main.hcl", main)

		write(t, space, `{"x": 2}`)
		only(t, w, "extra file", space)

		// A sibling of the extra file does not count.
		write(t, filepath.Join(other, "unrelated.hcl"), "x")
		write(t, main, "333")
		only(t, w, "a sibling of the extra file, then main.hcl", main)

		// Nor does a file no longer referred to.
		w.SetExtra(nil)
		write(t, space, `{"x": 33}`)
		write(t, main, "4444")
		only(t, w, "a file no longer referenced, then main.hcl", main)
	})
}

func TestTempFile(t *testing.T) {
	for name, want := range map[string]bool{
		"main.hcl": false, "sedan.hcl": false, "4913": true, ".#main.hcl": true,
		"main.hcl~": true, ".main.hcl.swp": true, "main.hcl.tmp": true, ".trialform": true,
		"main.hcl___jb_tmp___": true,
	} {
		if got := TempFile(name); got != want {
			t.Errorf("TempFile(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCloseClosesC(t *testing.T) {
	w, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, ok := <-w.C; ok {
		t.Fatal("C still open after Close")
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
