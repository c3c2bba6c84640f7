package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"time"
)

// The state file is json.MarshalIndent(state, "", "  "): struct fields in
// declaration order, map keys sorted, so equal states give identical bytes.
// Re-marshalling a state of 10,000 trials costs tens of milliseconds, and
// apply saves after every trial transition, so the encoder below produces
// the very same bytes incrementally: it marshals the state and experiment
// "headers" (cheap) and splices in each trial's encoding, re-marshalling a
// trial only when it differs from the snapshot taken when it was last
// encoded. TestEncodeMatchesMarshalIndent holds the two ways equal.

const (
	indentUnit  = "  "
	expPrefix   = "    "     // experiments' fields are at depth 2
	trialPrefix = "        " // trials' fields are at depth 4
)

var (
	serialMarker      = []byte("\n  \"serial\": 0,")
	experimentsMarker = []byte(`"experiments": {}`)
	trialsMarker      = []byte(`"trials": {}`)
	errIrregular      = errors.New("irregular state layout")
)

// encoded is a state's file content with its serial set to 0, and where
// that 0 is, so the content can be compared ignoring the serial and written
// with the real one.
type encoded struct {
	body     []byte
	serialAt int // index of the serial's "0" in body
}

// parts returns the file content carrying serial, in three pieces.
func (e encoded) parts(serial uint64) [3][]byte {
	return [3][]byte{e.body[:e.serialAt], strconv.AppendUint(nil, serial, 10), e.body[e.serialAt+1:]}
}

// withSerial returns the file content carrying serial.
func (e encoded) withSerial(serial uint64) []byte {
	p := e.parts(serial)
	return bytes.Join(p[:], nil)
}

type trialEncoding struct {
	snap *Trial // deep copy of the trial as encoded
	enc  []byte // MarshalIndent(snap, trialPrefix, indentUnit)
	gen  uint64 // the encode call that last used it
}

// encoder memoizes trial encodings between calls. It is not safe for
// concurrent use.
type encoder struct {
	trials map[string]map[string]*trialEncoding // experiment name -> trial id
	gen    uint64
	spare  []byte // a buffer to reuse for the next body
}

// recycle hands back a body no longer needed.
func (c *encoder) recycle(b []byte) {
	if cap(b) > cap(c.spare) {
		c.spare = b[:0]
	}
}

// encode returns s's file content with serial 0 and the current format
// version.
func (c *encoder) encode(s *State) (encoded, error) {
	if s.Experiments == nil {
		return encodeWhole(s)
	}
	head := *s
	head.Serial = 0
	head.Version = FormatVersion
	head.Experiments = map[string]*Experiment{}
	hb, err := json.MarshalIndent(&head, "", indentUnit)
	if err != nil {
		return encoded{}, fmt.Errorf("encode state: %w", err)
	}
	at, err := serialIndex(hb)
	if err != nil || bytes.Count(hb, experimentsMarker) != 1 {
		return encodeWhole(s)
	}
	mi := bytes.Index(hb, experimentsMarker)

	if c.trials == nil {
		c.trials = map[string]map[string]*trialEncoding{}
	}
	c.gen++
	out := bytes.NewBuffer(c.spare[:0])
	c.spare = nil
	out.Write(hb[:mi])
	if len(s.Experiments) == 0 {
		out.WriteString(`"experiments": {}`)
	} else {
		out.WriteString(`"experiments": {`)
		for i, name := range sortedKeys(s.Experiments) {
			if i > 0 {
				out.WriteByte(',')
			}
			out.WriteString("\n" + expPrefix)
			writeKey(out, name)
			if err := c.encodeExperiment(out, name, s.Experiments[name]); err != nil {
				if errors.Is(err, errIrregular) {
					return encodeWhole(s)
				}
				return encoded{}, err
			}
		}
		out.WriteString("\n  }")
	}
	out.Write(hb[mi+len(experimentsMarker):])
	c.sweep()
	return encoded{body: out.Bytes(), serialAt: at}, nil
}

// sweep forgets trials the last encode did not see.
func (c *encoder) sweep() {
	for name, ts := range c.trials {
		for id, te := range ts {
			if te.gen != c.gen {
				delete(ts, id)
			}
		}
		if len(ts) == 0 {
			delete(c.trials, name)
		}
	}
}

func (c *encoder) encodeExperiment(out *bytes.Buffer, name string, e *Experiment) error {
	if e == nil || e.Trials == nil {
		return errIrregular
	}
	eh := *e
	eh.Trials = map[string]*Trial{}
	eb, err := json.MarshalIndent(&eh, expPrefix, indentUnit)
	if err != nil {
		return fmt.Errorf("encode experiment %q: %w", name, err)
	}
	if bytes.Count(eb, trialsMarker) != 1 {
		return errIrregular
	}
	ti := bytes.Index(eb, trialsMarker)

	ids := sortedKeys(e.Trials)
	cache := c.trials[name]
	if cache == nil {
		cache = make(map[string]*trialEncoding, len(ids))
		c.trials[name] = cache
	}
	encs := make([]*trialEncoding, len(ids))
	var misses []int
	for i, id := range ids {
		t := e.Trials[id]
		if t == nil {
			return errIrregular
		}
		if te := cache[id]; te != nil && trialEqual(te.snap, t) {
			te.gen = c.gen
			encs[i] = te
		} else {
			misses = append(misses, i)
		}
	}
	if err := encodeTrials(misses, func(i int) error {
		t := e.Trials[ids[i]]
		enc, err := encodeTrial(t)
		if err != nil {
			return fmt.Errorf("encode trial %s of experiment %q: %w", ids[i], name, err)
		}
		encs[i] = &trialEncoding{snap: t.Clone(), enc: enc, gen: c.gen}
		return nil
	}); err != nil {
		return err
	}
	for _, i := range misses {
		cache[ids[i]] = encs[i]
	}

	out.Write(eb[:ti])
	if len(ids) == 0 {
		out.Write(trialsMarker)
	} else {
		out.WriteString(`"trials": {`)
		for i, id := range ids {
			if i > 0 {
				out.WriteByte(',')
			}
			out.WriteString("\n" + trialPrefix)
			writeKey(out, id)
			out.Write(encs[i].enc)
		}
		out.WriteString("\n" + expPrefix + indentUnit + "}")
	}
	out.Write(eb[ti+len(trialsMarker):])
	return nil
}

// encodeTrials runs encode for every index, on all CPUs when there are
// many (the first Save after Load encodes every trial), and returns the
// first error.
func encodeTrials(idx []int, encode func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), len(idx)/256)
	if workers < 2 {
		for _, i := range idx {
			if err := encode(i); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := w; j < len(idx); j += workers {
				if err := encode(idx[j]); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// encodeTrial is json.MarshalIndent(t, trialPrefix, indentUnit) without
// encoding/json's re-validation of MarshalJSON's output.
func encodeTrial(t *Trial) ([]byte, error) {
	compact, err := t.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(compact) * 3 / 2)
	if err := json.Indent(&b, compact, trialPrefix, indentUnit); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encodeWhole is the plain way, used for layouts the splicing does not
// handle (nil maps, a future field named like a marker): marshal the whole
// state at once.
func encodeWhole(s *State) (encoded, error) {
	h := *s
	h.Serial = 0
	h.Version = FormatVersion
	b, err := json.MarshalIndent(&h, "", indentUnit)
	if err != nil {
		return encoded{}, fmt.Errorf("encode state: %w", err)
	}
	at, err := serialIndex(b)
	if err != nil {
		return encoded{}, err
	}
	return encoded{body: b, serialAt: at}, nil
}

func serialIndex(b []byte) (int, error) {
	i := bytes.Index(b, serialMarker)
	if i < 0 {
		return 0, fmt.Errorf("encode state: serial field not found")
	}
	return i + len(serialMarker) - 2, nil
}

// writeKey writes a JSON object key as encoding/json writes map keys.
func writeKey(out *bytes.Buffer, k string) {
	plain := true
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		out.WriteByte('"')
		out.WriteString(k)
		out.WriteByte('"')
	} else {
		b, _ := json.Marshal(k) // marshalling a string cannot fail
		out.Write(b)
	}
	out.WriteString(": ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// trialEqual reports whether a and b encode identically. It may report
// false for trials that would encode the same (costing a re-encode), never
// true for trials that would not. TestTrialEqualSeesEveryField fails when a
// field is added to Trial and not compared here.
// TrialEqual reports whether two trials hold the same content (floats
// compared bit for bit), fast: backends that keep what they loaded
// compare trials with it to write only those that changed.
func TrialEqual(a, b *Trial) bool { return trialEqual(a, b) }

func trialEqual(a, b *Trial) bool {
	return a.ID == b.ID &&
		a.Seq == b.Seq &&
		a.ParameterID == b.ParameterID &&
		a.Generation == b.Generation &&
		a.SpecHash == b.SpecHash &&
		paramsEqual(a.Params, b.Params) &&
		a.Status == b.Status &&
		a.Reason == b.Reason &&
		nilEqual(a.Handle == nil, b.Handle == nil) && maps.Equal(a.Handle, b.Handle) &&
		a.Attempts == b.Attempts &&
		a.StartFailures == b.StartFailures &&
		a.CreatedAt == b.CreatedAt &&
		timePtrEqual(a.StartedAt, b.StartedAt) &&
		timePtrEqual(a.EndedAt, b.EndedAt) &&
		ptrEqual(a.ExitCode, b.ExitCode) &&
		floatPtrEqual(a.Value, b.Value) &&
		ptrEqual(a.ValueFor, b.ValueFor) &&
		a.Retaken.equal(b.Retaken) &&
		nilEqual(a.Final == nil, b.Final == nil) && maps.EqualFunc(a.Final, b.Final, floatEqual) &&
		a.Intermediate == b.Intermediate &&
		nilEqual(a.MetricsOffset == nil, b.MetricsOffset == nil) && maps.Equal(a.MetricsOffset, b.MetricsOffset) &&
		ptrEqual(a.Provenance, b.Provenance) &&
		ptrEqual(a.Owner, b.Owner) &&
		ptrEqual(a.Stopping, b.Stopping) &&
		a.Summary.equal(b.Summary)
}

func nilEqual(a, b bool) bool { return a == b }

func floatEqual(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func floatPtrEqual(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return floatEqual(*a, *b)
}

// timePtrEqual compares with == (not Equal): the same instant in another
// location encodes differently.
func timePtrEqual(a, b *time.Time) bool { return ptrEqual(a, b) }

func paramsEqual(a, b map[string]any) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !valueEqual(va, vb) {
			return false
		}
	}
	return true
}

func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case float64:
		y, ok := b.(float64)
		return ok && floatEqual(x, y)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && paramsEqual(x, y)
	case []any:
		y, ok := b.([]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	// Other types (ints, named map types): equal when they encode equally.
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// trialJSON is Trial without its JSON methods.
type trialJSON Trial

// MarshalJSON encodes the trial as its fields, except that JSON has no
// NaN or infinities: a non-finite objective value or final metric (a
// diverged loss) is written as the string "NaN", "Infinity" or "-Infinity"
// instead of failing the whole state file.
func (t *Trial) MarshalJSON() ([]byte, error) {
	if t.Value == nil || finite(*t.Value) {
		ok := true
		for _, v := range t.Final {
			if !finite(v) {
				ok = false
				break
			}
		}
		if ok {
			return json.Marshal((*trialJSON)(t))
		}
	}
	aux := struct {
		*trialJSON
		Value any            `json:"value,omitempty"`
		Final map[string]any `json:"final,omitempty"`
	}{trialJSON: (*trialJSON)(t)}
	if t.Value != nil {
		aux.Value = floatJSON(*t.Value)
	}
	if t.Final != nil {
		aux.Final = make(map[string]any, len(t.Final))
		for k, v := range t.Final {
			aux.Final[k] = floatJSON(v)
		}
	}
	return json.Marshal(aux)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (t *Trial) UnmarshalJSON(b []byte) error {
	var plain trialJSON
	err := json.Unmarshal(b, &plain)
	if err == nil {
		*t = Trial(plain)
		return nil
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	var aux struct {
		*trialJSON
		Value json.RawMessage            `json:"value"`
		Final map[string]json.RawMessage `json:"final"`
	}
	aux.trialJSON = new(trialJSON)
	if err2 := json.Unmarshal(b, &aux); err2 != nil {
		return err2
	}
	out := Trial(*aux.trialJSON)
	if len(aux.Value) > 0 && string(aux.Value) != "null" {
		v, ok := parseFloatJSON(aux.Value)
		if !ok {
			return err
		}
		out.Value = &v
	}
	if aux.Final != nil {
		out.Final = make(map[string]float64, len(aux.Final))
		for k, raw := range aux.Final {
			v, ok := parseFloatJSON(raw)
			if !ok {
				return err
			}
			out.Final[k] = v
		}
	}
	*t = out
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func floatJSON(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

func parseFloatJSON(raw json.RawMessage) (float64, bool) {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	switch s {
	case "NaN":
		return math.NaN(), true
	case "Infinity", "+Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}
