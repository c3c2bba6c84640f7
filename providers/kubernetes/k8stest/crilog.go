package k8stest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The node agent keeps container logs the way a CRI runtime does, one
// entry a line: "<RFC3339Nano time> <stream> <F|P> <content>", F for a
// full line, P for part of a line (longer than maxLogLine, or the last
// bytes before the process exited without a newline). Serving them, it
// honours the pods/log options a kubelet honours: timestamps, sinceTime,
// sinceSeconds, limitBytes, tailLines and follow.

const maxLogLine = 16 << 10

// criLog appends entries to one log file; stdout and stderr each get a
// lineWriter over it.
type criLog struct {
	mu sync.Mutex
	f  *os.File
}

func (l *criLog) entry(stream string, full bool, content []byte) {
	tag := "P"
	if full {
		tag = "F"
	}
	var b bytes.Buffer
	b.WriteString(time.Now().UTC().Format(time.RFC3339Nano))
	b.WriteString(" " + stream + " " + tag + " ")
	b.Write(content)
	b.WriteByte('\n')
	l.mu.Lock()
	l.f.Write(b.Bytes())
	l.mu.Unlock()
}

// lineWriter splits what a process writes into log entries.
type lineWriter struct {
	log    *criLog
	stream string
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		switch {
		case i >= 0 && i <= maxLogLine:
			w.log.entry(w.stream, true, w.buf[:i])
			w.buf = w.buf[i+1:]
		case len(w.buf) >= maxLogLine:
			w.log.entry(w.stream, false, w.buf[:maxLogLine])
			w.buf = w.buf[maxLogLine:]
		default:
			return len(p), nil
		}
	}
}

// flush writes what is left of an unterminated last line.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.log.entry(w.stream, false, w.buf)
		w.buf = nil
	}
}

// logOptions are the pods/log query options the agent honours.
type logOptions struct {
	follow, timestamps bool
	since              time.Time // zero: from the start
	limit              int64     // 0: none
	tail               int       // -1: all
}

func parseLogOptions(q url.Values) (logOptions, error) {
	o := logOptions{follow: q.Get("follow") == "true", timestamps: q.Get("timestamps") == "true", tail: -1}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return o, fmt.Errorf("sinceTime: %v", err)
		}
		o.since = t
	}
	if s := q.Get("sinceSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return o, fmt.Errorf("sinceSeconds %q: must be a positive number", s)
		}
		o.since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	if s := q.Get("limitBytes"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return o, fmt.Errorf("limitBytes %q: must be a positive number", s)
		}
		o.limit = n
	}
	if s := q.Get("tailLines"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return o, fmt.Errorf("tailLines %q: must be a number >= 0", s)
		}
		o.tail = n
	}
	return o, nil
}

// logEntry is one parsed line of the log file.
type logEntry struct {
	ts      time.Time
	stamp   string
	full    bool
	content string
}

func parseEntry(line string) (logEntry, bool) {
	line = strings.TrimSuffix(line, "\n")
	stamp, rest, ok := strings.Cut(line, " ")
	if !ok {
		return logEntry{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return logEntry{}, false
	}
	_, rest, ok = strings.Cut(rest, " ") // stream
	if !ok {
		return logEntry{}, false
	}
	tag, content, ok := strings.Cut(rest, " ")
	if !ok {
		return logEntry{}, false
	}
	return logEntry{ts: ts, stamp: stamp, full: tag == "F", content: content}, true
}

// render is the entry as the kubelet prints it.
func (e logEntry) render(timestamps bool) string {
	s := e.content
	if timestamps {
		s = e.stamp + " " + s
	}
	if e.full {
		s += "\n"
	}
	return s
}

// writeLog serves the log file at path with opts; exited is closed once
// the process ended (follow stops there, after the last entries).
func writeLog(w http.ResponseWriter, r *http.Request, path string, opts logOptions, exited <-chan struct{}) {
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, "container not started yet", http.StatusBadRequest)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain")
	flusher, _ := w.(http.Flusher)
	var written int64
	// emit writes one entry; false once limitBytes is reached.
	emit := func(e logEntry) bool {
		if !opts.since.IsZero() && e.ts.Before(opts.since) {
			return true
		}
		s := e.render(opts.timestamps)
		if opts.limit > 0 && written+int64(len(s)) > opts.limit {
			s = s[:opts.limit-written]
		}
		n, err := io.WriteString(w, s)
		written += int64(n)
		return err == nil && (opts.limit == 0 || written < opts.limit)
	}
	rd := bufio.NewReader(f)
	var pending string
	// next returns the next complete entry line, or "" at the end of
	// what was written so far.
	next := func() string {
		s, err := rd.ReadString('\n')
		pending += s
		if err != nil {
			return ""
		}
		line := pending
		pending = ""
		return line
	}
	if opts.tail >= 0 {
		var all []logEntry
		for line := next(); line != ""; line = next() {
			if e, ok := parseEntry(line); ok {
				all = append(all, e)
			}
		}
		if len(all) > opts.tail {
			all = all[len(all)-opts.tail:]
		}
		for _, e := range all {
			if !emit(e) {
				return
			}
		}
	}
	for {
		for line := next(); line != ""; line = next() {
			if e, ok := parseEntry(line); ok && !emit(e) {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		if !opts.follow {
			return
		}
		select {
		case <-exited:
			// The process is gone and its writers flushed: serve the
			// last entries, then end.
			for line := next(); line != ""; line = next() {
				if e, ok := parseEntry(line); ok && !emit(e) {
					return
				}
			}
			return
		case <-r.Context().Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
