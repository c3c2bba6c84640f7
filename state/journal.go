package state

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"

	"github.com/trialform/trialform/internal/fsread"
	"github.com/trialform/trialform/internal/fsx"
	"golang.org/x/sys/unix"
)

// The journal (state.journal beside state.json) makes a Save cost what
// changed rather than the whole state: Save appends one record holding
// the experiments and trials that differ from what was last written, and
// fsyncs the journal only. When the journal grows past the size of
// state.json (and at least journalMin), Save compacts: it writes the
// whole state to state.json atomically (keeping the backup) and empties
// the journal.
//
// A record is one line: the CRC-32C of the JSON payload as 8 hex digits,
// a space, the payload (JSON has no raw newlines) and "\n". Each record
// carries the state's lineage and the serial it brings the state to, so a
// reader applies exactly the records that follow state.json's serial: a
// compaction that crashed after writing state.json but before emptying
// the journal leaves records that state.json already holds, and they are
// skipped.
//
// Reading: a last record without its newline is one whose write was
// interrupted (it was never acknowledged): it is dropped with a warning
// and the next Save cuts it off. Any other record that does not check out
// is an error naming the record and its offset; nothing is written over
// it (state.json and state.json.backup are kept as they are).

// JournalName is the journal's file name in the state directory.
const JournalName = "state.journal"

// journalMin is the journal size below which Save never compacts.
const journalMin = 1 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journalRecord is one record's payload.
type journalRecord struct {
	Lineage string `json:"lineage"`
	Serial  uint64 `json:"serial"`
	// Experiments whose own fields changed (or that are new): the
	// experiment without its trials; null for a removed experiment.
	Experiments map[string]*Experiment `json:"experiments,omitempty"`
	// Trials that changed or are new, by experiment then id; null for a
	// removed trial.
	Trials map[string]map[string]*Trial `json:"trials,omitempty"`
}

func (m *Manager) journalPath() string { return filepath.Join(m.dir, JournalName) }

// journalState is what the Manager read of the journal.
type journalState struct {
	id       fileID // zero when there is none
	size     int64  // the file's size when read
	valid    int64  // the length of its complete records
	records  int    // complete records
	applied  int    // records applied on top of state.json
	foreign  string // the lineage of a journal of another lineage ("" if none)
	warnings []string
	torn     int // the index in warnings of an incomplete last record's; -1 (or 0 with no warnings) when none
}

// JournalError is a journal record that does not check out and is not the
// last one.
type JournalError struct {
	Path    string
	Record  int   // 1-based
	Offset  int64 // of the record's first byte
	Problem string
	// Copy names the good copy the advice pushes ("FILE" when empty).
	Copy string
}

func (e *JournalError) Error() string {
	return e.message("or replace the state with a good copy")
}

// message is the error's text, its last advice introduced by replace.
func (e *JournalError) message(replace string) string {
	cp := e.Copy
	if cp == "" {
		cp = "FILE"
	}
	without := fmt.Sprintf("state.json plus records 1-%d", e.Record-1)
	switch e.Record {
	case 1:
		without = "state.json alone"
	case 2:
		without = "state.json plus record 1"
	}
	return fmt.Sprintf("state journal %s: record %d (byte offset %d) %s; nothing was written over it. "+
		"The state without this record and those after it is %s; "+
		"state.json and state.json.backup are kept. To go on from state.json alone, move the journal aside; "+
		"%s: trialform state push -force %s (the damaged journal is kept beside it, as %s.corrupt)",
		e.Path, e.Record, e.Offset, e.Problem, without, replace, cp, e.Path)
}

// PushAdvice returns the error's text advising to push the copy name
// (state push names the file it was given).
func (e *JournalError) PushAdvice(name string) string {
	c := *e
	c.Copy = name
	return c.message("or replace the state with this copy")
}

// encodeRecord returns the journal line of rec.
func encodeRecord(rec *journalRecord) ([]byte, error) {
	payload, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(payload)+10)
	var sum [4]byte
	c := crc32.Checksum(payload, crcTable)
	sum[0], sum[1], sum[2], sum[3] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
	line = hex.AppendEncode(line, sum[:])
	line = append(line, ' ')
	line = append(line, payload...)
	return append(line, '\n'), nil
}

// replayJournal applies the journal data to s (read from state.json).
func replayJournal(path string, data []byte, s *State, js *journalState) error {
	off := 0
	n := 0
	for off < len(data) {
		n++
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			js.torn = len(js.warnings)
			js.warnings = append(js.warnings, fmt.Sprintf("state journal %s: the last record (%d, byte offset %d, %d bytes) is incomplete, its write was interrupted; it is dropped", path, n, off, len(data)-off))
			break
		}
		line := data[off : off+nl]
		bad := func(problem string) error {
			return &JournalError{Path: path, Record: n, Offset: int64(off), Problem: problem}
		}
		if len(line) < 10 || line[8] != ' ' {
			return bad("is not a journal record")
		}
		var sum [4]byte
		if _, err := hex.Decode(sum[:], line[:8]); err != nil {
			return bad("has no checksum")
		}
		payload := line[9:]
		want := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
		if crc32.Checksum(payload, crcTable) != want {
			return bad("is corrupt (checksum mismatch)")
		}
		var rec journalRecord
		if err := json.Unmarshal(payload, &rec); err != nil {
			return bad(fmt.Sprintf("cannot be decoded (%v)", err))
		}
		if rec.Lineage == "" {
			// Not one of another state's either: a journal whose first
			// record has no lineage would be kept as "foreign" with no
			// name, and the records appended after it lost (FuzzJournal,
			// seed no-lineage).
			return bad("has no lineage")
		}
		if p := recordProblem(&rec, s); p != "" && rec.Lineage == s.Lineage {
			return bad(p)
		}
		if rec.Lineage != s.Lineage {
			if n == 1 {
				// A journal left by a state of another lineage (the state
				// was lost or replaced): not this state's. It is kept
				// aside by the next Save.
				js.foreign = rec.Lineage
				js.warnings = append(js.warnings, fmt.Sprintf("state journal %s belongs to another state (lineage %s, state.json has %s); it is ignored and will be kept as %s.%s", path, rec.Lineage, s.Lineage, path, short(rec.Lineage)))
				js.valid, js.records = int64(len(data)), 0
				return nil
			}
			return bad(fmt.Sprintf("has lineage %s, the records before it %s", rec.Lineage, s.Lineage))
		}
		switch {
		case rec.Serial <= s.Serial:
			// Already in state.json (a compaction stopped before emptying
			// the journal).
		case rec.Serial == s.Serial+1:
			apply(s, &rec, nil)
			s.Serial = rec.Serial
			js.applied++
		default:
			return bad(fmt.Sprintf("brings the state to serial %d but the state is at serial %d: the journal does not continue state.json (was state.json replaced by an older copy?)", rec.Serial, s.Serial))
		}
		off += nl + 1
		js.valid = int64(off)
		js.records = n
	}
	return nil
}

// recordProblem says why rec is not a change state.json could hold (the
// checks decode makes of state.json: experiment names and trial ids that
// can name directories, matching the names inside, trials of an
// experiment the state holds), or "" (FuzzJournal).
func recordProblem(rec *journalRecord, s *State) string {
	for _, name := range sortedKeys(rec.Experiments) {
		if p := NameProblem(name); p != "" {
			return fmt.Sprintf("has an experiment named %q, which %s", name, p)
		}
		if e := rec.Experiments[name]; e != nil && e.Name != "" && e.Name != name {
			return fmt.Sprintf("has experiment %q whose name is %q", name, e.Name)
		}
	}
	for _, name := range sortedKeys(rec.Trials) {
		if e, ok := rec.Experiments[name]; (ok && e == nil) || (!ok && s.Experiments[name] == nil) {
			return fmt.Sprintf("changes trials of experiment %q, which the state does not hold", name)
		}
		for _, id := range sortedKeys(rec.Trials[name]) {
			if p := NameProblem(id); p != "" {
				return fmt.Sprintf("has a trial %q of experiment %q, an id which %s", id, name, p)
			}
			if t := rec.Trials[name][id]; t != nil && t.ID != "" && t.ID != id {
				return fmt.Sprintf("has trial %q of experiment %q whose id is %q", id, name, t.ID)
			}
		}
	}
	return ""
}

func short(lineage string) string {
	if len(lineage) > 8 {
		return lineage[:8]
	}
	return lineage
}

// apply applies a record's changes to s. With own nil it changes s's
// experiments in place (a replay). Otherwise s shares its experiments with
// another state (Follow's copy-on-write): an experiment's trials map is
// copied before its first change, and own records the experiments whose
// trials map is s's own.
func apply(s *State, rec *journalRecord, own map[string]bool) {
	for _, name := range sortedKeys(rec.Experiments) {
		e := rec.Experiments[name]
		if e == nil {
			delete(s.Experiments, name)
			delete(own, name)
			continue
		}
		head := *e
		if old := s.Experiments[name]; old != nil {
			head.Trials = old.Trials
		} else {
			head.Trials = map[string]*Trial{}
			if own != nil {
				own[name] = true
			}
		}
		s.Experiments[name] = &head
	}
	for name, ts := range rec.Trials {
		e := s.Experiments[name]
		if e == nil {
			continue // cannot happen: diff lists a new experiment's head, replay and Follow check it (recordProblem)
		}
		if own != nil && !own[name] {
			cp := *e
			cp.Trials = maps.Clone(e.Trials)
			if cp.Trials == nil {
				cp.Trials = map[string]*Trial{}
			}
			s.Experiments[name] = &cp
			e = &cp
			own[name] = true
		}
		for id, t := range ts {
			if t == nil {
				delete(e.Trials, id)
			} else {
				e.Trials[id] = t
			}
		}
	}
}

// diff returns the record that brings old (owned by the Manager) to s, or
// nil when they are equal, and updates old to match s (with copies).
func diff(old, s *State) (*journalRecord, error) {
	rec := &journalRecord{Lineage: s.Lineage}
	for name := range old.Experiments {
		if _, ok := s.Experiments[name]; !ok {
			if rec.Experiments == nil {
				rec.Experiments = map[string]*Experiment{}
			}
			rec.Experiments[name] = nil
		}
	}
	for name, e := range s.Experiments {
		if e == nil {
			return nil, fmt.Errorf("experiment %q is nil", name)
		}
		o := old.Experiments[name]
		same, err := headEqual(o, e)
		if err != nil {
			return nil, err
		}
		if !same {
			if rec.Experiments == nil {
				rec.Experiments = map[string]*Experiment{}
			}
			h := *e
			h.Trials = nil
			rec.Experiments[name] = &h
		}
		var oldTrials map[string]*Trial
		if o != nil {
			oldTrials = o.Trials
		}
		add := func(id string, t *Trial) {
			if rec.Trials == nil {
				rec.Trials = map[string]map[string]*Trial{}
			}
			if rec.Trials[name] == nil {
				rec.Trials[name] = map[string]*Trial{}
			}
			rec.Trials[name][id] = t
		}
		for id := range oldTrials {
			if _, ok := e.Trials[id]; !ok {
				add(id, nil)
			}
		}
		for id, t := range e.Trials {
			if t == nil {
				return nil, fmt.Errorf("trial %s of experiment %q is nil", id, name)
			}
			if ot := oldTrials[id]; ot == nil || !trialEqual(ot, t) {
				add(id, t)
			}
		}
	}
	if rec.Experiments == nil && rec.Trials == nil {
		return nil, nil
	}
	return rec, nil
}

// TrialRef names one trial: what a caller that knows which trials it
// changed passes to PrepareTrials.
type TrialRef struct{ Experiment, ID string }

// diffTrials is diff for a caller that names the trials it changed (added,
// modified or removed) since old was last brought up to date: it compares
// only those and the experiments' own fields, so a Save costs what changed,
// not the state's size. ok is false when the names cannot account for the
// change (an experiment added or removed, or a trial count that the named
// trials do not explain): the caller then diffs everything.
func diffTrials(old, s *State, refs []TrialRef) (rec *journalRecord, ok bool, err error) {
	if len(old.Experiments) != len(s.Experiments) {
		return nil, false, nil
	}
	rec = &journalRecord{Lineage: s.Lineage}
	delta := map[string]int{}
	seen := make(map[TrialRef]bool, len(refs))
	for _, r := range refs {
		if seen[r] {
			continue
		}
		seen[r] = true
		e, o := s.Experiments[r.Experiment], old.Experiments[r.Experiment]
		if e == nil || o == nil {
			return nil, false, nil
		}
		t, ot := e.Trials[r.ID], o.Trials[r.ID]
		switch {
		case t == nil && ot == nil:
			if _, present := e.Trials[r.ID]; present {
				return nil, false, fmt.Errorf("trial %s of experiment %q is nil", r.ID, r.Experiment)
			}
			continue
		case t == nil:
			delta[r.Experiment]--
		case ot == nil:
			delta[r.Experiment]++
		case trialEqual(ot, t):
			continue
		}
		if rec.Trials == nil {
			rec.Trials = map[string]map[string]*Trial{}
		}
		if rec.Trials[r.Experiment] == nil {
			rec.Trials[r.Experiment] = map[string]*Trial{}
		}
		rec.Trials[r.Experiment][r.ID] = t
	}
	for name, e := range s.Experiments {
		if e == nil {
			return nil, false, fmt.Errorf("experiment %q is nil", name)
		}
		o := old.Experiments[name]
		if o == nil || len(o.Trials)+delta[name] != len(e.Trials) {
			return nil, false, nil
		}
		same, err := headEqual(o, e)
		if err != nil {
			return nil, false, err
		}
		if !same {
			if rec.Experiments == nil {
				rec.Experiments = map[string]*Experiment{}
			}
			h := *e
			h.Trials = nil
			rec.Experiments[name] = &h
		}
	}
	if rec.Experiments == nil && rec.Trials == nil {
		return nil, true, nil
	}
	return rec, true, nil
}

// headEqual reports whether two experiments' own fields (not their
// trials) encode the same.
func headEqual(a, b *Experiment) (bool, error) {
	if a == nil || b == nil {
		return a == b, nil
	}
	ja, err := headJSON(a)
	if err != nil {
		return false, err
	}
	jb, err := headJSON(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ja, jb), nil
}

func headJSON(e *Experiment) ([]byte, error) {
	h := *e
	h.Trials = nil
	return json.Marshal((*experimentJSON)(&h))
}

// commit makes the Manager's own copy old equal s after rec was written:
// copies of what changed, so later changes to s are seen by the next diff.
func commit(old *State, rec *journalRecord, s *State) {
	cp := &journalRecord{Experiments: map[string]*Experiment{}, Trials: map[string]map[string]*Trial{}}
	for name, e := range rec.Experiments {
		if e == nil {
			cp.Experiments[name] = nil
			continue
		}
		h := *s.Experiments[name] // the head only: cloning every trial made each commit O(history)
		h.Trials = nil
		c := h.Clone()
		c.Trials = nil
		cp.Experiments[name] = c
	}
	for name, ts := range rec.Trials {
		m := make(map[string]*Trial, len(ts))
		for id, t := range ts {
			if t != nil {
				t = t.Clone()
			}
			m[id] = t
		}
		cp.Trials[name] = m
	}
	apply(old, cp, nil)
	old.Serial = s.Serial
}

// readJournal reads the journal; nil data when there is none.
func (m *Manager) readJournal() ([]byte, fileID, error) {
	f, err := fsread.Open(m.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fileID{}, nil
	}
	if err != nil {
		return nil, fileID{}, fmt.Errorf("read state journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileID{}, fmt.Errorf("read state journal: %w", err)
	}
	if fi.Size() > fsread.MaxState {
		return nil, fileID{}, fmt.Errorf("read state journal: %w", &fsread.TooLargeError{Path: m.journalPath(), Limit: fsread.MaxState})
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + 512)
	if _, err := buf.ReadFrom(io.LimitReader(f, fsread.MaxState)); err != nil {
		return nil, fileID{}, fmt.Errorf("read state journal: %w", err)
	}
	fi2, err := f.Stat()
	if err != nil {
		return nil, fileID{}, fmt.Errorf("read state journal: %w", err)
	}
	id := idOf(fi2)
	// What was read may be shorter than the file is now (a writer
	// appended meanwhile): the identity says what was read.
	id.size = int64(buf.Len())
	return buf.Bytes(), id, nil
}

// appendJournal appends line to the journal, first cutting off an
// incomplete record a crashed write left at valid, and makes it durable.
func (m *Manager) appendJournal(line []byte, js *journalState) error {
	path := m.journalPath()
	f, err := openJournal(path, os.O_WRONLY|os.O_CREATE)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	created := js.id == (fileID{}) || fi.Size() == 0
	if fi.Size() != js.valid {
		if err := f.Truncate(js.valid); err != nil {
			return err
		}
	}
	if _, err := f.WriteAt(line, js.valid); err != nil {
		return err
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return err
	}
	if created {
		if err := fsx.SyncDir(m.dir); err != nil {
			return err
		}
	}
	fi, err = f.Stat()
	if err != nil {
		return err
	}
	js.id = idOf(fi)
	js.size = fi.Size()
	js.valid += int64(len(line))
	js.size = js.valid
	js.records++
	js.applied++
	return nil
}

// resetJournal empties the journal after a compaction wrote everything it
// held to state.json; a journal of another lineage is kept aside instead.
func (m *Manager) resetJournal(js *journalState) error {
	path := m.journalPath()
	if js != nil && js.foreign != "" {
		aside := path + "." + short(js.foreign)
		for i := 1; ; i++ {
			if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
				break
			}
			aside = fmt.Sprintf("%s.%s-%d", path, short(js.foreign), i)
		}
		if err := os.Rename(path, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("keep the journal of lineage %s: %w", js.foreign, err)
		}
		return fsx.SyncDir(m.dir)
	}
	f, err := openJournal(path, os.O_WRONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
		return nil
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	return unix.Fdatasync(int(f.Fd()))
}

// Warnings returns what the last Load or Save noticed and worked around
// (an interrupted journal record dropped, a journal of another state
// ignored), for the caller to show.
func (m *Manager) Warnings() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.disk == nil {
		return nil
	}
	w := append([]string(nil), m.disk.journal.warnings...)
	sort.Strings(w)
	return w
}

// journalOf returns what is known of the journal a whole-file Save is
// about to empty. Without a state file (disk nil) a journal is what is
// left of a lost state: its lineage is read so it is kept aside, never
// emptied.
func (m *Manager) journalOf(disk *diskState) *journalState {
	if disk != nil {
		return &disk.journal
	}
	f, err := fsread.Open(m.journalPath())
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := f.Read(head)
	if n == 0 {
		return nil
	}
	js := &journalState{foreign: "unknown"}
	if nl := bytes.IndexByte(head[:n], '\n'); nl > 9 {
		var rec struct {
			Lineage string `json:"lineage"`
		}
		if json.Unmarshal(head[9:nl], &rec) == nil && rec.Lineage != "" {
			js.foreign = rec.Lineage
		}
	}
	return js
}

// openJournal opens the journal for writing, refusing (without blocking)
// anything but a regular file.
func openJournal(path string, flag int) (*os.File, error) {
	f, err := fsx.OpenFile(path, flag|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fsread.NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, nil
}
