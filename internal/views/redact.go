package views

import (
	"bytes"
	"io"
	"sort"

	"github.com/trialform/trialform/schema"
)

// Redactor returns a writer that passes lines through to w with every
// occurrence of a secret replaced by "(sensitive value)". It holds back an
// unfinished line until the next newline or Close. With no secrets it
// writes straight through.
func Redactor(w io.Writer, secrets []string) io.WriteCloser {
	var olds [][]byte
	for _, s := range secrets {
		if s != "" {
			olds = append(olds, []byte(s))
		}
	}
	// Longest first, so a secret that contains another is replaced whole.
	sort.Slice(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
	return &redactor{w: w, secrets: olds}
}

type redactor struct {
	w       io.Writer
	secrets [][]byte
	buf     []byte
}

func (r *redactor) Write(p []byte) (int, error) {
	if len(r.secrets) == 0 {
		return r.w.Write(p)
	}
	r.buf = append(r.buf, p...)
	i := bytes.LastIndexByte(r.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	if _, err := r.w.Write(r.redact(r.buf[:i+1])); err != nil {
		return 0, err
	}
	r.buf = append(r.buf[:0], r.buf[i+1:]...)
	return len(p), nil
}

func (r *redactor) redact(b []byte) []byte {
	for _, s := range r.secrets {
		b = bytes.ReplaceAll(b, s, []byte(schema.SensitiveText))
	}
	return b
}

// Close writes what is left of an unfinished line.
func (r *redactor) Close() error {
	if len(r.buf) == 0 {
		return nil
	}
	_, err := r.w.Write(r.redact(r.buf))
	r.buf = nil
	return err
}
