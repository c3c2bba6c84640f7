package k8stest

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCRILogServesKubeletOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	l := &criLog{f: f}
	out, errw := &lineWriter{log: l, stream: "stdout"}, &lineWriter{log: l, stream: "stderr"}
	out.Write([]byte("one\ntw"))
	out.Write([]byte("o\n"))
	errw.Write([]byte("warn\n"))
	// The next entries fall in a later second than these.
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 10*time.Millisecond).Sub(now))
	mid := time.Now().UTC().Truncate(time.Second)
	out.Write([]byte("three\nunterminated"))
	out.flush()
	f.Close()

	get := func(query string) string {
		t.Helper()
		req := httptest.NewRequest("GET", "/containerLogs/ns/p/c?"+query, nil)
		opts, err := parseLogOptions(req.URL.Query())
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		writeLog(rec, req, path, opts, nil)
		return rec.Body.String()
	}
	if got, want := get(""), "one\ntwo\nwarn\nthree\nunterminated"; got != want {
		t.Errorf("plain log = %q, want %q", got, want)
	}
	ts := get("timestamps=true")
	lines := strings.Split(ts, "\n")
	if len(lines) != 5 {
		t.Fatalf("timestamped log has %d lines: %q", len(lines), ts)
	}
	for i, want := range []string{"one", "two", "warn", "three", "unterminated"} {
		stamp, content, _ := strings.Cut(lines[i], " ")
		if _, err := time.Parse(time.RFC3339Nano, stamp); err != nil || content != want {
			t.Errorf("line %d = %q: want a time and %q (%v)", i, lines[i], want, err)
		}
	}
	if got := get("sinceTime=" + mid.Format(time.RFC3339)); got != "three\nunterminated" {
		t.Errorf("sinceTime %s = %q", mid.Format(time.RFC3339), got)
	}
	if got := get("limitBytes=6"); got != "one\ntw" {
		t.Errorf("limitBytes=6 = %q", got)
	}
	if got := get("tailLines=2"); got != "three\nunterminated" {
		t.Errorf("tailLines=2 = %q", got)
	}
	if _, err := parseLogOptions(httptest.NewRequest("GET", "/?limitBytes=-1", nil).URL.Query()); err == nil {
		t.Error("limitBytes=-1 was accepted")
	}
}

func TestLineWriterSplitsLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	f, _ := os.Create(path)
	l := &criLog{f: f}
	w := &lineWriter{log: l, stream: "stdout"}
	w.Write([]byte(strings.Repeat("x", maxLogLine+10) + "\n"))
	f.Close()
	b, _ := os.ReadFile(path)
	entries := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(entries) != 2 {
		t.Fatalf("%d entries, want a partial and a full one", len(entries))
	}
	e0, ok0 := parseEntry(entries[0])
	e1, ok1 := parseEntry(entries[1])
	if !ok0 || !ok1 || e0.full || !e1.full || len(e0.content) != maxLogLine || len(e1.content) != 10 {
		t.Errorf("entries: %v %v full=%v,%v lens %d,%d", ok0, ok1, e0.full, e1.full, len(e0.content), len(e1.content))
	}
}
