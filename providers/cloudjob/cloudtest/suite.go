package cloudtest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// Lab is one fake service and the provider of a platform block over it,
// as a cloud platform's test builds it for the shared fault suite (Run).
type Lab struct {
	Provider providers.Provider
	Faults   *Faults // the fake's fault injection
	Runner   *Runner // the fake's job runner
	// Creates is how many jobs the service created.
	Creates func() int
	// Jobs lists the jobs the service knows, by the id its Runner
	// runs them under.
	Jobs func() []string
	// Vanish makes the service forget the job of a handle (killing it).
	Vanish func(providers.Handle)
}

// FaultCase is one fault the service injects N times into the requests
// Match accepts, before a trial that must still run exactly once.
type FaultCase struct {
	Name  string
	Fault Fault
	N     int
	Match func(*http.Request) bool
}

// Suite is what a cloud platform hands the shared suite.
type Suite struct {
	// NewLab builds a fresh fake service and provider for one subtest.
	NewLab func(t *testing.T) *Lab
	// Faults are the platform's calls under fault: its submit, its reads,
	// whatever else it calls (a token endpoint, a list before submit).
	Faults []FaultCase
	// Submit matches the request that submits a job: a 429 with
	// Retry-After on it must hold Start back for that long.
	Submit func(*http.Request) bool
	// JobKey is the handle's key naming the job ("name", "job"): a resumed
	// attempt runs under another one.
	JobKey string
}

// Run runs the cloud platforms' shared suite, as subtests: every fault
// converges (FaultsConverge), Retry-After is honoured
// (RetryAfterHonoured), a job the service forgot is resumed as a new
// attempt (LostJobResumes).
func Run(t *testing.T, s Suite) {
	t.Run("FaultsConverge", func(t *testing.T) { faultsConverge(t, s) })
	t.Run("RetryAfterHonoured", func(t *testing.T) { retryAfterHonoured(t, s) })
	t.Run("LostJobResumes", func(t *testing.T) { lostJobResumes(t, s) })
}

// Every fault converges: the trial runs once, and its job exists once.
func faultsConverge(t *testing.T, s Suite) {
	for _, tc := range s.Faults {
		t.Run(tc.Name, func(t *testing.T) {
			l := s.NewLab(t)
			l.Faults.RetryAfter = 1
			l.Faults.SlowFor = 3 * time.Second
			l.Faults.Inject(tc.Fault, tc.N, tc.Match)
			Start(t, l.Provider, "t1", FinalLine)
			o := WaitEnd(t, l.Provider, "t1")
			if o.Phase != providers.PhaseSucceeded || len(o.Metrics) != 1 || o.Metrics[0].Value != "0.5" {
				t.Errorf("after %s: %+v", tc.Name, o)
			}
			if got := l.Faults.Hits(tc.Fault); got != tc.N {
				t.Errorf("fault injected %d times, want %d", got, tc.N)
			}
			if n := l.Creates(); n != 1 {
				t.Errorf("%d jobs created, want 1", n)
			}
			if jobs := l.Jobs(); len(jobs) != 1 || l.Runner.Starts(jobs[0]) != 1 {
				t.Errorf("jobs %v: want one, run once", jobs)
			}
		})
	}
}

// A throttled submit waits what the service's Retry-After said.
func retryAfterHonoured(t *testing.T, s Suite) {
	l := s.NewLab(t)
	l.Faults.RetryAfter = 1
	l.Faults.Inject(Throttle, 1, s.Submit)
	begin := time.Now()
	Start(t, l.Provider, "t1", "true")
	if d := time.Since(begin); d < time.Second {
		t.Errorf("Start returned after %s, before the 1s Retry-After", d)
	}
	if got := l.Faults.Hits(Throttle); got != 1 {
		t.Errorf("throttled %d times, want 1 (does Submit match the submit request?)", got)
	}
}

// A job the service forgot is lost; Start resumes it as a new attempt,
// a new job, which runs to its end.
func lostJobResumes(t *testing.T, s Suite) {
	l := s.NewLab(t)
	h := Start(t, l.Provider, "t1", "sleep 1000")
	l.Vanish(h)
	o, err := l.Provider.Read(context.Background(), providers.ReadRequest{Experiment: "e", TrialID: "t1"})
	if err != nil || o.Phase != providers.PhaseLost {
		t.Fatalf("after the job vanished: %+v %v", o, err)
	}
	req := StartRequest(t, "t1", FinalLine)
	req.Resume = true
	h2, err := l.Provider.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if h2["attempt"] != "2" || h2[s.JobKey] == "" || h2[s.JobKey] == h[s.JobKey] {
		t.Errorf("resumed handle %v (first %v): want attempt 2 under a new %q", h2, h, s.JobKey)
	}
	if o := WaitEnd(t, l.Provider, "t1"); o.Phase != providers.PhaseSucceeded || len(o.Metrics) != 1 {
		t.Errorf("resumed trial: %+v", o)
	}
	if n := l.Creates(); n != 2 {
		t.Errorf("%d jobs created, want 2 (one per attempt)", n)
	}
}
