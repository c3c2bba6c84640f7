package space

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ParseNNI decodes an NNI search_space.json document:
//
//	{"C": {"_type": "uniform", "_value": [0.1, 1]},
//	 "layer": {"_type": "choice", "_value": [
//	     {"_name": "conv", "kernel": {"_type": "choice", "_value": [3, 5]}},
//	     {"_name": "pool"}]}}
//
// Parameters keep the order of the file. A choice option that is an object
// with "_name" becomes a nested option whose other keys are its sub-params.
// The result is validated (see Space.Validate); errors name the parameter
// path, and syntax errors give the line and column.
func ParseNNI(data []byte) (*Space, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := nniReadValue(dec, 0)
	if err != nil {
		return nil, nniSyntaxError(data, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nniSyntaxError(data, dec, errors.New("unexpected data after the top-level object"))
	}
	obj, ok := v.(nniObject)
	if !ok {
		return nil, fmt.Errorf("the search space must be a JSON object of params, got %s", nniTypeName(v))
	}
	sp, err := nniSpace(obj, false)
	if err != nil {
		return nil, err
	}
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	return sp, nil
}

// nniObject is a JSON object with its keys in document order.
type nniObject []nniMember

type nniMember struct {
	Key string
	Val any
}

// nniMaxDepth bounds how deep objects and lists nest in a search space
// (a real one nests a few levels): reading recurses, and a hostile file
// of a million "[" must be an error, not a stack grown towards the
// runtime's limit (TestParseNNIDeepNesting).
const nniMaxDepth = 200

// nniReadValue reads one JSON value: nniObject, []any, json.Number,
// string, bool or nil. depth is how many objects and lists enclose it.
func nniReadValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if (t == '{' || t == '[') && depth >= nniMaxDepth {
			return nil, fmt.Errorf("objects and lists nested more than %d deep", nniMaxDepth)
		}
		switch t {
		case '{':
			obj := nniObject{}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key expected")
				}
				if seen[key] {
					return nil, fmt.Errorf("key %q appears twice in one object", key)
				}
				seen[key] = true
				val, err := nniReadValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				obj = append(obj, nniMember{key, val})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				val, err := nniReadValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, val)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		default:
			return nil, fmt.Errorf("unexpected %q", string(t))
		}
	default:
		return tok, nil
	}
}

func nniSyntaxError(data []byte, dec *json.Decoder, err error) error {
	off := dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, err)
}

func nniTypeName(v any) string {
	switch v.(type) {
	case nniObject:
		return "an object"
	case []any:
		return "a list"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// nniSpace turns an object of params into a Space. In a nested option
// (nested=true) the "_name" key is skipped.
func nniSpace(obj nniObject, nested bool) (*Space, error) {
	sp := &Space{}
	for _, m := range obj {
		if nested && m.Key == "_name" {
			continue
		}
		p, err := nniParam(m.Key, m.Val)
		if err != nil {
			return nil, fmt.Errorf("param %q: %w", m.Key, err)
		}
		sp.Params = append(sp.Params, p)
	}
	return sp, nil
}

func nniParam(name string, v any) (Param, error) {
	p := Param{Name: name}
	obj, ok := v.(nniObject)
	if !ok {
		return p, fmt.Errorf(`must be an object {"_type": ..., "_value": [...]}, got %s`, nniTypeName(v))
	}
	var value any
	var hasType, hasValue bool
	for _, m := range obj {
		switch m.Key {
		case "_type":
			s, ok := m.Val.(string)
			if !ok {
				return p, fmt.Errorf("_type must be a string, got %s", nniTypeName(m.Val))
			}
			p.Kind, hasType = Kind(s), true
		case "_value":
			value, hasValue = m.Val, true
		default:
			return p, fmt.Errorf("unexpected key %q; a param has only _type and _value", m.Key)
		}
	}
	if !hasType {
		return p, errors.New(`missing "_type"`)
	}
	if !KnownKind(p.Kind) {
		return p, fmt.Errorf("unknown _type %q; use one of %s", p.Kind, kindList())
	}
	if !hasValue {
		return p, errors.New(`missing "_value"`)
	}
	list, ok := value.([]any)
	if !ok {
		return p, fmt.Errorf("_value must be a list, got %s", nniTypeName(value))
	}
	if p.Kind == Choice {
		for i, item := range list {
			o, err := nniOption(item)
			if err != nil {
				return p, fmt.Errorf("option %d: %w", i+1, err)
			}
			p.Options = append(p.Options, o)
		}
		return p, nil
	}
	for i, item := range list {
		n, ok := item.(json.Number)
		if !ok {
			return p, fmt.Errorf("_value item %d must be a number, got %s", i+1, nniTypeName(item))
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return p, fmt.Errorf("_value item %d: %w", i+1, err)
		}
		p.Args = append(p.Args, f)
	}
	return p, nil
}

func nniOption(v any) (Option, error) {
	switch x := v.(type) {
	case string, bool:
		return Option{Value: x}, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return Option{}, err
		}
		return Option{Value: f}, nil
	case nniObject:
		var name string
		found := false
		for _, m := range x {
			if m.Key == "_name" {
				s, ok := m.Val.(string)
				if !ok {
					return Option{}, fmt.Errorf("_name must be a string, got %s", nniTypeName(m.Val))
				}
				name, found = s, true
			}
		}
		if !found {
			return Option{}, errors.New(`an object option needs "_name" (a nested choice option)`)
		}
		sub, err := nniSpace(x, true)
		if err != nil {
			return Option{}, fmt.Errorf("option %q: %w", name, err)
		}
		return Option{Name: name, Nested: sub}, nil
	default:
		return Option{}, fmt.Errorf("options must be strings, numbers, bools or objects with _name, got %s", nniTypeName(v))
	}
}

// MarshalNNI encodes the space as an NNI search_space.json document
// (indented, params in order); ParseNNI reads it back to an equal Space.
func (s *Space) MarshalNNI() ([]byte, error) {
	var b bytes.Buffer
	if err := nniWriteSpace(&b, s, ""); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// nniWriteSpace writes {["_name": name,] "p": {...}, ...} compactly.
func nniWriteSpace(b *bytes.Buffer, s *Space, name string) error {
	b.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			b.WriteByte(',')
		}
		first = false
	}
	if name != "" {
		sep()
		nniWriteJSON(b, "_name")
		b.WriteByte(':')
		nniWriteJSON(b, name)
	}
	if s != nil {
		for _, p := range s.Params {
			sep()
			nniWriteJSON(b, p.Name)
			b.WriteString(`:{"_type":`)
			nniWriteJSON(b, string(p.Kind))
			b.WriteString(`,"_value":[`)
			if p.Kind == Choice {
				for i, o := range p.Options {
					if i > 0 {
						b.WriteByte(',')
					}
					if o.Nested != nil || o.Name != "" {
						if err := nniWriteSpace(b, o.Nested, o.Name); err != nil {
							return err
						}
						continue
					}
					if err := nniWriteJSONErr(b, o.Value); err != nil {
						return fmt.Errorf("param %q: %w", p.Name, err)
					}
				}
			} else {
				for i, a := range p.Args {
					if i > 0 {
						b.WriteByte(',')
					}
					if err := nniWriteJSONErr(b, a); err != nil {
						return fmt.Errorf("param %q: %w", p.Name, err)
					}
				}
			}
			b.WriteString("]}")
		}
	}
	b.WriteByte('}')
	return nil
}

func nniWriteJSON(b *bytes.Buffer, v any) {
	_ = nniWriteJSONErr(b, v)
}

func nniWriteJSONErr(b *bytes.Buffer, v any) error {
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(j)
	return nil
}
