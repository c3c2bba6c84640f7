package state

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func point(typ string, seq int, value string) MetricPoint {
	return MetricPoint{Type: typ, Sequence: seq, Value: json.RawMessage(value), Time: t0.Add(time.Duration(seq) * time.Second)}
}

func TestMetricsAppendRead(t *testing.T) {
	m := newManager(t)
	if pts, err := m.ReadMetrics("mnist", "Ab3dE"); pts != nil || err != nil {
		t.Errorf("ReadMetrics of a missing series = %v, %v", pts, err)
	}
	first := []MetricPoint{point("PERIODICAL", 0, `0.5`), point("PERIODICAL", 1, `{"default":0.6,"loss":1.5}`)}
	second := []MetricPoint{point("FINAL", 2, `0.7`)}
	if err := m.AppendMetrics("mnist", "Ab3dE", first); err != nil {
		t.Fatal(err)
	}
	if err := m.AppendMetrics("mnist", "Ab3dE", nil); err != nil {
		t.Fatal(err)
	}
	if err := m.AppendMetrics("mnist", "Ab3dE", second); err != nil {
		t.Fatal(err)
	}
	if err := m.AppendMetrics("mnist", "Other", first[:1]); err != nil {
		t.Fatal(err)
	}
	got, err := m.ReadMetrics("mnist", "Ab3dE")
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]MetricPoint{}, first...), second...); !reflect.DeepEqual(got, want) {
		t.Errorf("ReadMetrics = %+v\nwant %+v", got, want)
	}
	path := filepath.Join(m.Dir(), "metrics", "mnist", "Ab3dE.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) != 3 {
		t.Errorf("series file has %d lines:\n%s", len(lines), b)
	}

	if err := m.RemoveMetrics("mnist"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.Dir(), "metrics", "mnist")); !os.IsNotExist(err) {
		t.Errorf("RemoveMetrics left the directory (stat: %v)", err)
	}
	if pts, err := m.ReadMetrics("mnist", "Ab3dE"); pts != nil || err != nil {
		t.Errorf("ReadMetrics after RemoveMetrics = %v, %v", pts, err)
	}
	if err := m.RemoveMetrics("never-had-any"); err != nil {
		t.Errorf("RemoveMetrics of an experiment without metrics: %v", err)
	}
}

func TestMetricsTornLastLine(t *testing.T) {
	m := newManager(t)
	pts := []MetricPoint{point("PERIODICAL", 0, `0.1`), point("PERIODICAL", 1, `0.2`)}
	if err := m.AppendMetrics("e", "t", pts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.Dir(), "metrics", "e", "t.jsonl")
	full, _ := json.Marshal(point("PERIODICAL", 2, `{"default": 0.3}`))
	for cut := 1; cut < len(full); cut += 7 {
		t.Run(fmt.Sprint("cut at ", cut), func(t *testing.T) {
			// A crash mid-append left part of a line.
			good, _ := os.ReadFile(path)
			if err := os.WriteFile(path, append(good, full[:cut]...), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := m.ReadMetrics("e", "t")
			if err != nil || !reflect.DeepEqual(got, pts) {
				t.Fatalf("ReadMetrics with a torn last line = %+v, %v", got, err)
			}
			// The next append cuts the torn line off rather than gluing onto it.
			next := point("FINAL", 3, `0.4`)
			if err := m.AppendMetrics("e", "t", []MetricPoint{next}); err != nil {
				t.Fatal(err)
			}
			got, err = m.ReadMetrics("e", "t")
			if want := append(append([]MetricPoint{}, pts...), next); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("after appending past a torn line: %+v, %v", got, err)
			}
			// Back to the two good points for the next cut.
			if err := os.WriteFile(path, good, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A file that is nothing but a torn line.
	os.WriteFile(path, full[:5], 0o644)
	if got, err := m.ReadMetrics("e", "t"); err != nil || got != nil {
		t.Errorf("only a torn line: %+v, %v", got, err)
	}
	if err := m.AppendMetrics("e", "t", pts[:1]); err != nil {
		t.Fatal(err)
	}
	if got, err := m.ReadMetrics("e", "t"); err != nil || !reflect.DeepEqual(got, pts[:1]) {
		t.Errorf("append after a torn-only file: %+v, %v", got, err)
	}
	// A long torn line (longer than the repair's read chunk).
	os.WriteFile(path, []byte(strings.Repeat("x", 10000)), 0o644)
	if err := m.AppendMetrics("e", "t", pts[:1]); err != nil {
		t.Fatal(err)
	}
	if got, err := m.ReadMetrics("e", "t"); err != nil || !reflect.DeepEqual(got, pts[:1]) {
		t.Errorf("append after a long torn line: %+v, %v", got, err)
	}
}

func TestMetricsBadLineInTheMiddle(t *testing.T) {
	m := newManager(t)
	if err := m.AppendMetrics("e", "t", []MetricPoint{point("PERIODICAL", 0, `1`)}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.Dir(), "metrics", "e", "t.jsonl")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, append(append(b, "garbage\n"...), b...), 0o644)
	_, err := m.ReadMetrics("e", "t")
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadMetrics with a bad middle line: %v", err)
	}
}

func TestMetricsRejectEscapingNames(t *testing.T) {
	m := newManager(t)
	pts := []MetricPoint{point("FINAL", 0, `1`)}
	for _, tc := range [][2]string{{"..", "t"}, {"e", "../x"}, {"", "t"}, {"e", ""}, {"a/b", "t"}, {"e", "."}} {
		if err := m.AppendMetrics(tc[0], tc[1], pts); err == nil {
			t.Errorf("AppendMetrics(%q, %q) succeeded", tc[0], tc[1])
		}
		if _, err := m.ReadMetrics(tc[0], tc[1]); err == nil {
			t.Errorf("ReadMetrics(%q, %q) succeeded", tc[0], tc[1])
		}
	}
	if err := m.RemoveMetrics(".."); err == nil {
		t.Error(`RemoveMetrics("..") succeeded`)
	}
	if err := m.AppendMetrics("e", "t", []MetricPoint{{Type: "FINAL", Value: json.RawMessage(`{bad`)}}); err == nil {
		t.Error("AppendMetrics with an invalid JSON value succeeded")
	}
	if _, err := os.Stat(m.Dir()); !os.IsNotExist(err) {
		t.Error("refused appends created files")
	}
}

// AppendMetricsBatch appends to several series at once (new and existing
// files, two experiments), repairs a torn last line as AppendMetrics does,
// and refuses an escaping name before writing anything of that batch.
func TestMetricsAppendBatch(t *testing.T) {
	m := newManager(t)
	a := []MetricPoint{point("PERIODICAL", 0, `0.5`)}
	b := []MetricPoint{point("FINAL", 1, `0.7`)}
	if err := m.AppendMetrics("e1", "t1", a); err != nil {
		t.Fatal(err)
	}
	// A crash tore t1's next line.
	path := filepath.Join(m.Dir(), "metrics", "e1", "t1.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"FIN`)
	f.Close()
	err = m.AppendMetricsBatch([]MetricsBatch{
		{Experiment: "e1", Trial: "t1", Points: b},
		{Experiment: "e1", Trial: "t2", Points: a},
		{Experiment: "e1", Trial: "t3"},
		{Experiment: "e2", Trial: "t1", Points: append(append([]MetricPoint{}, a...), b...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		exp, trial string
		want       []MetricPoint
	}{
		{"e1", "t1", append(append([]MetricPoint{}, a...), b...)},
		{"e1", "t2", a},
		{"e1", "t3", nil},
		{"e2", "t1", append(append([]MetricPoint{}, a...), b...)},
	} {
		got, err := m.ReadMetrics(c.exp, c.trial)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s/%s: ReadMetrics = %+v\nwant %+v", c.exp, c.trial, got, c.want)
		}
	}
	if err := m.AppendMetricsBatch([]MetricsBatch{{Experiment: "e1", Trial: "../x", Points: a}}); err == nil {
		t.Error("AppendMetricsBatch accepted the trial name ../x")
	}
}
