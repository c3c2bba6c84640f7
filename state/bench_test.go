package state

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkSave10000Trials saves a state of 10,000 trials after changing
// one of them, as apply does after each trial transition.
func BenchmarkSave10000Trials(b *testing.B) {
	m := NewManager(filepath.Join(b.TempDir(), ".trialform"))
	s := sampleState(10000)
	if err := m.Save(s); err != nil {
		b.Fatal(err)
	}
	trials := s.Experiments["mnist"].Trials
	i := 0
	for b.Loop() {
		trials[fmt.Sprintf("t%05d", i%10000)].Attempts++
		i++
		if err := m.Save(s); err != nil {
			b.Fatal(err)
		}
	}
	if s.Serial != uint64(i+1) {
		b.Fatalf("serial %d after %d changed saves", s.Serial, i+1)
	}
}

// BenchmarkSave10000TrialsUnchanged is the cost of a Save that finds
// nothing to write.
func BenchmarkSave10000TrialsUnchanged(b *testing.B) {
	m := NewManager(filepath.Join(b.TempDir(), ".trialform"))
	s := sampleState(10000)
	if err := m.Save(s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := m.Save(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoad10000Trials(b *testing.B) {
	m := NewManager(filepath.Join(b.TempDir(), ".trialform"))
	if err := m.Save(sampleState(10000)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := NewManager(m.Dir()).Load(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSave100000Trials is BenchmarkSave10000Trials at 100,000 trials:
// with the journal a change costs what changed, not the state's size.
func BenchmarkSave100000Trials(b *testing.B) {
	m := NewManager(filepath.Join(b.TempDir(), ".trialform"))
	s := sampleState(100000)
	if err := m.Save(s); err != nil {
		b.Fatal(err)
	}
	trials := s.Experiments["mnist"].Trials
	i := 0
	for b.Loop() {
		trials[fmt.Sprintf("t%05d", i%100000)].Attempts++
		i++
		if err := m.Save(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad100000Trials loads a state of 100,000 trials (state.json
// plus a journal of 100 changes) in a new Manager, as a command does.
func BenchmarkLoad100000Trials(b *testing.B) {
	m := NewManager(filepath.Join(b.TempDir(), ".trialform"))
	s := sampleState(100000)
	if err := m.Save(s); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		s.Experiments["mnist"].Trials[fmt.Sprintf("t%05d", i*997)].Attempts++
		if err := m.Save(s); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := NewManager(m.Dir()).Load(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveTrials100000Trials is BenchmarkSave100000Trials for a
// caller that names the trial it changed (PrepareTrials, as apply does):
// the cost is that of the change.
func BenchmarkSaveTrials100000Trials(b *testing.B) {
	m := NewManager(filepath.Join(b.TempDir(), ".trialform"))
	s := sampleState(100000)
	if err := m.Save(s); err != nil {
		b.Fatal(err)
	}
	trials := s.Experiments["mnist"].Trials
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("t%05d", i%100000)
		trials[id].Attempts++
		i++
		commit, err := m.PrepareTrials(s, []TrialRef{{"mnist", id}})
		if err == nil && commit != nil {
			err = commit()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if s.Serial != uint64(i+1) {
		b.Fatalf("serial %d after %d changed saves", s.Serial, i+1)
	}
}
