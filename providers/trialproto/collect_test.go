package trialproto

import (
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
	if !ok || m.Type != TypeFinal || m.ParameterID != 7 || m.Value != `{"loss":0.5,"acc":0.1}` || !c.Final {
		t.Errorf("Finish = %+v, %v", m, ok)
	}
	if _, ok := c.Finish(false); ok {
		t.Error("Finish gave a second final")
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
