package schema

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/trialform/trialform/internal/decl"
)

// functions are the functions every expression can call: a generous set
// from go-cty's stdlib under Terraform's names, plus try and can.
var functions = map[string]function.Function{
	// numbers
	"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc,
	"log": stdlib.LogFunc, "max": stdlib.MaxFunc, "min": stdlib.MinFunc, "pow": stdlib.PowFunc,
	"signum": stdlib.SignumFunc, "parseint": stdlib.ParseIntFunc,
	// strings
	"upper": stdlib.UpperFunc, "lower": stdlib.LowerFunc, "title": stdlib.TitleFunc,
	"trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc, "trimsuffix": stdlib.TrimSuffixFunc,
	"trimspace": stdlib.TrimSpaceFunc, "chomp": stdlib.ChompFunc, "indent": stdlib.IndentFunc,
	"join": stdlib.JoinFunc, "split": stdlib.SplitFunc, "replace": stdlib.ReplaceFunc,
	"regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc, "regex_replace": stdlib.RegexReplaceFunc,
	"format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc, "substr": stdlib.SubstrFunc,
	"strrev": stdlib.ReverseFunc, "strlen": stdlib.StrlenFunc,
	// collections
	"length": stdlib.LengthFunc, "concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc,
	"coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc, "compact": stdlib.CompactFunc,
	"distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc,
	"keys": stdlib.KeysFunc, "values": stdlib.ValuesFunc, "lookup": stdlib.LookupFunc,
	"merge": stdlib.MergeFunc, "range": stdlib.RangeFunc, "reverse": stdlib.ReverseListFunc,
	"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "zipmap": stdlib.ZipmapFunc,
	"chunklist": stdlib.ChunklistFunc, "setunion": stdlib.SetUnionFunc,
	"setintersection": stdlib.SetIntersectionFunc, "setsubtract": stdlib.SetSubtractFunc,
	"setproduct": stdlib.SetProductFunc,
	// encoding, time, conversion
	"jsonencode": stdlib.JSONEncodeFunc, "jsondecode": stdlib.JSONDecodeFunc,
	"csvdecode": stdlib.CSVDecodeFunc, "formatdate": stdlib.FormatDateFunc, "timeadd": stdlib.TimeAddFunc,
	"tostring": stdlib.MakeToFunc(cty.String), "tonumber": stdlib.MakeToFunc(cty.Number),
	"tobool": stdlib.MakeToFunc(cty.Bool), "tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
	"tomap": stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)), "toset": stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
	// errors
	"try": tryfunc.TryFunc, "can": tryfunc.CanFunc,
}

// FunctionNames lists the functions available in expressions, sorted.
func FunctionNames() []string {
	names := make([]string, 0, len(functions))
	for n := range functions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// toGo converts a known cty value to a JSON-compatible Go value: strings,
// float64 for every number, bools, []any for lists, sets and tuples,
// map[string]any for maps and objects, nil for null. The registry decodes
// platform settings with the same conversion.
func toGo(v cty.Value) (any, error) { return decl.ToGo(v) }

// wholeNumber returns v as an int64 when it is an integral number.
func wholeNumber(v cty.Value) (int64, bool) {
	if v.Type() != cty.Number || v.IsNull() || !v.IsKnown() {
		return 0, false
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return 0, false
	}
	i, acc := bf.Int64()
	return i, acc == big.Exact
}

// posString is "file:line" for "first at ..." messages.
func posString(r hcl.Range) string {
	return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line)
}

// quotedList is `"a", "b"` style for messages.
func joinNames(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}
