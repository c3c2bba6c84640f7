package local

import (
	"sync"

	"golang.org/x/sys/unix"
)

// fileVersion identifies one version of a file that is only ever replaced
// by a rename (spec.json: a replacement is a new inode, with a new change
// time) or appended to (status.log: an append changes its size).
type fileVersion struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

// statVersion returns the version of path; ok is false when it cannot be
// stat'ed.
func statVersion(path string) (v fileVersion, ok bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return v, false
	}
	return fileVersion{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, true
}

// statusVersion is the version of dir's status log, or of the status.json
// of a trial dir written before status.log existed. An empty log is no
// version: the status may be the legacy file's, read each time.
func statusVersion(dir string) (fileVersion, bool) {
	v, ok := statVersion(dir + "/" + statusLog)
	if ok && v.size > 0 {
		return v, true
	}
	return statVersion(dir + "/" + statusFile)
}

// listCache keeps, per experiment and trial, the parts of spec.json and
// status.log that List decoded last, so a List pass costs a stat per
// unchanged file instead of a read and a decode. Entries are dropped when
// their trial is no longer listed.
type listCache struct {
	mu   sync.Mutex
	exps map[string]map[string]*listEntry
}

type listEntry struct {
	specV, statusV fileVersion
	sp             *spec   // only the fields observe uses
	st             *status // nil: none (yet)
	hasStatus      bool
}

// lookup returns the cached spec and status of a trial dir, reading and
// decoding only the files that changed. sp is nil when there is no
// readable spec; st is nil when there is no readable status.
func (c *listCache) lookup(seen map[string]*listEntry, exp, trial, dir string) (*spec, *status) {
	c.mu.Lock()
	old := c.exps[exp][trial]
	c.mu.Unlock()
	e := &listEntry{}
	sv, ok := statVersion(dir + "/" + specFile)
	if !ok {
		return nil, nil
	}
	if old != nil && old.sp != nil && old.specV == sv {
		e.specV, e.sp = sv, old.sp
	} else {
		sp, err := readSpec(dir)
		if err != nil || sp == nil {
			return nil, nil
		}
		// The spec may have been replaced between the stat and the read:
		// keep it only if the version did not change.
		if v, ok := statVersion(dir + "/" + specFile); ok && v == sv {
			e.specV = sv
		}
		e.sp = &spec{TrialID: sp.TrialID, Experiment: sp.Experiment, Lineage: sp.Lineage, Attempt: sp.Attempt,
			ExperimentID: sp.ExperimentID, Generation: sp.Generation, Params: sp.Params}
	}
	stv, ok := statusVersion(dir)
	switch {
	case !ok:
		// No status: read below (it may appear meanwhile), never cached.
		st, _ := readStatus(dir)
		e.st = st
	case old != nil && old.hasStatus && old.statusV == stv:
		e.statusV, e.st, e.hasStatus = stv, old.st, true
	default:
		st, err := readStatus(dir)
		e.st = st
		if err == nil && st != nil {
			if v, ok := statusVersion(dir); ok && v == stv {
				e.statusV, e.hasStatus = stv, true
			}
		}
	}
	if e.specV != (fileVersion{}) {
		seen[trial] = e
	}
	return e.sp, copyStatus(e.st)
}

// store replaces the experiment's entries with those seen by one List.
func (c *listCache) store(exp string, seen map[string]*listEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exps == nil {
		c.exps = map[string]map[string]*listEntry{}
	}
	c.exps[exp] = seen
}

// copyStatus returns a deep copy, so callers never share the cached one.
func copyStatus(st *status) *status {
	if st == nil {
		return nil
	}
	c := *st
	c.GPUs = append([]int(nil), st.GPUs...)
	if st.StartedAt != nil {
		t := *st.StartedAt
		c.StartedAt = &t
	}
	if st.EndedAt != nil {
		t := *st.EndedAt
		c.EndedAt = &t
	}
	if st.ExitCode != nil {
		x := *st.ExitCode
		c.ExitCode = &x
	}
	return &c
}
