package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/state"
)

// reporter is a trial platform double whose running trial has reported n
// intermediate points; Read returns those past the offset, as a platform's
// incremental metric collection does.
type reporter struct {
	*recorder
	mu sync.Mutex
	n  int
}

func (r *reporter) Read(_ context.Context, req providers.ReadRequest) (providers.Observation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := providers.Observation{TrialID: req.TrialID, Exists: true, Phase: providers.PhaseRunning}
	from := int(req.MetricsOffset["m"])
	for i := from; i < r.n; i++ {
		o.Metrics = append(o.Metrics, providers.Metric{Type: "PERIODICAL", Sequence: i, Value: strconv.Itoa(i)})
	}
	o.MetricsOffset = map[string]int64{"m": int64(r.n)}
	return o, nil
}

// crashStore is the real state manager with a kill check: at every Save
// (a kill right after it persists the state) the metric files must hold
// every point the saved offsets have moved past; otherwise a crash there
// loses those points for good. failAppend makes that many appends fail.
type crashStore struct {
	*state.Manager
	t          *testing.T
	failAppend int
	lost       []string
}

func (c *crashStore) Save(s *state.State) error {
	for _, e := range s.Experiments {
		for id, tr := range e.Trials {
			pts, err := c.ReadMetrics(e.Name, id)
			if err != nil {
				c.t.Fatal(err)
			}
			have := map[int]bool{}
			for _, p := range pts {
				have[p.Sequence] = true
			}
			for i := 0; i < int(tr.MetricsOffset["m"]); i++ {
				if !have[i] {
					c.lost = append(c.lost, fmt.Sprintf("%s/%s point %d (offset %d saved before it was appended)", e.Name, id, i, tr.MetricsOffset["m"]))
				}
			}
		}
	}
	return c.Manager.Save(s)
}

func (c *crashStore) AppendMetrics(exp, trial string, pts []state.MetricPoint) error {
	if c.failAppend > 0 {
		c.failAppend--
		return errors.New("disk full")
	}
	return c.Manager.AppendMetrics(exp, trial, pts)
}

// TestRefreshAppendsBeforeSavingOffsets (issue 11, bug 3): a kill at any
// state save, or a failed append, never loses an intermediate point, and a
// replayed point is read back once.
func TestRefreshAppendsBeforeSavingOffsets(t *testing.T) {
	store := &crashStore{Manager: state.NewManager(t.TempDir()), t: t}
	mem := &memStore{}
	s, rec := newSession(config(1, 1), mem)
	rep := &reporter{recorder: rec}
	s.Store, s.Providers = store, oneProvider{rep}
	ctx := context.Background()
	p, err := s.Plan(ctx, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	report := func(n int) {
		rep.mu.Lock()
		rep.n = n
		rep.mu.Unlock()
	}
	report(3)
	if _, _, err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	report(5)
	store.failAppend = 1
	if _, _, err := s.Refresh(ctx); err == nil {
		t.Fatal("Refresh with a failed append: no error")
	}
	report(7)
	if _, _, err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// A replay (the state saved with older offsets, as after a kill
	// between the append and the save) appends points again: the same
	// report of the same attempt.
	st := s.State()
	for _, e := range st.Experiments {
		for id, tr := range e.Trials {
			if err := store.Manager.AppendMetrics(e.Name, id, []state.MetricPoint{{Type: "PERIODICAL", Sequence: 6, Attempt: tr.Attempts, Value: []byte("6")}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, l := range store.lost {
		t.Error("lost on a kill:", l)
	}
	for _, e := range st.Experiments {
		for id, tr := range e.Trials {
			pts, err := store.ReadMetrics(e.Name, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(pts) != 7 || tr.Intermediate != 7 {
				t.Errorf("trial %s: %d points read back, %d counted in the state, want 7: %+v", id, len(pts), tr.Intermediate, pts)
			}
			for i, p := range pts {
				if p.Sequence != i {
					t.Errorf("point %d has sequence %d", i, p.Sequence)
				}
			}
		}
	}
}
