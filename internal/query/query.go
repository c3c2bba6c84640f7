// Package query is trialform's results query language, Polyaxon's syntax
// (`status:succeeded, params.activation:relu|sigmoid, metrics.loss:<=0.3`)
// and its sort specs (`-metrics.loss,params.lr`): a hand-written parser
// into a typed AST, and an evaluator over results.Row, the view model
// every results renderer shares (`trials`, `export`, the dashboard).
//
// It is pure: no I/O, no clock, no printing. Errors are *Error values that
// carry the column of the mistake so a caller can draw a caret under it.
//
// Grammar (spaces around tokens are ignored):
//
//	query     = [ condition { "," condition } ]
//	condition = field ":" [ "~" ] operand { "|" operand }
//	operand   = ( "<" | "<=" | ">" | ">=" ) value | value ".." value | value
//	value     = bare word (no , | or leading/trailing space) | "quoted \" string"
//	field     = status | id | experiment | seq | generation | attempts | metric
//	          | duration | elapsed | started_at | ended_at | reason | exit_code
//	          | intermediate | latest | latest_step | best_intermediate
//	          | commit | code_commit | dirty | version
//	          | params.NAME | metrics.NAME
//
// Conditions are ANDed, operands of one condition ORed, "~" negates the
// whole condition. Ranges include both ends. A trial that lacks the field
// (no final metric yet, never started) matches no condition on it,
// negated or not.
package query

import (
	"fmt"
	"github.com/trialform/trialform/internal/duration"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/internal/results"
)

// Query is a parsed query: the AND of its conditions. The zero Query (and
// the one parsed from "") matches every row.
type Query struct {
	Source string
	Conds  []*Cond
}

// Cond is one `field:operands` condition.
type Cond struct {
	Field Field
	// Not is set by a leading "~".
	Not bool
	// Operands are ORed.
	Operands []*Operand
	// Pos is the byte offset of the field in Query.Source.
	Pos int
}

// Op is an operand's comparison.
type Op int

const (
	OpEq Op = iota
	OpLt
	OpLe
	OpGt
	OpGe
	OpRange
)

var opText = map[Op]string{OpEq: "", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=", OpRange: ".."}

// Operand is one alternative of a condition.
type Operand struct {
	Op Op
	// Value is the literal (the low end of a range); Hi the range's high end.
	Value Value
	Hi    Value
	// Pos is the byte offset of the operand in Query.Source.
	Pos int
}

// Value is a literal, converted for the field's type.
type Value struct {
	// Raw is the literal as written (unquoted).
	Raw string
	// Num is set for numbers (and for a param literal that reads as one:
	// IsNum).
	Num   float64
	IsNum bool
	Dur   time.Duration
	Time  time.Time
	// Span is the precision of a time literal: 24h for a date, a minute
	// for 2006-01-02T15:04, zero for an exact instant. `started_at:2024-05-01`
	// means that whole day.
	Span time.Duration
	Pos  int
}

// Error is a query or sort parse error at a column.
type Error struct {
	// Input is the query or sort spec that was parsed.
	Input string
	// Offset is the byte offset of the mistake in Input.
	Offset int
	// Msg says what is wrong and what to do (with a did-you-mean where
	// one fits).
	Msg string
}

// Column is the 1-based column (in characters) of the mistake.
func (e *Error) Column() int {
	return utf8.RuneCountInString(e.Input[:min(e.Offset, len(e.Input))]) + 1
}

func (e *Error) Error() string { return fmt.Sprintf("column %d: %s", e.Column(), e.Msg) }

// Caret returns two lines: the input, and a caret under the column of the
// mistake, each prefixed by indent.
func (e *Error) Caret(indent string) string {
	in := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == '\r' {
			return ' '
		}
		return r
	}, e.Input)
	return indent + in + "\n" + indent + strings.Repeat(" ", e.Column()-1) + "^"
}

func errAt(in string, off int, format string, args ...any) *Error {
	return &Error{Input: in, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// Parse parses a query. An empty (or all-space) query matches everything.
// Errors are *Error.
func Parse(s string) (*Query, error) {
	q := &Query{Source: s}
	parts, err := split(s, 0, len(s), ',')
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 && strings.TrimSpace(s) == "" {
		return q, nil
	}
	for _, p := range parts {
		c, err := parseCond(s, p[0], p[1])
		if err != nil {
			return nil, err
		}
		q.Conds = append(q.Conds, c)
	}
	return q, nil
}

// split cuts s[start:end] at sep outside double quotes; it returns
// [start,end) pairs.
func split(s string, start, end int, sep byte) ([][2]int, error) {
	var out [][2]int
	from := start
	inq := -1
	for i := start; i < end; i++ {
		switch c := s[i]; {
		case inq >= 0 && c == '\\' && i+1 < end:
			i++
		case c == '"':
			if inq >= 0 {
				inq = -1
			} else {
				inq = i
			}
		case inq < 0 && c == sep:
			out = append(out, [2]int{from, i})
			from = i + 1
		}
	}
	if inq >= 0 {
		return nil, errAt(s, inq, "unterminated quoted string: close it with \"")
	}
	return append(out, [2]int{from, end}), nil
}

// trim narrows [a,b) of s to its non-space part.
func trim(s string, a, b int) (int, int) {
	for a < b && isSpace(s[a]) {
		a++
	}
	for b > a && isSpace(s[b-1]) {
		b--
	}
	return a, b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func parseCond(s string, a, b int) (*Cond, error) {
	a, b = trim(s, a, b)
	if a == b {
		return nil, errAt(s, a, "empty condition: write field:value between the commas")
	}
	colon := strings.IndexByte(s[a:b], ':')
	if colon < 0 {
		return nil, errAt(s, a, "condition %q has no ':'; write field:value (e.g. status:succeeded)", s[a:b])
	}
	colon += a
	fa, fb := trim(s, a, colon)
	name := s[fa:fb]
	if name == "" {
		return nil, errAt(s, a, "missing field name before ':'")
	}
	f, err := resolveField(s, fa, name)
	if err != nil {
		return nil, err
	}
	c := &Cond{Field: f, Pos: fa}
	va, vb := trim(s, colon+1, b)
	if va < vb && s[va] == '~' {
		c.Not = true
		va, vb = trim(s, va+1, vb)
	}
	if va == vb {
		return nil, errAt(s, va, "missing value after %q: write %s:VALUE (%s)", name+":", name, f.Type)
	}
	alts, err := split(s, va, vb, '|')
	if err != nil {
		return nil, err
	}
	for _, al := range alts {
		op, err := parseOperand(s, f, al[0], al[1])
		if err != nil {
			return nil, err
		}
		c.Operands = append(c.Operands, op)
	}
	return c, nil
}

func resolveField(s string, pos int, name string) (Field, error) {
	if f, ok := LookupField(name); ok {
		return f, nil
	}
	lower := strings.ToLower(name)
	if f, ok := LookupField(lower); ok && !strings.Contains(name, ".") {
		return f, nil
	}
	msg := fmt.Sprintf("unknown field %q", name)
	if p, rest, ok := strings.Cut(name, "."); ok {
		if sp := didyoumean.Suggest(p, []string{"params", "metrics"}); sp != "" && rest != "" {
			return Field{}, errAt(s, pos, "%s; did you mean %q?", msg, sp+"."+rest)
		}
	}
	if name == "params" || name == "metrics" || name == "params." || name == "metrics." {
		return Field{}, errAt(s, pos, "%s: name the %s, e.g. %s.lr", msg, strings.TrimSuffix(name, "."), strings.TrimSuffix(name, "."))
	}
	if sp := didyoumean.Suggest(name, fieldCandidates(Schema{})); sp != "" {
		return Field{}, errAt(s, pos, "%s; did you mean %q?", msg, sp)
	}
	return Field{}, errAt(s, pos, "%s; fields: %s", msg, strings.Join(FieldNames(), ", "))
}

func parseOperand(s string, f Field, a, b int) (*Operand, error) {
	a, b = trim(s, a, b)
	if a == b {
		return nil, errAt(s, a, "empty alternative: write a value on each side of '|'")
	}
	o := &Operand{Pos: a}
	for _, p := range []struct {
		t  string
		op Op
	}{{"<=", OpLe}, {">=", OpGe}, {"<", OpLt}, {">", OpGt}} {
		if strings.HasPrefix(s[a:b], p.t) {
			o.Op = p.op
			a, b = trim(s, a+len(p.t), b)
			break
		}
	}
	if o.Op != OpEq {
		if !f.Type.Ordered() {
			return nil, errAt(s, o.Pos, "%s cannot be compared with %s: %s is %s", f.Name, opText[o.Op], f.Name, f.Type)
		}
		if a == b {
			return nil, errAt(s, a, "missing value after %q", opText[o.Op])
		}
	}
	// A range a..b, outside quotes.
	if o.Op == OpEq && (len(s[a:b]) == 0 || s[a] != '"') {
		if i := strings.Index(s[a:b], ".."); i >= 0 {
			if !f.Type.Ordered() {
				return nil, errAt(s, a+i, "%s has no ranges: %s is %s", f.Name, f.Name, f.Type)
			}
			la, lb := trim(s, a, a+i)
			ha, hb := trim(s, a+i+2, b)
			if la == lb {
				return nil, errAt(s, a, "range needs a low end: LOW..HIGH")
			}
			if ha == hb {
				return nil, errAt(s, a+i+2, "range needs a high end: LOW..HIGH")
			}
			lo, err := literal(s, f, la, lb)
			if err != nil {
				return nil, err
			}
			hi, err := literal(s, f, ha, hb)
			if err != nil {
				return nil, err
			}
			if emptyRange(f, lo, hi) {
				l, h := s[la:lb], s[ha:hb]
				return nil, errAt(s, la, "range %s..%s is empty: write %s..%s", l, h, h, l)
			}
			o.Op, o.Value, o.Hi = OpRange, lo, hi
			return o, nil
		}
	}
	v, err := literal(s, f, a, b)
	if err != nil {
		return nil, err
	}
	o.Value = v
	return o, nil
}

// emptyRange reports whether the range lo..hi of field f matches nothing
// whatever the value: its low end is above its high end.
func emptyRange(f Field, lo, hi Value) bool {
	switch f.Type {
	case TypeNumber:
		return lo.Num > hi.Num
	case TypeParam:
		switch {
		case lo.IsNum && hi.IsNum:
			return lo.Num > hi.Num
		case !lo.IsNum && !hi.IsNum:
			return lo.Raw > hi.Raw
		}
	case TypeDuration:
		return lo.Dur > hi.Dur
	case TypeTime:
		// hi stands for [Time, Time+Span): the range ends there.
		if hi.Span == 0 {
			return lo.Time.After(hi.Time)
		}
		return !lo.Time.Before(hi.Time.Add(hi.Span))
	}
	return false
}

// literal reads one value of s[a:b] for field f.
func literal(s string, f Field, a, b int) (Value, error) {
	raw := s[a:b]
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		u, err := strconv.Unquote(raw)
		if err != nil {
			return Value{}, errAt(s, a, "bad quoted string %s: %v", raw, err)
		}
		raw = u
	} else if strings.ContainsAny(raw, "\"") {
		return Value{}, errAt(s, a+strings.IndexByte(raw, '"'), "a quote inside a value: quote the whole value (\"like this\")")
	}
	v := Value{Raw: raw, Pos: a}
	switch f.Type {
	case TypeString:
	case TypeCommit:
		if len(raw) < 4 || strings.Trim(strings.ToLower(raw), "0123456789abcdef") != "" {
			return Value{}, errAt(s, a, "%s is %s, not %q", f.Name, TypeCommit, raw)
		}
	case TypeBool:
		if !strings.EqualFold(raw, "true") && !strings.EqualFold(raw, "false") {
			return Value{}, errAt(s, a, "%s is %s, not %q", f.Name, TypeBool, raw)
		}
	case TypeStatus:
		up := strings.ToUpper(raw)
		for _, st := range Statuses {
			if up == st {
				v.Raw = st
				return v, nil
			}
		}
		hint := ""
		if sp := didyoumean.Suggest(up, Statuses); sp != "" {
			hint = fmt.Sprintf("; did you mean %q?", strings.ToLower(sp))
		}
		return Value{}, errAt(s, a, "%q is not a status%s (statuses: %s)", raw, hint, strings.ToLower(strings.Join(Statuses, ", ")))
	case TypeNumber:
		n, err := parseNum(raw)
		if err != nil {
			return Value{}, errAt(s, a, "%s is %s, not %q", f.Name, TypeNumber, raw)
		}
		v.Num, v.IsNum = n, true
	case TypeParam:
		if n, err := parseNum(raw); err == nil {
			v.Num, v.IsNum = n, true
		}
	case TypeDuration:
		d, err := parseDuration(raw)
		if err != nil {
			return Value{}, errAt(s, a, "%s is %s, not %q", f.Name, TypeDuration, raw)
		}
		v.Dur = d
	case TypeTime:
		t, span, err := parseTime(raw)
		if err != nil {
			return Value{}, errAt(s, a, "%s is %s, not %q", f.Name, TypeTime, raw)
		}
		v.Time, v.Span = t, span
	}
	return v, nil
}

func parseNum(s string) (float64, error) {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if n != n { // NaN compares false with everything: refuse it.
		return 0, fmt.Errorf("NaN")
	}
	return n, nil
}

func parseDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n != n || n > 1e10 || n < -1e10 {
			return 0, fmt.Errorf("out of range")
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	return duration.Parse(s)
}

var timeLayouts = []struct {
	layout string
	span   time.Duration
}{
	{time.RFC3339Nano, 0},
	{"2006-01-02T15:04:05", time.Second},
	{"2006-01-02 15:04:05", time.Second},
	{"2006-01-02T15:04", time.Minute},
	{"2006-01-02 15:04", time.Minute},
	{"2006-01-02", 24 * time.Hour},
}

func parseTime(s string) (time.Time, time.Duration, error) {
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l.layout, s, time.UTC); err == nil {
			span := l.span
			if l.span == 0 && !strings.Contains(s, ".") {
				span = time.Second
			}
			return t, span, nil
		}
	}
	return time.Time{}, 0, fmt.Errorf("not a time")
}

// String renders the query canonically (fields and operators as parsed,
// one space after each comma).
func (q *Query) String() string {
	if q == nil {
		return ""
	}
	parts := make([]string, len(q.Conds))
	for i, c := range q.Conds {
		var b strings.Builder
		b.WriteString(c.Field.Name)
		b.WriteByte(':')
		if c.Not {
			b.WriteByte('~')
		}
		for j, o := range c.Operands {
			if j > 0 {
				b.WriteByte('|')
			}
			if o.Op == OpRange {
				b.WriteString(quoteRaw(o.Value.Raw) + ".." + quoteRaw(o.Hi.Raw))
			} else {
				b.WriteString(opText[o.Op] + quoteRaw(o.Value.Raw))
			}
		}
		parts[i] = b.String()
	}
	return strings.Join(parts, ", ")
}

func quoteRaw(s string) string {
	if s == "" || strings.ContainsAny(s, ",|\"~<>") || strings.Contains(s, "..") || strings.TrimSpace(s) != s {
		return strconv.Quote(s)
	}
	return s
}

// Match reports whether r satisfies every condition of q.
func (q *Query) Match(r *results.Row) bool {
	if q == nil {
		return true
	}
	for _, c := range q.Conds {
		if !c.Match(r) {
			return false
		}
	}
	return true
}

// Filter returns the rows q matches, in order.
func (q *Query) Filter(rows []*results.Row) []*results.Row {
	if q == nil || len(q.Conds) == 0 {
		return rows
	}
	out := make([]*results.Row, 0, len(rows))
	for _, r := range rows {
		if q.Match(r) {
			out = append(out, r)
		}
	}
	return out
}

// Match reports whether r satisfies the condition.
func (c *Cond) Match(r *results.Row) bool {
	v, ok := c.Field.Get(r)
	if !ok {
		return false
	}
	any := false
	for _, o := range c.Operands {
		if o.match(c.Field, v) {
			any = true
			break
		}
	}
	return any != c.Not
}

func (o *Operand) match(f Field, v any) bool {
	switch x := v.(type) {
	case string:
		if f.Type == TypeStatus {
			return o.Op == OpEq && x == o.Value.Raw
		}
		if f.Type == TypeParam && o.Op != OpEq {
			// Ordered comparison of a text param: lexical.
			return cmpOrdered(o, strings.Compare(x, o.Value.Raw), strings.Compare(x, o.Hi.Raw))
		}
		return o.Op == OpEq && x == o.Value.Raw
	case commit:
		return o.Op == OpEq && strings.HasPrefix(string(x), strings.ToLower(o.Value.Raw))
	case bool:
		return o.Op == OpEq && strings.EqualFold(o.Value.Raw, strconv.FormatBool(x))
	case float64:
		if !o.Value.IsNum || (o.Op == OpRange && !o.Hi.IsNum) {
			return false
		}
		return cmpOrdered(o, cmpF(x, o.Value.Num), cmpF(x, o.Hi.Num))
	case time.Duration:
		return cmpOrdered(o, cmpD(x, o.Value.Dur), cmpD(x, o.Hi.Dur))
	case time.Time:
		// A literal of precision Span stands for [Time, Time+Span).
		lo := o.Value.Time
		loEnd := lo.Add(o.Value.Span)
		switch o.Op {
		case OpEq:
			if o.Value.Span == 0 {
				return x.Equal(lo)
			}
			return !x.Before(lo) && x.Before(loEnd)
		case OpLt:
			return x.Before(lo)
		case OpLe:
			return x.Before(loEnd) || (o.Value.Span == 0 && x.Equal(lo))
		case OpGt:
			return !x.Before(loEnd) && !(o.Value.Span == 0 && x.Equal(lo))
		case OpGe:
			return !x.Before(lo)
		case OpRange:
			hiEnd := o.Hi.Time.Add(o.Hi.Span)
			return !x.Before(lo) && (x.Before(hiEnd) || (o.Hi.Span == 0 && x.Equal(o.Hi.Time)))
		}
	}
	return false
}

// cmpOrdered applies o's comparison given c = compare(x, Value) and
// ch = compare(x, Hi).
func cmpOrdered(o *Operand, c, ch int) bool {
	switch o.Op {
	case OpEq:
		return c == 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	case OpGe:
		return c >= 0
	case OpRange:
		return c >= 0 && ch <= 0
	}
	return false
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpD(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Schema is what the rows being queried hold, for Check.
type Schema struct {
	// Params maps each parameter name to the types its values have.
	Params map[string]ParamKind
	// Metrics holds every final metric name (and the objective's).
	Metrics map[string]bool
}

// ParamKind is a bit set of the types a parameter's values have.
type ParamKind int

const (
	ParamNumber ParamKind = 1 << iota
	ParamString
	ParamBool
)

// SchemaOf collects the params and metrics of rows (objective names
// included, so an objective nobody reported yet is not a typo).
func SchemaOf(rows []*results.Row) Schema {
	s := Schema{Params: map[string]ParamKind{}, Metrics: map[string]bool{}}
	seenObj := map[string]bool{}
	for _, r := range rows {
		paramPaths(r.Params, "", func(k string, v any) {
			switch v.(type) {
			case float64, int, int64:
				s.Params[k] |= ParamNumber
			case bool:
				s.Params[k] |= ParamBool
			default:
				s.Params[k] |= ParamString
			}
		})
		for k := range r.Metrics {
			s.Metrics[k] = true
		}
		if !seenObj[r.Objective] && r.Objective != "" {
			seenObj[r.Objective] = true
			s.Metrics[r.Objective] = true
		}
	}
	return s
}

// Check checks q against what the rows hold: a params.NAME or metrics.NAME
// that no row has is an error with a did-you-mean (when the rows hold any
// params, or metrics, at all), and a numeric parameter compared with a
// word is a type error. Errors are *Error.
func (q *Query) Check(s Schema) error {
	if q == nil {
		return nil
	}
	for _, c := range q.Conds {
		if err := checkField(q.Source, c.Pos, c.Field, s); err != nil {
			return err
		}
		if c.Field.IsParam() {
			k := s.Params[c.Field.Key]
			if k == ParamNumber {
				for _, o := range c.Operands {
					if !o.Value.IsNum {
						return errAt(q.Source, o.Value.Pos, "%s is a number in every trial, not %q", c.Field.Name, o.Value.Raw)
					}
					if o.Op == OpRange && !o.Hi.IsNum {
						return errAt(q.Source, o.Hi.Pos, "%s is a number in every trial, not %q", c.Field.Name, o.Hi.Raw)
					}
				}
			}
		}
	}
	return nil
}

func checkField(src string, pos int, f Field, s Schema) error {
	switch {
	case f.IsParam() && len(s.Params) > 0:
		if _, ok := s.Params[f.Key]; !ok {
			return unknownIn(src, pos, f, "parameter", "params.", mapKeys(s.Params))
		}
	case f.IsMetric() && len(s.Metrics) > 0:
		if !s.Metrics[f.Key] {
			return unknownIn(src, pos, f, "metric", "metrics.", mapKeys(s.Metrics))
		}
	}
	return nil
}

func unknownIn(src string, pos int, f Field, what, prefix string, names []string) error {
	if sp := didyoumean.Suggest(f.Key, names); sp != "" {
		return errAt(src, pos, "no trial has the %s %q; did you mean %q?", what, f.Key, prefix+sp)
	}
	for i := range names {
		names[i] = prefix + names[i]
	}
	return errAt(src, pos, "no trial has the %s %q (%ss: %s)", what, f.Key, what, strings.Join(names, ", "))
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
