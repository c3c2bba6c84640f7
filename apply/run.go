package apply

import (
	"context"
	"time"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// Notifier is an optional provider capability: a channel that receives a
// value whenever a trial the provider started may have changed (a process
// exited), so the run loop reacts at once instead of waiting for the next
// poll.
type Notifier interface {
	Changed() <-chan struct{}
}

// RunOptions configure the run loop.
type RunOptions struct {
	Plan plan.Options
	// Interval between reconcile passes when nothing signals a change.
	Interval time.Duration
	// OnPass is called after every pass with the plan it applied (nil-safe).
	OnPass func(p *plan.Plan, err error)
	// Notify, if set, wakes the loop early (e.g. a provider's Notifier).
	Notify <-chan struct{}
}

// DefaultListInterval is how often Run lists each experiment's trials on
// its platform (to find orphans); every pass reads the unfinished ones.
const DefaultListInterval = 10 * time.Second

// Finished reports whether every experiment of p is done and has no
// trial left running, waiting or lost, or has nothing left that this
// working copy can do: what still runs, another working copy owns
// (ExperimentPlan.Elsewhere), and that working copy records its end.
func Finished(p *plan.Plan) bool {
	for _, ep := range p.Experiments {
		bs := ep.Progress.ByStatus
		unfinished := bs[state.Running] + bs[state.Waiting] + bs[state.Lost]
		elsewhere := 0
		for _, t := range ep.Elsewhere {
			switch t.Status {
			case state.Running, state.Waiting, state.Lost:
				elsewhere++
			}
		}
		if ep.Action == plan.Delete {
			return false
		}
		if ep.Paused {
			// Paused: finished once its trials are stopped.
			if bs[state.Running] > elsewhere {
				return false
			}
			continue
		}
		if !ep.Done && len(ep.Elsewhere) == 0 {
			return false
		}
		if unfinished > elsewhere {
			return false
		}
	}
	return !p.HasChanges()
}

// Run reconciles until every experiment is finished or ctx is cancelled:
// refresh → collect metrics → plan (tuner) → apply, then wait for a
// change or the interval. Ctrl-C (ctx) stops the loop; running trials keep
// running. It returns the last plan.
func (s *Session) Run(ctx context.Context, opts RunOptions) (*plan.Plan, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if s.ListInterval == 0 {
		s.ListInterval = DefaultListInterval
	}
	s.handoff = true
	defer func() { s.handoff = false }()
	var last *plan.Plan
	failures := 0 // consecutive passes with errors
	for {
		p, err := s.Plan(ctx, opts.Plan)
		if err == nil {
			last = p
			// Apply even a plan without trial actions: it records the
			// experiments' settings and done reasons.
			err = s.Apply(ctx, p)
			if err == nil && Finished(p) {
				if opts.OnPass != nil {
					opts.OnPass(p, nil)
				}
				return p, nil
			}
		}
		if opts.OnPass != nil {
			opts.OnPass(p, err)
		}
		if ctx.Err() != nil {
			return last, ctx.Err()
		}
		switch {
		case err == nil || onlySkipped(err):
			failures = 0
		case IsFatal(err):
			return last, err
		default:
			failures++
			if failures >= 5 {
				return last, err
			}
		}
		t := time.NewTimer(opts.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return last, ctx.Err()
		case <-opts.Notify:
			t.Stop()
		case <-t.C:
		}
	}
}

func onlySkipped(err error) bool {
	type multi interface{ Unwrap() []error }
	if m, ok := err.(multi); ok {
		for _, e := range m.Unwrap() {
			if !IsSkipped(e) {
				return false
			}
		}
		return true
	}
	return IsSkipped(err)
}
