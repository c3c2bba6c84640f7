package providers

import (
	"bytes"
	"io"
)

// LineStreams writes several streams of a trial's output (its stdout and
// stderr) to one writer a line at a time, as Logs does: a stream's
// unfinished line is held until its newline, or until End says the
// stream has no more, so one stream's text never runs into the middle of
// another's line. (A masking writer downstream sees whole lines: a secret
// printed without a newline before the trial wrote to stderr is still a
// whole word.) A held line longer than maxHeldLine is written as it is.
type LineStreams struct {
	out  io.Writer
	held [][]byte
	// midLine: the last byte written to out was not a newline.
	midLine bool
}

// maxHeldLine bounds an unfinished line held back.
const maxHeldLine = 1 << 20

// NewLineStreams returns a LineStreams of n streams writing to out.
func NewLineStreams(out io.Writer, n int) *LineStreams {
	return &LineStreams{out: out, held: make([][]byte, n)}
}

// Stream returns the writer of stream i.
func (s *LineStreams) Stream(i int) io.Writer { return streamWriter{s, i} }

type streamWriter struct {
	s *LineStreams
	i int
}

func (w streamWriter) Write(p []byte) (int, error) {
	if err := w.s.write(w.i, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *LineStreams) write(i int, p []byte) error {
	buf := append(s.held[i], p...)
	cut := bytes.LastIndexByte(buf, '\n') + 1
	if cut == 0 && len(buf) > maxHeldLine {
		cut = len(buf)
	}
	if cut > 0 {
		if err := s.emit(buf[:cut]); err != nil {
			return err
		}
		buf = buf[cut:]
	}
	s.held[i] = append(s.held[i][:0], buf...)
	return nil
}

// End writes what stream i holds of an unfinished line: the stream has no
// more to come (the file was read to its end for good).
func (s *LineStreams) End(i int) error {
	if len(s.held[i]) == 0 {
		return nil
	}
	err := s.emit(s.held[i])
	s.held[i] = s.held[i][:0]
	return err
}

// emit writes p, which starts a line of its own: after an unfinished line
// of another stream, a newline first.
func (s *LineStreams) emit(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if s.midLine {
		if _, err := s.out.Write([]byte{'\n'}); err != nil {
			return err
		}
	}
	_, err := s.out.Write(p)
	s.midLine = p[len(p)-1] != '\n'
	return err
}
