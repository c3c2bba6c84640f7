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
// Gap says that a stream's output was not kept between what it wrote and
// what comes next (the output cap freed it): the lines torn by the gap are
// dropped, so no piece of a secret shows that a masking writer cannot
// recognise as one.
type LineStreams struct {
	out  io.Writer
	held [][]byte
	// torn[i]: stream i's next bytes up to a newline are the end of a
	// line whose start was not kept; how many were dropped of it so far
	// is skipped[i].
	torn    []bool
	skipped []int
	// open is the stream whose line the last write to out left
	// unfinished (-1: none).
	open int
}

// maxHeldLine bounds an unfinished line held back.
const maxHeldLine = 1 << 20

// NewLineStreams returns a LineStreams of n streams writing to out.
func NewLineStreams(out io.Writer, n int) *LineStreams {
	return &LineStreams{out: out, held: make([][]byte, n), torn: make([]bool, n), skipped: make([]int, n), open: -1}
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
	if s.torn[i] {
		p = s.dropTorn(i, p)
	}
	buf := append(s.held[i], p...)
	cut := bytes.LastIndexByte(buf, '\n') + 1
	if cut == 0 && len(buf) > maxHeldLine {
		cut = len(buf)
	}
	if cut > 0 {
		if err := s.emit(i, buf[:cut]); err != nil {
			return err
		}
		buf = buf[cut:]
	}
	s.held[i] = append(s.held[i][:0], buf...)
	return nil
}

// dropTorn drops the start of p up to its first newline (the end of a
// torn line), and returns the rest. A torn line longer than maxHeldLine
// is dropped only so far, as such a line is not held either.
func (s *LineStreams) dropTorn(i int, p []byte) []byte {
	n := bytes.IndexByte(p, '\n') + 1
	if n == 0 {
		n = len(p)
	}
	if rest := maxHeldLine - s.skipped[i]; n > rest {
		n = rest
	}
	s.skipped[i] += n
	if (n > 0 && p[n-1] == '\n') || s.skipped[i] >= maxHeldLine {
		s.torn[i], s.skipped[i] = false, 0
	}
	return p[n:]
}

// Gap says that stream i's output between what it was given and what it
// is given next was not kept: the unfinished line it holds (its end is
// gone) and the start of what comes next up to a newline (its start is
// gone) are dropped, and note is written as a line of its own in their
// place. A secret printed across the gap would otherwise show as two
// pieces that no mask recognises.
func (s *LineStreams) Gap(i int, note string) error {
	s.held[i] = s.held[i][:0]
	s.torn[i], s.skipped[i] = true, 0
	return s.emit(-1, []byte(note+"\n"))
}

// End writes what stream i holds of an unfinished line: the stream has no
// more to come (the file was read to its end for good).
func (s *LineStreams) End(i int) error {
	if len(s.held[i]) == 0 {
		return nil
	}
	err := s.emit(i, s.held[i])
	s.held[i] = s.held[i][:0]
	return err
}

// emit writes p, text of stream i (-1: a line of its own), after a
// newline when another stream's line is unfinished. A stream's own line
// written in parts (one over maxHeldLine) goes on unbroken: a newline
// put inside it could cut a secret in two.
func (s *LineStreams) emit(i int, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if s.open >= 0 && (i < 0 || s.open != i) {
		if _, err := s.out.Write([]byte{'\n'}); err != nil {
			return err
		}
	}
	_, err := s.out.Write(p)
	s.open = -1
	if p[len(p)-1] != '\n' {
		s.open = i
	}
	return err
}
