package ui

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/trialform/trialform/state"
)

// changeLog keeps what changed between the last versions this server
// read (snapshot.ver), so that an event stream tells a page which trials
// to patch since the version it shows instead of making it fetch every
// trial again.
type changeLog struct {
	entries []logEntry // oldest first, each from the previous one's to
}

// logEntry is what changed from version from to version to.
type logEntry struct {
	from, to uint64
	// exps: experiments whose own fields changed, added or removed.
	exps []string
	// trials: trials added, changed or removed, and those whose best
	// mark moved.
	trials []state.TrialRef
	// reload: experiments whose rows a page fetches again (several
	// objectives: a trial's Pareto rank may move with any other's).
	reload []string
	// full: what changed is unknown or too much: pages fetch everything.
	full bool
}

const (
	// maxLogEntries bounds the change log; a page further behind
	// fetches everything.
	maxLogEntries = 256
	// maxEventRows bounds the rows one event carries; beyond it the
	// event says "full".
	maxEventRows = 2000
)

func (l *changeLog) reset() { l.entries = nil }

// add records what changed from old to sn (ch nil: unknown).
func (l *changeLog) add(old, sn *snapshot, ch *state.Changes) {
	e := logEntry{from: old.ver, to: sn.ver}
	if ch == nil || len(ch.Trials) > maxEventRows {
		e.full = true
	} else {
		e.exps = ch.Experiments
		e.trials = append([]state.TrialRef(nil), ch.Trials...)
		touched := map[string]bool{}
		for _, n := range ch.Experiments {
			touched[n] = true
		}
		for _, r := range ch.Trials {
			touched[r.Experiment] = true
		}
		for _, name := range sortedNames(touched) {
			oe, ne := old.st.Experiments[name], sn.st.Experiments[name]
			if (oe != nil && oe.MultiObjective()) || (ne != nil && ne.MultiObjective()) {
				e.reload = append(e.reload, name)
				continue
			}
			ob, nb := bestID(oe), bestID(ne)
			if ob != nb {
				for _, id := range []string{ob, nb} {
					if id != "" {
						e.trials = append(e.trials, state.TrialRef{Experiment: name, ID: id})
					}
				}
			}
		}
	}
	if n := len(l.entries); n > 0 && l.entries[n-1].to != e.from {
		l.entries = nil
	}
	l.entries = append(l.entries, e)
	if len(l.entries) > maxLogEntries {
		l.entries = append([]logEntry(nil), l.entries[len(l.entries)-maxLogEntries:]...)
	}
}

func bestID(e *state.Experiment) string {
	if e == nil {
		return ""
	}
	if b := bestOf(e); b != nil {
		return b.ID
	}
	return ""
}

// since merges what changed from version from to version to; ok is false
// when the log does not reach back to from.
func (l *changeLog) since(from, to uint64) (m logEntry, ok bool) {
	m = logEntry{from: from, to: to}
	if from == to {
		return m, true
	}
	i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].from >= from })
	if i == len(l.entries) || l.entries[i].from != from {
		return m, false
	}
	exps, reload := map[string]bool{}, map[string]bool{}
	trials := map[state.TrialRef]bool{}
	for ; i < len(l.entries); i++ {
		e := l.entries[i]
		if e.to > to {
			break
		}
		m.full = m.full || e.full
		for _, n := range e.exps {
			exps[n] = true
		}
		for _, n := range e.reload {
			reload[n] = true
		}
		for _, r := range e.trials {
			trials[r] = true
		}
		if e.to == to {
			if len(trials) > maxEventRows {
				m.full = true
			}
			m.exps, m.reload = sortedNames(exps), sortedNames(reload)
			for r := range trials {
				m.trials = append(m.trials, r)
			}
			return m, true
		}
	}
	return m, false
}

// changesSince is the log's since under the store's lock.
func (d *store) changesSince(from, to uint64) (logEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.since(from, to)
}

// EventJSON is a "state" event: what changed from the version From a
// page shows to Version. Rows are the trials table's rows of the trials
// that changed or were added, as they are now; a page patches its table
// with them. Full says the page must fetch everything again (what
// changed is unknown: the page is too far behind, or too much changed).
type EventJSON struct {
	Version     uint64                    `json:"version"`
	From        uint64                    `json:"from"`
	Serial      uint64                    `json:"serial"`
	Full        bool                      `json:"full,omitempty"`
	Experiments map[string]*ExpChangeJSON `json:"experiments"`
}

// ExpChangeJSON is what changed in one experiment.
type ExpChangeJSON struct {
	Total   int       `json:"total"` // its trials now
	Rows    []RowJSON `json:"rows"`
	Removed []string  `json:"removed"`
	// Reload: fetch its rows again (several objectives); Gone: it was
	// removed from the state.
	Reload bool `json:"reload,omitempty"`
	Gone   bool `json:"gone,omitempty"`
}

// event returns the encoded "state" event that brings a page from
// version from to sn's version (kept per snapshot: every page at the
// same version gets the same bytes).
func (s *Server) event(sn *snapshot, from uint64) []byte {
	return sn.get("event\x00"+strconv.FormatUint(from, 10), func() any {
		ev := EventJSON{Version: sn.ver, From: from, Serial: sn.st.Serial, Experiments: map[string]*ExpChangeJSON{}}
		m, ok := s.data.changesSince(from, sn.ver)
		if !ok || m.full {
			ev.Full = true
		} else {
			get := func(name string) *ExpChangeJSON {
				x := ev.Experiments[name]
				if x == nil {
					x = &ExpChangeJSON{Rows: []RowJSON{}, Removed: []string{}}
					if e := sn.st.Experiments[name]; e != nil {
						x.Total = len(e.Trials)
					} else {
						x.Gone = true
					}
					ev.Experiments[name] = x
				}
				return x
			}
			for _, n := range m.exps {
				get(n)
			}
			for _, n := range m.reload {
				get(n).Reload = true
			}
			best := map[string]string{}
			for _, r := range m.trials {
				x := get(r.Experiment)
				e := sn.st.Experiments[r.Experiment]
				if x.Reload || x.Gone || e == nil {
					continue
				}
				t := e.Trials[r.ID]
				if t == nil {
					x.Removed = append(x.Removed, r.ID)
					continue
				}
				b, ok := best[e.Name]
				if !ok {
					b = bestID(e)
					best[e.Name] = b
				}
				x.Rows = append(x.Rows, rowOf(e, t, b, nil))
			}
			for _, x := range ev.Experiments {
				sort.Slice(x.Rows, func(i, j int) bool { return x.Rows[i].Seq < x.Rows[j].Seq })
				sort.Strings(x.Removed)
			}
		}
		b, err := json.Marshal(ev)
		if err != nil {
			b, _ = json.Marshal(EventJSON{Version: sn.ver, From: from, Serial: sn.st.Serial, Full: true, Experiments: map[string]*ExpChangeJSON{}})
		}
		return b
	}).([]byte)
}
