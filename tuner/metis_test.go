package tuner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

// TestMetisRepeatsOutlier: on a smooth function with one corrupted result,
// metis's next trial re-runs that trial's parameters with a note naming
// it; once the point has two results it is not repeated again, and clean
// histories give no repeat.
func TestMetisRepeatsOutlier(t *testing.T) {
	fn := braninFunc()
	tn := mustNew(t, "metis", nil, fn.sp).(Explainer)
	hist := loop(t, tn, fn.sp, Minimize, 2, 25, fn.f)
	for _, h := range hist {
		if h.Seq > 1 && reflect.DeepEqual(h.Params, hist[0].Params) {
			t.Fatalf("clean history: trial %d repeats trial 1", h.Seq)
		}
	}
	notes := func(h []Observation, seqs ...int) ([]space.Params, []Note) {
		out, ns, err := tn.SuggestNotes(Request{Space: fn.sp, Goal: Minimize, Seed: 2, History: h, Seqs: seqs})
		if err != nil {
			t.Fatal(err)
		}
		return out, ns
	}
	if _, ns := notes(hist, 26); ns[0].RepeatOf != 0 {
		t.Fatalf("clean history: note %+v", ns[0])
	}
	bad := append([]Observation(nil), hist...)
	bad[17].Value += 150 // branin spans about 0.4 to 300 here
	out, ns := notes(bad, 27, 26)
	if ns[1].RepeatOf != 18 || !reflect.DeepEqual(out[1], bad[17].Params) || !strings.Contains(ns[1].Why, "trial 18") {
		t.Fatalf("seq 26: %v, note %+v; want a repeat of trial 18 (%v)", out[1], ns[1], bad[17].Params)
	}
	if ns[0].RepeatOf != 0 || reflect.DeepEqual(out[0], out[1]) {
		t.Fatalf("seq 27 should be a new point: %v %+v", out[0], ns[0])
	}
	// The repeat ran and gave the true value: no more repeats of it.
	bad = append(bad, Observation{Seq: 26, Params: out[1], State: Completed, Value: fn.f(out[1])})
	if _, ns := notes(bad, 27); ns[0].RepeatOf != 0 {
		t.Fatalf("second repeat: %+v", ns[0])
	}
	// resample = false turns the diagnostic off.
	off := mustNew(t, "metis", map[string]any{"resample": false}, fn.sp).(Explainer)
	if _, ns, _ := off.SuggestNotes(Request{Space: fn.sp, Goal: Minimize, Seed: 2, History: bad[:25], Seqs: []int{26}}); ns[0].RepeatOf != 0 {
		t.Fatalf("resample = false: %+v", ns[0])
	}
}
