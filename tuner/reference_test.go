package tuner_test

import (
	"flag"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/internal/docs"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/tuner"
)

var update = flag.Bool("update", false, "rewrite docs/tuners.md's tuner reference from the declarations")

// TestReadmeTunerReference fails when a generated part of docs/tuners.md
// (the tuner reference) is not what the declarations make; -update
// rewrites it.
func TestReadmeTunerReference(t *testing.T) {
	path := filepath.Join("..", "docs", "tuners.md")
	reg := tuner.Builtin()
	for _, part := range []struct{ name, want string }{
		{"tuner table", tuner.ReferenceTable(reg, schema.DefaultTuner)},
		{"assessor table", tuner.AssessorTable(reg)},
		{"tuner settings", tuner.SettingsReference(reg)},
	} {
		msg, err := docs.CheckGenerated(path, part.name, "from the declarations by `go test ./tuner -run TestReadmeTunerReference -update`", part.want, *update)
		if err != nil {
			t.Fatal(err)
		}
		if msg != "" {
			t.Error(msg)
		}
	}
}

// Every tuner and assessor says what it does, and every setting what it
// means; a default tag that reads as a value of the field's type is the
// value the settings struct holds, so the reference cannot drift from the
// code.
func TestDeclarationsAreComplete(t *testing.T) {
	reg := tuner.Builtin()
	check := func(what string, cfg any) {
		s, err := decl.SchemaOf(cfg)
		if err != nil {
			t.Fatal(err)
		}
		v := reflect.ValueOf(cfg).Elem()
		for _, a := range s.Attrs {
			if a.Doc == "" {
				t.Errorf("%s: setting %s has no doc tag", what, a.Name)
			}
			if a.Required && a.Default != "" {
				t.Errorf("%s: setting %s is required and has a default", what, a.Name)
			}
			if !a.Required && a.Default == "" && !nilField(v, a.Name) {
				t.Errorf("%s: setting %s has no default tag", what, a.Name)
			}
			if a.Default == "" {
				continue
			}
			f := field(v, a.Name)
			var want any
			switch f.Kind() {
			case reflect.Int:
				n, err := strconv.Atoi(a.Default)
				if err != nil {
					t.Errorf("%s: %s's default %q is no whole number", what, a.Name, a.Default)
					continue
				}
				want = n
			case reflect.Float64:
				x, err := strconv.ParseFloat(a.Default, 64)
				if err != nil {
					t.Errorf("%s: %s's default %q is no number", what, a.Name, a.Default)
					continue
				}
				want = x
			case reflect.Bool:
				want = a.Default == "true"
			case reflect.String:
				if u, err := strconv.Unquote(a.Default); err == nil {
					want = u
				} else {
					want = a.Default
				}
			default:
				continue // a pointer: the default is worked out when it is nil
			}
			if got := f.Interface(); got != want {
				t.Errorf("%s: %s's default tag says %v, its settings struct holds %v", what, a.Name, want, got)
			}
		}
	}
	for _, k := range reg.Kinds() {
		if k.Summary == "" || k.Spaces == "" {
			t.Errorf("tuner %s lacks a summary or its spaces", k.Name)
		}
		check("tuner "+k.Name, k.Settings())
	}
	for _, a := range reg.Assessors() {
		if a.Summary == "" {
			t.Errorf("assessor %s lacks a summary", a.Name)
		}
		check("assessor "+a.Name, a.Settings())
	}
}

// field is the struct field (embedded structs included) whose hcl tag
// names attr.
func field(v reflect.Value, attr string) reflect.Value {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("hcl"), ","); name == attr {
			return v.Field(i)
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if fv := field(v.Field(i), attr); fv.IsValid() {
				return fv
			}
		}
	}
	return reflect.Value{}
}

// nilField: a pointer or interface setting, nil when absent (grid_points,
// seed), needs no default.
func nilField(v reflect.Value, attr string) bool {
	f := field(v, attr)
	return (f.Kind() == reflect.Pointer || f.Kind() == reflect.Interface) && f.IsNil()
}
