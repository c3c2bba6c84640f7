package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/trialform/trialform/internal/fsx"
)

// The local backend (Manager) keeps the state in the files of a
// .trialform directory (see Manager for the layout). What it guarantees
// beyond the contract (Backend):
//
//   - Load reads state.json (replaced only by rename, so it is always one
//     whole version) and replays the journal's records on top; a last
//     record without its newline is a torn write, dropped with a warning
//     and cut off by the next Save; any other bad record (checksum, a
//     serial that does not follow) is a *JournalError and nothing is
//     written over it, but Replace (state push -force) keeps it aside.
//   - Save appends one checksummed record to the journal and fdatasyncs
//     it; past the journal's limit it writes the whole state to a
//     temporary file, fsyncs it, renames it over state.json (keeping the
//     previous file as state.json.backup) and fsyncs the directory.
//   - The lock is an flock(2) on state.lock, so the kernel releases it
//     when the holder dies, however it dies; the file holds the LockInfo.
//     Unlock compacts the journal into state.json first.
//   - Metric series are JSON lines in metrics/EXP/ID.jsonl, fsynced on
//     each append.

// Name returns "local".
func (m *Manager) Name() string { return LocalBackend }

// Location returns the state directory.
func (m *Manager) Location() string { return m.dir }

// BackupPath returns the path of state.json.backup.
func (m *Manager) BackupPath() string { return m.statePath() + backupSuffix }

// StateStamp returns the identity of state.json and the journal (a Save
// changes one of them) and of the refresh marks.
func (m *Manager) StateStamp() (Stamp, error) {
	var st Stamp
	fi, err := os.Stat(m.statePath())
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read state: %w", err)
	}
	st.State = stampOf(fi)
	st.Written = fi.ModTime()
	if jfi, err := os.Stat(m.journalPath()); err == nil {
		st.State += "+" + stampOf(jfi)
		if jfi.ModTime().After(st.Written) {
			st.Written = jfi.ModTime()
		}
	}
	if rfi, err := os.Stat(filepath.Join(m.dir, refreshedFile)); err == nil {
		st.Refreshed = stampOf(rfi)
	}
	return st, nil
}

// MetricsStamp returns the identity of a trial's series file.
func (m *Manager) MetricsStamp(experiment, trial string) (string, error) {
	path, err := m.metricsPath(experiment, trial)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read metrics: %w", err)
	}
	return stampOf(fi), nil
}

func stampOf(fi fs.FileInfo) string {
	id := idOf(fi)
	return fmt.Sprintf("%d:%d:%d:%d", id.dev, id.ino, id.size, id.mtime.UnixNano())
}

// Replace writes s as the state whatever state.json holds (Replacer),
// keeping the file it replaces as the backup; s keeps its serial. A
// state.json no command can read (a CorruptError) is kept beside it as
// state.json.corrupt instead, so that the backup, the last version that
// could be read, stays: this is how `state push -force` repairs it. A
// journal with a damaged record (a JournalError) is kept aside as
// state.journal.corrupt, and state.json, which can be read without it,
// becomes the backup.
func (m *Manager) Replace(s *State) error {
	if s == nil || s.Lineage == "" {
		return errors.New("replace state: the state has no lineage")
	}
	if s.Version > FormatVersion {
		return fmt.Errorf("replace state: the state has format version %d, this trialform writes %d", s.Version, FormatVersion)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	disk, err := m.current()
	var je *JournalError
	if errors.As(err, &je) {
		if err := m.keepAside(m.journalPath(), true); err != nil {
			return fmt.Errorf("replace state: keep the damaged journal %s: %w", m.journalPath(), err)
		}
		m.disk = nil
		disk, err = m.current()
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		if err := m.keepAside(m.statePath(), false); err != nil {
			return fmt.Errorf("replace state: keep the unreadable %s: %w", m.statePath(), err)
		}
		m.disk, disk, err = nil, nil, nil
	}
	if err != nil {
		return err
	}
	if disk != nil {
		disk.snap = nil
	}
	return m.writeWhole(s, disk, false)
}

// keepAside keeps path, which cannot be read, as path.corrupt
// (path.corrupt-N when that is taken): moved there (and the directory
// synced) when move, else copied.
func (m *Manager) keepAside(path string, move bool) error {
	dst := path + ".corrupt"
	for i := 1; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = fmt.Sprintf("%s.corrupt-%d", path, i)
	}
	if !move {
		return copyFile(path, dst)
	}
	if err := os.Rename(path, dst); err != nil {
		return err
	}
	return fsx.SyncDir(m.dir)
}
