package space_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/fuzzseed"
	"github.com/trialform/trialform/tuner/space"
)

// FuzzParseNNI feeds ParseNNI search_space.json documents that users and
// NNI's tools wrote (nni_file, and `trialform convert` of an NNI config).
//
// Properties: no panic; a document that parses is a valid space that
// MarshalNNI writes back to a document that parses to an equal space
// (and that writes identically again); a parsed space samples (seeded)
// without panic to parameters the space contains; and the document cut
// before its closing brace is an error, not a space or a panic.
func FuzzParseNNI(f *testing.F) {
	f.Add([]byte(nniDoc), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		sp, err := space.ParseNNI(data)
		if err != nil {
			if sp != nil {
				t.Fatalf("a space and an error (%v)", err)
			}
			return
		}
		if err := sp.Validate(); err != nil {
			t.Fatalf("parsed space does not validate: %v", err)
		}
		out, err := sp.MarshalNNI()
		if err != nil {
			t.Fatalf("MarshalNNI of a parsed space: %v", err)
		}
		back, err := space.ParseNNI(out)
		if err != nil {
			t.Fatalf("MarshalNNI wrote %s, which does not parse: %v", out, err)
		}
		if !reflect.DeepEqual(sp, back) {
			t.Fatalf("round trip through\n%s\nchanged the space:\n%#v\n%#v", out, sp, back)
		}
		if out2, _ := back.MarshalNNI(); !bytes.Equal(out, out2) {
			t.Fatalf("MarshalNNI is not stable:\n%s\n%s", out, out2)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		for range 3 {
			ps := space.SampleSpace(sp, rng)
			if !sp.Contains(ps) {
				t.Fatalf("sample %v is not in the space", ps)
			}
		}
		trimmed := bytes.TrimRight(data, " \t\r\n")
		if cut := trimmed[:len(trimmed)-1]; len(cut) > 0 {
			if _, err := space.ParseNNI(cut); err == nil {
				t.Fatalf("%q (cut before its last byte) parses", cut)
			}
		}
	})
}

// A search space nested a million levels deep is an error, not a stack
// that grows to the runtime's limit.
func TestParseNNIDeepNesting(t *testing.T) {
	for _, doc := range []string{
		strings.Repeat("[", 1_000_000),
		`{"a": {"_type": "choice", "_value": ` + strings.Repeat("[", 1_000_000),
		strings.Repeat(`{"a":`, 1_000_000),
	} {
		if _, err := space.ParseNNI([]byte(doc)); err == nil || !strings.Contains(err.Error(), "nested") {
			t.Fatalf("%.40s...: %v, want an error about nesting", doc, err)
		}
	}
}

// TestWriteFuzzSeeds writes FuzzParseNNI's seed corpus (run with
// TRIALFORM_WRITE_SEEDS=1).
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("TRIALFORM_WRITE_SEEDS") != "1" {
		t.Skip("TRIALFORM_WRITE_SEEDS=1 writes the seed corpus")
	}
	docs := map[string]string{
		"nni-example": nniDoc,
		// NNI's examples/trials/mnist-pytorch/search_space.json shape.
		"mnist": `{"batch_size": {"_type":"choice", "_value": [16, 32, 64, 128]},
 "hidden_size":{"_type":"choice","_value":[128, 256, 512, 1024]},
 "lr":{"_type":"choice","_value":[0.0001, 0.001, 0.01, 0.1]},
 "momentum":{"_type":"uniform","_value":[0, 1]}}`,
		"all-kinds": `{"a": {"_type": "randint", "_value": [0, 10]}, "b": {"_type": "quniform", "_value": [0, 1, 0.1]},
 "c": {"_type": "loguniform", "_value": [1e-5, 1]}, "d": {"_type": "qloguniform", "_value": [1, 1000, 1]},
 "e": {"_type": "normal", "_value": [0, 1]}, "f": {"_type": "qnormal", "_value": [0, 1, 0.5]},
 "g": {"_type": "lognormal", "_value": [0, 1]}, "h": {"_type": "qlognormal", "_value": [0, 1, 1]}}`,
		"nested-choice":   `{"opt": {"_type": "choice", "_value": [{"_name": "sgd", "m": {"_type": "uniform", "_value": [0, 1]}}, {"_name": "adam"}, "plain", 3, false]}}`,
		"empty":           `{}`,
		"duplicate-key":   `{"a": {"_type": "uniform", "_value": [0, 1]}, "a": {"_type": "uniform", "_value": [0, 1]}}`,
		"huge-numbers":    `{"a": {"_type": "randint", "_value": [-9223372036854775808, 9223372036854775807]}, "b": {"_type": "uniform", "_value": [-1e308, 1e308]}}`,
		"number-1e400":    `{"a": {"_type": "uniform", "_value": [0, 1e400]}}`,
		"reversed-range":  `{"a": {"_type": "uniform", "_value": [1, 0]}}`,
		"zero-q":          `{"a": {"_type": "quniform", "_value": [0, 1, 0]}}`,
		"unknown-type":    `{"a": {"_type": "gaussian", "_value": [0, 1]}}`,
		"trailing-data":   `{"a": {"_type": "uniform", "_value": [0, 1]}} {}`,
		"not-object":      `[1, 2]`,
		"truncated":       `{"a": {"_type": "uniform", "_value": [0,`,
		"deep":            strings.Repeat(`{"a": {"_type": "choice", "_value": [{"_name": "x", `, 40) + strings.Repeat("}]}}", 40),
		"escapes":         `{"\u00e9\ud800": {"_type": "choice", "_value": ["\u0000", "a\"b"]}}`,
		"name-not-string": `{"a": {"_type": "choice", "_value": [{"_name": 3}]}}`,
		"empty-choice":    `{"a": {"_type": "choice", "_value": []}}`,
		"nested-too-deep": strings.Repeat(`{"a": [`, 150),
	}
	for name, d := range docs {
		if err := fuzzseed.Write("FuzzParseNNI", name, []byte(d), uint64(len(d))); err != nil {
			t.Fatal(err)
		}
	}
}
