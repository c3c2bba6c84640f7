package results

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

func TestFromExperimentAndSeries(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(90 * time.Second)
	v := 0.5
	e := &state.Experiment{Name: "x", Goal: "minimize", Metric: "loss", Trials: map[string]*state.Trial{
		"t0001": {ID: "t0001", Seq: 1, Status: state.Succeeded, Value: &v, Final: map[string]float64{"loss": 0.5}, StartedAt: &t0, EndedAt: &t1},
		"t0002": {ID: "t0002", Seq: 2, Status: state.Running, StartedAt: &t0, Intermediate: 3},
		"t0003": {ID: "t0003", Seq: 3, Status: state.Waiting},
	}}
	rows := FromExperiment(e, t0.Add(time.Hour))
	if len(rows) != 3 || rows[0].ID != "t0001" || !rows[0].Best || rows[1].Best {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Duration == nil || *rows[0].Duration != 90*time.Second || rows[0].Elapsed != nil {
		t.Errorf("ended trial: duration %v elapsed %v", rows[0].Duration, rows[0].Elapsed)
	}
	if rows[1].Elapsed == nil || *rows[1].Elapsed != time.Hour || rows[1].Duration != nil {
		t.Errorf("running trial: elapsed %v", rows[1].Elapsed)
	}
	if rows[2].Params == nil || rows[2].Metrics == nil || rows[2].Elapsed != nil {
		t.Errorf("waiting trial: %+v", rows[2])
	}
	if !rows[1].NeedsSeries() || rows[0].NeedsSeries() {
		t.Errorf("NeedsSeries: running %v, succeeded %v", rows[1].NeedsSeries(), rows[0].NeedsSeries())
	}
	pts := []state.MetricPoint{
		{Type: "PERIODICAL", Sequence: 0, Value: json.RawMessage(`{"loss": 0.9, "acc": 0.1}`), Time: t0},
		{Type: "PERIODICAL", Sequence: 1, Value: json.RawMessage(`{"default": 0.4}`), Time: t0},
		{Type: "PERIODICAL", Sequence: 2, Value: json.RawMessage(`0.7`), Time: t0},
		{Type: "PERIODICAL", Sequence: 3, Value: json.RawMessage(`"junk"`), Time: t0},
		{Type: "FINAL", Sequence: 0, Value: json.RawMessage(`0.1`), Time: t0},
	}
	rows[1].AddSeries(pts, true)
	r := rows[1]
	if len(r.Series) != 3 || r.Latest == nil || r.Latest.Step != 2 || *r.Latest.Value != 0.7 {
		t.Fatalf("series %+v latest %+v", r.Series, r.Latest)
	}
	if r.BestIntermediate == nil || r.BestIntermediate.Step != 1 || *r.BestIntermediate.Value != 0.4 {
		t.Errorf("best intermediate (minimize) %+v", r.BestIntermediate)
	}
	if r.Series[0].Metrics["acc"] != 0.1 || *r.Series[0].Value != 0.9 {
		t.Errorf("object point %+v", r.Series[0])
	}
	if got := MetricNames(rows); len(got) != 1 || got[0] != "loss" {
		t.Errorf("MetricNames %v", got)
	}
}
