package apply

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/netretry"
	"github.com/trialform/trialform/state"
)

// RetryWindow is how long RetryStore keeps retrying a write its backend's
// server could not take (state.IsUnavailable) before the error ends the
// command (a variable for tests).
var RetryWindow = 2 * time.Minute

// RetryStore wraps a shared backend for a session that writes while trials
// run (apply, watch): a write the backend could not make because its
// server was unreachable (state.IsUnavailable: stopped, restarting, the
// network down) is retried with backoff for up to RetryWindow, and report
// says so once when the server goes away and once when it is back; past
// the window the write's error ends the command, naming the backend. A
// retried write is the same write (a save is one transaction or nothing,
// by the contract), so the state is never half-written; an error that is
// not about reaching the server (a conflict, a state changed behind
// trialform's back) is returned at once.
func RetryStore(b state.Backend, report func(msg string)) StateStore {
	return &retryStore{Backend: b, report: report}
}

type retryStore struct {
	state.Backend
	report func(msg string)

	mu   sync.Mutex
	down time.Time // when the server was found gone; zero when up
}

var (
	_ GroupStore        = (*retryStore)(nil)
	_ TrialStore        = (*retryStore)(nil)
	_ BatchMetricsStore = (*retryStore)(nil)
	_ RefreshMarker     = (*retryStore)(nil)
	_ MetricsReader     = (*retryStore)(nil)
	_ MetricsMover      = (*retryStore)(nil)
)

func (r *retryStore) do(what string, f func() error) error {
	classify := func(err error) (bool, time.Duration) {
		if !state.IsUnavailable(err) {
			return false, 0
		}
		r.mu.Lock()
		if r.down.IsZero() {
			r.down = time.Now()
			r.report(fmt.Sprintf("state backend %s (%s) cannot be reached: %s: %v; retrying for up to %s", r.Name(), r.Location(), what, err, RetryWindow))
		}
		r.mu.Unlock()
		return true, 0
	}
	// One window from when the server was found gone, whatever the
	// writes that wait for it (each had its own, and the run loop retried
	// the pass: 10 minutes in all).
	window, attempts := RetryWindow, -1
	r.mu.Lock()
	if !r.down.IsZero() {
		if window -= time.Since(r.down); window <= 0 {
			window, attempts = time.Millisecond, 1 // past it: one try
		}
	}
	r.mu.Unlock()
	err := netretry.Policy{Attempts: attempts, Base: 250 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: window}.
		Do(context.Background(), classify, func(context.Context) error { return f() })
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.down.IsZero() && !state.IsUnavailable(err) {
		r.report(fmt.Sprintf("state backend %s is back after %s", r.Name(), time.Since(r.down).Round(time.Second)))
		r.down = time.Time{}
	}
	if state.IsUnavailable(err) {
		// The command ends: a later pass would only wait again.
		return fatal{fmt.Errorf("state backend %s (%s) unreachable for %s, gave up: %w", r.Name(), r.Location(), time.Since(r.down).Round(time.Second), err)}
	}
	return err
}

func (r *retryStore) Save(s *state.State) error {
	return r.do("save the state", func() error { return r.Backend.Save(s) })
}

// retryCommit retries prepare (which fails before it changes s when the
// server cannot be reached) and then the commit it returns.
func (r *retryStore) retryCommit(prepare func() (func() error, error)) (func() error, error) {
	var commit func() error
	if err := r.do("prepare a save", func() error {
		c, err := prepare()
		commit = c
		return err
	}); err != nil || commit == nil {
		return nil, err
	}
	return func() error { return r.do("save the state", commit) }, nil
}

func (r *retryStore) Prepare(s *state.State) (func() error, error) {
	return r.retryCommit(func() (func() error, error) { return r.Backend.Prepare(s) })
}

func (r *retryStore) PrepareTrials(s *state.State, refs []state.TrialRef) (func() error, error) {
	return r.retryCommit(func() (func() error, error) { return r.Backend.PrepareTrials(s, refs) })
}

func (r *retryStore) AppendMetrics(experiment, trial string, pts []state.MetricPoint) error {
	return r.do("append metric points", func() error { return r.Backend.AppendMetrics(experiment, trial, pts) })
}

func (r *retryStore) AppendMetricsBatch(batches []state.MetricsBatch) error {
	return r.do("append metric points", func() error { return r.Backend.AppendMetricsBatch(batches) })
}

func (r *retryStore) RemoveMetrics(experiment string) error {
	return r.do("remove metric series", func() error { return r.Backend.RemoveMetrics(experiment) })
}

func (r *retryStore) MoveMetrics(from, to string) error {
	return r.do("move metric series", func() error { return r.Backend.MoveMetrics(from, to) })
}

func (r *retryStore) MarkRefreshed(lineage string, experiments []string, t time.Time) error {
	return r.do("record the refresh", func() error { return r.Backend.MarkRefreshed(lineage, experiments, t) })
}

func (r *retryStore) ReadMetrics(experiment, trial string) ([]state.MetricPoint, error) {
	var pts []state.MetricPoint
	err := r.do("read metric points", func() error {
		var err error
		pts, err = r.Backend.ReadMetrics(experiment, trial)
		return err
	})
	return pts, err
}
