package views

import (
	"bytes"
	"testing"
)

func TestStatusWriter(t *testing.T) {
	var buf bytes.Buffer
	s := &StatusWriter{W: &buf, TTY: true}
	s.Write([]byte("line 1\n"))
	s.SetStatus("watch · 2 running")
	s.Write([]byte("line 2\n"))
	s.SetStatus("watch · 3 running")
	s.ClearStatus()
	want := "line 1\n" +
		"watch · 2 running" +
		"\r\x1b[2K" + "line 2\n" + "watch · 2 running" +
		"\r\x1b[2K" + "watch · 3 running" +
		"\r\x1b[2K"
	if got := buf.String(); got != want {
		t.Fatalf("terminal output\n got %q\nwant %q", got, want)
	}

	// Not a terminal: lines only, never a status line or escape codes.
	buf.Reset()
	s = &StatusWriter{W: &buf}
	s.SetStatus("watch · 2 running")
	s.Write([]byte("line\n"))
	s.ClearStatus()
	if got := buf.String(); got != "line\n" {
		t.Fatalf("plain output %q", got)
	}
}
