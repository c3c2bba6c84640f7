package apply

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// flaky is a backend whose saves fail, as unreachable, until it is up.
type flaky struct {
	state.Backend
	failures atomic.Int32 // saves left to fail
	err      error        // what they fail with
}

func (f *flaky) Save(s *state.State) error {
	if f.failures.Add(-1) >= 0 {
		return f.err
	}
	return f.Backend.Save(s)
}

// TestRetryStore: a save the server could not take is retried and
// reported once going down, once back; any other error is returned at
// once.
func TestRetryStore(t *testing.T) {
	b := &flaky{Backend: state.NewManager(t.TempDir()), err: state.Unavailable(errors.New("connection refused"))}
	b.failures.Store(3)
	var reports []string
	r := RetryStore(b, func(m string) { reports = append(reports, m) })
	st := state.New()
	if err := r.Save(st); err != nil {
		t.Fatalf("save across the outage: %v", err)
	}
	if len(reports) != 2 || !strings.Contains(reports[0], "cannot be reached: save the state: connection refused; retrying") || !strings.Contains(reports[1], "is back") {
		t.Fatalf("reports = %q", reports)
	}
	if got, err := b.Load(); err != nil || got.Serial != st.Serial || st.Serial == 0 {
		t.Fatalf("saved serial %d, state %v", st.Serial, err)
	}
	// Not about reaching the server: no retry.
	b.err = errors.New("disk full")
	b.failures.Store(1)
	reports = nil
	st.Experiments["x"] = &state.Experiment{Name: "x", Trials: map[string]*state.Trial{}}
	if err := r.Save(st); err == nil || err.Error() != "disk full" || len(reports) != 0 {
		t.Fatalf("a final error: %v, reports %q", err, reports)
	}
}

// The window is one, from when the server was found gone: a write made
// past it tries once, not for a window of its own, and giving up ends the
// command (IsFatal), so apply -wait does not retry the pass. It waited 2
// minutes a write and 5 passes: 10 minutes, silently, for a documented 2.
func TestRetryStoreOneWindow(t *testing.T) {
	defer func(w time.Duration) { RetryWindow = w }(RetryWindow)
	RetryWindow = time.Second
	const many = 1 << 30
	b := &flaky{Backend: state.NewManager(t.TempDir()), err: state.Unavailable(errors.New("connection refused"))}
	b.failures.Store(many)
	r := RetryStore(b, func(string) {})
	begin := time.Now()
	if err := r.Save(state.New()); err == nil || !IsFatal(err) || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("first save: %v (fatal %v)", err, IsFatal(err))
	}
	time.Sleep(RetryWindow - time.Since(begin) + 50*time.Millisecond) // past the window
	tried := many - b.failures.Load()
	if err := r.Save(state.New()); err == nil || !IsFatal(err) {
		t.Fatalf("second save: %v", err)
	}
	if n := many - b.failures.Load() - tried; n != 1 {
		t.Errorf("a write past the window tried %d times, want once", n)
	}
}
