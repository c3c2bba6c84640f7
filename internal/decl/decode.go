package decl

import (
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Schema is what a configuration struct (or one of its block structs)
// accepts, read from its tags.
type Schema struct {
	Attrs  []*Attr
	Blocks []*Block
	Label  string // the meaning of a block's one label ("" = no label)
	typ    reflect.Type
	label  []int // field index of the label
}

// Attr is one attribute.
type Attr struct {
	Name     string
	Doc      string
	What     string   // how a value looks: the type tag, or one made from the Go type
	Type     cty.Type // what the value must convert to (DynamicPseudoType: anything)
	Required bool
	// Sensitive (tag sensitive:"true"): the value may come from a sensitive
	// variable (a token, a password); it stays out of plans and the state.
	Sensitive bool
	Min       *int64    // whole numbers: the least value (tag min)
	Range     *Interval // numbers: the values allowed (tag range)
	OneOf     []string  // strings: the values allowed (tag oneof)
	Default   string    // the default, as the references show it (tag default)
	Duration  bool
	Whole     bool // an int
	index     []int
}

// Block is one nested block type.
type Block struct {
	Name     string
	Doc      string
	Many     bool // []T: may be repeated
	Required bool // hcl:"name,block" on a non-pointer struct: exactly one
	Schema   *Schema
	index    []int
}

// AttrNamed returns the attribute called name, or nil.
func (s *Schema) AttrNamed(name string) *Attr {
	for _, a := range s.Attrs {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// BlockNamed returns the block type called name, or nil.
func (s *Schema) BlockNamed(name string) *Block {
	for _, b := range s.Blocks {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// AttrNames and BlockNames are the names, sorted.
func (s *Schema) AttrNames() []string {
	var out []string
	for _, a := range s.Attrs {
		out = append(out, a.Name)
	}
	sort.Strings(out)
	return out
}

func (s *Schema) BlockNames() []string {
	var out []string
	for _, b := range s.Blocks {
		out = append(out, b.Name)
	}
	sort.Strings(out)
	return out
}

// RequiredAttrs are the names of the required attributes, in field order.
func (s *Schema) RequiredAttrs() []string {
	var out []string
	for _, a := range s.Attrs {
		if a.Required {
			out = append(out, a.Name)
		}
	}
	return out
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	anyType      = reflect.TypeOf((*any)(nil)).Elem()
)

// SchemaOf reads the schema of a configuration struct (a pointer to one).
func SchemaOf(cfg any) (*Schema, error) {
	t := reflect.TypeOf(cfg)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("configuration must be a pointer to a struct, not %v", t)
	}
	return schemaOf(t.Elem())
}

func schemaOf(t reflect.Type) (*Schema, error) {
	s := &Schema{typ: t}
	var walk func(t reflect.Type, prefix []int) error
	walk = func(t reflect.Type, prefix []int) error {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			index := append(append([]int{}, prefix...), i)
			tag, ok := f.Tag.Lookup("hcl")
			if !ok {
				if f.Anonymous && f.Type.Kind() == reflect.Struct {
					if err := walk(f.Type, index); err != nil {
						return err
					}
				}
				continue
			}
			name, mode, _ := strings.Cut(tag, ",")
			doc := f.Tag.Get("doc")
			switch mode {
			case "label":
				s.Label = name
				s.label = index
				if f.Type.Kind() != reflect.String {
					return fmt.Errorf("%s: a label must be a string", f.Name)
				}
			case "block":
				b := &Block{Name: name, Doc: doc, index: index}
				bt := f.Type
				switch bt.Kind() {
				case reflect.Slice:
					b.Many = true
					bt = bt.Elem()
				case reflect.Pointer:
					bt = bt.Elem()
				default:
					b.Required = true
				}
				if bt.Kind() != reflect.Struct {
					return fmt.Errorf("%s: a block must be a struct, *struct or []struct", f.Name)
				}
				sub, err := schemaOf(bt)
				if err != nil {
					return fmt.Errorf("%s: %w", f.Name, err)
				}
				b.Schema = sub
				s.Blocks = append(s.Blocks, b)
			case "optional", "attr":
				a := &Attr{Name: name, Doc: doc, Required: mode == "attr", index: index, What: f.Tag.Get("type"), Sensitive: f.Tag.Get("sensitive") == "true"}
				ty, what, err := implied(f.Type)
				if err != nil {
					return fmt.Errorf("%s: %w", f.Name, err)
				}
				a.Type = ty
				a.Duration = f.Type == durationType
				a.Whole = f.Type.Kind() == reflect.Int || f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Int
				if a.What == "" {
					a.What = what
				}
				if m, ok := f.Tag.Lookup("min"); ok {
					n, err := strconv.ParseInt(m, 10, 64)
					if err != nil {
						return fmt.Errorf("%s: min %q: %w", f.Name, m, err)
					}
					a.Min = &n
				}
				if r, ok := f.Tag.Lookup("range"); ok {
					if a.Min != nil {
						return fmt.Errorf("%s: both min and range", f.Name)
					}
					if a.Type != cty.Number {
						return fmt.Errorf("%s: range on a field that is no number", f.Name)
					}
					iv, err := ParseInterval(r)
					if err != nil {
						return fmt.Errorf("%s: range %q: %w", f.Name, r, err)
					}
					a.Range = iv
				}
				if o, ok := f.Tag.Lookup("oneof"); ok {
					if a.Type != cty.String {
						return fmt.Errorf("%s: oneof on a field that is no string", f.Name)
					}
					a.OneOf = strings.Fields(o)
				}
				a.Default = f.Tag.Get("default")
				s.Attrs = append(s.Attrs, a)
			default:
				return fmt.Errorf("%s: unknown hcl tag mode %q", f.Name, mode)
			}
		}
		return nil
	}
	return s, walk(t, nil)
}

// implied is the cty type a Go field type takes, and how it looks.
func implied(t reflect.Type) (cty.Type, string, error) {
	switch {
	case t == durationType:
		return cty.String, `a duration string ("5s")`, nil
	case t == anyType:
		return cty.DynamicPseudoType, "any value", nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return implied(t.Elem())
	case reflect.String:
		return cty.String, "a string", nil
	case reflect.Bool:
		return cty.Bool, "true or false", nil
	case reflect.Int:
		return cty.Number, "a whole number", nil
	case reflect.Float64:
		return cty.Number, "a number", nil
	case reflect.Slice:
		et, what, err := implied(t.Elem())
		if err != nil {
			return cty.NilType, "", err
		}
		return cty.List(et), "a list of " + plural(what), nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return cty.NilType, "", fmt.Errorf("map keys must be strings")
		}
		et, what, err := implied(t.Elem())
		if err != nil {
			return cty.NilType, "", err
		}
		return cty.Map(et), "a map of " + plural(what), nil
	}
	return cty.NilType, "", fmt.Errorf("unsupported field type %v", t)
}

func plural(what string) string {
	what = strings.TrimPrefix(strings.TrimPrefix(what, "a "), "an ")
	return what + "s"
}

// Decode sets the fields of dst (a pointer to the struct s was read from)
// from vals: attributes by name, nested blocks as a tuple of objects under
// their type name with labels under "_labels" (schema's evaluated form).
// A value that does not convert leaves its field as it was; the first such
// error is returned after everything else was decoded. parseDuration reads
// duration strings.
func (s *Schema) Decode(vals map[string]cty.Value, dst any, parseDuration func(string) (time.Duration, error)) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Type() != s.typ {
		return fmt.Errorf("decode into %T, want *%v", dst, s.typ)
	}
	var first error
	s.decode(vals, v.Elem(), parseDuration, &first)
	return first
}

func (s *Schema) decode(vals map[string]cty.Value, dst reflect.Value, pd func(string) (time.Duration, error), first *error) {
	fail := func(err error) {
		if *first == nil {
			*first = err
		}
	}
	if s.label != nil {
		if l, ok := vals["_labels"]; ok && l.LengthInt() == 1 {
			dst.FieldByIndex(s.label).SetString(l.Index(cty.NumberIntVal(0)).AsString())
		}
	}
	for _, a := range s.Attrs {
		v, ok := vals[a.Name]
		if !ok || v.IsNull() {
			continue
		}
		if p := a.Check(v, a.Name, pd); p != nil {
			fail(&AttrError{Attr: a.Name, Problem: *p})
			continue
		}
		if a.Type != cty.DynamicPseudoType {
			v, _ = convert.Convert(v, a.Type)
		}
		f := dst.FieldByIndex(a.index)
		nv := reflect.New(f.Type()).Elem()
		if err := setValue(nv, v, pd); err != nil {
			fail(fmt.Errorf("%s: %w", a.Name, err))
			continue
		}
		f.Set(nv)
	}
	for _, b := range s.Blocks {
		v, ok := vals[b.Name]
		if !ok || v.IsNull() {
			continue
		}
		f := dst.FieldByIndex(b.index)
		var elems []cty.Value
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			elems = append(elems, ev)
		}
		for _, ev := range elems {
			sub := map[string]cty.Value{}
			for k := range ev.Type().AttributeTypes() {
				sub[k] = ev.GetAttr(k)
			}
			var target reflect.Value
			switch f.Kind() {
			case reflect.Slice:
				target = reflect.New(f.Type().Elem()).Elem()
			case reflect.Pointer:
				if f.IsNil() {
					f.Set(reflect.New(f.Type().Elem()))
				}
				target = f.Elem()
			default:
				target = f
			}
			b.Schema.decode(sub, target, pd, first)
			if f.Kind() == reflect.Slice {
				f.Set(reflect.Append(f, target))
			}
		}
	}
}

func setValue(f reflect.Value, v cty.Value, pd func(string) (time.Duration, error)) error {
	if f.Type() == durationType {
		if pd == nil {
			return fmt.Errorf("no duration parser")
		}
		if v.Type() != cty.String {
			return fmt.Errorf("want a duration string")
		}
		d, err := pd(v.AsString())
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
		return nil
	}
	if f.Type() == anyType {
		g, err := ToGo(v)
		if err != nil {
			return err
		}
		if g != nil {
			f.Set(reflect.ValueOf(g))
		}
		return nil
	}
	switch f.Kind() {
	case reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		if err := setValue(p.Elem(), v, pd); err != nil {
			return err
		}
		f.Set(p)
	case reflect.String:
		if v.Type() != cty.String {
			return fmt.Errorf("want a string")
		}
		f.SetString(v.AsString())
	case reflect.Bool:
		if v.Type() != cty.Bool {
			return fmt.Errorf("want true or false")
		}
		f.SetBool(v.True())
	case reflect.Int:
		if v.Type() != cty.Number {
			return fmt.Errorf("want a number")
		}
		i, acc := v.AsBigFloat().Int64()
		if acc != big.Exact {
			return fmt.Errorf("must hold whole numbers")
		}
		f.SetInt(i)
	case reflect.Float64:
		if v.Type() != cty.Number {
			return fmt.Errorf("want a number")
		}
		x, _ := v.AsBigFloat().Float64()
		f.SetFloat(x)
	case reflect.Slice:
		if !v.CanIterateElements() || v.Type().IsMapType() || v.Type().IsObjectType() {
			return fmt.Errorf("want a list")
		}
		out := reflect.MakeSlice(f.Type(), 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			e := reflect.New(f.Type().Elem()).Elem()
			if err := setValue(e, ev, pd); err != nil {
				return err
			}
			out = reflect.Append(out, e)
		}
		f.Set(out)
	case reflect.Map:
		if !v.Type().IsMapType() && !v.Type().IsObjectType() {
			return fmt.Errorf("want a map")
		}
		out := reflect.MakeMap(f.Type())
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			e := reflect.New(f.Type().Elem()).Elem()
			if err := setValue(e, ev, pd); err != nil {
				return err
			}
			out.SetMapIndex(reflect.ValueOf(k.AsString()), e)
		}
		f.Set(out)
	default:
		return fmt.Errorf("unsupported field type %v", f.Type())
	}
	return nil
}

// ToGo turns a cty value into plain Go values: string, bool, float64,
// []any and map[string]any (nil for null).
func ToGo(v cty.Value) (any, error) {
	if !v.IsKnown() {
		return nil, fmt.Errorf("value is not known")
	}
	if v.IsNull() {
		return nil, nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString(), nil
	case ty == cty.Bool:
		return v.True(), nil
	case ty == cty.Number:
		f, _ := v.AsBigFloat().Float64()
		return f, nil
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		out := []any{}
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			g, err := ToGo(ev)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		return out, nil
	case ty.IsMapType() || ty.IsObjectType():
		out := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			g, err := ToGo(ev)
			if err != nil {
				return nil, err
			}
			out[k.AsString()] = g
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value type %s", ty.FriendlyName())
}
