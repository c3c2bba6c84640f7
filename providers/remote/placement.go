package remote

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// dialGrace is how long a placement (a Start's search for the trial and
// for a machine with a free slot) still waits for machines whose dial
// has not finished once another machine has answered: a machine that
// accepts connections but never greets must not hold every first Start
// of a process for the whole dial timeout (10 s).
const dialGrace = 2 * time.Second

// stillDialling is a machine left out of one placement: its dial had not
// finished dialGrace after another machine answered. It is not a failed
// dial: the dial goes on, and its result is pooled or backed off as any.
type stillDialling struct {
	key    string
	waited time.Duration // since the dial began, or since another answered
}

func (e *stillDialling) Error() string {
	return fmt.Sprintf("machine %s still connecting after %s (others answered, so it was not waited for; the dial goes on)", e.key, e.waited.Round(100*time.Millisecond))
}

// eachMachine runs fn on each of ms at once, after connecting it (the
// pooled connection, or a dial), and returns their results by index. It
// waits for all of them, but for one that is still connecting dialGrace
// after fn succeeded on another: that one's error is a *stillDialling,
// its dial goes on in the background (bounded by its own timeout and by
// Close, not by ctx), and fn does not run on it.
func eachMachine[T any](ctx context.Context, r *Remote, ms []*machine, fn func(ctx context.Context, i int, m *machine) (T, error)) ([]T, []error) {
	type result struct {
		i   int
		v   T
		err error
	}
	const (
		connecting = iota
		running
		leftOut
	)
	vals := make([]T, len(ms))
	errs := make([]error, len(ms))
	states := make([]atomic.Int32, len(ms))
	results := make(chan result, len(ms)) // left-out goroutines never block
	dctx, cancel := r.dialContext(ctx)
	var dialling atomic.Int32
	dialling.Store(int32(len(ms)))
	for i, m := range ms {
		go func() {
			_, _, err := m.connected(dctx)
			if dialling.Add(-1) == 0 {
				cancel()
			}
			if !states[i].CompareAndSwap(connecting, running) {
				return // left out
			}
			var v T
			if err == nil {
				v, err = fn(ctx, i, m)
			}
			results <- result{i, v, err}
		}()
	}
	pending := len(ms)
	var answered time.Time
	var tick, late <-chan time.Time
	done := ctx.Done()
	leaveOut := func(why func(m *machine) error) {
		for i, m := range ms {
			if err := why(m); err != nil && states[i].CompareAndSwap(connecting, leftOut) {
				pending--
				errs[i] = err
			}
		}
	}
	for pending > 0 {
		select {
		case res := <-results:
			pending--
			vals[res.i], errs[res.i] = res.v, res.err
			if res.err == nil && answered.IsZero() {
				answered = time.Now()
				t := time.NewTicker(dialGrace / 20)
				defer t.Stop()
				tick = t.C
			}
		case <-tick:
		case <-done:
			done = nil // the running ones end on ctx too
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// A dial ends at that deadline too, saying why: a
				// moment for it to say so.
				t := time.NewTimer(dialGrace / 2)
				defer t.Stop()
				late = t.C
				continue
			}
			leaveOut(func(*machine) error { return ctx.Err() })
		case <-late:
			leaveOut(func(*machine) error { return ctx.Err() })
		}
		if !answered.IsZero() {
			// Still connecting: waited for dialGrace since another
			// machine answered, or dialling that long already (the
			// dial an earlier call left out).
			now := time.Now()
			leaveOut(func(m *machine) error {
				waited := now.Sub(answered)
				if since := m.dialSince.Load(); since != 0 {
					waited = max(waited, now.Sub(time.Unix(0, since)))
				}
				if waited >= dialGrace {
					return &stillDialling{m.key, waited}
				}
				return nil
			})
		}
	}
	return vals, errs
}

// dialContext is ctx for dials that may outlive the call that started
// them: ctx's deadline holds, not its cancellation, and Close ends them.
func (r *Remote) dialContext(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(r.bg, cancel)
	if dl, ok := ctx.Deadline(); ok {
		var cancelDl context.CancelFunc
		c, cancelDl = context.WithDeadline(c, dl)
		return c, func() { stop(); cancelDl(); cancel() }
	}
	return c, func() { stop(); cancel() }
}
