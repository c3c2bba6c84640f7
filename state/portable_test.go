package state

import (
	"bytes"
	"errors"
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
