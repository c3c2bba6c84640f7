package state

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// marshalIndent is the reference encoding of a state file.
func marshalIndent(t *testing.T, s *State) []byte {
	t.Helper()
	c := *s
	c.Serial = 0
	c.Version = FormatVersion
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncodeMatchesMarshalIndent(t *testing.T) {
	odd := sampleState(2)
	odd.Experiments[`we<ird>&"name`+"\u2028é"] = &Experiment{Name: "w", Trials: map[string]*Trial{`id"<&>`: {ID: "x", Params: map[string]any{"a<b": "c&d"}}}}
	odd.Lineage = `lin"experiments": {}`
	nan := sampleState(1)
	nan.Experiments["mnist"].Trials["t00000"].Value = ptr(math.NaN())
	nan.Experiments["mnist"].Trials["t00000"].Final = map[string]float64{"default": math.Inf(1), "loss": math.Inf(-1), "ok": 1}
	negzero := sampleState(1)
	negzero.Experiments["mnist"].Trials["t00000"].Params["lr"] = math.Copysign(0, -1)
	masks := sampleState(2)
	masks.Experiments["mnist"].Masks = &Masks{Salt: "c2FsdA==", Hashes: []string{"19:0a1b2c3d", "26:ffffffff"}}
	trialsMarkerInKey := sampleState(1)
	trialsMarkerInKey.Experiments["mnist"].PartHashes[`"trials": {}`] = "x"

	for _, tc := range []struct {
		name string
		s    *State
	}{
		{"new", New()},
		{"nil experiments", &State{Lineage: "l"}},
		{"nil experiment", &State{Lineage: "l", Experiments: map[string]*Experiment{"a": nil, "b": {Name: "b", Trials: map[string]*Trial{}}}}},
		{"nil trials map", &State{Lineage: "l", Experiments: map[string]*Experiment{"a": {Name: "a"}}}},
		{"nil trial", &State{Lineage: "l", Experiments: map[string]*Experiment{"a": {Name: "a", Trials: map[string]*Trial{"t": nil}}}}},
		{"empty trials", sampleState(0)},
		{"sample", sampleState(25)},
		{"odd keys", odd},
		{"non-finite", nan},
		{"negative zero", negzero},
		{"marker-like key", trialsMarkerInKey},
		{"masks", masks},
		{"serial and old version", &State{Version: 0, Serial: 123, Lineage: "l", Experiments: map[string]*Experiment{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c encoder
			for round := range 2 { // second round uses the cache
				got, err := c.encode(tc.s)
				if err != nil {
					t.Fatal(err)
				}
				want := marshalIndent(t, tc.s)
				if !bytes.Equal(got.body, want) {
					t.Fatalf("round %d: encode differs from MarshalIndent:\n got: %s\nwant: %s", round, got.body, want)
				}
				if !bytes.HasPrefix(got.body[got.serialAt-len(`"serial": `):], []byte(`"serial": 0,`)) {
					t.Fatalf("serialAt %d does not point at the serial", got.serialAt)
				}
				with := got.withSerial(4711)
				var back struct{ Serial uint64 }
				if err := json.Unmarshal(with, &back); err != nil || back.Serial != 4711 {
					t.Fatalf("withSerial: %v, serial %d", err, back.Serial)
				}
			}
		})
	}
}

// TestEncodeSeesInPlaceChanges mutates trials in place (as apply does)
// between encodes; the memoized encodings must never go stale.
func TestEncodeSeesInPlaceChanges(t *testing.T) {
	s := sampleState(5)
	tr := func() *Trial { return s.Experiments["mnist"].Trials["t00002"] }
	var c encoder
	for i, mutate := range []func(){
		func() {},
		func() { tr().Status = Failed },
		func() { tr().Params["layer"].(map[string]any)["k"] = 5.0 },
		func() { tr().Params["layer"].(map[string]any)["ch"].([]any)[1] = 64.0 },
		func() { tr().Params["lr"] = math.Copysign(0, -1) },
		func() { tr().Params["lr"] = 0.0 },
		func() { tr().Params["n"] = namedParams{"x": 1} },
		func() { tr().Params["n"].(namedParams)["x"] = 2 },
		func() { *tr().Value = 0.5 },
		func() { tr().Value = nil },
		func() { tr().Final["loss"] = math.NaN() },
		func() { tr().Final["loss"] = math.NaN() }, // NaN != NaN must not confuse it
		func() { tr().Handle["host"] = "h" },
		func() { tr().MetricsOffset["stdout"]++ },
		func() { *tr().StartedAt = tr().StartedAt.Add(time.Nanosecond) },
		func() { *tr().EndedAt = tr().EndedAt.In(time.FixedZone("X", 3600)) },
		func() { tr().ExitCode = ptr(1) },
		func() { s.Experiments["mnist"].Trials["new"] = sampleTrial("new", 9) },
		func() { delete(s.Experiments["mnist"].Trials, "t00000") },
		func() { s.Experiments["mnist"].NextSeq++ },
		func() { delete(s.Experiments, "cifar") },
		func() { s.Experiments["mnist"].Trials = map[string]*Trial{"t00002": sampleTrial("t00002", 2)} },
	} {
		mutate()
		got, err := c.encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if want := marshalIndent(t, s); !bytes.Equal(got.body, want) {
			t.Fatalf("step %d: stale encoding:\n got: %s\nwant: %s", i, got.body, want)
		}
	}
}

// TestTrialEqualSeesEveryField changes each field of Trial in turn (found
// by reflection, so a field added later is covered) and requires
// trialEqual to notice.
func TestTrialEqualSeesEveryField(t *testing.T) {
	base := sampleTrial("a", 1)
	typ := reflect.TypeFor[Trial]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		for _, variant := range []string{"change", "nil"} {
			c := base.Clone()
			fv := reflect.ValueOf(c).Elem().Field(i)
			if !mutateField(fv, variant) {
				continue
			}
			if trialEqual(base, c) {
				t.Errorf("trialEqual misses a %s of field %s: update trialEqual", variant, f.Name)
			}
			if !trialEqual(c, c.Clone()) {
				t.Errorf("trialEqual(x, x.Clone()) is false after a %s of %s", variant, f.Name)
			}
		}
	}
	if !trialEqual(base, base.Clone()) {
		t.Error("trialEqual(x, x.Clone()) is false")
	}
}

func mutateField(v reflect.Value, variant string) bool {
	if variant == "nil" {
		switch v.Kind() {
		case reflect.Map, reflect.Pointer, reflect.Slice:
			if v.IsNil() {
				return false
			}
			v.SetZero()
			return true
		}
		return false
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Pointer:
		return mutateField(v.Elem(), variant)
	case reflect.Map:
		k := reflect.New(v.Type().Key()).Elem()
		k.SetString("added-key")
		v.SetMapIndex(k, reflect.Zero(v.Type().Elem()))
	case reflect.Struct:
		if tm, ok := v.Addr().Interface().(*time.Time); ok {
			*tm = tm.Add(time.Second)
			return true
		}
		if v.NumField() > 0 {
			// A struct of ours (Provenance, WorkingCopy): changing its
			// first field changes it.
			return mutateField(v.Field(0), variant)
		}
		panic("mutateField: unhandled struct " + v.Type().String())
	default:
		panic("mutateField: unhandled kind " + v.Kind().String() + ": extend this test")
	}
	return true
}

func TestTrialJSONNonFinite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value *float64
		final map[string]float64
	}{
		{"nan value", ptr(math.NaN()), nil},
		{"inf value", ptr(math.Inf(1)), map[string]float64{"default": 1}},
		{"neg inf final", ptr(2.5), map[string]float64{"default": 2.5, "loss": math.Inf(-1), "acc": math.NaN()}},
		{"finite", ptr(2.5), map[string]float64{"default": 2.5}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := sampleTrial("x", 1)
			in.Value, in.Final = tc.value, tc.final
			b, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			var out Trial
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if !trialEqual(in, &out) {
				t.Errorf("round trip changed the trial:\n in: %+v\nout: %+v\njson: %s", in, &out, b)
			}
		})
	}
	// Other type errors are still errors.
	for _, bad := range []string{`{"value": "high"}`, `{"final": {"x": true}}`, `{"seq": "one", "value": "NaN"}`} {
		var tr Trial
		if err := json.Unmarshal([]byte(bad), &tr); err == nil {
			t.Errorf("decoding %s succeeded: %+v", bad, tr)
		}
	}
	if !strings.Contains(string(must(json.Marshal(&Trial{Value: ptr(math.NaN())}))), `"value":"NaN"`) {
		t.Error(`NaN not spelled "NaN"`)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
