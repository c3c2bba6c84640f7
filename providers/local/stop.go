package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/trialform/trialform/providers"
)

// Stop asks the supervisor to stop the trial (SIGTERM to the trial's
// process group, SIGKILL after the grace period) and waits up to Grace+2s
// for it to record the end. If the supervisor is gone, Stop signals the
// process group itself and records the end. A gone or ended trial is not an
// error. With Purge the trial directory is removed afterwards.
func (l *Local) Stop(ctx context.Context, req providers.StopRequest) error {
	dir, err := l.trialDir(req.Experiment, req.TrialID)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	grace := req.Grace
	if grace <= 0 {
		grace = l.cfg.StopGrace
	}
	reason := req.Reason
	if reason == "" {
		reason = "stopped by trialform"
	}
	if err := l.stop(ctx, dir, grace, reason); err != nil {
		return err
	}
	// What the trial started in another session, left behind when its
	// supervisor was gone (a live supervisor kills it itself).
	killStragglers(dir)
	if req.Purge {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("purge trial %s: %w", req.TrialID, err)
		}
		// Drop the experiment dir once its last trial is gone.
		_ = os.Remove(filepath.Dir(dir))
		if err := l.removeTensorBoard(req.Experiment, req.TrialID); err != nil {
			return err
		}
	}
	return nil
}

func (l *Local) stop(ctx context.Context, dir string, grace time.Duration, reason string) error {
	st, err := readStatus(dir)
	if err != nil {
		return err
	}
	if sp, _ := readSpec(dir); sp != nil && (st == nil || st.Attempt != sp.Attempt) {
		// An attempt being launched (Start handed it over and returned):
		// wait for its supervisor's first record, so the stop reaches it
		// instead of finding nothing to stop.
		if err := waitLaunch(ctx, dir); err != nil {
			return err
		}
		if st, err = readStatus(dir); err != nil {
			return err
		}
	}
	if st == nil || st.State == stateEnded {
		return nil
	}
	if alive(st.SupervisorPID, st.SupervisorStart) {
		if err := writeJSON(filepath.Join(dir, stopFile), stopRequest{Reason: reason, Grace: grace}); err != nil {
			return err
		}
		if err := syscall.Kill(st.SupervisorPID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal supervisor %d: %w", st.SupervisorPID, err)
		}
		ended, err := waitFor(ctx, grace+2*time.Second, func() bool {
			s, _ := readStatus(dir)
			return (s != nil && s.State == stateEnded) || !alive(st.SupervisorPID, st.SupervisorStart)
		})
		if err != nil {
			return err
		}
		if s, _ := readStatus(dir); ended && s != nil && s.State == stateEnded {
			return nil
		}
		// The supervisor did not record the end in time: take over.
		_ = syscall.Kill(st.SupervisorPID, syscall.SIGKILL)
		if st, err = readStatus(dir); err != nil || st == nil {
			return err
		}
		grace = 0
	}
	if st.PGID > 0 && groupAlive(st.PGID) {
		_ = syscall.Kill(-st.PGID, syscall.SIGTERM)
		gone, err := waitFor(ctx, grace, func() bool { return !groupAlive(st.PGID) })
		if err != nil {
			return err
		}
		if !gone {
			_ = syscall.Kill(-st.PGID, syscall.SIGKILL)
			if _, err := waitFor(ctx, 5*time.Second, func() bool { return !groupAlive(st.PGID) }); err != nil {
				return err
			}
		}
	}
	// Record the end the supervisor could not.
	unlock, err := lockDir(ctx, dir, syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := readStatus(dir)
	if err != nil || cur == nil || cur.State == stateEnded || cur.Attempt != st.Attempt {
		return err
	}
	now := time.Now().UTC()
	cur.State, cur.Outcome, cur.Reason, cur.EndedAt = stateEnded, outcomeStopped, reason, &now
	f, err := openStatusLog(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return appendStatus(f, cur, false) // not fsynced: see writeStatus
}

// waitFor polls cond until it holds (true) or d passed (false).
func waitFor(ctx context.Context, d time.Duration, cond func() bool) (bool, error) {
	deadline := time.Now().Add(d)
	wait := time.Millisecond
	for {
		if cond() {
			return true, nil
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(wait):
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}
