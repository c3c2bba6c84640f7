package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/providers"
)

// Logs copies the trial's stdout, then its stderr, to req.Out, a line at a
// time (providers.LineStreams). With Follow it copies both as they grow
// (interleaved by poll, every 200ms) until the attempt ended, then copies
// what is left.
func (l *Local) Logs(ctx context.Context, req providers.LogsRequest) error {
	dir, err := l.trialDir(req.Experiment, req.TrialID)
	if err != nil {
		return err
	}
	sp, err := readSpec(dir)
	if err != nil {
		return err
	}
	if sp == nil {
		return fmt.Errorf("logs of trial %s: %w", req.TrialID, providers.ErrNotFound)
	}
	files := []string{filepath.Join(dir, stdoutFile), filepath.Join(dir, stderrFile)}
	offs := make([]int64, len(files))
	out := providers.NewLineStreams(req.Out, len(files))
	copyNew := func(final bool) error {
		for i, f := range files {
			n, err := copyFrom(out, i, f, offs[i])
			offs[i] += n
			if err != nil {
				return err
			}
			if final {
				if err := out.End(i); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if !req.Follow {
		return copyNew(true)
	}
	for {
		st, _ := readStatus(dir)
		done := st == nil || st.Attempt != sp.Attempt || st.State == stateEnded ||
			observe(dir, sp, st).Phase == providers.PhaseLost
		if err := copyNew(done); err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if s, _ := readSpec(dir); s != nil && s.Attempt != sp.Attempt {
			sp = s // resumed: follow the new attempt
		}
	}
}

// copyFrom copies path from off to stream i of out and returns how far
// it advanced. The middle of an output file cut by the output cap is
// replaced by one line that says so (out.Gap: the lines it tore are left
// out too).
func copyFrom(out *providers.LineStreams, i int, path string, off int64) (int64, error) {
	w := out.Stream(i)
	f, err := fsx.OpenOwn(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	start := off
	if cut := outputCutOf(path); cut.To > cut.From && off < cut.To {
		if off < cut.From {
			n, err := io.Copy(w, io.NewSectionReader(f, off, cut.From-off))
			off += n
			if err != nil {
				return off - start, fmt.Errorf("copy %s: %w", filepath.Base(path), err)
			}
		}
		note := fmt.Sprintf("[trialform: %d bytes of %s not kept here: the local platform keeps the first and the latest %d MiB of it]", cut.To-cut.From, filepath.Base(path), cut.Limit>>21)
		if err := out.Gap(i, note); err != nil {
			return off - start, err
		}
		off = cut.To
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off - start, err
	}
	n, err := io.Copy(w, f)
	off += n
	if err != nil {
		return off - start, fmt.Errorf("copy %s: %w", filepath.Base(path), err)
	}
	return off - start, nil
}
