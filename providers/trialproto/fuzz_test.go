package trialproto

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/fuzzseed"
	"github.com/trialform/trialform/providers"
)

// FuzzParseMetricRecords feeds the metric-file parser bytes that trials
// (NNI's SDK, anything else a trial links) wrote: "ME" + 6 digits + JSON.
//
// Properties: no panic; consumed is within data; ParseMetricRecordsEnds
// agrees with ParseMetricRecords and its ends are increasing and within
// consumed; what is left unconsumed is only something that can still
// complete (a header prefix, or a header whose frame runs past the end),
// so a reader never waits forever on garbage; a decoded metric has a type
// and valid JSON; every metric read re-encodes (EncodeMetricRecord, as the
// local supervisor stores it) to a record that reads back equal; and when
// the data holds no garbage, reading it in two pieces as a reader of a
// growing file does (the second from where the first stopped) gives the
// same records.
func FuzzParseMetricRecords(f *testing.F) {
	f.Add([]byte(realRecords), 17)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		recs, consumed, err := ParseMetricRecords(data)
		if err != nil {
			t.Fatalf("error %v: corrupt input is Garbage, never an error", err)
		}
		if consumed < 0 || consumed > len(data) {
			t.Fatalf("consumed %d of %d bytes", consumed, len(data))
		}
		recs2, ends, consumed2 := ParseMetricRecordsEnds(data)
		if consumed2 != consumed || !sameMetrics(recs, recs2) || len(ends) != len(recs) {
			t.Fatalf("ParseMetricRecordsEnds: %d records, consumed %d; ParseMetricRecords: %d, %d", len(recs2), consumed2, len(recs), consumed)
		}
		for i, e := range ends {
			if e <= 0 || e > consumed || (i > 0 && e <= ends[i-1]) {
				t.Fatalf("ends %v, consumed %d", ends, consumed)
			}
		}
		if rest := data[consumed:]; len(rest) > 0 {
			waiting := (len(rest) < recordHeaderLen && isHeaderPrefix(rest)) || isHeader(rest)
			if isHeader(rest) {
				size, _ := strconv.Atoi(string(rest[2:recordHeaderLen]))
				waiting = recordHeaderLen+size > len(rest)
			}
			if !waiting {
				t.Fatalf("left %q unconsumed: it cannot become a record", clip(string(rest)))
			}
		}
		clean := true
		for _, m := range recs {
			checkMetric(t, m)
			if m.Garbage != "" {
				clean = false
			}
			back, _, _ := ParseMetricRecords(EncodeMetricRecord(m, "trial"))
			if len(back) != 1 || !sameMetric(back[0], reencoded(m)) {
				t.Fatalf("%+v re-encoded reads back as %+v", m, back)
			}
		}
		if !clean || len(data) == 0 {
			return
		}
		split = int(uint(split) % uint(len(data)+1))
		first, c1, _ := ParseMetricRecords(data[:split])
		second, c2, _ := ParseMetricRecords(data[c1:])
		if c1+c2 != consumed || !sameMetrics(append(first, second...), recs) {
			t.Fatalf("read in two pieces at %d: %d+%d records, consumed %d+%d; whole: %d records, consumed %d",
				split, len(first), len(second), c1, c2, len(recs), consumed)
		}
	})
}

// FuzzParseStdoutLine feeds one line of a trial's stdout: NNI's
// "NNISDK_MEb'<json>'", trialform's "trialform: <json>", and a
// metric_regex's matches.
//
// Properties: no panic; a metric has a type and valid JSON, or is Garbage;
// a line recognised without a regexp is one IsMetricLine recognises (the
// supervisor's check of an overlong line); and a metric record printed by
// NNI's SDK, as plain JSON (NNI >= 2) or as a Python bytes repr with
// escapes (NNI 1.x), and trialform's own line holding its value, read back
// as the record does from the metric file.
func FuzzParseStdoutLine(f *testing.F) {
	f.Add(`NNISDK_MEb'{"parameter_id": 0, "trial_job_id": "x", "type": "FINAL", "sequence": 0, "value": "0.93"}'`, "0.5", true)
	f.Fuzz(func(t *testing.T, line, value string, final bool) {
		re := regexp.MustCompile(`(?P<name>\w+)=(?P<value>\S+)`)
		for _, r := range []*regexp.Regexp{nil, re} {
			m, ok := ParseStdoutLine(line, r)
			if !ok {
				continue
			}
			checkMetric(t, m)
			if r == nil && !IsMetricLine([]byte(line)) {
				t.Fatalf("ParseStdoutLine reads %+v from %q, which IsMetricLine does not recognise", m, line)
			}
		}

		// Round trips of a well-formed value.
		norm, err := NormalizeValue(value)
		if err != nil || !isNumberOrObject(norm) || strings.ContainsAny(value, "\r\n") {
			return
		}
		typ := TypePeriodical
		if final {
			typ = TypeFinal
		}
		rec := EncodeMetricRecord(providers.Metric{Type: typ, Sequence: 2, ParameterID: 5, Value: norm}, "abc")
		want, _, _ := ParseMetricRecords(rec)
		if len(want) != 1 {
			t.Fatalf("record %q reads as %+v", rec, want)
		}
		js := string(rec[recordHeaderLen : len(rec)-1])
		for _, l := range []string{
			nniStdoutPrefix + js + "'",
			"[2024-01-01 00:00:00] PRINT " + nniStdoutPrefix + js + "'\n",
			nniStdoutPrefix + pythonBytesRepr(js) + "'",
		} {
			got, ok := ParseStdoutLine(l, nil)
			if !ok || !sameMetric(got, want[0]) {
				t.Fatalf("%q reads as %+v (%v), the record as %+v", l, got, ok, want[0])
			}
		}
		word := "intermediate "
		if final {
			word = ""
		}
		got, ok := ParseStdoutLine("progress 10%\r"+StdoutPrefix+word+value+"\n", nil)
		wantLine := providers.Metric{Type: typ, Sequence: -1, ParameterID: -1, Value: norm}
		if final && FinalNotANumber(value, norm) != "" {
			wantLine = providers.Metric{Type: typ, Sequence: -1, ParameterID: -1, Garbage: FinalNotANumber(value, norm)}
		}
		if !ok || !sameMetric(got, wantLine) {
			t.Fatalf("trialform line of %q reads as %+v (%v), want %+v", value, got, ok, wantLine)
		}
	})
}

// pythonBytesRepr is the body of repr(s.encode()) as Python writes it
// (NNI 1.x printed its records so): backslash and the quote escaped,
// \t \n \r, other control and non-ASCII bytes as \xHH.
func pythonBytesRepr(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func checkMetric(t *testing.T, m providers.Metric) {
	t.Helper()
	if m.Garbage != "" {
		if m.Value != "" {
			t.Fatalf("garbage metric with a value: %+v", m)
		}
		return
	}
	if m.Type != TypeFinal && m.Type != TypePeriodical {
		t.Fatalf("metric of type %q: %+v", m.Type, m)
	}
	if !json.Valid([]byte(m.Value)) {
		t.Fatalf("metric value %q is not JSON", m.Value)
	}
	if m.Type == TypeFinal && m.Value == "null" {
		t.Fatalf("final result null: %+v", m)
	}
}

// reencoded is what EncodeMetricRecord then ParseMetricRecords make of m:
// a parameter id below 0 is stored as null and read back as -1, and times
// are stored to the microsecond.
func reencoded(m providers.Metric) providers.Metric {
	if m.ParameterID < 0 {
		m.ParameterID = -1
	}
	if m.Garbage != "" && m.Type != TypeFinal {
		m.Type = "" // a final result that is not a number stays a FINAL
	}
	return m
}

func sameMetric(a, b providers.Metric) bool {
	if !a.Time.Round(time.Microsecond).Equal(b.Time.Round(time.Microsecond)) {
		return false
	}
	a.Time, b.Time = time.Time{}, time.Time{}
	return a == b
}

func sameMetrics(a, b []providers.Metric) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameMetric(a[i], b[i]) {
			return false
		}
	}
	return true
}

// realRecords is what NNI 3's SDK writes for two intermediate results and
// a final one (nni/runtime/trial_command_channel/local_legacy.py).
var realRecords = frame(`{"parameter_id": 0, "trial_job_id": "Ab1Cd", "type": "PERIODICAL", "sequence": 0, "value": "0.5"}`) +
	frame(`{"parameter_id": 0, "trial_job_id": "Ab1Cd", "type": "PERIODICAL", "sequence": 1, "value": "{\"default\": 0.6, \"loss\": NaN}"}`) +
	frame(`{"parameter_id": 0, "trial_job_id": "Ab1Cd", "type": "FINAL", "sequence": 0, "value": "0.93", "time": 1700000000.25}`)

func frame(js string) string { return fmt.Sprintf("ME%06d%s\n", len(js)+1, js) }

// TestWriteFuzzSeeds writes the seed corpus of the fuzzers in this file
// (run with TRIALFORM_WRITE_SEEDS=1).
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("TRIALFORM_WRITE_SEEDS") != "1" {
		t.Skip("TRIALFORM_WRITE_SEEDS=1 writes the seed corpus")
	}
	records := map[string]string{
		"nni-real":             realRecords,
		"nni-cut":              realRecords[:len(realRecords)-9],
		"request-parameter":    frame(`{"parameter_id": null, "trial_job_id": "x", "type": "REQUEST_PARAMETER", "sequence": 0, "value": ""}`) + realRecords,
		"standalone-null-id":   frame(`{"parameter_id": null, "trial_job_id": "", "type": "FINAL", "sequence": 0, "value": "1"}`),
		"garbage-then-record":  "Traceback (most recent call last):\n" + realRecords,
		"length-too-long":      "ME000900" + `{"type": "FINAL", "value": "1"}` + "\n" + realRecords,
		"length-too-short":     "ME000005" + `{"type": "FINAL", "value": "1"}` + "\n" + realRecords,
		"length-999999":        "ME999999{",
		"header-prefix":        "ME00",
		"bad-json":             frame(`{"type": "FINAL", "value": `) + realRecords,
		"final-nan":            frame(`{"type": "FINAL", "sequence": 0, "value": "NaN"}`),
		"unknown-type":         frame(`{"type": "METRIC", "value": "1"}`),
		"plain-value":          frame(`{"type": "PERIODICAL", "value": {"a": [1, Infinity, -Infinity]}}`),
		"garbage-field":        frame(`{"garbage": "corrupt metric record: x"}`),
		"time-hostile":         frame(`{"type": "FINAL", "value": "1", "time": 1e400}`) + frame(`{"type": "FINAL", "value": "1", "time": "now"}`),
		"huge-sequence":        frame(`{"type": "FINAL", "value": "1", "sequence": 99999999999999999999}`),
		"string-escapes":       frame(`{"type": "FINAL", "value": "\"\\u0000\\ud800\"", "trial_job_id": "\u00e9"}`),
		"nested-deep":          frame(`{"type": "PERIODICAL", "value": "` + strings.Repeat("[", 500) + `"}`),
		"me-inside-json":       frame(`{"type": "FINAL", "value": "1", "trial_job_id": "ME000010"}`),
		"newline-header-early": "ME000200{\"type\": \n" + realRecords,
		"empty":                "",
	}
	for name, data := range records {
		if err := fuzzseed.Write("FuzzParseMetricRecords", name, []byte(data), len(data)/2); err != nil {
			t.Fatal(err)
		}
	}
	js := `{"parameter_id": 3, "trial_job_id": "Ab1Cd", "type": "FINAL", "sequence": 0, "value": "{\"default\": 0.9}"}`
	lines := map[string][3]string{
		"nni2":              {"NNISDK_MEb'" + js + "'", "0.5", "true"},
		"nni1-bytes-repr":   {"NNISDK_MEb'" + pythonBytesRepr(`{"parameter_id": 3, "type": "PERIODICAL", "value": "{\"caf\u00e9\": 0.1}"}`) + "'", `{"a": 1}`, "false"},
		"nni-prefix-text":   {"[2024-01-01 10:00:00] PRINT NNISDK_MEb'" + js + "'\r\n", "NaN", "true"},
		"nni-unterminated":  {"NNISDK_MEb'" + js, "Infinity", "false"},
		"nni-bad-escape":    {`NNISDK_MEb'\q\x4'`, "-Infinity", "true"},
		"nni-request":       {`NNISDK_MEb'{"type": "REQUEST_PARAMETER"}'`, "1e308", "true"},
		"trialform-final":   {"trialform: 0.93", "0.93", "true"},
		"trialform-object":  {`trialform: final {"default": 0.9, "loss": NaN}`, `{"default": 0.9, "loss": NaN}`, "true"},
		"trialform-inter":   {"trialform: intermediate 0.5", "0.5", "false"},
		"trialform-garbage": {"trialform: intermediate {", "[1]", "false"},
		"progress-bar":      {"epoch 1/3 [=====>    ]\rtrialform: 0.7", "0.7", "true"},
		"regex":             {"loss=0.3 acc=0.9 lr=x", "null", "true"},
		"empty":             {"", "", "false"},
	}
	for name, l := range lines {
		if err := fuzzseed.Write("FuzzParseStdoutLine", name, l[0], l[1], l[2] == "true"); err != nil {
			t.Fatal(err)
		}
	}
}
