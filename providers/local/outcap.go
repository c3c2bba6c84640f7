package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trialform/trialform/internal/fsx"

	"golang.org/x/sys/unix"
)

// DefaultOutputLimit is the size of a trial's stdout and of its stderr
// that the local platform keeps on disk: the first half and the latest
// half. What lies between is freed as the trial writes (a hole punched in
// the file, so offsets stay valid and nothing the supervisor still has to
// scan for metrics is lost); logs shows a line in its place, and the
// trial's note says how much was dropped.
const DefaultOutputLimit = 64 << 20

// cutSuffix names the file that records the cut of an output file: the
// byte range [From, To) that no longer holds output.
const cutSuffix = ".cut"

type outputCut struct {
	From  int64 `json:"from"`
	To    int64 `json:"to"`
	Limit int64 `json:"limit"`
}

// capper keeps an output file within limit bytes on disk.
type capper struct {
	path   string
	limit  int64
	cut    outputCut
	failed bool
}

func newCapper(path string, limit int64) *capper {
	c := &capper{path: path, limit: limit}
	_ = readJSON(path+cutSuffix, &c.cut) // an earlier attempt's cut
	return c
}

const pageSize = 4096

// trim frees the middle of the file up to upto (bytes before upto were
// consumed by whoever reads the file), keeping the first limit/2 bytes
// and the last limit/2 bytes before upto.
func (c *capper) trim(upto int64) {
	if c == nil || c.limit <= 0 || c.failed {
		return
	}
	half := c.limit / 2
	from := (half + pageSize - 1) / pageSize * pageSize
	to := (upto - half) / pageSize * pageSize
	if c.cut.To > from {
		from = c.cut.To
	}
	if to-from < 4*pageSize {
		return
	}
	f, err := fsx.OpenFile(c.path, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, from, to-from); err != nil {
		c.failed = true
		fmt.Fprintf(os.Stderr, "trialform supervisor: cannot free the middle of %s (%v): it is not capped\n", c.path, err)
		return
	}
	if c.cut.From == 0 {
		c.cut.From = from
	}
	c.cut.To, c.cut.Limit = to, c.limit
	_ = writeJSON(c.path+cutSuffix, c.cut)
}

// outputCutOf reads the cut of an output file (zero when none).
func outputCutOf(path string) outputCut {
	var c outputCut
	if err := readJSON(path+cutSuffix, &c); err != nil && !errors.Is(err, os.ErrNotExist) {
		return outputCut{}
	}
	return c
}

// stdoutNote says what the output cap dropped of a trial's stdout and
// stderr ("" when nothing).
func stdoutNote(dir string) string {
	var parts []string
	for _, name := range []string{stdoutFile, stderrFile} {
		if c := outputCutOf(filepath.Join(dir, name)); c.To > c.From {
			parts = append(parts, fmt.Sprintf("%s is over the %d MiB kept per trial: %d bytes in its middle were not kept", name, c.Limit>>20, c.To-c.From))
		}
	}
	return strings.Join(parts, "; ")
}

func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}
