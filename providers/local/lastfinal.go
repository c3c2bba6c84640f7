package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// The last final result wins. A trial may report its final result on two
// channels: NNI's metric file (.nni/metrics) and stdout (parsed by the
// supervisor into metrics.stdout). A Read returns the file's records
// first, then stdout's, and the last final result a refresh sees is the
// trial's. So that this is the one the trial reported last, the supervisor
// also follows the NNI file: when the file's final result arrived after
// the one on stdout, it copies it to metrics.stdout once the trial ended.
// "After" is as the supervisor saw them, checking both every tailInterval;
// within one check, stdout counts as later.

// nniFollower follows NNI's metric file for final results, and records
// when records appeared in it: a line "END_OFFSET UNIX_MICROSECONDS" in
// the stamps file for each poll that found records with no "time" of
// their own (an NNI library that is not trialform's stand-in writes none),
// so that a Read can date each record to the poll that first saw it
// (within tailInterval of its writing) instead of to the Read.
type nniFollower struct {
	path  string
	off   int64
	final *providers.Metric // the last final result in the file
	seq   int               // the tailer's event count when it was seen

	stampsPath string   // "" records no stamps
	stamps     *os.File // opened at the first stamp
	stampErr   bool     // said once; stamping stops
}

// stamp records that the file's records up to end were seen at now.
func (f *nniFollower) stamp(end int64, now time.Time) {
	if f.stampsPath == "" || f.stampErr {
		return
	}
	if f.stamps == nil {
		fh, err := fsx.OpenFile(f.stampsPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			f.stampErr = true
			fmt.Fprintf(os.Stderr, "trialform supervisor: record when metrics were seen: %v\n", err)
			return
		}
		f.stamps = fh
	}
	if _, err := fmt.Fprintf(f.stamps, "%d %d\n", end, now.UnixMicro()); err != nil {
		f.stampErr = true
		fmt.Fprintf(os.Stderr, "trialform supervisor: record when metrics were seen: %v\n", err)
	}
}

func (f *nniFollower) close() {
	if f != nil && f.stamps != nil {
		f.stamps.Close()
	}
}

// poll reads the records appended since the last poll (up to a few MiB)
// and notes a final result among them. Records are walked by their
// headers; only a span that mentions FINAL is decoded.
func (f *nniFollower) poll(event int) {
	if f == nil {
		return
	}
	fh, err := fsx.Open(f.path)
	if err != nil {
		return
	}
	defer fh.Close()
	now := time.Now()
	buf := make([]byte, 0, 64<<10)
	for i := 0; i < 64; i++ {
		chunk := buf[:cap(buf)]
		n, err := fh.ReadAt(chunk, f.off)
		if n == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return
			}
			return
		}
		chunk = chunk[:n]
		end := walkRecords(chunk)
		if end < 0 { // not records: let ParseMetricRecords resync
			recs, consumed, _ := trialproto.ParseMetricRecords(chunk)
			f.note(recs, event, now)
			if consumed == 0 {
				return
			}
			f.off += int64(consumed)
			f.stamp(f.off, now)
			continue
		}
		if end == 0 {
			if n == cap(buf) && cap(buf) < 2<<20 {
				buf = make([]byte, 0, 2*cap(buf)) // a record larger than the buffer
				continue
			}
			return
		}
		if bytes.Contains(chunk[:end], []byte(trialproto.TypeFinal)) {
			recs, _, _ := trialproto.ParseMetricRecords(chunk[:end])
			f.note(recs, event, now)
		}
		f.off += int64(end)
		if bytes.Count(chunk[:end], []byte(`"time"`)) < bytes.Count(chunk[:end], []byte(`"type"`)) {
			f.stamp(f.off, now) // some record has no time of its own
		}
		if n < cap(buf) {
			return
		}
	}
}

// drain polls until the follower reached the end of the file (what a
// poll reads is bounded): a trial's last records may be many MiB behind.
func (f *nniFollower) drain(event int) {
	if f == nil {
		return
	}
	for {
		off := f.off
		f.poll(event)
		if f.off == off {
			return
		}
	}
}

func (f *nniFollower) note(recs []providers.Metric, event int, now time.Time) {
	for i := range recs {
		if recs[i].Type == trialproto.TypeFinal && recs[i].Garbage == "" {
			m := recs[i]
			if m.Time.IsZero() {
				m.Time = now // when copied to metrics.stdout, it keeps this
			}
			f.final, f.seq = &m, event
		}
	}
}

// walkOne returns the length of the complete record at the start of b, or
// 0 (incomplete) or -1 (not a record header).
func walkOne(b []byte) int {
	if len(b) < 8 {
		return 0
	}
	if b[0] != 'M' || b[1] != 'E' {
		return -1
	}
	n, err := strconv.Atoi(string(b[2:8]))
	if err != nil {
		return -1
	}
	if len(b) < 8+n {
		return 0
	}
	return 8 + n
}

// walkRecords returns the length of the complete records at the start of
// b (walked by their "ME" + 6-digit length headers), or -1 when b does not
// start with one.
func walkRecords(b []byte) int {
	off := 0
	for {
		rest := b[off:]
		if len(rest) < 8 {
			return off
		}
		if rest[0] != 'M' || rest[1] != 'E' {
			if off == 0 {
				return -1
			}
			return off
		}
		n, err := strconv.Atoi(string(rest[2:8]))
		if err != nil {
			if off == 0 {
				return -1
			}
			return off
		}
		if len(rest) < 8+n {
			return off
		}
		off += 8 + n
	}
}
