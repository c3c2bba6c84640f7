package command

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// syncBuffer is an io.Writer the test reads while a command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitCount waits until out holds n occurrences of sub.
func waitCount(t *testing.T, out *syncBuffer, sub string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(out.String(), sub) < n {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %d× %q; output:\n%s", n, sub, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until at most want goroutines run, and returns how many do.
func settle(want int, d time.Duration) int {
	deadline := time.Now().Add(d)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

const leakConfig = `platform "local" "default" {
  max_trials_per_gpu = %d
}

search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "leak" {
  search_space = search_space.s
  max_trials   = 2
  trial {
    command = "true"
  }
}
`

// Every platform edit during watch rebuilds the provider set; the old
// set's notification forwarders must end with it, so ten edits leave as
// many goroutines as one.
func TestWatchPlatformEditsDoNotLeakGoroutines(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "main.hcl")
	write := func(i int) {
		t.Helper()
		if err := os.WriteFile(main, fmt.Appendf(nil, leakConfig, i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"-chdir=" + dir, "watch", "-interval=1h", "-no-color"}, IO{In: strings.NewReader(""), Out: out, Err: out})
	}()
	waitCount(t, out, "Plan: 1 to create", 1)
	base := settle(0, 200*time.Millisecond)

	const edits = 10
	for i := 1; i <= edits; i++ {
		write(i + 1)
		waitCount(t, out, "Changes in the definitions", i)
		waitCount(t, out, "Plan: 1 to create", i+1)
	}
	// Slack for goroutines that come and go (timers, the file watcher);
	// a leak adds one per edit.
	if n := settle(base+edits/2, 10*time.Second); n > base+edits/2 {
		t.Errorf("%d goroutines after %d platform edits, %d after the first plan:\n%s", n, edits, base, goroutineDump())
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("watch exited %d:\n%s", code, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not stop on cancel")
	}
}

// The set forwards a provider's change signal (a local trial's supervisor
// exited) and Close ends the forwarder: nothing ranges for ever over a
// channel the provider never closes.
func TestProviderSetNotifyAndClose(t *testing.T) {
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	ps := newProviderSet(nil, filepath.Join(dir, ".trialform"))
	p, err := ps.Provider("local.default")
	if err != nil {
		t.Fatal(err)
	}
	changed := ps.notify()
	_, err = p.Start(context.Background(), providers.StartRequest{
		Experiment: "e", ExperimentID: "eid", TrialID: "t0000", Seq: 0,
		Params: map[string]any{"x": 1}, Shell: "true", CodeDir: dir, Lineage: "l",
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(60 * time.Second):
		t.Fatal("no change signal 60s after a trial of `true` started")
	}
	ps.Close()
	if n := settle(base, 10*time.Second); n > base {
		t.Fatalf("%d goroutines after Close, %d before the set:\n%s", n, base, goroutineDump())
	}
}
