package trialproto

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers"
)

func TestParameterCfg(t *testing.T) {
	tests := []struct {
		name   string
		id     int
		params map[string]any
		want   string
	}{
		{"simple", 3, map[string]any{"lr": 0.01, "bs": float64(64), "opt": "adam"},
			`{"parameter_id":3,"parameter_source":"algorithm","parameters":{"bs":64,"lr":0.01,"opt":"adam"},"parameter_index":0}`},
		{"nil", 0, nil, `{"parameter_id":0,"parameter_source":"algorithm","parameters":{},"parameter_index":0}`},
		{"nested and html", 1, map[string]any{"m": map[string]any{"_name": "a<b", "x": true}},
			`{"parameter_id":1,"parameter_source":"algorithm","parameters":{"m":{"_name":"a<b","x":true}},"parameter_index":0}`},
		{"nan becomes null", 2, map[string]any{"x": math.NaN(), "y": 1.5},
			`{"parameter_id":2,"parameter_source":"algorithm","parameters":{"x":null,"y":1.5},"parameter_index":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(ParameterCfg(tt.id, tt.params))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseParameterCfg(t *testing.T) {
	params := map[string]any{"lr": 0.01, "bs": float64(64), "opt": "adam", "m": map[string]any{"_name": "a", "k": float64(3)}}
	id, got, err := ParseParameterCfg(append(ParameterCfg(7, params), '\n'))
	if err != nil {
		t.Fatal(err)
	}
	if id != 7 || !reflect.DeepEqual(got, params) {
		t.Fatalf("got %d %v, want 7 %v", id, got, params)
	}
	for _, bad := range []string{"", "{", `{"parameters":{}}`, `{"parameter_id":1}`} {
		if _, _, err := ParseParameterCfg([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestEnv(t *testing.T) {
	req := providers.StartRequest{
		Experiment: "exp", ExperimentID: "eid", TrialID: "t1", Seq: 7,
		Env: map[string]string{"FOO": "bar", "NNI_PLATFORM": "remote", "NNI_TRIAL_COMMAND_CHANNEL": "ws://x", "TRIALFORM_PARAMS": "/evil",
			"ADAPTDL_TENSORBOARD_LOGDIR": "/evil"},
	}
	env := Env(req, "/sys", "/out", "/sys/params.json")
	want := map[string]string{
		"FOO": "bar", "NNI_PLATFORM": "local", "NNI_SYS_DIR": "/sys", "NNI_OUTPUT_DIR": "/out",
		"NNI_TRIAL_JOB_ID": "t1", "NNI_EXP_ID": "eid", "NNI_TRIAL_SEQ_ID": "7",
		"TRIALFORM_EXPERIMENT": "exp", "TRIALFORM_TRIAL_ID": "t1", "TRIALFORM_PARAMS": "/sys/params.json",
		"TRIALFORM_OUTPUT_DIR": "/out",
		// TensorBoard: AdaptDL's is the experiment's directory (seed 000's
		// code joins it with NNI_TRIAL_JOB_ID), ours that join.
		"TRIALFORM_TENSORBOARD_DIR": "/out/tensorboard/t1", "ADAPTDL_TENSORBOARD_LOGDIR": "/out/tensorboard",
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("Env = %v\nwant %v", env, want)
	}
	got := Environ([]string{"PATH=/bin", "FOO=old", "NNI_TRIAL_COMMAND_CHANNEL=ws://y", "TRIALFORM_X=1", "HOME=/h"}, map[string]string{"FOO": "new", "A": "1"})
	wantEnv := []string{"PATH=/bin", "HOME=/h", "A=1", "FOO=new"}
	if !reflect.DeepEqual(got, wantEnv) {
		t.Errorf("Environ = %v, want %v", got, wantEnv)
	}
}

func rec(js string) string {
	return "ME" + pad6(len(js)+1) + js + "\n"
}

func pad6(n int) string { return fmt.Sprintf("%06d", n) }

func itoa(n int) string { return strconv.Itoa(n) }

func TestParseMetricRecords(t *testing.T) {
	final := `{"parameter_id": 3, "trial_job_id": "t1", "type": "FINAL", "sequence": 0, "value": "0.93"}`
	per := `{"parameter_id": 3, "trial_job_id": "t1", "type": "PERIODICAL", "sequence": 2, "value": "{\"default\": NaN, \"loss\": Infinity}"}`
	req := `{"trial_job_id": "t1", "type": "REQUEST_PARAMETER", "sequence": 0, "parameter_index": 1}`
	nullID := `{"parameter_id": null, "trial_job_id": "t1", "type": "FINAL", "sequence": 0, "value": "-Infinity"}`
	full := rec(final) + rec(per)
	m93 := providers.Metric{Type: "FINAL", ParameterID: 3, Value: "0.93"}
	mPer := providers.Metric{Type: "PERIODICAL", Sequence: 2, ParameterID: 3, Value: `{"default":null,"loss":null}`}
	tests := []struct {
		name     string
		data     string
		want     []providers.Metric
		consumed int
		garbage  []int // indexes of records expected to be garbage
	}{
		{"empty", "", nil, 0, nil},
		{"two", full, []providers.Metric{m93, mPer}, len(full), nil},
		{"incomplete header", rec(final) + "ME00", []providers.Metric{m93}, len(rec(final)), nil},
		{"incomplete body", rec(final) + rec(per)[:20], []providers.Metric{m93}, len(rec(final)), nil},
		{"request parameter skipped", rec(req) + rec(final), []providers.Metric{m93}, len(rec(req) + rec(final)), nil},
		// A final result of -Infinity has no value: it says so (issue 11, bug 15).
		{"null parameter id", rec(nullID), []providers.Metric{{Type: TypeFinal, ParameterID: -1, Garbage: "the final result is -Infinity, not a number"}}, len(rec(nullID)), nil},
		{"bad magic then record", "junk!" + rec(final), []providers.Metric{{}, m93}, 5 + len(rec(final)), []int{0}},
		{"bad json framed", rec(`{"type": "FINAL", nope}`) + rec(final), []providers.Metric{{}, m93}, len(rec(`{"type": "FINAL", nope}`)) + len(rec(final)), []int{0}},
		{"length too short resyncs", "ME000005" + final + "\n" + rec(final), []providers.Metric{{}, m93}, len("ME000005"+final+"\n") + len(rec(final)), []int{0}},
		{"length too long resyncs", "ME009999" + final + "\n" + rec(final), []providers.Metric{{}, m93}, len("ME009999"+final+"\n") + len(rec(final)), []int{0}},
		{"unknown type", rec(`{"type": "WEIRD", "value": "1"}`), []providers.Metric{{}}, len(rec(`{"type": "WEIRD", "value": "1"}`)), []int{0}},
		{"bad value", rec(`{"type": "FINAL", "value": "{oops"}`), []providers.Metric{{}}, len(rec(`{"type": "FINAL", "value": "{oops"}`)), []int{0}},
		{"trailing junk consumed", rec(final) + "xyz", []providers.Metric{m93, {}}, len(rec(final)) + 3, []int{1}},
		{"garbage extension", rec(`{"parameter_id": 1, "type": "PERIODICAL", "sequence": 0, "value": "", "garbage": "bad line"}`), []providers.Metric{{ParameterID: 1, Garbage: "bad line"}}, len(rec(`{"parameter_id": 1, "type": "PERIODICAL", "sequence": 0, "value": "", "garbage": "bad line"}`)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n, err := ParseMetricRecords([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.consumed {
				t.Errorf("consumed %d, want %d", n, tt.consumed)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d records %+v, want %d", len(got), got, len(tt.want))
			}
			isG := map[int]bool{}
			for _, i := range tt.garbage {
				isG[i] = true
			}
			for i := range got {
				if isG[i] {
					if got[i].Garbage == "" {
						t.Errorf("record %d: want garbage, got %+v", i, got[i])
					}
					continue
				}
				if got[i] != tt.want[i] {
					t.Errorf("record %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// Feeding a stream byte by byte from the returned offsets yields every
// record exactly once.
func TestParseMetricRecordsIncremental(t *testing.T) {
	var all string
	for i := 0; i < 5; i++ {
		all += rec(`{"parameter_id": 1, "trial_job_id": "t", "type": "PERIODICAL", "sequence": ` + itoa(i) + `, "value": "` + itoa(i) + `"}`)
	}
	var got []providers.Metric
	off := 0
	for end := 0; end <= len(all); end++ {
		recs, n, _ := ParseMetricRecords([]byte(all[off:end]))
		got = append(got, recs...)
		off += n
	}
	if off != len(all) || len(got) != 5 {
		t.Fatalf("offset %d/%d, %d records", off, len(all), len(got))
	}
	for i, m := range got {
		if m.Sequence != i || m.Garbage != "" {
			t.Errorf("record %d = %+v", i, m)
		}
	}
}

// Records written exactly the way NNI's local platform writes them, by a
// real Python.
func TestParseMetricRecordsFromPython(t *testing.T) {
	py := testdeps.Python3(t)
	f := filepath.Join(t.TempDir(), "metrics")
	script := `
import json, sys
f = open(sys.argv[1], 'ab')
def send(string):
    data = (string + '\n').encode('utf8')
    f.write(b'ME%06d%b' % (len(data), data))
    f.flush()
def rep(t, seq, v):
    send(json.dumps({'parameter_id': 5, 'trial_job_id': 'tj', 'type': t, 'sequence': seq, 'value': json.dumps(v)}))
rep('PERIODICAL', 0, 0.5)
rep('PERIODICAL', 1, float('nan'))
rep('PERIODICAL', 2, {'default': 0.25, 'name': 'ünï'})
rep('FINAL', 0, {'default': float('inf'), 'acc': 0.75})
`
	if out, err := exec.Command(py, "-c", script, f).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(f)
	recs, n, err := ParseMetricRecords(data)
	if err != nil || n != len(data) {
		t.Fatalf("consumed %d/%d err %v", n, len(data), err)
	}
	want := []string{"0.5", "null", `{"default":0.25,"name":"\u00fcn\u00ef"}`, `{"default":null,"acc":0.75}`}
	if len(recs) != len(want) {
		t.Fatalf("got %+v", recs)
	}
	for i, w := range want {
		if recs[i].Value != w || recs[i].ParameterID != 5 || recs[i].Garbage != "" {
			t.Errorf("record %d = %+v, want value %s", i, recs[i], w)
		}
	}
	if recs[3].Type != "FINAL" || recs[2].Sequence != 2 {
		t.Errorf("types/sequences wrong: %+v", recs)
	}
}

func TestEncodeMetricRecordRoundTrip(t *testing.T) {
	ms := []providers.Metric{
		{Type: "FINAL", ParameterID: 4, Value: `{"default":0.5}`},
		{Type: "PERIODICAL", Sequence: 3, ParameterID: -1, Value: "1e-05"},
		{ParameterID: 2, Garbage: "unreadable line"},
		// The time a result was reported, to the microsecond.
		{Type: "PERIODICAL", Sequence: 4, ParameterID: 1, Value: "2", Time: time.Date(2026, 11, 26, 18, 0, 1, 234567000, time.UTC)},
	}
	var data []byte
	for _, m := range ms {
		data = append(data, EncodeMetricRecord(m, "tid")...)
	}
	got, n, _ := ParseMetricRecords(data)
	if n != len(data) || !reflect.DeepEqual(got, ms) {
		t.Errorf("round trip: %+v (consumed %d/%d)\nwant %+v", got, n, len(data), ms)
	}
}

func TestNormalizeValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0.5", "0.5"},
		{" NaN ", "null"},
		{"-Infinity", "null"},
		{`{"default": 0.9, "loss": NaN, "s": "NaN Infinity"}`, `{"default":0.9,"loss":null,"s":"NaN Infinity"}`},
		{`[Infinity, -Infinity]`, `[null,null]`},
		{`{"a": "x\"NaN"}`, `{"a":"x\"NaN"}`},
	}
	for _, tt := range tests {
		got, err := NormalizeValue(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeValue(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "nan", "1 2", "{", "NaNa"} {
		if got, err := NormalizeValue(bad); err == nil {
			t.Errorf("NormalizeValue(%q) = %q, want error", bad, got)
		}
	}
}

func TestParseStdoutLine(t *testing.T) {
	katib := regexp.MustCompile(`(?P<name>[A-Za-z_]+)=(?P<value>[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf)`)
	valueOnly := regexp.MustCompile(`^score: (?P<value>\S+)$`)
	tests := []struct {
		name    string
		line    string
		re      *regexp.Regexp
		ok      bool
		want    providers.Metric
		garbage bool
	}{
		{"plain text", "epoch 1 done", nil, false, providers.Metric{}, false},
		{"nnisdk plain", `NNISDK_MEb'{"parameter_id": 2, "trial_job_id": "t", "type": "FINAL", "sequence": 0, "value": "{\"default\": 0.8}"}'` + "\n", nil, true,
			providers.Metric{Type: "FINAL", ParameterID: 2, Value: `{"default":0.8}`}, false},
		{"nnisdk bytes repr", `NNISDK_MEb'{"parameter_id": 2, "trial_job_id": "t", "type": "PERIODICAL", "sequence": 4, "value": "{\\"default\\": 0.8, \\"n\\": \\"it\'s \xc3\xa9\\"}"}'`, nil, true,
			providers.Metric{Type: "PERIODICAL", Sequence: 4, ParameterID: 2, Value: `{"default":0.8,"n":"it's é"}`}, false},
		{"nnisdk with prefix text", `[stdout] NNISDK_MEb'{"parameter_id": 1, "type": "PERIODICAL", "sequence": 1, "value": "NaN"}'`, nil, true,
			providers.Metric{Type: "PERIODICAL", Sequence: 1, ParameterID: 1, Value: "null"}, false},
		{"nnisdk request parameter", `NNISDK_MEb'{"trial_job_id": "t", "type": "REQUEST_PARAMETER", "sequence": 0, "parameter_index": 1}'`, nil, false, providers.Metric{}, false},
		{"nnisdk garbage", `NNISDK_MEb'{not json'`, nil, true, providers.Metric{}, true},
		{"trialform final number", "trialform: 0.93\r\n", nil, true, providers.Metric{Type: "FINAL", Sequence: -1, ParameterID: -1, Value: "0.93"}, false},
		{"trialform final dict", `trialform: {"accuracy": 0.93, "loss": NaN}`, nil, true,
			providers.Metric{Type: "FINAL", Sequence: -1, ParameterID: -1, Value: `{"accuracy":0.93,"loss":null}`}, false},
		{"trialform final keyword", `trialform: final 1`, nil, true, providers.Metric{Type: "FINAL", Sequence: -1, ParameterID: -1, Value: "1"}, false},
		{"trialform intermediate", `trialform: intermediate {"loss": 0.3}`, nil, true,
			providers.Metric{Type: "PERIODICAL", Sequence: -1, ParameterID: -1, Value: `{"loss":0.3}`}, false},
		{"trialform after carriage return", "10%|##\rtrialform: intermediate 2", nil, true,
			providers.Metric{Type: "PERIODICAL", Sequence: -1, ParameterID: -1, Value: "2"}, false},
		{"trialform garbage", `trialform: hello`, nil, true, providers.Metric{}, true},
		{"trialform string garbage", `trialform: "0.5"`, nil, true, providers.Metric{}, true},
		{"prefix not at start", `log: trialform: 0.5`, nil, false, providers.Metric{}, false},
		{"katib", "epoch 3 loss=0.3 accuracy=-1.5e-3", katib, true,
			providers.Metric{Type: "PERIODICAL", Sequence: -1, ParameterID: -1, Value: `{"loss":0.3,"accuracy":-0.0015}`}, false},
		{"katib repeated name keeps last", "loss=1 loss=2", katib, true,
			providers.Metric{Type: "PERIODICAL", Sequence: -1, ParameterID: -1, Value: `{"loss":2}`}, false},
		{"katib nan", "loss=nan", katib, true, providers.Metric{Type: "PERIODICAL", Sequence: -1, ParameterID: -1, Value: `{"loss":null}`}, false},
		{"katib no match", "nothing here", katib, false, providers.Metric{}, false},
		{"value-only regexp", "score: 12.5", valueOnly, true, providers.Metric{Type: "PERIODICAL", Sequence: -1, ParameterID: -1, Value: `{"default":12.5}`}, false},
		{"non-numeric value ignored", "score: abc", valueOnly, false, providers.Metric{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseStdoutLine(tt.line, tt.re)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tt.ok, got)
			}
			if tt.garbage {
				if got.Garbage == "" || got.Value != "" {
					t.Errorf("want garbage, got %+v", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLastValues(t *testing.T) {
	var l LastValues
	if _, ok := l.FinalFromLast(); ok {
		t.Fatal("empty LastValues gave a final")
	}
	re := regexp.MustCompile(`(?P<name>\w+)=(?P<value>\S+)`)
	for _, line := range []string{"loss=0.9 acc=0.1", "nothing", "loss=0.5", "acc=0.7"} {
		if m, ok := ParseStdoutLine(line, re); ok {
			l.Add(m)
		}
	}
	m, ok := l.FinalFromLast()
	if !ok || m.Type != "FINAL" || m.Value != `{"loss":0.5,"acc":0.7}` {
		t.Errorf("FinalFromLast = %+v, %v", m, ok)
	}
}

func TestObjective(t *testing.T) {
	tests := []struct {
		value, metric string
		v             float64
		all           map[string]float64
		ok, err       bool
	}{
		{"0.9", "", 0.9, map[string]float64{"default": 0.9}, true, false},
		{"0.9", "default", 0.9, map[string]float64{"default": 0.9}, true, false},
		{"0.9", "accuracy", 0, map[string]float64{"default": 0.9}, false, false},
		{`{"default": 0.9, "loss": 0.1, "name": "x"}`, "loss", 0.1, map[string]float64{"default": 0.9, "loss": 0.1}, true, false},
		{`{"default": 0.9}`, "", 0.9, map[string]float64{"default": 0.9}, true, false},
		{`{"loss": null, "acc": 1}`, "loss", 0, map[string]float64{"acc": 1}, false, false},
		{"null", "", 0, nil, false, false},
		{"NaN", "", 0, nil, false, false},
		{`{"default": NaN}`, "", 0, map[string]float64{}, false, false},
		{`"0.5"`, "", 0, nil, false, true},
		{`[1]`, "", 0, nil, false, true},
		{`{bad`, "", 0, nil, false, true},
	}
	for _, tt := range tests {
		v, all, ok, err := Objective(tt.value, tt.metric)
		if (err != nil) != tt.err || ok != tt.ok || v != tt.v || !reflect.DeepEqual(all, tt.all) {
			t.Errorf("Objective(%q, %q) = %v, %v, %v, %v; want %v, %v, %v, err %v", tt.value, tt.metric, v, all, ok, err, tt.v, tt.all, tt.ok, tt.err)
		}
	}
}

// Stdout lines printed the way NNI 1.x (bytes repr) and NNI 2+ print them
// on non-local platforms, by a real Python.
func TestParseStdoutLineFromPython(t *testing.T) {
	py := testdeps.Python3(t)
	script := `
import json
def rec(seq, v):
    return json.dumps({'parameter_id': 1, 'trial_job_id': 'tj', 'type': 'PERIODICAL', 'sequence': seq, 'value': json.dumps(v, ensure_ascii=False)}, ensure_ascii=False)
print('NNISDK_ME%s' % (rec(0, {'default': 0.5, 'q': "it's \\ é"}).encode('utf8'),))
print("NNISDK_MEb'%s'" % rec(1, {'default': 0.5, 'q': "it's \\ é"}), flush=True)
print("NNISDK_MEb'%s'" % rec(2, float('nan')))
`
	out, err := exec.Command(py, "-c", script).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	want := []string{`{"default":0.5,"q":"it's \\ é"}`, `{"default":0.5,"q":"it's \\ é"}`, "null"}
	sc := bufio.NewScanner(bytes.NewReader(out))
	i := 0
	for ; sc.Scan(); i++ {
		m, ok := ParseStdoutLine(sc.Text(), nil)
		if !ok || m.Garbage != "" || i >= len(want) || m.Value != want[i] || m.Sequence != i {
			t.Errorf("line %q -> %+v, %v", sc.Text(), m, ok)
		}
	}
	if i != len(want) {
		t.Errorf("%d lines", i)
	}
}

// Issue 11, bugs 7 and 15: a final result without a usable objective says
// why, on every channel; it stays a FINAL, so that as the last one it
// replaces an earlier final result (the last value wins).
func TestFinalResultProblems(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"trialform: NaN", "the final result is NaN, not a number"},
		{"trialform: final Infinity", "the final result is Infinity, not a number"},
		{"trialform: null", "the final result is null, not a number"},
		{`NNISDK_MEb'{"parameter_id": 1, "trial_job_id": "t", "type": "FINAL", "sequence": 0, "value": "NaN"}'`, "the final result is NaN, not a number"},
	} {
		m, ok := ParseStdoutLine(tc.line, nil)
		if !ok || m.Garbage != tc.want || m.Type != TypeFinal {
			t.Errorf("%s: %+v, want garbage %q", tc.line, m, tc.want)
		}
	}
	for _, tc := range []struct{ value, metric, want string }{
		{`{"acc": 0.9}`, "default", `the final result has no key "default" (got: acc)`},
		{`{"acc": 0.9, "loss": 1}`, "f1", `the final result has no key "f1" (got: acc, loss)`},
		{`{"default": null}`, "", `the final result's "default" is NaN, Infinity or null, not a number`},
		{`{"default": 0.5}`, "", ""},
		{`0.5`, "", ""},
		{`0.5`, "acc", `the final result is a plain number (0.5), which counts as "default", not "acc"`},
	} {
		if got := MissingObjective(tc.value, tc.metric); got != tc.want {
			t.Errorf("MissingObjective(%s, %q) = %q, want %q", tc.value, tc.metric, got, tc.want)
		}
	}
}

// Issue 25, wrong numbers 3: trialform's NNI stand-in dates each result
// when the trial reports it (the record's "time"), and the records of one
// chunk tell where each ends, for the local supervisor's dates of records
// that carry none. A real python3 reports with a gap.
func TestMetricRecordTimeFromPython(t *testing.T) {
	py := testdeps.Python3(t)
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	if err := InstallPython(lib); err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(dir, "sys")
	if err := os.MkdirAll(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, "parameter.cfg"), []byte(`{"parameter_id": 0, "parameters": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
import time, nni
nni.get_next_parameter()
nni.report_intermediate_result(0.5)
time.sleep(0.3)
nni.report_intermediate_result(0.25)
nni.report_final_result(0.1)
`
	before := time.Now()
	cmd := exec.Command(py, "-c", script)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+lib, "NNI_PLATFORM=local", "NNI_SYS_DIR="+sys, "TRIALFORM_NNI_SHIM=1", "NNI_TRIAL_JOB_ID=t1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	after := time.Now()
	data, err := os.ReadFile(filepath.Join(sys, ".nni", "metrics"))
	if err != nil {
		t.Fatal(err)
	}
	recs, ends, n := ParseMetricRecordsEnds(data)
	if n != len(data) || len(recs) != 3 || len(ends) != 3 || ends[2] != len(data) {
		t.Fatalf("consumed %d/%d, %d records, ends %v", n, len(data), len(recs), ends)
	}
	for i, m := range recs {
		if m.Time.Before(before.Add(-time.Millisecond)) || m.Time.After(after.Add(time.Millisecond)) {
			t.Errorf("record %d dated %v, outside the run %v..%v", i, m.Time, before, after)
		}
		if i > 0 {
			if r, _, _ := ParseMetricRecords(data[ends[i-1]:ends[i]]); len(r) != 1 || r[0] != m {
				t.Errorf("record %d does not span %d..%d: %+v", i, ends[i-1], ends[i], r)
			}
		}
	}
	if gap := recs[1].Time.Sub(recs[0].Time); gap < 300*time.Millisecond {
		t.Errorf("results reported 0.3 s apart dated %v apart", gap)
	}
	for _, bad := range []string{"null", `"soon"`, "-1", "1e300"} {
		r, _, _ := ParseMetricRecords([]byte(rec(`{"parameter_id": 1, "type": "PERIODICAL", "sequence": 0, "value": "1", "time": ` + bad + `}`)))
		if len(r) != 1 || !r[0].Time.IsZero() || r[0].Garbage != "" || r[0].Value != "1" {
			t.Errorf("time %s: %+v, want an undated result", bad, r)
		}
	}
}
