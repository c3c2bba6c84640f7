package trialproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/trialform/trialform/providers"
)

// StdoutPrefix starts trialform's own metric line. The forms are:
//
//	trialform: <json>               a final result (FINAL)
//	trialform: final <json>         the same, spelled out
//	trialform: intermediate <json>  an intermediate result (PERIODICAL)
//
// where <json> is a number or an object such as {"default": 0.9, "loss":
// 0.1}, as Python's json.dumps writes it (NaN and Infinity allowed, stored as
// null). The line must start with the prefix (text before a carriage return,
// as progress bars leave it, is ignored).
const StdoutPrefix = "trialform: "

const nniStdoutPrefix = "NNISDK_MEb'"

// IsMetricLine reports whether a stdout line (or its beginning) is one of
// the metric forms that do not depend on a metric_regex: every line
// ParseStdoutLine reads without a regexp, trialform's own line after a
// progress bar's carriage return included (FuzzParseStdoutLine).
func IsMetricLine(head []byte) bool {
	return bytes.HasPrefix(head, []byte(StdoutPrefix)) || bytes.Contains(head, []byte("\r"+StdoutPrefix)) ||
		bytes.Contains(head, []byte(nniStdoutPrefix))
}

// ParseStdoutLine recognises a metric in one line of a trial's stdout (the
// trailing newline may be present). In order:
//
//  1. NNI's "NNISDK_MEb'<record JSON>'" line, which NNI prints instead of
//     writing the metric file when NNI_PLATFORM is not "local". Text before
//     the marker is allowed, as NNI's own pattern allows it; the line must
//     end with the closing quote. The record may be plain JSON (NNI >= 2)
//     or a Python bytes repr with backslash escapes (NNI 1.x).
//  2. trialform's own line (see StdoutPrefix).
//  3. re, when not nil: every match of its named groups "name" and "value"
//     ("loss=0.3 acc=0.9" with (?P<name>\w+)=(?P<value>\S+)); a regexp
//     without a name group reports under "default". Values that do not
//     parse as numbers are ignored. The matches of one line become one
//     PERIODICAL metric whose value is an object {"loss": 0.3, "acc": 0.9};
//     the caller (the platform's supervisor) is expected to turn the last
//     value of each name into a synthetic FINAL when the trial exits 0
//     without reporting a final result itself (see FinalFromLast).
//
// Forms 2 and 3 carry no sequence or parameter id: Sequence and ParameterID
// are -1 for the caller to fill in. A line of form 1 or 2 that cannot be
// decoded is returned as a Garbage metric (ok true); a REQUEST_PARAMETER
// record is not a metric (ok false).
func ParseStdoutLine(line string, re *regexp.Regexp) (providers.Metric, bool) {
	line = strings.TrimRight(line, "\r\n")
	last := line
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		last = line[i+1:]
	}
	if i := strings.Index(last, nniStdoutPrefix); i >= 0 && strings.HasSuffix(last, "'") && len(last) > i+len(nniStdoutPrefix) {
		return parseNNISDK(last[i+len(nniStdoutPrefix) : len(last)-1])
	}
	if rest, ok := strings.CutPrefix(last, StdoutPrefix); ok {
		return parseTrialformLine(rest)
	}
	if re != nil {
		return parseRegexLine(line, re)
	}
	return providers.Metric{}, false
}

func parseNNISDK(body string) (providers.Metric, bool) {
	m, err := decodeRecord([]byte(body))
	if err != nil && err != errSkip {
		if unq, uerr := unescapeBytesRepr(body); uerr == nil {
			m, err = decodeRecord([]byte(unq))
		}
	}
	switch {
	case err == errSkip:
		return providers.Metric{}, false
	case err != nil:
		return providers.Metric{ParameterID: -1, Sequence: -1, Garbage: fmt.Sprintf("unreadable NNISDK_MEb line: %v", err)}, true
	}
	return m, true
}

// unescapeBytesRepr undoes the escapes of a Python bytes repr between its
// quotes: \\ \' \" \n \r \t and \xHH.
func unescapeBytesRepr(s string) (string, error) {
	if !strings.ContainsRune(s, '\\') {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("dangling backslash")
		}
		i++
		switch s[i] {
		case '\\', '\'', '"':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x':
			if i+2 >= len(s) {
				return "", fmt.Errorf("short \\x escape")
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", fmt.Errorf("bad \\x escape: %w", err)
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			return "", fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

func parseTrialformLine(rest string) (providers.Metric, bool) {
	m := providers.Metric{Type: TypeFinal, Sequence: -1, ParameterID: -1}
	rest = strings.TrimSpace(rest)
	if r, ok := cutWord(rest, "intermediate"); ok {
		m.Type, rest = TypePeriodical, r
	} else if r, ok := cutWord(rest, "final"); ok {
		rest = r
	}
	v, err := NormalizeValue(rest)
	if err == nil && m.Type == TypeFinal {
		if why := FinalNotANumber(rest, v); why != "" {
			m.Garbage = why // still a FINAL (see record.metric)
			return m, true
		}
	}
	if err == nil && !isNumberOrObject(v) {
		err = fmt.Errorf("not a number or an object")
	}
	if err != nil {
		m.Type = ""
		m.Garbage = fmt.Sprintf("unreadable trialform metric line %q: %v", clip(rest), err)
		return m, true
	}
	m.Value = v
	return m, true
}

func cutWord(s, word string) (string, bool) {
	r, ok := strings.CutPrefix(s, word)
	if !ok || (r != "" && r[0] != ' ' && r[0] != '\t') {
		return s, false
	}
	return strings.TrimSpace(r), true
}

func isNumberOrObject(v string) bool {
	if v == "null" || strings.HasPrefix(v, "{") {
		return true
	}
	_, err := strconv.ParseFloat(v, 64)
	return err == nil
}

func parseRegexLine(line string, re *regexp.Regexp) (providers.Metric, bool) {
	ni, vi := re.SubexpIndex("name"), re.SubexpIndex("value")
	if vi < 0 {
		return providers.Metric{}, false
	}
	var names []string
	vals := map[string]float64{}
	for _, sm := range re.FindAllStringSubmatch(line, -1) {
		name := "default"
		if ni >= 0 && sm[ni] != "" {
			name = sm[ni]
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(sm[vi]), 64)
		if err != nil {
			continue
		}
		if _, seen := vals[name]; !seen {
			names = append(names, name)
		}
		vals[name] = f
	}
	if len(names) == 0 {
		return providers.Metric{}, false
	}
	return providers.Metric{Type: TypePeriodical, Sequence: -1, ParameterID: -1, Value: objectJSON(names, vals)}, true
}

// objectJSON renders name -> number in the given order, non-finite numbers
// as null.
func objectJSON(names []string, vals map[string]float64) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(numberJSON(vals[n]))
	}
	b.WriteByte('}')
	return b.String()
}

func numberJSON(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// LastValues accumulates the regexp metrics of a trial so that the last
// value seen for each name can become its final result.
type LastValues struct {
	names []string
	vals  map[string]json.RawMessage
}

// Add records the values of a PERIODICAL object metric (as ParseStdoutLine
// returns for form 3).
func (l *LastValues) Add(m providers.Metric) {
	var obj map[string]json.RawMessage
	if m.Garbage != "" || json.Unmarshal([]byte(m.Value), &obj) != nil {
		return
	}
	if l.vals == nil {
		l.vals = map[string]json.RawMessage{}
	}
	// Keep the line's own order for new names.
	dec := json.NewDecoder(strings.NewReader(m.Value))
	if _, err := dec.Token(); err != nil {
		return
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return
		}
		name, _ := t.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return
		}
		if _, seen := l.vals[name]; !seen {
			l.names = append(l.names, name)
		}
		l.vals[name] = obj[name]
	}
}

// FinalFromLast returns the synthetic FINAL metric holding the last value of
// every name added, and false when nothing was added.
func (l *LastValues) FinalFromLast() (providers.Metric, bool) {
	if len(l.names) == 0 {
		return providers.Metric{}, false
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range l.names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		b.Write(k)
		b.WriteByte(':')
		b.Write(l.vals[n])
	}
	b.WriteByte('}')
	return providers.Metric{Type: TypeFinal, Sequence: 0, ParameterID: -1, Value: b.String()}, true
}
