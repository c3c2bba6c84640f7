package space_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

const nniDoc = `{
  "lr": {"_type": "loguniform", "_value": [0.0001, 0.1]},
  "C": {"_type": "uniform", "_value": [0.1, 1]},
  "kernel": {"_type": "choice", "_value": ["linear", "rbf", 3, true]},
  "layer": {"_type": "choice", "_value": [
    {"_name": "conv", "kernel": {"_type": "choice", "_value": [3, 5]}, "stride": {"_type": "randint", "_value": [1, 3]}},
    {"_name": "pool"}
  ]},
  "units": {"_type": "quniform", "_value": [32, 256, 32]}
}`

func TestParseNNI(t *testing.T) {
	sp, err := space.ParseNNI([]byte(nniDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := &space.Space{Params: []space.Param{
		{Name: "lr", Kind: space.Loguniform, Args: []float64{0.0001, 0.1}},
		{Name: "C", Kind: space.Uniform, Args: []float64{0.1, 1}},
		{Name: "kernel", Kind: space.Choice, Options: []space.Option{{Value: "linear"}, {Value: "rbf"}, {Value: 3.0}, {Value: true}}},
		{Name: "layer", Kind: space.Choice, Options: []space.Option{
			{Name: "conv", Nested: &space.Space{Params: []space.Param{
				{Name: "kernel", Kind: space.Choice, Options: []space.Option{{Value: 3.0}, {Value: 5.0}}},
				{Name: "stride", Kind: space.Randint, Args: []float64{1, 3}},
			}}},
			{Name: "pool", Nested: &space.Space{}},
		}},
		{Name: "units", Kind: space.Quniform, Args: []float64{32, 256, 32}},
	}}
	if !reflect.DeepEqual(sp, want) {
		t.Fatalf("ParseNNI =\n%#v\nwant\n%#v", sp, want)
	}
}

func TestMarshalNNIRoundTrip(t *testing.T) {
	sp, err := space.ParseNNI([]byte(nniDoc))
	if err != nil {
		t.Fatal(err)
	}
	out, err := sp.MarshalNNI()
	if err != nil {
		t.Fatal(err)
	}
	// Order is kept: lr before C before kernel.
	if i, j := strings.Index(string(out), `"lr"`), strings.Index(string(out), `"C"`); i < 0 || j < i {
		t.Fatalf("order lost:\n%s", out)
	}
	if !strings.Contains(string(out), `"_name": "conv"`) {
		t.Fatalf("nested option not written:\n%s", out)
	}
	back, err := space.ParseNNI(out)
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(back, sp) {
		t.Fatalf("round trip changed the space:\n%s", out)
	}
}

func TestParseNNIErrors(t *testing.T) {
	tests := []struct {
		name, doc, wantErr string
	}{
		{"syntax", "{\n  \"x\": {\"_type\": \"uniform\",, }\n}", "invalid JSON at line 2"},
		{"truncated", `{"x": {"_type": "uniform"`, "invalid JSON"},
		{"not object", `[1, 2]`, "must be a JSON object of params, got a list"},
		{"trailing", `{} {}`, "unexpected data"},
		{"param not object", `{"x": 3}`, `param "x": must be an object`},
		{"missing type", `{"x": {"_value": [0, 1]}}`, `param "x": missing "_type"`},
		{"missing value", `{"x": {"_type": "uniform"}}`, `param "x": missing "_value"`},
		{"unknown type", `{"x": {"_type": "gauss", "_value": [0, 1]}}`, `param "x": unknown _type "gauss"`},
		{"extra key", `{"x": {"_type": "uniform", "_value": [0, 1], "q": 1}}`, `unexpected key "q"`},
		{"value not list", `{"x": {"_type": "uniform", "_value": 3}}`, "_value must be a list"},
		{"string arg", `{"x": {"_type": "uniform", "_value": ["a", 1]}}`, "_value item 1 must be a number"},
		{"low >= high", `{"x": {"_type": "uniform", "_value": [1, 0]}}`, `param "x": uniform needs low < high`},
		{"empty choice", `{"x": {"_type": "choice", "_value": []}}`, `param "x": choice needs at least one option`},
		{"object without name", `{"x": {"_type": "choice", "_value": [{"a": 1}]}}`, `option 1: an object option needs "_name"`},
		{"nested bad", `{"x": {"_type": "choice", "_value": [{"_name": "n", "y": {"_type": "loguniform", "_value": [0, 1]}}]}}`,
			`param "x": option "n": param "y": loguniform needs low > 0`},
		{"duplicate key", `{"x": {"_type": "uniform", "_value": [0, 1]}, "x": {"_type": "uniform", "_value": [0, 1]}}`, `key "x" appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := space.ParseNNI([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseNNI() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}
