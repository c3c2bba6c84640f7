package plan

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/state"
)

// holdingPlatform holds trials by id, each in a phase, and records what a
// refresh asked of it.
type holdingPlatform struct {
	specPlatform
	held map[string]providers.Phase

	mu    sync.Mutex
	read  []string // trials Read
	lists int      // calls of List
}

func (p *holdingPlatform) Read(_ context.Context, req providers.ReadRequest) (providers.Observation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read = append(p.read, req.TrialID)
	ph, ok := p.held[req.TrialID]
	return providers.Observation{TrialID: req.TrialID, Exists: ok, Phase: ph}, nil
}

func (p *holdingPlatform) List(ctx context.Context, exp string) ([]providers.Observation, error) {
	p.mu.Lock()
	p.lists++
	p.mu.Unlock()
	return p.ListUnknown(ctx, exp, func(string) bool { return false })
}

func (p *holdingPlatform) ListUnknown(_ context.Context, exp string, known func(string) bool) ([]providers.Observation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []providers.Observation
	for id, ph := range p.held {
		if !known(id) {
			out = append(out, providers.Observation{TrialID: id, Experiment: exp, Exists: true, Phase: ph})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TrialID < out[j].TrialID })
	return out, nil
}

// A refresh reads only the unfinished trials of the state and asks the
// platform for the trials the state does not know, so what it costs does
// not grow with finished history (issue 30); the orphan is still found.
func TestRefreshListsOnlyUnknownTrials(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Succeeded, 1), trial(1, state.Failed), trial(2, state.Running))
	p := &holdingPlatform{held: map[string]providers.Phase{
		"t0000": providers.PhaseSucceeded, "t0001": providers.PhaseFailed,
		"t0002": providers.PhaseRunning, "t0007": providers.PhaseRunning,
	}}
	obs, err := Refresh(context.Background(), st, onePlatform{p}, map[string]string{"exp": "local.default"})
	if err != nil || len(obs.Warnings) > 0 {
		t.Fatal(err, obs.Warnings)
	}
	if !slices.Equal(p.read, []string{"t0002"}) {
		t.Errorf("read %v, want only the running t0002", p.read)
	}
	if p.lists != 0 {
		t.Errorf("List called %d times; an UnknownLister is asked only for unknown trials", p.lists)
	}
	if got := obs.Listed["exp"]; len(got) != 1 || got[0].TrialID != "t0007" {
		t.Fatalf("listed %+v, want only the orphan t0007", got)
	}
	pl := compute(t, cfg, st, t0, Options{}, obs.Listed["exp"]...)
	var orphans []string
	for _, ep := range pl.Experiments {
		for _, a := range ep.Trials {
			if a.Cause == CauseOrphan {
				orphans = append(orphans, a.TrialID)
			}
		}
	}
	if !slices.Equal(orphans, []string{"t0007"}) {
		t.Errorf("orphans %v, want [t0007]", orphans)
	}
}

// warningPlatform has something to tell the user once (providers.Warner).
type warningPlatform struct {
	holdingPlatform
	told bool
}

func (p *warningPlatform) Warnings() []string {
	if p.told {
		return nil
	}
	p.told = true
	return []string{"cannot watch the trials"}
}

// A platform's warnings (a Kubernetes account that may not watch its
// trials) reach the refresh's warnings, named by platform, once.
func TestRefreshReportsPlatformWarnings(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running))
	p := &warningPlatform{holdingPlatform: holdingPlatform{held: map[string]providers.Phase{"t0000": providers.PhaseRunning}}}
	obs, err := Refresh(context.Background(), st, onePlatform{p}, map[string]string{"exp": "local.default"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(obs.Warnings, []string{"platform local.default: cannot watch the trials"}) {
		t.Errorf("warnings %q", obs.Warnings)
	}
	obs, _ = Refresh(context.Background(), st, onePlatform{p}, map[string]string{"exp": "local.default"})
	if len(obs.Warnings) != 0 {
		t.Errorf("warned again: %q", obs.Warnings)
	}
}

// unansweringPlatform fails every read the same way, as a machine that
// does not answer does, and has something to say about its List.
type unansweringPlatform struct {
	holdingPlatform
	warn []string
}

func (p *unansweringPlatform) Read(ctx context.Context, req providers.ReadRequest) (providers.Observation, error) {
	return providers.Observation{}, errors.New("machine m1 unreachable: connection refused")
}

func (p *unansweringPlatform) ListUnknown(ctx context.Context, exp string, _ func(string) bool) ([]providers.Observation, error) {
	return p.List(ctx, exp)
}

func (p *unansweringPlatform) List(ctx context.Context, exp string) ([]providers.Observation, error) {
	p.warn = append(p.warn, "machine m1 unreachable: connection refused; the trials of experiment "+exp+" on it were not listed")
	return nil, nil
}

func (p *unansweringPlatform) Warnings() []string {
	w := p.warn
	p.warn = nil
	return w
}

// The same read failure of many trials is one warning naming them, and
// what the List met is told in the same refresh (it waited for the next).
func TestRefreshTellsAnUnansweringMachineOnce(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Running), trial(1, state.Running), trial(2, state.Running))
	p := &unansweringPlatform{}
	obs, err := Refresh(context.Background(), st, onePlatform{p}, map[string]string{"exp": "local.default"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"platform local.default: machine m1 unreachable: connection refused; the trials of experiment exp on it were not listed",
		"read 3 trials (exp/t0000, exp/t0001, exp/t0002): machine m1 unreachable: connection refused",
	}
	if !slices.Equal(obs.Warnings, want) {
		t.Errorf("warnings\n%q\nwant\n%q", obs.Warnings, want)
	}
}
