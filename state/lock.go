package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/trialform/trialform/internal/fsread"
	"github.com/trialform/trialform/internal/topdir"
)

// Lock is a held state lock, of any backend: its holder's LockInfo and
// what releases it. The local backend's is an flock(2) on state.lock, so
// the kernel releases it when the holder dies, however it dies; the
// file's content (LockInfo) only says who holds it.
type Lock struct {
	info LockInfo

	mu      sync.Mutex
	release func() error // nil once unlocked
	lost    func() error // nil: the backend cannot tell (Lost)
}

// LockedWhat names what a lock of experiments holds, for messages: "the
// whole state" (none named), "experiment a", "experiments a, b".
func LockedWhat(experiments []string) string {
	switch len(experiments) {
	case 0:
		return "the whole state"
	case 1:
		if experiments[0] == ClaimName {
			return "the controller claim"
		}
		return "experiment " + experiments[0]
	}
	return "experiments " + strings.Join(experiments, ", ")
}

// LockCovers says whether a lock of experiments (every one when whole)
// covers any experiment of batches: the metric points a holder whose lock
// was lost may no longer append.
func LockCovers(whole bool, experiments []string, batches []MetricsBatch) bool {
	if whole {
		return true
	}
	for _, bt := range batches {
		if slices.Contains(experiments, bt.Experiment) {
			return true
		}
	}
	return false
}

// NewLock returns a held lock described by info that release gives back
// (called once, by the first Unlock): for backends to return from Lock.
func NewLock(info LockInfo, release func() error) *Lock {
	return &Lock{info: info, release: release}
}

// NewLockInfo returns the LockInfo of a lock this process is about to
// take for operation (version: this trialform's), protecting the state at
// where (for people: a path, a table, an object).
func NewLockInfo(operation, version, where string) LockInfo {
	return LockInfo{
		ID:        uuid.NewString(),
		Operation: operation,
		Who:       who(),
		PID:       os.Getpid(),
		Version:   version,
		Created:   time.Now().Truncate(time.Second),
		Path:      where,
	}
}

func (m *Manager) lockPath() string { return filepath.Join(m.dir, lockFile) }

// Lock takes the state lock for operation (recorded for others to see,
// with version, the holder's trialform version). With timeout 0 it fails at
// once with *LockedError if another holder has it; otherwise it polls until
// it gets it, the timeout passes (an error wrapping *LockedError) or ctx is
// done.
func (m *Manager) Lock(ctx context.Context, operation, version string, timeout time.Duration) (*Lock, error) {
	if err := mkdirState(m.dir); err != nil {
		return nil, fmt.Errorf("lock state: %w", err)
	}
	info := NewLockInfo(operation, version, m.statePath())
	info.Backend = LocalBackend
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	wait := 20 * time.Millisecond
	for {
		l, held, err := m.tryLock(info)
		if err != nil {
			return nil, err
		}
		if l != nil {
			m.removeTemps()
			return l, nil
		}
		if timeout <= 0 {
			return nil, held
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, GaveUp(timeout, held)
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("stopped waiting for the state lock (%w): %w", ctx.Err(), held)
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// tryLock makes one attempt: the lock, or the holder's LockedError.
func (m *Manager) tryLock(info LockInfo) (*Lock, *LockedError, error) {
	path := m.lockPath()
	// The file may be replaced (Unlock and ForceUnlock remove it) between
	// opening and locking it; a lock on a file no longer at path is no
	// lock, so check and start over. Each round means someone else
	// removed the file, so this ends.
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("lock state: %w", err)
		}
		if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			if !errors.Is(err, unix.EWOULDBLOCK) {
				f.Close()
				return nil, nil, fmt.Errorf("lock state: flock %s: %w", path, err)
			}
			held := &LockedError{Info: readHolder(f)}
			f.Close()
			return nil, held, nil
		}
		if !samePath(f, path) {
			f.Close()
			continue
		}
		b, _ := json.MarshalIndent(info, "", "  ")
		b = append(b, '\n')
		if err := writeAll(f, b); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("lock state: write %s: %w", path, err)
		}
		m.holding(info.ID)
		return NewLock(info, func() error {
			defer m.holding("")
			return m.unlockFile(f, path)
		}), nil, nil
	}
	return nil, nil, fmt.Errorf("lock state: %s keeps being replaced", path)
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}

// samePath reports whether path still names the file f is open on.
func samePath(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, pi)
}

func writeAll(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Sync()
}

// readHolder reads the lock info from a lock file someone else holds. The
// holder writes it just after locking, so an empty or partial file is
// given a moment before giving up on it.
func readHolder(f *os.File) LockInfo {
	var info LockInfo
	for range 20 {
		if b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20)); err == nil && json.Unmarshal(b, &info) == nil && info.ID != "" {
			return info
		}
		info = LockInfo{}
		time.Sleep(10 * time.Millisecond)
	}
	return info
}

func who() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return name + "@" + host
}

// Info returns what the lock file says about this lock.
func (l *Lock) Info() LockInfo { return l.info }

// Unlock releases the lock; unlocking twice is harmless. The local
// backend's compacts the journal into state.json (Compact), releases the
// flock and removes the lock file (unless someone force-unlocked it
// meanwhile and the path is another holder's file).
func (l *Lock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.release == nil {
		return nil
	}
	r := l.release
	l.release = nil
	return r()
}

// unlockFile releases the local lock held on f, the file at path.
func (m *Manager) unlockFile(f *os.File, path string) error {
	var err error
	if samePath(f, path) {
		// Leave state.json whole for the next command (and for the
		// backup a lost state is recovered from).
		err = m.Compact()
	}
	if samePath(f, path) {
		// Remove while still holding the lock: a waiter that opened this
		// file sees, once it gets the lock, that the path is gone.
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = fmt.Errorf("unlock state: %w", rerr)
			f.Truncate(0)
		}
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("unlock state: %w", cerr)
	}
	return err
}

// CurrentLock returns the current holder's lock info, or nil if the state
// is not locked. (It finds out by trying the lock for an instant.)
func (m *Manager) CurrentLock() (*LockInfo, error) {
	path := m.lockPath()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state lock: %w", err)
	}
	defer f.Close()
	err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return nil, nil // free (the file is left over from a holder that died)
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return nil, fmt.Errorf("read state lock: flock %s: %w", path, err)
	}
	info := readHolder(f)
	return &info, nil
}

// ForceUnlock removes the lock file if its lock ID is id, so the next Lock
// succeeds even if the holder is stuck. A holder that is still alive keeps
// running unaware: use it only when the holder is gone.
func (m *Manager) ForceUnlock(id string) error {
	if ok, err := m.forceUnlockClaim(id); ok || err != nil {
		return err
	}
	path := m.lockPath()
	b, err := fsread.ReadFile(path, fsread.MaxConfig)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(b) == 0) {
		return fmt.Errorf("force-unlock: the state is not locked (no lock information in %s)", path)
	}
	if err != nil {
		return fmt.Errorf("force-unlock: %w", err)
	}
	var info LockInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return fmt.Errorf("force-unlock: lock file %s is unreadable (%v); delete it by hand if no trialform command is running", path, err)
	}
	if info.ID != id {
		return fmt.Errorf("force-unlock: lock ID %q does not match the current lock: it is %s, held by %s (pid %d, %s, since %s)",
			id, info.ID, info.Operation, info.PID, info.Who, info.Created.Format(time.RFC3339))
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("force-unlock: %w", err)
	}
	return nil
}

// mkdirState creates the state directory and marks it for ext4's Orlov
// allocator (internal/topdir): the trial and metric directories below it
// go to quiet inode groups.
func mkdirState(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	topdir.Mark(dir)
	return nil
}
