package apply

import (
	"context"
	"sync"
	"testing"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner"
)

// readSpy records whether each Read let the platform skip a running
// trial's metrics.
type readSpy struct {
	*recorder
	mu   sync.Mutex
	skip map[string]bool
}

func (r *readSpy) Read(ctx context.Context, req providers.ReadRequest) (providers.Observation, error) {
	r.mu.Lock()
	r.skip[req.TrialID] = req.SkipRunningMetrics
	r.mu.Unlock()
	return r.recorder.Read(ctx, req)
}

// A plan (a session that keeps nothing it refreshes) lets the platforms
// leave running trials' metrics unread, unless the experiment has an
// assessor (its early stops read them); apply's refreshes read them.
func TestPlanOnlySkipsRunningMetrics(t *testing.T) {
	for _, tc := range []struct {
		name     string
		planOnly bool
		assessor bool
		want     bool
	}{
		{"plan", true, false, true},
		{"plan with an assessor", true, true, false},
		{"apply", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(2, 4)
			if tc.assessor {
				a := &schema.AssessorSpec{Name: "medianstop"}
				if err := a.Resolve(tuner.Builtin()); err != nil {
					t.Fatal(err)
				}
				cfg.Experiments["exp"].Assessor = a
			}
			store := &memStore{}
			s, rec := newSession(cfg, store)
			p, err := s.Plan(context.Background(), plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			spy := &readSpy{recorder: rec, skip: map[string]bool{}}
			s2 := NewSession(cfg, store.last(), store, oneProvider{spy})
			s2.Now, s2.PlanOnly = s.Now, tc.planOnly
			if _, err := s2.Plan(context.Background(), plan.Options{}); err != nil {
				t.Fatal(err)
			}
			if len(spy.skip) != 2 {
				t.Fatalf("%d trials read, want the 2 running", len(spy.skip))
			}
			for id, skip := range spy.skip {
				if skip != tc.want {
					t.Errorf("%s read with SkipRunningMetrics %v, want %v", id, skip, tc.want)
				}
			}
		})
	}
}
