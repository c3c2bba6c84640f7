package trialproto

import (
	"regexp"

	"github.com/trialform/trialform/providers"
)

// Collector turns a trial's stdout, one line at a time, into metrics, the
// same way on every platform: NNI's and trialform's metric lines first,
// then the experiment's metric_regex; the trial's parameter id where a
// line names none; PERIODICAL sequence numbers counted from Seq; and, at
// the end, the synthetic FINAL of regexp metrics (the last value of each
// name) when the trial reported no final result of its own.
//
// Seq and Final are the state a platform keeps between reads (its
// offsets): set them before feeding the lines that follow, read them back
// after. How lines are cut out of a file, a stream or a pod log stays with
// the platform.
type Collector struct {
	ParameterID int            // for lines without a parameter id
	Regex       *regexp.Regexp // metric_regex; nil: none
	Seq         int            // the next PERIODICAL sequence number
	Final       bool           // a FINAL result (not garbage) was reported
	last        LastValues
}

// Line parses one line (without its newline); ok is false when the line
// holds no metric.
func (c *Collector) Line(line string) (m providers.Metric, ok bool) {
	fromRegex := false
	m, ok = ParseStdoutLine(line, nil)
	if !ok && c.Regex != nil {
		m, ok = ParseStdoutLine(line, c.Regex)
		fromRegex = ok
	}
	if !ok {
		return m, false
	}
	c.fill(&m)
	if fromRegex {
		c.last.Add(m)
	}
	return m, true
}

// Add numbers a metric that did not come from a line (a termination
// message) as Line does.
func (c *Collector) Add(m providers.Metric) providers.Metric {
	c.fill(&m)
	return m
}

func (c *Collector) fill(m *providers.Metric) {
	if m.ParameterID < 0 {
		m.ParameterID = c.ParameterID
	}
	if m.Sequence < 0 {
		m.Sequence = 0
		if m.Type == TypePeriodical {
			m.Sequence = c.Seq
			c.Seq++
		}
	}
	if m.Type == TypeFinal && m.Garbage == "" {
		c.Final = true
	}
}

// Finish returns the synthetic FINAL of the regexp metrics fed since the
// Collector was made: the last value of each name. ok is false when no
// regexp metric was seen or the trial reported a FINAL itself (on stdout,
// or in otherFinal: NNI's metric file). It does not count as the trial's
// own final result (Final stays as it was; Add it to count it).
func (c *Collector) Finish(otherFinal bool) (providers.Metric, bool) {
	if c.Final || otherFinal {
		return providers.Metric{}, false
	}
	m, ok := c.last.FinalFromLast()
	if !ok {
		return m, false
	}
	m.ParameterID = c.ParameterID
	return m, true
}

// HasFinal reports whether NNI metric file data holds a FINAL result (not
// garbage).
func HasFinal(nniMetrics []byte) bool {
	recs, _, _ := ParseMetricRecords(nniMetrics)
	for _, r := range recs {
		if r.Type == TypeFinal && r.Garbage == "" {
			return true
		}
	}
	return false
}

// Offset keys, in Observation.MetricsOffset, of where reading NNI's metric
// files resumes (ReadNNIAttempts).
const (
	OffsetAttempt = "attempt" // the attempt whose metric file OffsetNNI points into
	OffsetNNI     = "nni"     // the byte offset in that file
)

// ReadNNIAttempts reads NNI's metric files of a trial from where off says
// the last read ended, through the current attempt: the archived files of
// earlier attempts (an attempt archives its predecessor's file, since NNI
// may truncate it), then the current one. read reads one attempt's file
// from a byte offset and returns its complete records and the offset after
// them. It returns the records and the new offsets of those two keys.
func ReadNNIAttempts(attempt int, off map[string]int64,
	read func(a int, current bool, from int64) ([]providers.Metric, int64, error)) ([]providers.Metric, map[string]int64, error) {
	from := int(off[OffsetAttempt])
	if from < 1 {
		from = 1
	}
	nniOff := off[OffsetNNI]
	if from > attempt { // offsets of a trial purged and created again
		from, nniOff = attempt, 0
	}
	var out []providers.Metric
	for a := from; a <= attempt; a++ {
		start := int64(0)
		if a == from {
			start = nniOff
		}
		recs, next, err := read(a, a == attempt, start)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, recs...)
		nniOff = next
	}
	return out, map[string]int64{OffsetAttempt: int64(attempt), OffsetNNI: nniOff}, nil
}
