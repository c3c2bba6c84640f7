package ui

import (
	"testing"

	"github.com/trialform/trialform/state"
)

// objectiveNow takes an earlier generation's value from its final result
// by the current objective's key; a trial without that key is left out,
// and so is one of a state written before final results were kept (its
// Value may be another objective's). Under a strategy an earlier
// generation's Value counts only when it was taken for the current metric
// and strategy (ValueFor): the least loss is no acc.
func TestObjectiveNow(t *testing.T) {
	e := &state.Experiment{Generation: 2, Metric: "latency", Goal: "minimize"}
	v := func(f float64) *float64 { return &f }
	for _, tc := range []struct {
		name string
		t    *state.Trial
		want float64
		ok   bool
	}{
		{"current", &state.Trial{Generation: 2, Status: state.Succeeded, Value: v(10), Final: map[string]float64{"latency": 10}}, 10, true},
		{"reordered", &state.Trial{Generation: 1, Status: state.Succeeded, Value: v(0.9), Final: map[string]float64{"acc": 0.9, "latency": 30}}, 30, true},
		{"renamed", &state.Trial{Generation: 1, Status: state.Succeeded, Value: v(0.9), Final: map[string]float64{"acc": 0.9, "lat": 30}}, 0, false},
		{"legacy", &state.Trial{Generation: 1, Status: state.Succeeded, Value: v(12)}, 0, false},
		{"failed", &state.Trial{Generation: 2, Status: state.Failed, Value: v(10)}, 0, false},
	} {
		got, ok := objectiveNow(e, tc.t)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	e = &state.Experiment{Generation: 2, Metric: "acc", Goal: "maximize", Strategy: "max"}
	for _, tc := range []struct {
		name string
		t    *state.Trial
		want float64
		ok   bool
	}{
		{"current", &state.Trial{Generation: 2, Status: state.Succeeded, Value: v(0.9)}, 0.9, true},
		{"another strategy", &state.Trial{Generation: 1, Status: state.Succeeded, Value: v(0.1), ValueFor: &state.ValueFor{Metric: "loss", Strategy: "min"},
			Final: map[string]float64{"loss": 0.4, "acc": 0.8}}, 0, false},
		{"legacy", &state.Trial{Generation: 1, Status: state.Succeeded, Value: v(0.1), Final: map[string]float64{"loss": 0.4, "acc": 0.8}}, 0, false},
		{"same objective", &state.Trial{Generation: 1, Status: state.Succeeded, Value: v(0.95), ValueFor: &state.ValueFor{Metric: "acc", Strategy: "max"}}, 0.95, true},
	} {
		got, ok := objectiveNow(e, tc.t)
		if got != tc.want || ok != tc.ok {
			t.Errorf("strategy max: %s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
