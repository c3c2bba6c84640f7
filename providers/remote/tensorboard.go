package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pkg/sftp"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// SyncTensorBoard copies the trial's TensorBoard directory into req.Dest
// over SFTP, incrementally; see providers.TensorBoardSyncer. On its
// machine the trial's directory is TRIAL/output/tensorboard/TRIAL
// (TRIALFORM_TENSORBOARD_DIR; ADAPTDL_TENSORBOARD_LOGDIR is its parent,
// which seed 000's code joins with the trial id): everything under
// TRIAL/output/tensorboard is copied, the leading TRIAL component dropped,
// so trials started before that layout (which wrote into
// output/tensorboard itself) and code that writes straight into
// ADAPTDL_TENSORBOARD_LOGDIR land in req.Dest too.
func (r *Remote) SyncTensorBoard(ctx context.Context, req providers.SyncRequest) (providers.SyncStats, error) {
	var stats providers.SyncStats
	tf, err := r.locate(ctx, req.Experiment, req.TrialID, req.Handle)
	if err != nil {
		return stats, err
	}
	if tf.sp == nil {
		return stats, fmt.Errorf("tensorboard logs of trial %s: %w", req.TrialID, providers.ErrNotFound)
	}
	root := path.Join(tf.dir, "output", trialproto.TensorBoardSubdir)
	if err := tf.s.do("SFTP stat of "+root, func(s *sftp.Client) error {
		_, err := s.Lstat(root)
		return err
	}); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return stats, nil
		}
		return stats, tf.m.sftpErr(tf.c, err)
	}
	if err := os.MkdirAll(req.Dest, 0o755); err != nil {
		return stats, err
	}
	limit := req.MaxBytes
	if limit <= 0 {
		limit = providers.DefaultSyncLimit
	}
	var kept int64 // the trial's logs in Dest once this sync is done
	var over struct {
		n     int    // files left out
		bytes int64  // their size
		path  string // the first
		size  int64
	}
	// The listings are bounded (lister): a trial that made millions of
	// files does not fill this machine's memory; what was listed is
	// copied, and the error says the rest was not.
	lst, err := tf.m.lister(ctx)
	if err != nil {
		return stats, err
	}
	defer lst.close()
	var cut error
	dirs := []string{root}
	for len(dirs) > 0 {
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		ents, err := lst.readDir(dir)
		var ce *listingCutError
		if errors.As(err, &ce) {
			if cut == nil {
				cut = err
			}
		} else if err != nil {
			return stats, err
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		// Depth first, in name order, as a walk goes.
		var sub []string
		for _, fi := range ents {
			p := path.Join(dir, fi.Name())
			rel, err := filepath.Rel(root, p)
			if err != nil || rel == "." {
				continue
			}
			if rel == req.TrialID {
				if fi.IsDir() {
					sub = append(sub, p)
				}
				continue
			}
			if r, ok := strings.CutPrefix(rel, req.TrialID+"/"); ok {
				rel = r
			}
			rel = filepath.FromSlash(rel)
			if !filepath.IsLocal(rel) {
				return stats, fmt.Errorf("tensorboard file %q of trial %s leaves its directory", p, req.TrialID)
			}
			local := filepath.Join(req.Dest, rel)
			switch {
			case fi.IsDir():
				if err := os.MkdirAll(local, 0o755); err != nil {
					return stats, err
				}
				sub = append(sub, p)
				continue
			case !fi.Mode().IsRegular():
				continue // symlinks, devices: never followed
			}
			if kept+fi.Size() > limit {
				// Not copied; the files after it that fit still are.
				if over.n == 0 {
					over.path, over.size = p, fi.Size()
				}
				over.n++
				over.bytes += fi.Size()
				continue
			}
			kept += fi.Size()
			n, err := syncFile(tf.s, p, local, fi.Size())
			if err != nil {
				return stats, fmt.Errorf("sync %s: %w", p, tf.m.sftpErr(tf.c, err))
			}
			if n > 0 {
				stats.Files++
				stats.Bytes += n
			}
		}
		for i := len(sub) - 1; i >= 0; i-- {
			dirs = append(dirs, sub[i])
		}
	}
	if cut != nil {
		return stats, fmt.Errorf("the TensorBoard logs of trial %s: %w; what was listed was copied", req.TrialID, cut)
	}
	if over.n > 0 {
		return stats, fmt.Errorf("the TensorBoard logs of trial %s on %s are larger than -sync-limit %s: %d file(s) of %s were not copied (the first: %s, %s), "+
			"the other %s were; raise -sync-limit (in GiB) if this machine has the disk for them, or have the trial log less (fewer or smaller summaries, a longer interval)",
			req.TrialID, tf.m.key, size(limit), over.n, size(over.bytes), over.path, size(over.size), size(kept))
	}
	return stats, nil
}

// syncFile brings local up to remote's size: appending what is new when
// local is shorter, copying the whole file again when it is longer (the
// remote file was replaced). It returns the bytes copied.
func syncFile(s *rfs, remote, local string, size int64) (int64, error) {
	var have int64
	if li, err := os.Lstat(local); err == nil {
		if !li.Mode().IsRegular() {
			return 0, fmt.Errorf("%s exists and is not a regular file", local)
		}
		have = li.Size()
	}
	if have == size {
		return 0, nil
	}
	if have > size {
		have = 0
		if err := os.Remove(local); err != nil {
			return 0, err
		}
	}
	var f *sftp.File
	if err := s.do("SFTP open of "+remote, func(c *sftp.Client) (err error) {
		f, err = openRegular(c, remote)
		return err
	}); err != nil {
		return 0, err
	}
	defer func() { _ = s.do("SFTP close of "+remote, func(*sftp.Client) error { return f.Close() }) }()
	out, err := os.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	// In pieces, each bounded on its own (bound): a large file copies
	// over a slow link, a hung server does not hold the sync.
	var n int64
	for n < size-have && err == nil {
		want := min(syncPiece, size-have-n)
		var k int64
		err = s.do("SFTP read of "+remote, func(*sftp.Client) (err error) {
			k, err = io.Copy(out, io.NewSectionReader(f, have+n, want))
			return err
		})
		n += k
		if k < want {
			break // shorter than it was
		}
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// syncPiece is how much of a file syncFile copies in one bounded read.
const syncPiece = 8 << 20

var _ providers.TensorBoardSyncer = (*Remote)(nil)

// size says a number of bytes for people.
func size(n int64) string {
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
