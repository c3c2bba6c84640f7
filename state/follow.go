package state

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"sort"

	"github.com/trialform/trialform/internal/fsread"
)

// Following the state: a reader that keeps a state in memory (the
// dashboard) brings it up to date by reading only what was written since
// it last read, and learns what changed without comparing every trial.

// Changes says what differs between two versions of the state: the
// experiments whose own fields changed (added and removed ones too) and
// the trials added, changed or removed, each sorted.
type Changes struct {
	Experiments []string
	Trials      []TrialRef
}

// Empty reports whether nothing changed.
func (c *Changes) Empty() bool { return len(c.Experiments) == 0 && len(c.Trials) == 0 }

// Follower is an optional capability: Follow returns the state as it is
// now. Given prev and the cursor Follow returned with it, it may read
// only what was written since and apply it to a copy of prev (prev is
// never modified; the copy shares every experiment and trial that did
// not change), and then says what changed. When it had to read the whole
// state (no cursor, or the backend cannot tell), changes is nil and the
// caller compares (Diff). The local backend (Manager) reads the journal's
// new records; a backend without the capability is read whole (Load).
type Follower interface {
	Follow(prev *State, c *Cursor) (s *State, next *Cursor, changes *Changes, err error)
}

var _ Follower = (*Manager)(nil)

// Cursor is where a Follow stopped reading: for the local backend, the
// version of state.json and how far into the journal. The zero value (or
// nil) means "read everything".
type Cursor struct {
	valid   bool
	state   fileID // state.json as read; zero when there was none
	jdev    uint64 // the journal's device and inode (0 when there was none)
	jino    uint64
	offset  int64 // the journal's bytes read (complete records)
	serial  uint64
	lineage string
}

// Follow implements Follower: with a cursor it reads the journal records
// appended since and applies them to a copy of prev; when state.json was
// replaced meanwhile (a compaction, another state), the journal was cut,
// or a record does not check out, it reads the whole state as Load does
// (and reports the errors Load would), with nil changes.
func (m *Manager) Follow(prev *State, c *Cursor) (*State, *Cursor, *Changes, error) {
	if prev != nil && c != nil && c.valid && prev.Serial == c.serial && prev.Lineage == c.lineage {
		if s, next, ch, ok := m.followJournal(prev, c); ok {
			return s, next, ch, nil
		}
	}
	m.mu.Lock()
	s, d, err := m.read()
	m.mu.Unlock()
	if err != nil {
		return nil, nil, nil, err
	}
	if s == nil {
		s = New()
		return s, &Cursor{valid: true, serial: s.Serial, lineage: s.Lineage}, nil, nil
	}
	next := &Cursor{valid: d.journal.foreign == "", state: d.id, offset: d.journal.valid, serial: s.Serial, lineage: s.Lineage}
	next.jdev, next.jino = d.journal.id.dev, d.journal.id.ino
	return s, next, nil, nil
}

// followJournal reads the journal from c's offset; ok is false when the
// whole state must be read instead.
func (m *Manager) followJournal(prev *State, c *Cursor) (s *State, next *Cursor, ch *Changes, ok bool) {
	path := m.statePath()
	sameState := func() bool {
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return c.state == fileID{}
		}
		return err == nil && idOf(fi) == c.state
	}
	if !sameState() {
		return nil, nil, nil, false
	}
	unchanged := func() (*State, *Cursor, *Changes, bool) { return prev, c, &Changes{}, true }
	f, err := fsread.Open(m.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		if c.offset == 0 {
			return unchanged()
		}
		return nil, nil, nil, false
	}
	if err != nil {
		return nil, nil, nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, nil, false
	}
	id := idOf(fi)
	if c.jino != 0 && (id.dev != c.jdev || id.ino != c.jino) {
		return nil, nil, nil, false
	}
	switch {
	case fi.Size() < c.offset:
		return nil, nil, nil, false // cut: a compaction emptied it
	case fi.Size() == c.offset:
		return unchanged()
	case fi.Size()-c.offset > fsread.MaxState:
		return nil, nil, nil, false
	}
	data := make([]byte, fi.Size()-c.offset)
	n, err := f.ReadAt(data, c.offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, nil, false
	}
	data = data[:n]
	s = &State{Version: prev.Version, Serial: prev.Serial, Lineage: prev.Lineage, Experiments: maps.Clone(prev.Experiments)}
	if s.Experiments == nil {
		s.Experiments = map[string]*Experiment{}
	}
	own := map[string]bool{} // experiments whose trials map is this copy's
	exps := map[string]bool{}
	trials := map[TrialRef]bool{}
	off := 0
	for off < len(data) {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			break // a record being written: read it next time
		}
		rec, good := parseRecord(data[off : off+nl])
		if !good || rec.Lineage != s.Lineage || recordProblem(rec, s) != "" {
			return nil, nil, nil, false
		}
		off += nl + 1
		switch {
		case rec.Serial <= s.Serial:
			continue
		case rec.Serial != s.Serial+1:
			return nil, nil, nil, false
		}
		apply(s, rec, own)
		for name := range rec.Experiments {
			exps[name] = true
		}
		for name, ts := range rec.Trials {
			for id := range ts {
				trials[TrialRef{Experiment: name, ID: id}] = true
			}
		}
		s.Serial = rec.Serial
	}
	// state.json replaced while the journal was read: what was read may
	// belong to the next journal.
	if !sameState() {
		return nil, nil, nil, false
	}
	next = &Cursor{valid: true, state: c.state, jdev: id.dev, jino: id.ino, offset: c.offset + int64(off), serial: s.Serial, lineage: s.Lineage}
	if off == 0 {
		return prev, next, &Changes{}, true
	}
	ch = &Changes{Experiments: sortedKeys(exps)}
	for r := range trials {
		ch.Trials = append(ch.Trials, r)
	}
	sortRefs(ch.Trials)
	return s, next, ch, true
}

// parseRecord checks and decodes one journal line (without its newline).
func parseRecord(line []byte) (*journalRecord, bool) {
	if len(line) < 10 || line[8] != ' ' {
		return nil, false
	}
	var sum [4]byte
	if _, err := hex.Decode(sum[:], line[:8]); err != nil {
		return nil, false
	}
	payload := line[9:]
	want := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
	if crc32.Checksum(payload, crcTable) != want {
		return nil, false
	}
	var rec journalRecord
	if err := json.Unmarshal(payload, &rec); err != nil || rec.Lineage == "" {
		return nil, false
	}
	return &rec, true
}

func sortRefs(rs []TrialRef) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Experiment != rs[j].Experiment {
			return rs[i].Experiment < rs[j].Experiment
		}
		return rs[i].ID < rs[j].ID
	})
}

// Diff says what differs between two versions of the state read whole
// (a backend that cannot Follow): it compares every trial, so it costs
// the state's size. A trial may be reported changed when it encodes the
// same (never the other way round).
func Diff(old, s *State) *Changes {
	ch := &Changes{}
	if old == nil {
		old = New()
	}
	for name := range old.Experiments {
		if s.Experiments[name] == nil {
			ch.Experiments = append(ch.Experiments, name)
			for id := range old.Experiments[name].Trials {
				ch.Trials = append(ch.Trials, TrialRef{Experiment: name, ID: id})
			}
		}
	}
	for name, e := range s.Experiments {
		o := old.Experiments[name]
		if same, err := headEqual(o, e); err != nil || !same {
			ch.Experiments = append(ch.Experiments, name)
		}
		var ots map[string]*Trial
		if o != nil {
			ots = o.Trials
		}
		for id := range ots {
			if e.Trials[id] == nil {
				ch.Trials = append(ch.Trials, TrialRef{Experiment: name, ID: id})
			}
		}
		for id, t := range e.Trials {
			if ot := ots[id]; ot == nil || t == nil || (ot != t && !trialEqual(ot, t)) {
				ch.Trials = append(ch.Trials, TrialRef{Experiment: name, ID: id})
			}
		}
	}
	sort.Strings(ch.Experiments)
	sortRefs(ch.Trials)
	return ch
}
