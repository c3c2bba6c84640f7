// Package fuzzseed writes seed inputs of Go native fuzz tests in the
// corpus file format of `go test -fuzz` (testdata/fuzz/FuzzXxx/NAME), so
// a package's seed corpus is regenerated from code rather than edited by
// hand. A package's TestWriteFuzzSeeds calls it when the environment
// asks for it:
//
//	TRIALFORM_WRITE_SEEDS=1 go test -run TestWriteFuzzSeeds ./pkg
package fuzzseed

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Write writes one corpus entry, testdata/fuzz/<fuzzer>/<name>, holding
// args in order (the fuzz function's arguments after *testing.T).
func Write(fuzzer, name string, args ...any) error {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case string:
			fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(v))
		case bool:
			fmt.Fprintf(&b, "bool(%t)\n", v)
		case int:
			fmt.Fprintf(&b, "int(%d)\n", v)
		case int64:
			fmt.Fprintf(&b, "int64(%d)\n", v)
		case uint64:
			fmt.Fprintf(&b, "uint64(%d)\n", v)
		case float64:
			fmt.Fprintf(&b, "float64(%s)\n", floatText(v, math.Float64bits(v), 64))
		case float32:
			fmt.Fprintf(&b, "float32(%s)\n", floatText(float64(v), uint64(math.Float32bits(v)), 32))
		default:
			return fmt.Errorf("fuzzseed: type %T not supported", a)
		}
	}
	dir := filepath.Join("testdata", "fuzz", fuzzer)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644)
}

func floatText(f float64, bits uint64, size int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if size == 32 {
			return fmt.Sprintf("math.Float32frombits(0x%x)", bits)
		}
		return fmt.Sprintf("math.Float64frombits(0x%x)", bits)
	}
	return strconv.FormatFloat(f, 'g', -1, size)
}
