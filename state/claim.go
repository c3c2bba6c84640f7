package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// The controller claim: `trialform controller` (without -leader-elect as
// with it) holds it for its whole life, so that two controllers on one
// state never both plan and apply (two that follow different commits would
// each apply their own). It is apart from the state lock: it excludes only
// another claim, never a person's plan or apply, nor the experiments'
// locks (a lock on the claim name would, in pg and kubernetes, exclude the
// whole-state lock, and the local backend has no other). A holder that
// dies loses it the way the backend's locks go (local: the kernel frees
// the flock; pg: with the session), and `trialform force-unlock ID`
// releases it.

// ClaimName is the name the claim is recorded under where a backend keeps
// it with its locks (pg: the experiments of its record): '#' is in no
// experiment's name (schema: an HCL identifier), so it never collides.
const ClaimName = "#controller"

// IsClaim reports whether a lock's info is the controller claim's.
func IsClaim(li LockInfo) bool {
	return len(li.Experiments) == 1 && li.Experiments[0] == ClaimName
}

// Claimer is the optional capability of a backend that a controller can
// claim. Claim takes the claim at once or fails with *LockedError
// carrying its holder's LockInfo; the returned Lock's Unlock gives it
// back, and its Lost says when it was lost meanwhile (force-unlock; a pg
// session lost and the claim taken by someone else). CurrentClaim returns
// the holder's LockInfo, nil when nobody holds it.
type Claimer interface {
	Claim(ctx context.Context, operation, version string) (*Lock, error)
	CurrentClaim() (*LockInfo, error)
}

var _ Claimer = (*Manager)(nil)

// ClaimHolder names a claim's holder for people: "controller (pid 12,
// alice@host, since 2026-11-28T02:00:00Z)".
func ClaimHolder(li LockInfo) string {
	return fmt.Sprintf("%s (pid %d, %s, since %s)", li.Operation, li.PID, li.Who, li.Created.Format(time.RFC3339))
}

// NewClaimLock returns a held claim (NewLock) whose Lost calls lost.
func NewClaimLock(info LockInfo, release func() error, lost func() error) *Lock {
	l := NewLock(info, release)
	l.lost = lost
	return l
}

// Lost returns nil while the lock is still its holder's (or the backend
// cannot tell), else why not: an error wrapping ErrUnavailable while a
// backend is taking it again (pg after a server restart), any other
// error once it is gone for good.
func (l *Lock) Lost() error {
	if l == nil || l.lost == nil {
		return nil
	}
	return l.lost()
}

func (m *Manager) claimPath() string { return filepath.Join(m.dir, claimFile) }

// claimFile holds the local claim: flock(2)ed by its holder, with its
// LockInfo as content, like the state lock's file.
const claimFile = "controller.lock"

// Claim takes the controller claim of the local state: an flock of
// .trialform/controller.lock, which the kernel frees when its holder
// dies, however it dies.
func (m *Manager) Claim(ctx context.Context, operation, version string) (*Lock, error) {
	if err := mkdirState(m.dir); err != nil {
		return nil, fmt.Errorf("claim the state: %w", err)
	}
	info := NewLockInfo(operation, version, m.statePath())
	info.Backend = LocalBackend
	info.Experiments = []string{ClaimName}
	path := m.claimPath()
	busy := 0 // flocks found taken in a row
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("claim the state: %w", err)
		}
		if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if !errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("claim the state: flock %s: %w", path, err)
			}
			// CurrentClaim (show, trials, ui) holds the flock for a
			// moment to see whether anyone does: a few tries before
			// calling it held.
			if testClaimBusy != nil {
				testClaimBusy()
			}
			if busy++; busy < 10 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
			f, err := os.Open(path)
			if err != nil {
				continue // released meanwhile
			}
			held := &LockedError{Info: readHolder(f)}
			f.Close()
			return nil, held
		}
		if !samePath(f, path) {
			f.Close()
			continue
		}
		b, _ := json.MarshalIndent(info, "", "  ")
		if err := writeAll(f, append(b, '\n')); err != nil {
			f.Close()
			return nil, fmt.Errorf("claim the state: write %s: %w", path, err)
		}
		lost := func() error {
			if samePath(f, path) {
				return nil
			}
			return fmt.Errorf("the controller claim %s (%s) was released by someone else (force-unlock?): its file is gone", info.ID, path)
		}
		return NewClaimLock(info, func() error {
			var err error
			if samePath(f, path) {
				if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
					err = fmt.Errorf("release the controller claim: %w", rerr)
				}
			}
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("release the controller claim: %w", cerr)
			}
			return err
		}, lost), nil
	}
	return nil, fmt.Errorf("claim the state: %s keeps being replaced", path)
}

// Test hooks: testProbeHeld runs while CurrentClaim holds the claim's
// flock, testClaimBusy when Claim finds it taken.
var testProbeHeld, testClaimBusy func()

// CurrentClaim returns the local claim's holder, nil when nobody holds it.
func (m *Manager) CurrentClaim() (*LockInfo, error) {
	path := m.claimPath()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the controller claim: %w", err)
	}
	defer f.Close()
	err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		if testProbeHeld != nil {
			testProbeHeld()
		}
		return nil, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return nil, fmt.Errorf("read the controller claim: flock %s: %w", path, err)
	}
	info := readHolder(f)
	return &info, nil
}

// forceUnlockClaim removes the claim's file when its ID is id; ok is
// false when the claim is not id's.
func (m *Manager) forceUnlockClaim(id string) (ok bool, err error) {
	li, err := m.CurrentClaim()
	if err != nil || li == nil || li.ID != id {
		return false, err
	}
	if err := os.Remove(m.claimPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("force-unlock: %w", err)
	}
	return true, nil
}
