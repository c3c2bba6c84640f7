package apply

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/state"
)

// failingStarter fails every Start, with a permanent or a transient error.
type failingStarter struct {
	*recorder
	permanent bool
	calls     int
}

func (f *failingStarter) Start(_ context.Context, req providers.StartRequest) (providers.Handle, error) {
	f.calls++
	err := errors.New("create pod: the API server said no")
	if f.permanent {
		err = providers.Permanent(err)
	}
	return nil, err
}

// A trial whose start fails does not stay WAITING for ever holding a budget
// slot: it is retried MaxStartFailures times in all (a permanent error: no
// retry), then FAILED with the error as its reason (issue 11, item 15).
func TestFailedStartEndsFailed(t *testing.T) {
	for _, permanent := range []bool{false, true} {
		store := &memStore{}
		s, rec := newSession(config(1, 3), store)
		fs := &failingStarter{recorder: rec, permanent: permanent}
		s.Providers = oneProvider{fs}
		want := MaxStartFailures
		if permanent {
			want = 1
		}
		for pass := 1; pass <= want+1; pass++ {
			p, err := s.Plan(context.Background(), plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Apply(context.Background(), p)
			tr := store.last().Experiments["exp"].Trials["t0000"]
			if tr == nil {
				t.Fatalf("permanent=%v pass %d: no trial t0000", permanent, pass)
			}
			switch {
			case pass < want && (tr.Status != state.Waiting || tr.StartFailures != pass || !strings.Contains(tr.Reason, "API server said no")):
				t.Fatalf("permanent=%v pass %d: t0000 = %s %q (%d start failures), want WAITING to retry", permanent, pass, tr.Status, tr.Reason, tr.StartFailures)
			case pass >= want && (tr.Status != state.Failed || !strings.HasPrefix(tr.Reason, "failed to start") || !strings.Contains(tr.Reason, "API server said no") || tr.EndedAt == nil):
				t.Fatalf("permanent=%v pass %d: t0000 = %s %q, want FAILED: failed to start", permanent, pass, tr.Status, tr.Reason)
			}
		}
		if fs.calls != want+1 {
			// want starts of t0000, then one of the next trial t0001
			t.Errorf("permanent=%v: %d Start calls, want %d", permanent, fs.calls, want+1)
		}
		if tr := store.last().Experiments["exp"].Trials["t0001"]; tr == nil {
			t.Errorf("permanent=%v: the failed start's slot was not given to a new trial", permanent)
		}
	}
}

// A resume that fails for good ends the trial FAILED at the end of its
// last attempt: a trial paused (or lost) for a day whose resume was
// refused showed a duration of a day and more, the time it waited
// counted as time it ran.
func TestFailedResumeKeepsTheAttemptsEnd(t *testing.T) {
	store := &memStore{}
	s, _ := newSession(config(1, 1), store)
	p, err := s.Plan(context.Background(), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Apply(context.Background(), p)
	t0 := s.Now()
	paused := t0.Add(10 * time.Second)
	s.mu.Lock()
	tr := s.st.Experiments["exp"].Trials["t0000"]
	if tr == nil || tr.StartedAt == nil || !tr.StartedAt.Equal(t0) {
		s.mu.Unlock()
		t.Fatalf("t0000 after the first apply: %+v", tr)
	}
	tr.Status, tr.EndedAt, tr.Handle = state.Paused, &paused, nil
	s.mu.Unlock()
	s.Now = func() time.Time { return t0.Add(24 * time.Hour) }
	fs := &failingStarter{recorder: &recorder{store: store, started: map[string]int{}, stopped: map[string]int{}}, permanent: true}
	s.Providers = oneProvider{fs}
	if p, err = s.Plan(context.Background(), plan.Options{}); err != nil {
		t.Fatal(err)
	}
	s.Apply(context.Background(), p)
	tr = store.last().Experiments["exp"].Trials["t0000"]
	if fs.calls != 1 || tr.Status != state.Failed || !strings.HasPrefix(tr.Reason, "failed to start") {
		t.Fatalf("t0000 = %s %q after %d starts, want FAILED: failed to start", tr.Status, tr.Reason, fs.calls)
	}
	if tr.EndedAt == nil || !tr.EndedAt.Equal(paused) {
		t.Errorf("t0000 ended at %v, want its attempt's end %v (a duration of 10s, not a day)", tr.EndedAt, paused)
	}
}

// A PAUSED trial the experiment's max_duration cancels ends at its last
// attempt's end: the day it waited paused did not run (its CANCELED row
// showed a duration of 2m53s for a trial that ran 5s).
func TestCanceledPausedTrialKeepsTheAttemptsEnd(t *testing.T) {
	store := &memStore{}
	cfg := config(1, 1)
	s, _ := newSession(cfg, store)
	p, err := s.Plan(context.Background(), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Apply(context.Background(), p)
	t0 := s.Now()
	paused := t0.Add(10 * time.Second)
	s.mu.Lock()
	tr := s.st.Experiments["exp"].Trials["t0000"]
	tr.Status, tr.EndedAt = state.Paused, &paused
	s.mu.Unlock()
	for _, e := range cfg.Experiments {
		e.MaxDuration = time.Hour
	}
	s.Now = func() time.Time { return t0.Add(24 * time.Hour) }
	if p, err = s.Plan(context.Background(), plan.Options{}); err != nil {
		t.Fatal(err)
	}
	s.Apply(context.Background(), p)
	tr = store.last().Experiments["exp"].Trials["t0000"]
	if tr.Status != state.Canceled {
		t.Fatalf("t0000 = %s %q, want CANCELED by max_duration", tr.Status, tr.Reason)
	}
	if tr.EndedAt == nil || !tr.EndedAt.Equal(paused) {
		t.Errorf("t0000 ended at %v, want its attempt's end %v (a duration of 10s, not a day)", tr.EndedAt, paused)
	}
}
