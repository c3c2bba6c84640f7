package remote

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// DefaultOutputLimit is how much of a trial's stdout and of its stderr the
// remote platform keeps on the machine, as the local platform does: the
// first half and the latest half. The supervisor frees the middle as the
// trial writes (fallocate --punch-hole, so offsets stay valid), after
// copying the metric lines it frees, with their offsets, to stdout.kept.
const DefaultOutputLimit = 64 << 20

const (
	cutSuffix = ".cut"
	keptFile  = "stdout.kept"
)

// outputCut is an output file's cut: the byte range [From, To) that no
// longer holds output, and (stdout) how much of stdout.kept describes it.
type outputCut struct {
	From, To, Limit, KeptLen int64
}

func (c outputCut) ok() bool { return c.To > c.From }

// readCut reads FILE.cut (zero when none or unreadable).
func readCut(s *rfs, file string) (outputCut, error) {
	b, err := readSmall(s, file+cutSuffix)
	if err != nil || b == nil {
		return outputCut{}, err
	}
	f := strings.Fields(string(b))
	if len(f) != 4 {
		return outputCut{}, nil
	}
	var v [4]int64
	for i := range f {
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil || v[i] < 0 {
			return outputCut{}, nil
		}
	}
	return outputCut{From: v[0], To: v[1], Limit: v[2], KeptLen: v[3]}, nil
}

// segment is a run of stdout bytes that starts at offset At in the file.
type segment struct {
	At int64
	B  []byte
}

// stdoutFrom returns stdout from offset r on as segments whose bytes,
// concatenated, are its lines: what the cut freed is replaced by the
// metric lines kept of it. partial says the bytes after the cut were left
// out because it grew while they were read (read again later).
// The cut is read before and after: bytes read while the supervisor
// punched a hole may be zeros, so a read that saw the cut change is done
// again (and after three tries left for the next refresh).
func (tf *trialFiles) stdoutFrom(r, max int64) (segs []segment, at int64, partial bool, err error) {
	for try := 0; try < 3; try++ {
		var cut outputCut
		segs, at, partial, cut, err = tf.stdoutOnce(r, max)
		if err != nil {
			return nil, r, false, err
		}
		again, err := readCut(tf.s, path.Join(tf.dir, stdoutFile))
		if err != nil {
			return nil, r, false, err
		}
		if again == cut {
			return segs, at, partial, nil
		}
	}
	return nil, r, true, nil
}

func (tf *trialFiles) stdoutOnce(r, max int64) (segs []segment, at int64, partial bool, cut outputCut, err error) {
	p := path.Join(tf.dir, stdoutFile)
	cut, err = readCut(tf.s, p)
	if err != nil {
		return nil, r, false, cut, err
	}
	if !cut.ok() || r >= cut.To {
		data, at, err := readFrom(tf.s, p, r, max)
		if err != nil {
			return nil, r, false, cut, err
		}
		if cut.ok() && at < cut.To { // the file was replaced under us
			return nil, at, true, cut, nil
		}
		return []segment{{At: at, B: data}}, at, false, cut, nil
	}
	at = r
	if r < cut.From {
		head, hat, err := readFrom(tf.s, p, r, min(max, cut.From-r))
		if err != nil {
			return nil, r, false, cut, err
		}
		at = hat
		segs = append(segs, segment{At: hat, B: head})
		if hat+int64(len(head)) < cut.From {
			return segs, at, true, cut, nil
		}
	}
	// KeptLen is what the machine says: at most maxMetricRead of it is
	// read (a machine's word must not size an allocation here).
	kept, _, err := readFrom(tf.s, path.Join(tf.dir, keptFile), 0, min(cut.KeptLen, maxMetricRead))
	if err != nil {
		return nil, r, false, cut, err
	}
	next := int64(-1) // where the previous entry ended
	lastI := -1
	for len(kept) > 0 {
		i := bytes.IndexByte(kept, '\n')
		if i < 0 {
			break
		}
		line := kept[:i]
		kept = kept[i+1:]
		f := bytes.SplitN(line, []byte(" "), 3)
		if len(f) != 3 {
			continue
		}
		off, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		if err1 != nil || off < r || off < cut.From || off >= cut.To || off < next {
			continue
		}
		if lastI >= 0 && segs[lastI].B[len(segs[lastI].B)-1] != '\n' && off != next {
			segs[lastI].B = append(segs[lastI].B, '\n') // its continuation is missing
		}
		b := append([]byte(nil), f[2]...)
		next = off + int64(len(b))
		if string(f[1]) == "1" {
			b = append(b, '\n')
			next++
		}
		if len(b) == 0 {
			continue
		}
		segs = append(segs, segment{At: off, B: b})
		lastI = len(segs) - 1
	}
	if lastI >= 0 && segs[lastI].B[len(segs[lastI].B)-1] != '\n' && next != cut.To {
		segs[lastI].B = append(segs[lastI].B, '\n')
	}
	tail, tat, err := readFrom(tf.s, p, cut.To, max)
	if err != nil {
		return nil, r, false, cut, err
	}
	if tat != cut.To {
		return segs, at, true, cut, nil
	}
	return append(segs, segment{At: tat, B: tail}), at, false, cut, nil
}

// joined concatenates segments and maps an index in the result back to
// its offset in the file.
type joined struct {
	data   []byte
	starts []int
	segs   []segment
}

func join(segs []segment) joined {
	j := joined{segs: segs}
	for _, s := range segs {
		j.starts = append(j.starts, len(j.data))
		j.data = append(j.data, s.B...)
	}
	return j
}

// at is the file offset of byte i of j.data (i may be len(j.data): just
// past the last segment).
func (j joined) at(i int) int64 {
	if i >= len(j.data) {
		k := len(j.segs) - 1
		return j.segs[k].At + int64(len(j.segs[k].B))
	}
	k := sort.Search(len(j.starts), func(k int) bool { return j.starts[k] > i }) - 1
	return j.segs[k].At + int64(i-j.starts[k])
}

// cutNote says what the output cap dropped of a trial's stdout and
// stderr ("" when nothing).
func (tf *trialFiles) cutNote() string {
	var parts []string
	for _, name := range []string{stdoutFile, stderrFile} {
		if c, err := readCut(tf.s, path.Join(tf.dir, name)); err == nil && c.ok() {
			parts = append(parts, fmt.Sprintf("%s is over the %d MiB kept per trial: %d bytes in its middle were not kept", name, c.Limit>>20, c.To-c.From))
		}
	}
	return strings.Join(parts, "; ")
}
