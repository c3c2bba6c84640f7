package state

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// sampleTrial is a trial with every field set.
func sampleTrial(id string, seq int) *Trial {
	return &Trial{
		ID: id, Seq: seq, ParameterID: seq, Generation: 1, SpecHash: "9f86d081",
		Params: map[string]any{
			"lr": 0.001 * float64(seq+1), "batch": 32.0, "opt": "adam", "bn": true,
			"layer": map[string]any{"_name": "conv", "k": 3.0, "ch": []any{16.0, 32.0}},
		},
		Status: Succeeded, Reason: "exited 0",
		Handle:   map[string]string{"pid": fmt.Sprint(1000 + seq)},
		Attempts: 1, CreatedAt: t0, StartedAt: ptr(t0.Add(time.Second)), EndedAt: ptr(t0.Add(time.Minute)),
		ExitCode: ptr(0), Value: ptr(float64(seq) / 7), ValueFor: &ValueFor{Metric: "default"}, Retaken: &Retaken{ValueFor{Metric: "loss", Strategy: "min"}, ptr(0.25)}, Final: map[string]float64{"default": float64(seq) / 7, "loss": 0.25},
		Intermediate: 3, MetricsOffset: map[string]int64{"stdout": 1234},
		Provenance: &Provenance{Commit: "0123456789abcdef0123456789abcdef01234567", Version: "0.1.0"},
		Owner:      &WorkingCopy{ID: "wc-1", Where: "alice@lab:/home/alice/exp/.trialform"},
		Stopping:   &Stopping{Status: Canceled, Reason: "destroy"},
		Summary: &SeriesSummary{Objective: "default", Goal: "maximize",
			Latest: &SeriesPoint{Step: 2, Attempt: 1, Metrics: map[string]float64{"default": 0.5}, Time: t0.Add(50 * time.Second)},
			Best:   &SeriesPoint{Step: 1, Attempt: 1, Metrics: map[string]float64{"default": 0.6}, Time: t0.Add(40 * time.Second)}},
	}
}

// sampleState is a state with n trials in experiment "mnist" and one in
// "cifar".
func sampleState(n int) *State {
	s := New()
	e := &Experiment{
		Name: "mnist", ID: "k3x9p2qa", Platform: "local.default", Generation: 1, SpecHash: "9f86d081",
		PartHashes: map[string]string{"search_space": "aa", "tuner": "bb"},
		MaxTrials:  n, Concurrency: 4, MaxFailedTrials: 3, MaxDuration: "1h", TrialMaxDuration: "10m",
		Goal: "maximize", Metric: "default", CreatedAt: t0, NextSeq: n, Trials: map[string]*Trial{},
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("t%05d", i)
		e.Trials[id] = sampleTrial(id, i)
	}
	s.Experiments["mnist"] = e
	s.Experiments["cifar"] = &Experiment{Name: "cifar", ID: "zz00yy11", Platform: "local.default", Goal: "minimize", Metric: "loss",
		CreatedAt: t0, DoneAt: ptr(t0.Add(time.Hour)), DoneReason: "budget used", NextSeq: 1,
		Trials: map[string]*Trial{"Q1": {ID: "Q1", Status: Failed, CreatedAt: t0, Params: map[string]any{"x": -1.5}}}}
	return s
}

func TestNew(t *testing.T) {
	a, b := New(), New()
	if a.Version != FormatVersion || a.Serial != 0 || a.Experiments == nil || len(a.Experiments) != 0 {
		t.Fatalf("New() = %+v", a)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(a.Lineage) {
		t.Errorf("lineage %q is not a UUID", a.Lineage)
	}
	if a.Lineage == b.Lineage {
		t.Errorf("two New() states share lineage %s", a.Lineage)
	}
}

func TestNewExperimentID(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9]{8}$`)
	seen := map[string]bool{}
	chars := map[rune]bool{}
	for range 2000 {
		id := NewExperimentID()
		if !re.MatchString(id) {
			t.Fatalf("NewExperimentID() = %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
		for _, c := range id {
			chars[c] = true
		}
	}
	if len(chars) != 36 {
		t.Errorf("16000 random characters used only %d of 36 letters and digits", len(chars))
	}
}

func TestExperimentAndSortedTrials(t *testing.T) {
	s := sampleState(0)
	if s.Experiment("nope") != nil {
		t.Error("Experiment of a missing name is not nil")
	}
	if (*State)(nil).Experiment("x") != nil {
		t.Error("Experiment on a nil state is not nil")
	}
	e := s.Experiment("mnist")
	if e == nil || e.Name != "mnist" {
		t.Fatalf("Experiment(mnist) = %v", e)
	}
	for _, tr := range []struct {
		id  string
		seq int
	}{{"c", 2}, {"a", 10}, {"b", 2}, {"z", 0}, {"y", 1}} {
		e.Trials[tr.id] = &Trial{ID: tr.id, Seq: tr.seq}
	}
	var got []string
	for _, tr := range e.SortedTrials() {
		got = append(got, tr.ID)
	}
	if want := []string{"z", "y", "b", "c", "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SortedTrials order = %v, want %v", got, want)
	}
	if (*Experiment)(nil).SortedTrials() != nil {
		t.Error("SortedTrials of nil experiment")
	}
}

func TestCloneIsDeep(t *testing.T) {
	s := sampleState(3)
	c := s.Clone()
	if !reflect.DeepEqual(s, c) {
		t.Fatal("clone differs from original")
	}
	// Mutate everything reachable in the clone; the original must not move.
	before, _ := (&encoder{}).encode(s)
	ce := c.Experiments["mnist"]
	ce.PartHashes["tuner"] = "changed"
	ce.Name = "x"
	*ce.Trials["t00000"].StartedAt = t0.Add(99 * time.Hour)
	*ce.Trials["t00000"].Value = math.Pi
	*ce.Trials["t00000"].ExitCode = 9
	ce.Trials["t00000"].Params["lr"] = 9.0
	ce.Trials["t00000"].Params["layer"].(map[string]any)["k"] = 5.0
	ce.Trials["t00000"].Params["layer"].(map[string]any)["ch"].([]any)[0] = 1.0
	ce.Trials["t00000"].Handle["pid"] = "1"
	ce.Trials["t00000"].Final["loss"] = 9
	ce.Trials["t00000"].MetricsOffset["stdout"] = 9
	*c.Experiments["cifar"].DoneAt = t0
	delete(ce.Trials, "t00001")
	delete(c.Experiments, "cifar")
	after, _ := (&encoder{}).encode(s)
	if string(before.body) != string(after.body) {
		t.Error("mutating the clone changed the original")
	}
	if (*State)(nil).Clone() != nil {
		t.Error("Clone of nil state is not nil")
	}
}

type namedParams map[string]any

func TestCloneNamedMapParams(t *testing.T) {
	tr := &Trial{Params: map[string]any{"n": namedParams{"_name": "a", "x": 1.0}, "l": []float64{1, 2}}}
	c := tr.Clone()
	c.Params["n"].(namedParams)["x"] = 2.0
	c.Params["l"].([]float64)[0] = 5
	if tr.Params["n"].(namedParams)["x"] != 1.0 || tr.Params["l"].([]float64)[0] != 1 {
		t.Errorf("Clone shares named map or typed slice values: %v", tr.Params)
	}
}

func TestMove(t *testing.T) {
	s := New()
	s.Experiments["a"] = &Experiment{Name: "a", ID: "id", Platform: "local.default", Trials: map[string]*Trial{"t0000": {ID: "t0000"}}}
	s.Experiments["c"] = &Experiment{Name: "c", Trials: map[string]*Trial{}}
	if err := s.Move("a", "c"); err == nil || !strings.Contains(err.Error(), `"c" is already in the state`) {
		t.Fatalf("move onto an existing experiment: %v", err)
	}
	if err := s.Move("x", "y"); err == nil {
		t.Fatal("move of a missing experiment succeeded")
	}
	if err := s.Move("a", "b"); err != nil {
		t.Fatal(err)
	}
	e := s.Experiments["b"]
	if s.Experiments["a"] != nil || e == nil || e.Name != "b" || e.ID != "id" || e.OnPlatform() != "a" || e.Trials["t0000"] == nil {
		t.Fatalf("after a -> b: %+v", s.Experiments)
	}
	// the old name is taken on the platform until the experiment leaves
	if err := NameFree(s, "a", ""); err == nil || !strings.Contains(err.Error(), `still carry the name "a"`) {
		t.Fatalf("NameFree(a) = %v", err)
	}
	// moving back restores the plain name
	if err := s.Move("b", "a"); err != nil {
		t.Fatal(err)
	}
	if e := s.Experiments["a"]; e.PlatformName != "" || e.OnPlatform() != "a" {
		t.Fatalf("after moving back: %+v", e)
	}
}
