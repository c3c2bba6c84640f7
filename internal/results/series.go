package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/trialform/trialform/state"
)

// ParseSeries decodes a trial's metric series file (JSON lines of
// state.MetricPoint, as state.Manager writes them) into its intermediate
// points, skipping FINAL ones. Lines of the exact shape the state writes
// are read by a fast path (export reads a million of them); anything else
// goes through encoding/json. A torn last line (a crash mid-append) is
// ignored; a bad line elsewhere is an error.
func ParseSeries(data []byte, objective string) ([]Point, error) {
	if objective == "" {
		objective = "default"
	}
	pts := make([]Point, 0, bytes.Count(data, []byte{'\n'}))
	attempt, step := 0, 0 // of the last point kept that had an attempt
	line := 0
	for len(data) > 0 {
		line++
		l, rest, complete := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		p, periodical, ok := fastPoint(l, objective)
		if !ok {
			var mp state.MetricPoint
			if err := json.Unmarshal(l, &mp); err != nil {
				if !complete {
					break
				}
				return pts, fmt.Errorf("line %d: %w", line, err)
			}
			p, periodical = ToPoint(mp, objective)
		}
		if !periodical {
			continue
		}
		if p.Attempt > 0 {
			// Within an attempt the reports' numbers only go up: one
			// not past the last is a refresh replayed after a crash
			// between appending and saving the state (ReadMetrics drops
			// the same). Series without attempts are kept whole.
			if p.Attempt == attempt && p.Step <= step {
				continue
			}
			if p.Attempt >= attempt {
				attempt, step = p.Attempt, p.Step
			}
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// AddPoints is AddSeries for points ParseSeries read.
func (r *Row) AddPoints(pts []Point, keep bool) {
	if keep {
		r.Series = pts
	}
	for i := range pts {
		p := &pts[i]
		if !keep {
			c := *p
			p = &c
		}
		r.Latest = p
		if p.Value != nil && (r.BestIntermediate == nil || r.BestIntermediate.Value == nil || better(r.Goal, *p.Value, *r.BestIntermediate.Value)) {
			r.BestIntermediate = p
		}
	}
}

var (
	preType    = []byte(`{"type":"`)
	preSeq     = []byte(`","sequence":`)
	preAttempt = []byte(`,"attempt":`)
	preValue   = []byte(`,"value":`)
	preTime    = []byte(`,"time":"`)
)

// fastPoint reads `{"type":T,"sequence":N,"value":V,"time":"..."}` where V
// is a number or a flat object of numbers (or nulls) with plain keys; ok
// is false for any other shape.
func fastPoint(l []byte, objective string) (p Point, periodical, ok bool) {
	if !bytes.HasPrefix(l, preType) {
		return p, false, false
	}
	l = l[len(preType):]
	q := bytes.IndexByte(l, '"')
	if q < 0 {
		return p, false, false
	}
	typ := l[:q]
	l = l[q:]
	if !bytes.HasPrefix(l, preSeq) {
		return p, false, false
	}
	l = l[len(preSeq):]
	c := bytes.IndexByte(l, ',')
	if c < 0 {
		return p, false, false
	}
	seq, err := strconv.Atoi(string(l[:c]))
	if err != nil {
		return p, false, false
	}
	l = l[c:]
	attempt := 0
	if bytes.HasPrefix(l, preAttempt) {
		l = l[len(preAttempt):]
		c := bytes.IndexByte(l, ',')
		if c < 0 {
			return p, false, false
		}
		if attempt, err = strconv.Atoi(string(l[:c])); err != nil {
			return p, false, false
		}
		l = l[c:]
	}
	if !bytes.HasPrefix(l, preValue) {
		return p, false, false
	}
	l = l[len(preValue):]
	t := bytes.LastIndex(l, preTime)
	if t < 0 || !bytes.HasSuffix(l, []byte(`"}`)) {
		return p, false, false
	}
	val, ts := l[:t], l[t+len(preTime):len(l)-2]
	if string(typ) != "PERIODICAL" {
		return p, false, true
	}
	tm, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return p, false, false
	}
	p = Point{Step: seq, Attempt: attempt, Time: tm}
	if len(val) > 0 && val[0] == '{' {
		m, ok := flatObject(val)
		if !ok {
			return p, false, false
		}
		p.Metrics = m
	} else if string(val) == "null" {
		p.Metrics = map[string]float64{}
	} else {
		f, err := strconv.ParseFloat(string(val), 64)
		if err != nil {
			return p, false, false
		}
		p.Metrics = map[string]float64{"default": f}
	}
	p.Value = state.ObjectiveValue(p.Metrics, objective)
	return p, true, true
}

// flatObject reads {"k":num,...} with keys free of escapes; null members
// are left out.
func flatObject(b []byte) (map[string]float64, bool) {
	m := make(map[string]float64, 2)
	b = b[1:]
	if len(b) > 0 && b[0] == '}' {
		return m, len(b) == 1
	}
	for {
		if len(b) == 0 || b[0] != '"' {
			return nil, false
		}
		q := bytes.IndexByte(b[1:], '"')
		if q < 0 {
			return nil, false
		}
		key := b[1 : 1+q]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false
		}
		b = b[2+q:]
		if len(b) == 0 || b[0] != ':' {
			return nil, false
		}
		b = b[1:]
		end := bytes.IndexAny(b, ",}")
		if end < 0 {
			return nil, false
		}
		num := b[:end]
		if string(num) != "null" {
			f, err := strconv.ParseFloat(string(num), 64)
			if err != nil {
				return nil, false
			}
			m[string(key)] = f
		}
		last := b[end] == '}'
		b = b[end+1:]
		if last {
			return m, len(b) == 0
		}
	}
}

// AppendJSON appends p as JSON ({"step","value","metrics","time"}, the
// encoding/json form of Point with non-finite numbers as null).
func (p *Point) AppendJSON(b []byte) []byte {
	b = append(b, `{"step":`...)
	b = strconv.AppendInt(b, int64(p.Step), 10)
	b = append(b, `,"value":`...)
	if p.Value != nil {
		b = appendNum(b, *p.Value)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"metrics":{`...)
	keys := make([]string, 0, len(p.Metrics))
	for k := range p.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendKey(b, k)
		b = append(b, ':')
		b = appendNum(b, p.Metrics[k])
	}
	b = append(b, `},"time":"`...)
	b = p.Time.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}

func appendNum(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendKey appends k as a JSON string: plain keys as they are, others
// through encoding/json (which also escapes <, > and &).
func appendKey(b []byte, k string) []byte {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			kb, _ := json.Marshal(k)
			return append(b, kb...)
		}
	}
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"')
}
