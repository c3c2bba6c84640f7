package trialproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/trialform/trialform/providers"
)

// Metric record framing, as NNI's local mode writes it
// (nni/runtime/platform/local.py, trial_command_channel/local_legacy.py):
//
//	"ME" + 6-digit decimal byte length of (JSON + "\n") + JSON + "\n"
//
// The JSON is {"parameter_id": N, "trial_job_id": "..", "type":
// "FINAL"|"PERIODICAL", "sequence": n, "value": "<JSON text>"}, and, as
// trialform's extension, "time": when it was reported, in seconds since
// the Unix epoch (a float, as Python's time.time() and TensorBoard's
// wall_time): trialform's NNI stand-in writes it, and the local supervisor
// when it stores what it parsed from stdout.
const (
	recordMagic     = "ME"
	recordHeaderLen = 8 // magic + 6 digits
	maxRecordLen    = 999999
)

// Metric types.
const (
	TypeFinal      = "FINAL"
	TypePeriodical = "PERIODICAL"
)

// record is one decoded metric record. Garbage is trialform's extension: the
// local supervisor uses it to pass on a stdout metric line it could not
// decode, so one reader handles every source.
type record struct {
	ParameterID *int            `json:"parameter_id"`
	TrialJobID  string          `json:"trial_job_id"`
	Type        string          `json:"type"`
	Sequence    int             `json:"sequence"`
	Value       json.RawMessage `json:"value"`
	Garbage     string          `json:"garbage,omitempty"`
	// Time is read leniently: a time that is not a plausible number
	// leaves the result undated, not unreadable.
	Time json.RawMessage `json:"time,omitempty"`
}

// errSkip marks a well-formed record that is not a metric (NNI's
// REQUEST_PARAMETER, sent by multi-phase trials).
var errSkip = errors.New("not a metric")

// ParseMetricRecords decodes the metric records in data, a chunk of a metric
// file read from a record boundary. It is incremental: it stops before an
// incomplete trailing record, and consumed says how many bytes were fully
// handled, so a reader resumes at offset+consumed once more was written.
//
// Corrupt input never stops the parse and never returns an error (err is
// reserved for future use and is nil): it becomes a Metric with Garbage set
// and parsing resyncs.
//   - Bad magic or length: the bytes up to the next "ME"+6 digits header are
//     one Garbage record.
//   - A complete frame whose JSON does not decode: one Garbage record; the
//     parse continues after the frame if a header (or the end) follows it,
//     else at the next header found after the frame's start.
//   - A frame whose declared length runs past the end of data is waited for
//     (not consumed), unless data holds a raw newline followed by a header
//     inside it: NNI's JSON never holds raw newlines, so the length is then
//     corrupt and the bytes up to that header become Garbage.
//
// Records that are not metrics (REQUEST_PARAMETER) are consumed and
// dropped. A null parameter_id (NNI's standalone mode) becomes -1.
func ParseMetricRecords(data []byte) (recs []providers.Metric, consumed int, err error) {
	recs, _, consumed = parseRecords(data, false)
	return recs, consumed, nil
}

// ParseMetricRecordsEnds is ParseMetricRecords that also returns, for each
// record, the offset in data just past it: where the bytes that made it
// end, for a reader that matches records with what a supervisor saw of
// the file (the local platform's stamps).
func ParseMetricRecordsEnds(data []byte) (recs []providers.Metric, ends []int, consumed int) {
	return parseRecords(data, true)
}

func parseRecords(data []byte, withEnds bool) (recs []providers.Metric, ends []int, pos int) {
	add := func(m providers.Metric, end int) {
		recs = append(recs, m)
		if withEnds {
			ends = append(ends, end)
		}
	}
	for pos < len(data) {
		rem := data[pos:]
		if len(rem) < recordHeaderLen {
			if isHeaderPrefix(rem) {
				break
			}
			n := resync(rem)
			add(garbage("bad record header", rem[:n]), pos+n)
			pos += n
			continue
		}
		if !isHeader(rem) {
			n := resync(rem)
			add(garbage("bad record header", rem[:n]), pos+n)
			pos += n
			continue
		}
		size, _ := strconv.Atoi(string(rem[2:recordHeaderLen]))
		end := recordHeaderLen + size
		if end > len(rem) {
			// Incomplete, or a corrupt length: a raw newline followed by
			// a header inside the claimed frame means the latter.
			if i := newlineHeader(rem[recordHeaderLen:]); i >= 0 {
				n := recordHeaderLen + i
				add(garbage("record length past the next record", rem[:n]), pos+n)
				pos += n
				continue
			}
			break
		}
		m, derr := decodeRecord(rem[recordHeaderLen:end])
		switch {
		case derr == nil:
			add(m, pos+end)
			pos += end
		case errors.Is(derr, errSkip):
			pos += end
		default:
			next := rem[end:]
			if len(next) == 0 || isHeader(next) || (len(next) < recordHeaderLen && isHeaderPrefix(next)) {
				add(garbage(derr.Error(), rem[:end]), pos+end)
				pos += end
				continue
			}
			n := 1 + resync(rem[1:])
			add(garbage(derr.Error(), rem[:n]), pos+n)
			pos += n
		}
	}
	return recs, ends, pos
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isHeader reports whether b starts with "ME" and 6 digits.
func isHeader(b []byte) bool {
	if len(b) < recordHeaderLen || b[0] != 'M' || b[1] != 'E' {
		return false
	}
	for _, c := range b[2:recordHeaderLen] {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// isHeaderPrefix reports whether b (shorter than a header) could be the
// start of one.
func isHeaderPrefix(b []byte) bool {
	for i, c := range b {
		switch {
		case i == 0 && c != 'M', i == 1 && c != 'E', i >= 2 && !isDigit(c):
			return false
		}
	}
	return true
}

// resync returns the offset in b (>= 1 when b is not empty) of the next
// position where a header starts, or a header prefix runs to the end of b;
// len(b) when there is none.
func resync(b []byte) int {
	for i := 1; i < len(b); i++ {
		if b[i] != 'M' {
			continue
		}
		if isHeader(b[i:]) || (len(b)-i < recordHeaderLen && isHeaderPrefix(b[i:])) {
			return i
		}
	}
	return len(b)
}

// newlineHeader returns the offset just past a raw newline that is followed
// by a full header, or -1.
func newlineHeader(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] == '\n' && isHeader(b[i+1:]) {
			return i + 1
		}
	}
	return -1
}

func garbage(why string, raw []byte) providers.Metric {
	const show = 40
	s := raw
	suffix := ""
	if len(s) > show {
		s = s[:show]
		suffix = "..."
	}
	return providers.Metric{ParameterID: -1, Garbage: fmt.Sprintf("corrupt metric record: %s (%q%s)", why, s, suffix)}
}

// decodeRecord decodes one record's JSON (NaN/Infinity tolerated).
func decodeRecord(js []byte) (providers.Metric, error) {
	// Most records hold no NaN or Infinity: they are decoded as they
	// are, in one pass, without the copy normalize makes (a pod log's
	// 20 records a trial are most of a Kubernetes refresh's own CPU).
	if nonFinite(js) {
		norm, err := normalize(bytes.TrimSpace(js))
		if err != nil {
			return providers.Metric{}, fmt.Errorf("record is not JSON: %v", err)
		}
		js = norm
	}
	var r record
	if err := json.Unmarshal(js, &r); err != nil {
		if _, syntax := err.(*json.SyntaxError); syntax {
			return providers.Metric{}, fmt.Errorf("record is not JSON: %v", err)
		}
		return providers.Metric{}, fmt.Errorf("record is not a metric: %v", err)
	}
	return r.metric()
}

// nonFinite says whether b may hold Python's NaN, Infinity or -Infinity
// (anywhere, strings included: normalize tells them apart).
func nonFinite(b []byte) bool {
	return bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Infinity"))
}

func (r record) metric() (providers.Metric, error) {
	m := providers.Metric{Sequence: r.Sequence, ParameterID: -1, Time: rawUnixTime(r.Time)}
	if r.ParameterID != nil {
		m.ParameterID = *r.ParameterID
	}
	if r.Garbage != "" {
		m.Garbage = r.Garbage
		if r.Type == TypeFinal {
			m.Type = TypeFinal // a final result that is not a number: it still replaces an earlier one
		}
		return m, nil
	}
	switch r.Type {
	case TypeFinal:
		m.Type = TypeFinal
	case TypePeriodical, "INTERMEDIATE":
		m.Type = TypePeriodical
	case "REQUEST_PARAMETER":
		return m, errSkip
	default:
		return m, fmt.Errorf("unknown metric type %q", r.Type)
	}
	raw := bytes.TrimSpace(r.Value)
	if len(raw) == 0 {
		return m, errors.New("metric record has no value")
	}
	// NNI sends the value as a JSON string holding JSON text; accept a
	// plain JSON value from other SDKs too.
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return m, fmt.Errorf("metric value: %v", err)
		}
		raw = []byte(s)
	}
	v, err := NormalizeValue(string(raw))
	if err != nil {
		return m, fmt.Errorf("metric value %q: %v", clip(string(raw)), err)
	}
	if m.Type == TypeFinal {
		if why := FinalNotANumber(string(raw), v); why != "" {
			// Still a FINAL: as the last one, it fails the trial
			// whatever an earlier final result said.
			m.Garbage = why
			return m, nil
		}
	}
	m.Value = v
	return m, nil
}

// FinalNotANumber says why a final result (raw as reported, norm as
// NormalizeValue made it) has no value at all: it is NaN, Infinity,
// -Infinity or null. "" when it is something else.
func FinalNotANumber(raw, norm string) string {
	if norm != "null" {
		return ""
	}
	switch t := strings.TrimSpace(raw); t {
	case "NaN", "Infinity", "-Infinity":
		return "the final result is " + t + ", not a number"
	default:
		return "the final result is null, not a number"
	}
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// UnixTime turns a record's "time" (seconds since the Unix epoch) into a
// time, rounded to the microsecond; nil, not finite, or outside 1970-9999
// (a clock or a writer gone wrong) is the zero time: unknown.
func UnixTime(sec *float64) time.Time {
	if sec == nil || math.IsNaN(*sec) || *sec <= 0 || *sec >= 253402300800 {
		return time.Time{}
	}
	us := math.Round(*sec * 1e6)
	return time.UnixMicro(int64(us)).UTC()
}

func rawUnixTime(raw json.RawMessage) time.Time {
	if len(raw) == 0 {
		return time.Time{}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return time.Time{}
	}
	return UnixTime(&f)
}

// unixSeconds is t as a record's "time"; nil for the zero time.
func unixSeconds(t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	s := float64(t.UnixMicro()) / 1e6
	return &s
}

// EncodeMetricRecord frames m as a metric record in NNI's file format, for
// trialJobID (used by the local supervisor to store metrics it parsed from
// stdout next to NNI's own file). A Garbage metric is stored with
// trialform's "garbage" field so ParseMetricRecords returns it as Garbage.
func EncodeMetricRecord(m providers.Metric, trialJobID string) []byte {
	r := struct {
		ParameterID *int     `json:"parameter_id"`
		TrialJobID  string   `json:"trial_job_id"`
		Type        string   `json:"type"`
		Sequence    int      `json:"sequence"`
		Value       string   `json:"value"`
		Garbage     string   `json:"garbage,omitempty"`
		Time        *float64 `json:"time,omitempty"`
	}{TrialJobID: trialJobID, Type: m.Type, Sequence: m.Sequence, Value: m.Value, Garbage: m.Garbage, Time: unixSeconds(m.Time)}
	if m.ParameterID >= 0 {
		id := m.ParameterID
		r.ParameterID = &id
	}
	if r.Type == "" {
		r.Type = TypePeriodical
	}
	if r.Value == "" && r.Garbage == "" {
		r.Value = "null"
	}
	js, err := marshal(r)
	if err != nil { // cannot happen: only strings and ints
		js = []byte(`{"garbage":"unencodable metric"}`)
	}
	if len(js)+1 > maxRecordLen {
		g := providers.Metric{ParameterID: m.ParameterID, Garbage: fmt.Sprintf("metric too long (%d bytes)", len(js)), Time: m.Time}
		return EncodeMetricRecord(g, trialJobID)
	}
	out := make([]byte, 0, recordHeaderLen+len(js)+1)
	out = fmt.Appendf(out, "%s%06d", recordMagic, len(js)+1)
	out = append(out, js...)
	return append(out, '\n')
}

// NormalizeValue turns a reported value (JSON text as Python's json.dumps
// writes it, possibly with NaN, Infinity or -Infinity) into compact, valid
// JSON, mapping those three to null.
func NormalizeValue(text string) (string, error) {
	out, err := normalize(bytes.TrimSpace([]byte(text)))
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// normalize replaces NaN, Infinity and -Infinity outside strings with null,
// checks the result is one JSON value and compacts it.
func normalize(in []byte) ([]byte, error) {
	if !nonFinite(in) {
		return compact(in)
	}
	var b bytes.Buffer
	b.Grow(len(in))
	inStr, esc := false, false
	for i := 0; i < len(in); i++ {
		c := in[i]
		if inStr {
			b.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			b.WriteByte(c)
		case bytes.HasPrefix(in[i:], []byte("NaN")):
			b.WriteString("null")
			i += len("NaN") - 1
		case bytes.HasPrefix(in[i:], []byte("Infinity")):
			b.WriteString("null")
			i += len("Infinity") - 1
		case bytes.HasPrefix(in[i:], []byte("-Infinity")):
			b.WriteString("null")
			i += len("-Infinity") - 1
		default:
			b.WriteByte(c)
		}
	}
	return compact(b.Bytes())
}

// compact checks in is one JSON value and returns it compacted.
func compact(in []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(in))
	if err := json.Compact(&out, in); err != nil {
		return nil, err
	}
	if out.Len() == 0 {
		return nil, errors.New("empty value")
	}
	return out.Bytes(), nil
}
