package query

import (
	"testing"
	"unicode/utf8"
)

// FuzzParse: no input makes Parse, String, Check, Match or ParseSort
// panic; an error always carries a column inside the input (or just past
// it), and a parsed query's canonical form parses again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"status:succeeded, params.activation:relu|sigmoid, metrics.loss:<=0.3",
		"status:~failed", "metrics.loss:0.1..0.3", `params.a:"x,|y"`, "started_at:2024-01-02..2024-02-01T10:00",
		"duration:>1h30m", "-metrics.loss,params.lr", "a:b:c", "~", "..", `"`, `\"`, "params.:1", "metric:<<1",
	} {
		f.Add(s)
	}
	sc := SchemaOf(rows())
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("Parse(%q) error %T, want *Error", s, err)
			}
			if e.Offset < 0 || e.Offset > len(s) {
				t.Fatalf("Parse(%q): offset %d outside the input", s, e.Offset)
			}
			_ = e.Caret("")
		} else {
			_ = q.Check(sc)
			q.Filter(rows())
			if utf8.ValidString(s) {
				if _, err := Parse(q.String()); err != nil {
					t.Fatalf("canonical %q of %q does not parse: %v", q.String(), s, err)
				}
			}
		}
		so, err := ParseSort(s)
		if err == nil {
			_ = so.Check(sc)
			so.Apply(rows())
		} else if e, ok := err.(*Error); !ok || e.Offset < 0 || e.Offset > len(s) {
			t.Fatalf("ParseSort(%q): %v", s, err)
		}
	})
}
