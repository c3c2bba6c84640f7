package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Replace writes a state of another lineage, and an older one, as it is
// (state push -force, init -migrate-state), where Save refuses both; the
// pushed serial is kept and Load reads it back.
func TestReplaceKeepsLineageAndSerial(t *testing.T) {
	m := NewManager(t.TempDir())
	s := New()
	s.Experiments["a"] = &Experiment{Name: "a", Trials: map[string]*Trial{}}
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	other := New()
	other.Serial = 7
	var ce *ConflictError
	if err := m.Save(other.Clone()); !errors.As(err, &ce) {
		t.Fatalf("Save over another lineage: %v, want a ConflictError", err)
	}
	if err := m.Replace(other); err != nil {
		t.Fatal(err)
	}
	got, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.Lineage != other.Lineage || got.Serial != 7 || len(got.Experiments) != 0 {
		t.Fatalf("after Replace: lineage %s serial %d, %d experiments; want %s, 7, 0", got.Lineage, got.Serial, len(got.Experiments), other.Lineage)
	}
	// an older serial of the same lineage, too
	older := got.Clone()
	older.Serial = 3
	if err := m.Replace(older); err != nil {
		t.Fatal(err)
	}
	if got, err = m.Load(); err != nil || got.Serial != 3 {
		t.Fatalf("after replacing with serial 3: %v, %+v", err, got)
	}
	// and a normal save goes on from there
	got.Experiments["b"] = &Experiment{Name: "b", Trials: map[string]*Trial{}}
	if err := m.Save(got); err != nil || got.Serial != 4 {
		t.Fatalf("save after Replace: %v, serial %d", err, got.Serial)
	}
}

// Encode and Decode round-trip a state, and Decode refuses what is no
// state with a CorruptError.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	s := New()
	s.Serial = 12
	s.Experiments["a"] = &Experiment{Name: "a", Trials: map[string]*Trial{"t0000": {ID: "t0000", Status: Succeeded, Params: map[string]any{"x": 0.5}}}}
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode("pulled.json", b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Encode(got)
	if !bytes.Equal(b, b2) || got.Serial != 12 || got.Lineage != s.Lineage {
		t.Fatalf("round trip differs:\n%s\n%s", b, b2)
	}
	var ce *CorruptError
	if _, err := Decode("x", []byte(`{"experiments": {}}`)); !errors.As(err, &ce) {
		t.Fatalf("Decode of a non-state: %v", err)
	}
}

// Check refuses an experiment whose next_seq does not lie past every
// trial's seq (new trials would be numbered over trials it holds: plan
// proposes them and apply skips them on every run), and a trial whose id
// does not say its seq (a seq edited by hand: new trials would be
// numbered past it, or take its id).
func TestCheckNextSeqAndTrialIDs(t *testing.T) {
	mk := func(next int, trials ...*Trial) *State {
		s := New()
		e := &Experiment{Name: "b", ID: "abcd1234", Platform: "local.default", NextSeq: next, Trials: map[string]*Trial{}}
		for _, tr := range trials {
			tr.Status = Succeeded
			e.Trials[tr.ID] = tr
		}
		s.Experiments["b"] = e
		return s
	}
	with := func(s *State, edit func(*Experiment)) *State {
		edit(s.Experiments["b"])
		return s
	}
	if err := Check(mk(2, &Trial{ID: "t0000", Seq: 0}, &Trial{ID: "t0001", Seq: 1})); err != nil {
		t.Fatalf("a state trialform writes: %v", err)
	}
	if err := Check(mk(7, &Trial{ID: "t0000", Seq: 0}, &Trial{ID: "t10000", Seq: 1})); err == nil {
		t.Error("trial t10000 with seq 1: no error")
	}
	for _, c := range []struct {
		s    *State
		want string
	}{
		{mk(0, &Trial{ID: "t0000", Seq: 0}, &Trial{ID: "t0001", Seq: 1}),
			`experiment "b" has next_seq 0, but it holds trial "t0001" (seq 1): new trials would be numbered over its trials; set next_seq to 2 (or more)`},
		{mk(-3),
			`experiment "b" has a negative next_seq -3; set it to 0`},
		{mk(2, &Trial{ID: "t0000", Seq: 1000000000000}),
			`trial "t0000" of experiment "b" has seq 1000000000000, but its id says seq 0: set seq to 0`},
		{with(mk(0), func(e *Experiment) { e.ID = "" }),
			`experiment "b" has an empty id; set it to the id it had (8 lowercase letters and digits: its trials' NNI_EXP_ID, in a state pulled before)`},
		{with(mk(0), func(e *Experiment) { e.Platform = "local" }),
			`experiment "b" has platform "local", which is not KIND.NAME (the key of the platform block that runs it, e.g. "local.default"); set it to that key`},
		{with(mk(0), func(e *Experiment) { e.Platform = ".default" }),
			`experiment "b" has platform ".default", which is not KIND.NAME (the key of the platform block that runs it, e.g. "local.default"); set it to that key`},
	} {
		err := Check(c.s)
		if err == nil || err.Error() != c.want {
			t.Errorf("Check: %v\nwant: %s", err, c.want)
		}
	}
}

// A document trialform wrote passes CheckDocument whatever fields it
// sets (an empty field the encoding omits is no unknown field); a field
// it does not know, or an overlong string, is named with where it is.
func TestCheckDocument(t *testing.T) {
	data, err := os.ReadFile("testdata/v1-nojournal.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode("v1.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDocument("v1.json", data, s); err != nil {
		t.Fatalf("a state trialform wrote: %v", err)
	}
	enc, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDocument("enc.json", enc, s); err != nil {
		t.Fatalf("its encoding: %v", err)
	}
	doc := `{"version":1,"serial":1,"lineage":"l","experiments":{"x":{"name":"x","next_seq":1,"paused":false,"trials":{"t0000":{"id":"t0000","status":"SUCCEEDED","reason":"",%s}}}}}`
	for _, c := range []struct{ field, want string }{
		{`"stauts":"FAILED"`, `d.json: experiment "x" trial "t0000" has a field "stauts" trialform does not know, which would be dropped with what it holds. Did you mean "status"? Rename or remove it`},
		{`"params":{"x":"` + strings.Repeat("a", MaxDocumentString+1) + `"}`, `d.json: experiment "x" trial "t0000" field "params.x" is a string of 1048577 bytes, over the 1048576 bytes trialform accepts in a state: shorten it`},
	} {
		d := []byte(fmt.Sprintf(doc, c.field))
		s, err := Decode("d.json", d)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckDocument("d.json", d, s); err == nil || err.Error() != c.want {
			t.Errorf("CheckDocument: %v\nwant: %s", err, c.want)
		}
	}
}

// A document that is JSON but no object (null, a number, a string) is a
// CorruptError naming the file, not a panic: `state push` of a file
// holding `null`, and every command reading a state.json that does,
// crashed with a nil pointer dereference.
func TestDecodeNotAnObject(t *testing.T) {
	for _, doc := range []string{"null", " null\n", "1", `"x"`, "true"} {
		s, err := Decode("f.json", []byte(doc))
		var ce *CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "f.json") {
			t.Errorf("Decode(%s) = %v, %v; want a CorruptError naming f.json", doc, s, err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte("null\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewManager(dir).Load()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Errorf("Load of a state.json holding null: %v, want a CorruptError", err)
	}
}

// Replace writes over a state.json no command can read (truncated): the
// unreadable file is kept beside it as state.json.corrupt and the backup
// (the last good version) is left as it was. Refused before, so `state
// push -force` of a good copy could not repair a damaged state.
func TestReplaceOverCorrupt(t *testing.T) {
	dir := t.TempDir()
	m := NewManager(dir)
	s := New()
	s.Experiments["a"] = &Experiment{Name: "a", Trials: map[string]*Trial{}}
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state.json")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	backup := good // the last good version, as a whole save keeps it
	if err := os.WriteFile(path+".backup", backup, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := good[:len(good)/2]
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	m = NewManager(dir)
	var ce *CorruptError
	if _, err := m.Load(); !errors.As(err, &ce) {
		t.Fatalf("Load of a truncated state: %v", err)
	}
	pushed := s.Clone()
	pushed.Serial = 9
	if err := m.Replace(pushed); err != nil {
		t.Fatalf("Replace over a truncated state: %v", err)
	}
	got, err := NewManager(dir).Load()
	if err != nil || got.Serial != 9 || got.Lineage != s.Lineage || got.Experiments["a"] == nil {
		t.Fatalf("after Replace: %v %+v", err, got)
	}
	if kept, err := os.ReadFile(path + ".corrupt"); err != nil || !bytes.Equal(kept, bad) {
		t.Errorf("the unreadable file was not kept as state.json.corrupt: %v (%d bytes)", err, len(kept))
	}
	if b, err := os.ReadFile(path + ".backup"); err != nil || !bytes.Equal(b, backup) {
		t.Errorf("the backup changed: %v", err)
	}
}

// duplicateKeys names the line and the place of a key given twice in one
// object, at any depth (through arrays too), and leaves alone the same key
// in two objects, and documents decoding refuses anyway.
func TestDuplicateKeys(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"a": 1, "b": [{"k": 1}, {"k": 2}], "c": {"k": {"k": 3}}}`, ""},
		{"{\n\"a\": 1,\n\"a\": 2\n}", `doc: line 3, the document: the key "a" is given twice`},
		{"{\"experiments\": {\"p\": {\"trials\": {\"t0000\": {\n\"status\": \"X\",\n \"status\": \"Y\"}}}}}", `doc: line 3, experiment "p" trial "t0000": the key "status" is given twice`},
		{`{"x": [1, {"y": [{}, {"z": 1, "z": 2}]}]}`, `doc: line 1, field "x.1.y.1": the key "z" is given twice`},
		{`{"x": [1, 2], "y": {"q": [3]}, "x": 0}`, `the key "x" is given twice`},
		{`{"a": `, ""},
		{`[1, 2]`, ""},
	} {
		err := duplicateKeys("doc", []byte(tc.doc))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want none", tc.doc, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}
