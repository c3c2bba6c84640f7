package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/trialform/trialform/internal/didyoumean"
)

// A state as one document, for `trialform state pull` and `state push`:
// the local backend's file format (whichever backend the state comes from
// or goes to), so a pulled state can be pushed to any backend.

// Encode returns s as a state document (the current format, s's serial).
func Encode(s *State) ([]byte, error) {
	e, err := encodeWhole(s)
	if err != nil {
		return nil, err
	}
	return append(e.withSerial(s.Serial), '\n'), nil
}

// Decode reads a state document (name says where it came from, for
// errors), upgrading an older format as Load does: *CorruptError when it
// is no state, *NewerFormatError when a newer trialform wrote it.
func Decode(name string, data []byte) (*State, error) {
	s, _, err := decode(name, data)
	return s, err
}

// Check finds what a state document holds that trialform never writes,
// beyond what Decode refuses: an experiment with an empty id or a platform
// that is not KIND.NAME, a trial status that is not one of Statuses,
// two trials of an experiment with one sequence number, a negative one, a
// trial whose id does not say its sequence number, an experiment whose
// next_seq does not lie past every trial's (new trials would be numbered
// over its trials: plan proposes them and apply skips them, on every run).
// state push refuses such a document (a hand edit gone wrong) rather than
// make it the state every command then reads.
func Check(s *State) error {
	for _, name := range slices.Sorted(maps.Keys(s.Experiments)) {
		e := s.Experiments[name]
		if e.ID == "" {
			// Its trials would get an empty NNI_EXP_ID, and the platforms'
			// check that a trial belongs to this instance of the
			// experiment (not one destroyed and created again) is skipped.
			return fmt.Errorf("experiment %q has an empty id; set it to the id it had (8 lowercase letters and digits: its trials' NNI_EXP_ID, in a state pulled before)", name)
		}
		if kind, pn, ok := strings.Cut(e.Platform, "."); !ok || kind == "" || pn == "" {
			// No platform block has such a key: plan, apply and watch
			// never refresh its trials (they stay RUNNING), warning that
			// platform X "is not in the configuration any more".
			return fmt.Errorf("experiment %q has platform %q, which is not KIND.NAME (the key of the platform block that runs it, e.g. \"local.default\"); set it to that key", name, e.Platform)
		}
		seqs := map[int]string{}
		for _, id := range slices.Sorted(maps.Keys(e.Trials)) {
			t := e.Trials[id]
			if !slices.Contains(Statuses, t.Status) {
				return fmt.Errorf("trial %q of experiment %q has status %q, which is none of %s", id, name, t.Status, strings.Join(Statuses, ", "))
			}
			if t.Seq < 0 {
				return fmt.Errorf("trial %q of experiment %q has a negative seq %d", id, name, t.Seq)
			}
			if other, ok := seqs[t.Seq]; ok {
				return fmt.Errorf("trials %q and %q of experiment %q have the same seq %d", other, id, name, t.Seq)
			}
			seqs[t.Seq] = id
			for _, c := range []struct {
				field string
				n     int
			}{{"attempts", t.Attempts}, {"start_failures", t.StartFailures}, {"intermediate", t.Intermediate}, {"parameter_id", t.ParameterID}, {"generation", t.Generation}} {
				if c.n < 0 {
					return fmt.Errorf("trial %q of experiment %q has a negative %s %d; set it to 0 or more", id, name, c.field, c.n)
				}
			}
			if dir := t.Handle["dir"]; dir != "" && strings.HasPrefix(e.Platform, "local.") {
				on := e.PlatformName
				if on == "" {
					on = name
				}
				if filepath.Base(dir) != id || filepath.Base(filepath.Dir(dir)) != on {
					return fmt.Errorf("trial %q of experiment %q has a handle whose dir %q is not the trial's directory, which ends in %s: set dir to that directory or remove the handle", id, name, dir, filepath.Join(on, id))
				}
			}
			if t.Generation > e.Generation {
				return fmt.Errorf("trial %q of experiment %q has generation %d, past its experiment's generation %d: set it to %d (or less)", id, name, t.Generation, e.Generation, e.Generation)
			}
			if want := trialID(t.Seq); id != want {
				if n, ok := idSeq(id); ok {
					return fmt.Errorf("trial %q of experiment %q has seq %d, but its id says seq %d: set seq to %d", id, name, t.Seq, n, n)
				}
				return fmt.Errorf("trial %q of experiment %q has an id trialform never gives: a trial's id is t and its seq (%q for seq %d)", id, name, want, t.Seq)
			}
		}
		for _, c := range []struct {
			field string
			n     int
		}{{"max_trials", e.MaxTrials}, {"concurrency", e.Concurrency}, {"max_failed_trials", e.MaxFailedTrials}, {"generation", e.Generation}} {
			if c.n < 0 {
				return fmt.Errorf("experiment %q has a negative %s %d; set it to 0 or more", name, c.field, c.n)
			}
		}
		if e.Generation > MaxGeneration {
			return fmt.Errorf("experiment %q has generation %d: a generation goes up by one per change of the experiment's definition, and trialform refuses one past %d (the next change would overflow it); set it to the generation of its latest trial", name, e.Generation, MaxGeneration)
		}
		if e.NextSeq < 0 {
			return fmt.Errorf("experiment %q has a negative next_seq %d; set it to 0", name, e.NextSeq)
		}
		if len(seqs) > 0 {
			last := slices.Max(slices.Collect(maps.Keys(seqs)))
			if e.NextSeq <= last {
				return fmt.Errorf("experiment %q has next_seq %d, but it holds trial %q (seq %d): new trials would be numbered over its trials; set next_seq to %d (or more)",
					name, e.NextSeq, seqs[last], last, last+1)
			}
		}
	}
	return nil
}

// MaxGeneration is the largest experiment generation Check accepts.
const MaxGeneration = 1<<31 - 1

// MaxDocumentString is the longest string (a value or an object's key)
// CheckDocument accepts in a state document: a state is read whole by
// every command, and one hand-edited 100 MB string made each of them
// take a gigabyte of memory.
const MaxDocumentString = 1 << 20

// CheckDocument finds what Check cannot see because Decode dropped or
// took it as it was: a string (or key) longer than MaxDocumentString, and
// a field of data that s does not keep (a typo such as "stauts" in a hand
// edit, which decoding drops silently, losing what it held). data is the
// document s was decoded from, name where it came from. It is for state
// push, not for every load: it decodes the document twice more.
func CheckDocument(name string, data []byte, s *State) error {
	if err := duplicateKeys(name, data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var in any
	if err := dec.Decode(&in); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := checkStrings(name, in, nil); err != nil {
		return err
	}
	top, _ := in.(map[string]any)
	if v, ok := top["version"].(json.Number); !ok || v.String() != strconv.Itoa(FormatVersion) {
		return nil // upgraded: its fields are not the current format's
	}
	enc, err := Encode(s)
	if err != nil {
		return err
	}
	var out any
	if err := json.Unmarshal(enc, &out); err != nil {
		return err
	}
	return unknownFields(name, in, out, nil)
}

// duplicateKeys finds a key given twice in one object of data (two
// experiments "w" after a pasted block, a trial's "status" twice):
// decoding keeps one of them, merged field by field with the other for an
// object, without a word, so what the document says is ambiguous.
func duplicateKeys(name string, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   map[string]bool
		next   int // an array's next element's index
	}
	// path names the value being read: one entry (a key, an index) per
	// container it lies in; between two values of a container, one less.
	var stack []*frame
	var path []string
	done := func() { // a value ended: its key or index is done
		if len(stack) > 0 {
			path = path[:len(stack)-1]
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or what Decode says better
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			done()
			continue
		}
		if top != nil && top.object && len(path) < len(stack) {
			k := tok.(string) // a key
			if top.keys[k] {
				line := 1 + bytes.Count(data[:min(int(dec.InputOffset()), len(data))], []byte("\n"))
				return fmt.Errorf("%s: line %d, %s: the key %q is given twice in one object, and only one would be kept: remove or rename one",
					name, line, where(path), k)
			}
			top.keys[k] = true
			path = append(path, k)
			continue
		}
		if top != nil && !top.object {
			path = append(path, strconv.Itoa(top.next))
			top.next++
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{object: d == '{', keys: map[string]bool{}})
			continue
		}
		done()
	}
}

func checkStrings(name string, v any, path []string) error {
	switch v := v.(type) {
	case string:
		if len(v) > MaxDocumentString {
			return fmt.Errorf("%s: %s is a string of %d bytes, over the %d bytes trialform accepts in a state: shorten it", name, where(path), len(v), MaxDocumentString)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if len(k) > MaxDocumentString {
				return fmt.Errorf("%s: %s has a key of %d bytes, over the %d bytes trialform accepts in a state: shorten it", name, where(path), len(k), MaxDocumentString)
			}
			if err := checkStrings(name, v[k], append(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if err := checkStrings(name, x, append(path, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// unknownFields finds a key of the document in that the state's encoding
// out does not hold, with a value that is not empty (an empty one is a
// field written out that the encoding omits when empty).
func unknownFields(name string, in, out any, path []string) error {
	switch iv := in.(type) {
	case map[string]any:
		ov, ok := out.(map[string]any)
		if !ok {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(iv)) {
			o, ok := ov[k]
			if !ok {
				if empty(iv[k]) {
					continue
				}
				return fmt.Errorf("%s: %s has a field %q trialform does not know, which would be dropped with what it holds.%s Rename or remove it",
					name, where(path), k, didyoumean.Sentence(k, slices.Sorted(maps.Keys(ov)), "%q"))
			}
			if err := unknownFields(name, iv[k], o, append(path, k)); err != nil {
				return err
			}
		}
	case []any:
		ov, ok := out.([]any)
		if !ok || len(ov) != len(iv) {
			return nil
		}
		for i := range iv {
			if err := unknownFields(name, iv[i], ov[i], append(path, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// where names the place of path in a state document: the experiment, the
// trial and the field.
func where(path []string) string {
	if len(path) == 0 {
		return "the document"
	}
	var b strings.Builder
	rest := path
	if len(rest) >= 2 && rest[0] == "experiments" {
		fmt.Fprintf(&b, "experiment %q", rest[1])
		rest = rest[2:]
		if len(rest) >= 2 && rest[0] == "trials" {
			fmt.Fprintf(&b, " trial %q", rest[1])
			rest = rest[2:]
		}
	}
	if len(rest) > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "field %q", strings.Join(rest, "."))
	}
	return b.String()
}

// trialID is the id trialform gives the trial of sequence number seq
// (plan.TrialID).
func trialID(seq int) string { return fmt.Sprintf("t%04d", seq) }

// idSeq is the sequence number a trial id of trialID's form says.
func idSeq(id string) (int, bool) {
	digits, ok := strings.CutPrefix(id, "t")
	if !ok || len(digits) < 4 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || trialID(n) != id {
		return 0, false
	}
	return n, true
}
