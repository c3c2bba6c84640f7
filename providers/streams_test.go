package providers

import (
	"bytes"
	"strings"
	"testing"
)

func TestLineStreams(t *testing.T) {
	var out bytes.Buffer
	s := NewLineStreams(&out, 2)
	write := func(i int, p string) {
		t.Helper()
		if n, err := s.Stream(i).Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("write %q: %d, %v", p, n, err)
		}
	}
	// An unfinished line is held while the other stream writes whole lines.
	write(0, "one\ntoken=s3cr")
	write(1, "err 1\n")
	write(0, "3t")
	write(1, "err 2\npartial err")
	if got, want := out.String(), "one\nerr 1\nerr 2\n"; got != want {
		t.Fatalf("before End: %q, want %q", got, want)
	}
	// End writes what is held; the next stream's text starts a line of its own.
	if err := s.End(0); err != nil {
		t.Fatal(err)
	}
	if err := s.End(1); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "one\nerr 1\nerr 2\ntoken=s3cr3t\npartial err"; got != want {
		t.Errorf("after End: %q, want %q", got, want)
	}
	// An unfinished line past the bound is not held.
	out.Reset()
	s = NewLineStreams(&out, 1)
	long := strings.Repeat("x", maxHeldLine+1)
	write(0, long)
	if out.Len() != len(long) {
		t.Errorf("a %d-byte unfinished line: %d bytes written, want all", len(long), out.Len())
	}
}

// A gap in a stream's output (the output cap freed its middle) drops the
// lines it tore: a secret printed across it would show as two pieces,
// "token=s3cr" and "3t", that no mask recognises.
func TestLineStreamsGap(t *testing.T) {
	var out bytes.Buffer
	s := NewLineStreams(&out, 2)
	write := func(i int, p string) {
		t.Helper()
		if _, err := s.Stream(i).Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	write(0, "one\ntoken=s3cr")
	write(1, "err")
	if err := s.Gap(0, "[gap]"); err != nil {
		t.Fatal(err)
	}
	write(0, "3t and")
	write(0, " more\ntwo\nthr")
	write(1, " 1\n")
	write(0, "ee\n")
	if err := s.Gap(1, "[gap 2]"); err != nil { // nothing held: nothing torn before it
		t.Fatal(err)
	}
	write(1, "torn\nerr 2\n")
	s.End(0)
	s.End(1)
	if got, want := out.String(), "one\n[gap]\ntwo\nerr 1\nthree\n[gap 2]\nerr 2\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A torn line is dropped up to the bound a held line has.
	out.Reset()
	s = NewLineStreams(&out, 1)
	s.Gap(0, "[gap]")
	write(0, strings.Repeat("x", maxHeldLine))
	write(0, "rest\n")
	if got := out.String(); got != "[gap]\nrest\n" {
		t.Errorf("after a torn line of %d bytes: %q", maxHeldLine, got[:min(len(got), 40)])
	}
}

// A line over maxHeldLine is written in parts, and no newline goes
// between its parts (one fell inside a secret: "s3cr3t-Tok3\nn-9f8e7d",
// which the masking writer downstream took for two words); a line of
// another stream still starts on a line of its own.
func TestLineStreamsLongLineUnbroken(t *testing.T) {
	var out bytes.Buffer
	s := NewLineStreams(&out, 2)
	unit := `"Bearer","s3cr3t-Tok3n-9f8e7d",`
	line := strings.Repeat(unit, 3*maxHeldLine/len(unit))
	for p := line; p != ""; {
		n := min(len(p), 4099)
		s.Stream(0).Write([]byte(p[:n]))
		p = p[n:]
	}
	s.Stream(0).Write([]byte("end\n"))
	s.Stream(1).Write([]byte("err\n"))
	if got, want := out.String(), line+"end\nerr\n"; got != want {
		t.Errorf("got %d bytes with %d newlines, want %d with 2", len(got), strings.Count(got, "\n"), len(want))
	}
	out.Reset()
	s = NewLineStreams(&out, 2)
	s.Stream(0).Write([]byte(strings.Repeat("x", maxHeldLine+1)))
	s.Stream(1).Write([]byte("err\n"))
	if got := out.String(); !strings.HasSuffix(got, "x\nerr\n") {
		t.Errorf("another stream's line does not start a line: %q", got[len(got)-10:])
	}
}
