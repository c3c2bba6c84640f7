package trialproto

import (
	"errors"
	"reflect"
	"regexp"
	"testing"

	"github.com/trialform/trialform/providers"
)

func TestCollector(t *testing.T) {
	re := regexp.MustCompile(`(?P<name>\w+)=(?P<value>[-0-9.e]+)`)
	c := Collector{ParameterID: 7, Regex: re}
	var got []string
	feed := func(lines ...string) {
		for _, l := range lines {
			if m, ok := c.Line(l); ok {
				got = append(got, m.Type+" "+itoa(m.ParameterID)+" "+itoa(m.Sequence)+" "+m.Value)
			}
		}
	}
	feed("epoch 1", "trialform: intermediate 1", "loss=0.9 acc=0.1",
		`NNISDK_MEb'{"parameter_id": 2, "trial_job_id": "t", "type": "PERIODICAL", "sequence": 9, "value": "3"}'`, "loss=0.5")
	want := []string{"PERIODICAL 7 0 1", `PERIODICAL 7 1 {"loss":0.9,"acc":0.1}`, "PERIODICAL 2 9 3", `PERIODICAL 7 2 {"loss":0.5}`}
	if !equal(got, want) || c.Seq != 3 || c.Final {
		t.Fatalf("metrics %q (seq %d, final %v), want %q", got, c.Seq, c.Final, want)
	}
	// The state carries over, as a platform's offsets do between reads.
	next := Collector{ParameterID: 7, Regex: re, Seq: c.Seq}
	if m, ok := next.Line("trialform: intermediate 4"); !ok || m.Sequence != 3 {
		t.Errorf("after offsets: %+v", m)
	}
	// The synthetic final: the last value of each regexp name.
	m, ok := c.Finish(false)
	if !ok || m.Type != TypeFinal || m.ParameterID != 7 || m.Value != `{"loss":0.5,"acc":0.1}` || c.Final {
		t.Errorf("Finish = %+v, %v (final %v)", m, ok, c.Final)
	}
	if m = c.Add(m); !c.Final || m.Sequence != 0 {
		t.Errorf("Add of the synthetic final: %+v, final %v", m, c.Final)
	}
	if _, ok := c.Finish(false); ok {
		t.Error("Finish gave a final after one was added")
	}
	// No synthetic final when the trial reported one, on stdout or in
	// NNI's metric file, or when no regexp line came.
	own := Collector{ParameterID: 1, Regex: re}
	own.Line("loss=1")
	own.Line("trialform: 0.5")
	if _, ok := own.Finish(false); ok {
		t.Error("a final after the trial's own FINAL")
	}
	nni := Collector{ParameterID: 1, Regex: re}
	nni.Line("loss=1")
	if _, ok := nni.Finish(true); ok {
		t.Error("a final after NNI's metric file had one")
	}
	if _, ok := (&Collector{}).Finish(false); ok {
		t.Error("a final without regexp metrics")
	}
	// A garbage FINAL is no final result.
	g := Collector{Regex: re}
	g.Line("loss=2")
	if m, ok := g.Line("trialform: hello"); !ok || m.Garbage == "" || g.Final {
		t.Errorf("garbage line: %+v, final %v", m, g.Final)
	}
	if _, ok := g.Finish(false); !ok {
		t.Error("no synthetic final after a garbage FINAL")
	}
	if m := g.Add(finalLine(t)); m.ParameterID != 0 || !g.Final {
		t.Errorf("Add = %+v", m)
	}
}

// finalLine parses a FINAL with no parameter id, as a termination
// message holds it.
func finalLine(t *testing.T) providers.Metric {
	m, ok := ParseStdoutLine("trialform: 0.25", nil)
	if !ok {
		t.Fatal("trialform: 0.25 did not parse")
	}
	return m
}

func TestHasFinal(t *testing.T) {
	fin, _ := ParseStdoutLine("trialform: 0.5", nil)
	fin.ParameterID, fin.Sequence = 0, 0
	per, _ := ParseStdoutLine("trialform: intermediate 0.5", nil)
	per.ParameterID, per.Sequence = 0, 0
	if HasFinal(EncodeMetricRecord(per, "t")) || !HasFinal(append(EncodeMetricRecord(per, "t"), EncodeMetricRecord(fin, "t")...)) || HasFinal(nil) {
		t.Error("HasFinal")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadNNIAttempts(t *testing.T) {
	type call struct {
		a       int
		current bool
		from    int64
	}
	var calls []call
	read := func(a int, current bool, from int64) ([]providers.Metric, int64, error) {
		calls = append(calls, call{a, current, from})
		return []providers.Metric{{Sequence: a}}, 100*int64(a) + from, nil
	}
	// From the middle of attempt 2's file, now at attempt 3: the rest of
	// the archived file, then the current one from its start.
	recs, next, err := ReadNNIAttempts(3, map[string]int64{OffsetAttempt: 2, OffsetNNI: 7, "other": 1}, read)
	if err != nil || len(recs) != 2 || !reflect.DeepEqual(calls, []call{{2, false, 7}, {3, true, 0}}) ||
		next[OffsetAttempt] != 3 || next[OffsetNNI] != 300 || len(next) != 2 {
		t.Errorf("recs %v next %v calls %v err %v", recs, next, calls, err)
	}
	// No offsets yet: every attempt from the first.
	calls = nil
	if _, next, _ := ReadNNIAttempts(2, nil, read); !reflect.DeepEqual(calls, []call{{1, false, 0}, {2, true, 0}}) || next[OffsetNNI] != 200 {
		t.Errorf("first read: calls %v next %v", calls, next)
	}
	// Offsets past the trial's attempt (it was purged and created again):
	// the current file from its start.
	calls = nil
	if _, next, _ := ReadNNIAttempts(1, map[string]int64{OffsetAttempt: 4, OffsetNNI: 50}, read); !reflect.DeepEqual(calls, []call{{1, true, 0}}) || next[OffsetAttempt] != 1 {
		t.Errorf("recreated trial: calls %v next %v", calls, next)
	}
	if _, _, err := ReadNNIAttempts(1, nil, func(int, bool, int64) ([]providers.Metric, int64, error) { return nil, 0, errors.New("gone") }); err == nil {
		t.Error("a read error was dropped")
	}
}
