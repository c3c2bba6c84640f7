package remote

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/fsx"
)

// unreadInfo is a trial whose reads have not got what they need since
// Since (its machine unreachable, or a file of its own that hangs): its
// outage, which only a read of that trial getting all it needs ends. The
// machine's own record (downInfo) ends when any read, listing or other
// call answers there, so a trial whose status file hangs while the other
// trials of its machine read fine was never unreadable for lost_grace,
// and never LOST, by the machine's alone. Nor does the machine answering
// end the outage of a trial whose reads only met the machine down (one
// refused at once by the re-dial gate, or backed off): it was not read
// since, and a hang of its own later is the same outage.
type unreadInfo struct {
	Since time.Time `json:"since"`
	// What a read of its own found hung ("": its reads only found its
	// machine down), for the words of the error and of LOST.
	Err string `json:"error,omitempty"`
}

func unreadKey(m *machine, exp, id string) string { return m.key + " " + exp + "/" + id }

// unreadable records that a read of trial exp/id on m did not get what it
// needs (hung: it hung on m itself, err saying what; else m was known
// unreachable): the trial's outage starts now, or when m went down if
// that was earlier. It returns the trial's record.
func (r *Remote) unreadable(m *machine, exp, id string, hung bool, err error) unreadInfo {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	k := unreadKey(m, exp, id)
	u, ok := r.unread[k]
	if !ok {
		u.Since = time.Now().UTC()
		if d, down := r.down[m.key]; down && d.Since.Before(u.Since) {
			u.Since = d.Since
		}
	}
	first := u.Err == ""
	if hung {
		u.Err = strings.TrimPrefix(err.Error(), "machine "+m.key+": ")
	}
	r.unread[k] = u
	if !ok {
		r.unreadDirty, r.unreadNew = true, true
	} else if first && u.Err != "" {
		r.unreadDirty = true
	}
	return u
}

// readable records that a read of trial exp/id on m got all it needs:
// its outage, if any, ended. Without one it costs a map look-up.
func (r *Remote) readable(m *machine, exp, id string) {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	k := unreadKey(m, exp, id)
	if _, ok := r.unread[k]; ok {
		delete(r.unread, k)
		r.unreadDirty = true
	}
}

// forgetExperiment drops the outages of experiment's trials (purged).
func (r *Remote) forgetExperiment(exp string) {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	save := false
	for k := range r.unread {
		if _, t, _ := strings.Cut(k, " "); strings.HasPrefix(t, exp+"/") {
			delete(r.unread, k)
			save = true
		}
	}
	if save {
		r.unreadDirty = true
		r.flushUnread()
	}
}

// hungOn says whether an operation on m hung within ctx's upScope.
func hungOn(ctx context.Context, m *machine) bool {
	sc, ok := ctx.Value(upScopeKey{}).(*upScope)
	if !ok {
		return false
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.hung[m]
}

// The trials' outages are remembered across CLI runs, as the machines'
// are (unreachable.json), in unreadable.json.
func (r *Remote) unreadFile() string {
	if r.cfg.StateDir == "" {
		return ""
	}
	return filepath.Join(r.cfg.StateDir, "unreadable.json")
}

func (r *Remote) loadUnread() {
	f := r.unreadFile()
	if f == "" {
		return
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return
	}
	var m map[string]unreadInfo
	if json.Unmarshal(b, &m) == nil {
		for k, v := range m {
			if mk, _, ok := strings.Cut(k, " "); ok && r.machineByKey(mk) != nil {
				r.unread[k] = v
			}
		}
	}
}

// flushUnread saves the trials' outages if they changed since they were
// last saved (caller holds downMu). It runs once a pass (Warnings, at the
// end of a refresh), at Close, at a purge, and before a machine's record
// goes (markUp), not at each outage's start or end: a machine whose
// every read hangs, with N trials, wrote the file N times as their
// outages began and N times as they ended, in one refresh each. What a
// crash can lose meanwhile: the outages that began in the pass, all
// while their machine was down, and its record (unreachable.json,
// written at once) holds their start; the ends in the pass, each one a
// trial read fine that its next read (fine, as a rule) ends again.
func (r *Remote) flushUnread() {
	if !r.unreadDirty {
		return
	}
	r.saveUnread()
	r.unreadDirty, r.unreadNew = false, false
}

// saveUnread writes the trials' outages (caller holds downMu).
func (r *Remote) saveUnread() {
	f := r.unreadFile()
	if f == "" {
		return
	}
	r.unreadWrites++
	if len(r.unread) == 0 {
		_ = os.Remove(f)
		return
	}
	b, _ := json.Marshal(r.unread)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err == nil {
		_ = fsx.WriteFileAtomic(f, b, 0o644)
	}
}
