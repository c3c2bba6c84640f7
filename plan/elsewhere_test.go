package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// alice owns a trial: it runs on her working copy's local platform.
func alices(t *state.Trial) *state.Trial {
	t.Owner = &state.WorkingCopy{ID: "alice-id", Where: "alice@lab:/home/alice/exp/.trialform"}
	return t
}

// TestElsewhereTrialsLeftToTheirOwner: the unfinished trials another
// working copy owns are never resumed, started or torn down here; they
// hold their concurrency slots and count toward max_trials as recorded;
// the plan says where they run.
func TestElsewhereTrialsLeftToTheirOwner(t *testing.T) {
	cfg := testConfig()
	at := t0.Add(time.Minute)
	in := func(st *state.State, opts Options) Input {
		return Input{Config: cfg, State: st, Now: at, Options: opts, Me: "bob-id"}
	}
	cases := []struct {
		name   string
		trials []*state.Trial
		want   string
	}{
		// Without the owner, LOST would resume and WAITING would start here.
		{"running and lost elsewhere hold both slots", []*state.Trial{alices(trial(0, state.Running)), alices(trial(1, state.Lost))}, ""},
		{"a recorded intent elsewhere is not started here", []*state.Trial{alices(trial(0, state.Waiting))}, "+t0001"},
		{"own lost trial resumes beside one elsewhere", []*state.Trial{alices(trial(0, state.Running)), trial(1, state.Lost)}, "~t0001"},
		{"own trial of this working copy", []*state.Trial{{ID: "t0000", Status: state.Lost, Generation: 1, Owner: &state.WorkingCopy{ID: "bob-id"}}}, "~t0000 +t0001"},
		{"ended elsewhere counts as any ended trial", []*state.Trial{alices(trial(0, state.Succeeded, 1)), alices(trial(1, state.Failed))}, "+t0002 +t0003"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Compute(in(applied(cfg, c.trials...), Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if got := actions(p); got != c.want {
				t.Fatalf("actions = %q, want %q", got, c.want)
			}
		})
	}

	// The budget: 5 trials, 4 ended, 1 running elsewhere: nothing to
	// create, and not done while it runs (it may still succeed).
	st := applied(cfg, trial(0, state.Succeeded, 1), trial(1, state.Succeeded, 1), trial(2, state.Failed), trial(3, state.Succeeded, 1), alices(trial(4, state.Running)))
	p, err := Compute(in(st, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	ep := p.Experiments[0]
	if got := actions(p); got != "" || ep.Done {
		t.Fatalf("budget: actions %q, done %v (%s)", got, ep.Done, ep.DoneReason)
	}
	if len(ep.Elsewhere) != 1 || ep.Elsewhere[0].TrialID != "t0004" || ep.Elsewhere[0].Where != "alice@lab:/home/alice/exp/.trialform" {
		t.Fatalf("elsewhere = %+v", ep.Elsewhere)
	}
	if !strings.Contains(strings.Join(ep.Notes, "\n"), "trial t0004 runs in alice@lab:/home/alice/exp/.trialform: left to that working copy") {
		t.Fatalf("notes = %q", ep.Notes)
	}

	// Without a working copy (Me ""), every trial is this one's, as before.
	p = compute(t, cfg, applied(cfg, alices(trial(0, state.Lost))), at, Options{})
	if got := actions(p); got != "~t0000 +t0001" {
		t.Fatalf("no working copy: actions = %q", got)
	}

	// Nothing tears down a trial elsewhere: a new generation, paused.
	// The old generation's trial that still runs elsewhere holds its
	// concurrency slot (a controller and a laptop flipping generations ran
	// 4 trials at concurrency 2).
	newGen := testConfig(func(e *schema.Experiment) { e.Tuner.Seed = 2; e.Tuner.Settings = map[string]any{"seed": float64(2)} })
	p, err = Compute(Input{Config: newGen, State: applied(cfg, alices(trial(0, state.Running)), trial(1, state.Running)), Now: at, Me: "bob-id"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); got != "-t0001 +t0002" {
		t.Fatalf("new generation: actions = %q", got)
	}
	// Once it ended elsewhere, both slots are this generation's.
	p, err = Compute(Input{Config: newGen, State: applied(cfg, alices(trial(0, state.Succeeded, 1)), trial(1, state.Running)), Now: at, Me: "bob-id"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); got != "-t0001 +t0002 +t0003" {
		t.Fatalf("new generation, the trial elsewhere ended: actions = %q", got)
	}
	paused := testConfig(func(e *schema.Experiment) { e.Paused = true })
	p, err = Compute(Input{Config: paused, State: applied(cfg, alices(trial(0, state.Running)), trial(1, state.Running)), Now: at, Me: "bob-id"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); got != "-t0001" {
		t.Fatalf("paused: actions = %q", got)
	}

	// -stop of a trial elsewhere is refused, naming where it runs.
	_, err = Compute(in(applied(cfg, alices(trial(0, state.Running))), Options{Stop: []string{"experiment.exp.trial.t0000"}}))
	if err == nil || !strings.Contains(err.Error(), "runs in alice@lab:/home/alice/exp/.trialform") {
		t.Fatalf("-stop elsewhere: %v", err)
	}

	// destroy is refused; a removed experiment waits for its owner.
	st = applied(cfg, alices(trial(0, state.Running)), trial(1, state.Running))
	_, err = Compute(in(st, Options{Destroy: true}))
	if err == nil || !strings.Contains(err.Error(), "experiment exp cannot be destroyed from this working copy: trial t0000 runs in alice@lab:/home/alice/exp/.trialform") {
		t.Fatalf("destroy: %v", err)
	}
	empty := &schema.Config{Experiments: map[string]*schema.Experiment{}}
	p, err = Compute(Input{Config: empty, State: st, Now: at, Me: "bob-id"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); got != "-t0001" || p.Experiments[0].Action != Delete {
		t.Fatalf("removed: %q %v", got, p.Experiments[0].Action)
	}
	st.Experiments["exp"].Trials["t0001"].Status = state.Canceled
	p, err = Compute(Input{Config: empty, State: st, Now: at, Me: "bob-id"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); got != "" || p.Experiments[0].Action != NoOp || p.HasChanges() {
		t.Fatalf("removed, only elsewhere left: %q %v", got, p.Experiments[0].Action)
	}
}

// TestSpecHashSameInEveryWorkingCopy: the default code directory is the
// configuration directory, wherever the working copy is; two working copies
// sharing a state must not see a new generation in each other's paths. A
// state that recorded the hash of the absolute path (before) is not at a
// new generation either.
func TestSpecHashSameInEveryWorkingCopy(t *testing.T) {
	at := func(dir string) *schema.Config {
		return testConfig(func(e *schema.Experiment) {
			e.Trial.CodeDir = dir
			e.Trial.CodeDirInConfig = "."
		})
	}
	a, b := at("/home/alice/exp"), at("/home/bob/src/exp")
	if SpecHash(a.Experiments["exp"]) != SpecHash(b.Experiments["exp"]) {
		t.Fatal("the spec hash depends on where the working copy is")
	}
	st := applied(b, trial(0, state.Running))
	p, err := Compute(Input{Config: a, State: st, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if p.Experiments[0].NewGeneration {
		t.Fatalf("new generation in another working copy: %v", p.Experiments[0].GenerationReason)
	}
	// A code directory outside the configuration is itself.
	out := testConfig(func(e *schema.Experiment) { e.Trial.CodeDir = "/data/code" })
	if SpecHash(out.Experiments["exp"]) == SpecHash(a.Experiments["exp"]) {
		t.Fatal("code directories /data/code and ./ hash the same")
	}
	// The hash states recorded before: the absolute path.
	e := st.Experiments["exp"]
	e.SpecHash, e.PartHashes = legacySpecHash(a.Experiments["exp"]), partHashes(a.Experiments["exp"], true)
	p, err = Compute(Input{Config: a, State: st, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if p.Experiments[0].NewGeneration || p.Experiments[0].SpecHash != SpecHash(a.Experiments["exp"]) {
		t.Fatalf("a state of the absolute path's hash: new generation %v (%v)", p.Experiments[0].NewGeneration, p.Experiments[0].GenerationReason)
	}
	// A real change is still one.
	moved := at("/home/alice/exp/src")
	moved.Experiments["exp"].Trial.CodeDirInConfig = "src"
	p, err = Compute(Input{Config: moved, State: st, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Experiments[0].NewGeneration {
		t.Fatal("code_dir changed, no new generation")
	}
}

// TestNewExperimentBesideUnknownTrials: an experiment the state does not
// have, whose platform holds unfinished trials of it (a lost state, a
// changed backend, another state): the plan warns, naming them and how to
// adopt them, and numbers its new trials past them.
func TestNewExperimentBesideUnknownTrials(t *testing.T) {
	cfg := testConfig()
	listed := []providers.Observation{
		{TrialID: "t0000", Exists: true, Phase: providers.PhaseRunning},
		{TrialID: "t0001", Exists: true, Phase: providers.PhaseRunning},
		{TrialID: "t0004", Exists: true, Phase: providers.PhaseSucceeded},
	}
	p := compute(t, cfg, state.New(), t0, Options{}, listed...)
	if got := actions(p); got != "+t0005 +t0006" {
		t.Fatalf("actions = %q, want the new trials past t0004", got)
	}
	w := strings.Join(p.Warnings, "\n")
	for _, want := range []string{"experiment exp is not in the state but local.default holds 2 unfinished trial(s) of it (t0000, t0001)",
		"new trials are numbered past them", "trialform import -all exp"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
	if strings.Contains(w, "cannot start") {
		t.Errorf("warnings say a new trial cannot start: %q", w)
	}
}

// TestPlanNotesRemovedTrials: a trial removed from the state with state rm
// (its id below NextSeq, so new trials need not be numbered past it) still
// gets a note when the plan spends its budget slot again (docs/state.md:
// "the plan says so and how to add them back").
func TestPlanNotesRemovedTrials(t *testing.T) {
	cfg := testConfig()
	st := applied(cfg, trial(0, state.Succeeded, 1), trial(1, state.Succeeded, 1))
	st.Experiments["exp"].NextSeq = 3 // t0002 was removed with state rm
	p := compute(t, cfg, st, t0, Options{}, providers.Observation{TrialID: "t0002", Exists: true, Phase: providers.PhaseSucceeded})
	ep := p.Experiments[0]
	if got := actions(p); !strings.HasPrefix(got, "+t0003") {
		t.Fatalf("actions = %q", got)
	}
	notes := strings.Join(ep.Notes, "\n")
	if !strings.Contains(notes, "holds 1 ended trial(s) that the state does not record (t0002)") || !strings.Contains(notes, "trialform import -all exp") {
		t.Fatalf("notes = %q", notes)
	}
}
