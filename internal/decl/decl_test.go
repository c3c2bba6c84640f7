package decl

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

type sample struct {
	Name    string        `hcl:"name,attr" doc:"the name"`
	Count   int           `hcl:"count,optional" min:"1" doc:"how many"`
	Grace   time.Duration `hcl:"grace,optional" doc:"how long"`
	Tags    []string      `hcl:"tags,optional" doc:"labels"`
	Limit   *int          `hcl:"limit,optional" min:"-1" type:"a whole number >= -1 (-1: off)"`
	Extra   any           `hcl:"extra,optional"`
	Disk    *disk         `hcl:"disk,block" doc:"one disk"`
	Roles   []role        `hcl:"role,block" doc:"roles"`
	ignored string
}

type disk struct {
	Size string `hcl:"size,optional"`
}

type role struct {
	Name string `hcl:"name,label"`
	embedded
}

type embedded struct {
	CPU float64 `hcl:"cpu,optional"`
}

func TestSchemaOfAndDecode(t *testing.T) {
	s, err := SchemaOf(&sample{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.AttrNames(), ","); got != "count,extra,grace,limit,name,tags" {
		t.Errorf("attrs %s", got)
	}
	if got := strings.Join(s.RequiredAttrs(), ","); got != "name" {
		t.Errorf("required %s", got)
	}
	if a := s.AttrNamed("tags"); a.What != "a list of strings" || !a.Type.Equals(cty.List(cty.String)) {
		t.Errorf("tags %+v", a)
	}
	if a := s.AttrNamed("limit"); !a.Whole || *a.Min != -1 || a.What != "a whole number >= -1 (-1: off)" {
		t.Errorf("limit %+v", a)
	}
	if b := s.BlockNamed("role"); !b.Many || b.Schema.Label != "name" || b.Schema.AttrNamed("cpu") == nil {
		t.Errorf("role block %+v", b)
	}
	vals := map[string]cty.Value{
		"name":  cty.StringVal("x"),
		"count": cty.StringVal("3"), // converts, as HCL does
		"grace": cty.StringVal("2m"),
		"tags":  cty.TupleVal([]cty.Value{cty.StringVal("a")}),
		"limit": cty.NumberIntVal(-1),
		"extra": cty.ObjectVal(map[string]cty.Value{"k": cty.True}),
		"disk":  cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"size": cty.StringVal("1Gi")})}),
		"role": cty.TupleVal([]cty.Value{
			cty.ObjectVal(map[string]cty.Value{"_labels": cty.TupleVal([]cty.Value{cty.StringVal("w")}), "cpu": cty.NumberFloatVal(0.5)}),
			cty.ObjectVal(map[string]cty.Value{"_labels": cty.TupleVal([]cty.Value{cty.StringVal("ps")})}),
		}),
	}
	var got sample
	if err := s.Decode(vals, &got, time.ParseDuration); err != nil {
		t.Fatal(err)
	}
	if got.Name != "x" || got.Count != 3 || got.Grace != 2*time.Minute || len(got.Tags) != 1 || *got.Limit != -1 ||
		got.Extra.(map[string]any)["k"] != true || got.Disk.Size != "1Gi" || len(got.Roles) != 2 || got.Roles[0].Name != "w" ||
		got.Roles[0].CPU != 0.5 || got.Roles[1].Name != "ps" {
		t.Errorf("decoded %+v", got)
	}
	// What does not convert is an error, and leaves the field alone while
	// the rest is decoded.
	got = sample{Count: 7}
	err = s.Decode(map[string]cty.Value{"count": cty.NumberFloatVal(1.5), "name": cty.StringVal("y")}, &got, time.ParseDuration)
	if err == nil || !strings.Contains(err.Error(), "count") || got.Count != 7 || got.Name != "y" {
		t.Errorf("decode of 1.5 into an int: %v, %+v", err, got)
	}
}

func TestSchemaOfRefusesBadTags(t *testing.T) {
	type bad struct {
		C chan int `hcl:"c,optional"`
	}
	if _, err := SchemaOf(&bad{}); err == nil {
		t.Error("a chan field was accepted")
	}
	type badMode struct {
		S string `hcl:"s,sometimes"`
	}
	if _, err := SchemaOf(&badMode{}); err == nil {
		t.Error("an unknown tag mode was accepted")
	}
	if _, err := SchemaOf(sample{}); err == nil {
		t.Error("a struct value (not a pointer) was accepted")
	}
}

func TestWhere(t *testing.T) {
	def := hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: 1}}
	w := NewWhere("lab", def)
	w.Set("role.1", hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: 5}})
	w.Set("role.1.cpu", hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: 6}})
	for path, line := range map[string]int{"role.1.cpu": 6, "role.1.memory": 5, "role.0.cpu": 1, "": 1} {
		if got := w.Range(path).Start.Line; got != line {
			t.Errorf("Range(%q) at line %d, want %d", path, got, line)
		}
	}
	if !w.Has("role.1") || w.Has("role.0") {
		t.Error("Has")
	}
	if d := w.Error("role.1.cpu", "Bad", "cpu %d", 3); d.Subject.Start.Line != 6 || d.Detail != "cpu 3" || d.Severity != hcl.DiagError {
		t.Errorf("Error = %+v", d)
	}
}

type ranged struct {
	Factor  float64  `hcl:"factor,optional" range:"(0, 0.5]" default:"0.2" doc:"share replaced"`
	Eta     int      `hcl:"eta,optional" range:"[2,)" default:"3" doc:"halving rate"`
	Utility string   `hcl:"utility,optional" oneof:"ei ucb poi" default:"ei" doc:"acquisition"`
	Budget  *float64 `hcl:"max_budget,attr" range:"(0,)" doc:"full budget"`
}

// Values are checked against the range and oneof tags, with the same
// messages whether they come from HCL or from plain Go values.
func TestRangeAndOneOf(t *testing.T) {
	s, err := SchemaOf(&ranged{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.AttrNamed("factor").Range.String(); got != "(0, 0.5]" {
		t.Errorf("factor's range = %s", got)
	}
	label := func(n string) string { return fmt.Sprintf("setting %q", n) }
	for _, tc := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"max_budget": 9, "factor": 0.0}, `setting "factor" must be greater than 0, got 0.`},
		{map[string]any{"max_budget": 9, "factor": 0.6}, `setting "factor" must be at most 0.5, got 0.6.`},
		{map[string]any{"max_budget": 9, "eta": 1.0}, `setting "eta" must be at least 2, got 1.`},
		{map[string]any{"max_budget": 9, "eta": 2.5}, `setting "eta" must be a whole number, got 2.5.`},
		{map[string]any{"max_budget": 9, "utility": "eii"}, `setting "utility" must be "ei", "ucb" or "poi", got "eii". Did you mean "ei"?`},
		{map[string]any{"max_budget": 9, "utilty": "ei"}, `unknown setting "utilty" (valid: eta, factor, max_budget, utility). Did you mean "utility"?`},
		{map[string]any{}, `setting "max_budget" is required: full budget.`},
		{map[string]any{"max_budget": "big"}, `Inappropriate value for setting "max_budget": a number is required.`},
	} {
		err := s.DecodeGo(tc.in, &ranged{}, label)
		var ae *AttrError
		if !errors.As(err, &ae) || ae.Detail != tc.want {
			t.Errorf("%v: %v, want %q", tc.in, err, tc.want)
		}
	}
	got := ranged{Factor: 0.2, Eta: 3}
	if err := s.DecodeGo(map[string]any{"max_budget": int64(81), "factor": 0.5, "utility": "ucb"}, &got, label); err != nil {
		t.Fatal(err)
	}
	if got.Factor != 0.5 || got.Eta != 3 || got.Utility != "ucb" || got.Budget == nil || *got.Budget != 81 {
		t.Errorf("decoded %+v", got)
	}
	for _, bad := range []any{&struct {
		X int `hcl:"x,optional" range:"[2"`
	}{}, &struct {
		X string `hcl:"x,optional" range:"[0,1]"`
	}{}, &struct {
		X int `hcl:"x,optional" oneof:"a b"`
	}{}} {
		if _, err := SchemaOf(bad); err == nil {
			t.Errorf("SchemaOf(%T) accepted a bad tag", bad)
		}
	}
}
