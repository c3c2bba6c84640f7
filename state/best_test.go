package state

import (
	"math"
	"testing"
)

// TestBestIsOfTheCurrentGeneration: the best trial is the current
// generation's, never an earlier generation's better value (QA saw
// generation 1's trial named best of generation 2); NaN never wins; ties
// go to the earliest trial.
func TestBestIsOfTheCurrentGeneration(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	e := &Experiment{Goal: "maximize", Generation: 2, Trials: map[string]*Trial{
		"t0000": {ID: "t0000", Seq: 0, Generation: 1, Status: Succeeded, Value: v(0.99)},
		"t0001": {ID: "t0001", Seq: 1, Generation: 2, Status: Succeeded, Value: v(0.5)},
		"t0002": {ID: "t0002", Seq: 2, Generation: 2, Status: Succeeded, Value: v(math.NaN())},
		"t0003": {ID: "t0003", Seq: 3, Generation: 2, Status: Succeeded, Value: v(0.7)},
		"t0004": {ID: "t0004", Seq: 4, Generation: 2, Status: Failed, Value: v(0.9)},
		"t0005": {ID: "t0005", Seq: 5, Generation: 2, Status: Succeeded, Value: v(0.7)},
	}}
	if b := e.Best(); b == nil || b.ID != "t0003" {
		t.Errorf("best of generation 2 = %v, want t0003", b)
	}
	if b := e.BestOf(1); b == nil || b.ID != "t0000" {
		t.Errorf("best of generation 1 = %v, want t0000", b)
	}
	if b := e.BestOf(3); b != nil {
		t.Errorf("best of generation 3 (no trials yet) = %s, want none", b.ID)
	}
	e.Goal = "minimize"
	if b := e.Best(); b == nil || b.ID != "t0001" {
		t.Errorf("best of generation 2 when minimizing = %v, want t0001", b)
	}
}
