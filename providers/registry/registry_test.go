package registry

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/trialform/trialform/providers"
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

func TestRegistry(t *testing.T) {
	built := ""
	r := New(
		Kind{Name: "a", Config: func() any { return &sample{Count: 1} }, New: func(cfg any, env Env) (providers.Provider, error) {
			built = cfg.(*sample).Name + "/" + env.Name
			return nil, nil
		}},
		Kind{Name: "later"},
	)
	if got := strings.Join(r.Names(), ","); got != "a,later" {
		t.Errorf("names %s", got)
	}
	if got := strings.Join(r.ImplementedNames(), ","); got != "a" {
		t.Errorf("implemented %s", got)
	}
	if _, err := r.Build("a", &sample{Name: "n"}, Env{Name: "lab"}); err != nil || built != "n/lab" {
		t.Errorf("Build: %v, built %q", err, built)
	}
	if _, err := r.Build("a", nil, Env{Name: "d"}); err != nil || built != "/d" {
		t.Errorf("Build with the defaults: %v, built %q", err, built)
	}
	if _, err := r.Build("later", nil, Env{}); err == nil || !strings.Contains(err.Error(), `"later" is not implemented yet`) || !providers.IsPermanent(err) {
		t.Errorf("Build of a kind not implemented: %v", err)
	}
	if _, err := r.Build("nope", nil, Env{}); err == nil || !strings.Contains(err.Error(), "known kinds: a, later") {
		t.Errorf("Build of an unknown kind: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a kind registered twice did not panic")
		}
	}()
	New(Kind{Name: "a"}, Kind{Name: "a"})
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
