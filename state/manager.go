package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/trialform/trialform/internal/fsread"
	"github.com/trialform/trialform/internal/fsx"
)

// FileName is the name of the state file in the state directory. No
// package outside state uses it: they go through the backend contract
// (internal/layout's TestNoStateFileNamesOutsideState).
const FileName = "state.json"

// TensorBoardDir is the TensorBoard tree in the state directory:
// EXPERIMENT/TRIAL, where local trials log (TRIALFORM_TENSORBOARD_DIR) and
// `trialform tensorboard` copies remote trials' logs.
const TensorBoardDir = "tensorboard"

const (
	backupSuffix = ".backup"
	lockFile     = "state.lock"
	metricsDir   = "metrics"
	tempPrefix   = "." + FileName + ".tmp-"
)

// Manager is the local backend (Backend): the state of one working
// directory in the files of its ".trialform" directory, which holds:
//
//	state.json            the state (may be a symbolic link: saves write
//	                      through it, in the target's directory)
//	state.json.backup     the version before the last write
//	state.json.backup.L   the last backup of another lineage L (first 8
//	                      characters), kept when a lost state was started
//	                      again or replaced: a backup is never overwritten
//	                      by one of another lineage
//	state.lock            the lock (flock) and its holder's LockInfo
//	metrics/EXP/ID.jsonl  one metric series per trial
//	tensorboard/EXP/ID    the TensorBoard tree (TensorBoardDir): logs of
//	                      local trials, copies of remote ones'
//
// The directory is created on the first Save or Lock. A Manager is safe for
// concurrent use.
type Manager struct {
	dir string

	mu   sync.Mutex
	enc  encoder
	disk *diskState // what state.json held when last read or written; nil if unknown

	// noJournal makes every Save write state.json (tests of the whole-file
	// path); journalLimit, when set, replaces the compaction threshold.
	noJournal    bool
	journalLimit int64

	metricsMu sync.Mutex
	// metricsMarked: the metrics root was made and marked (guarded by
	// metricsMu).
	metricsMarked bool
	// backupLineage is the lineage state.json.backup is known to hold
	// ("" when unknown), so only the first backup of a process reads it.
	backupLineage string

	// marked is what this Manager last wrote to refreshed.json (the file
	// markedID), of the state with lineage markedLineage (MarkRefreshed).
	markMu        sync.Mutex
	marked        map[string]time.Time
	markedLineage string
	markedID      fileID

	// heldLock is the ID of the state lock this Manager holds ("" when
	// none), so that its own reads do not wait for a writer: while it
	// holds the lock, no other process appends to the journal.
	heldMu   sync.Mutex
	heldLock string
}

// diskState is what the Manager knows of state.json.
type diskState struct {
	id      fileID
	version int
	serial  uint64
	lineage string
	// The content: body as this build encodes it (serial 0) once known
	// (after a Save), else raw, the bytes as read. Encoding a state read
	// only to be looked at would be wasted: the first Save compares with
	// raw (so a hand-reformatted file counts as changed and is rewritten).
	body encoded
	raw  []byte

	// The journal as read or written, and the bytes to rebuild the
	// Manager's own copy of the state (snap, made on the first Save that
	// needs it) from: state.json's content and the journal's valid part.
	journal journalState
	src     []byte
	jdata   []byte
	snap    *State
}

// same reports whether the file holds b, ignoring the serial.
func (d *diskState) same(b encoded) bool {
	if d.body.body != nil {
		return bytes.Equal(b.body, d.body.body)
	}
	// raw written by this format's encoder differs from b only in the
	// serial's digits.
	if d.version != FormatVersion || len(d.raw) < b.serialAt || !bytes.Equal(d.raw[:b.serialAt], b.body[:b.serialAt]) {
		return false
	}
	rest := d.raw[b.serialAt:]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	return n > 0 && bytes.Equal(rest[n:], b.body[b.serialAt+1:])
}

// fileID identifies one version of a file: state.json is only ever
// replaced by rename, so a new inode means a new version; size and mtime
// catch in-place edits.
type fileID struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func idOf(fi fs.FileInfo) fileID {
	id := fileID{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return id
}

// NewManager returns the manager of the state kept in dir.
func NewManager(dir string) *Manager { return &Manager{dir: dir} }

// Dir returns the directory the manager keeps the state in.
func (m *Manager) Dir() string { return m.dir }

func (m *Manager) statePath() string { return filepath.Join(m.dir, FileName) }

// Path returns the path of the state file (which need not exist).
func (m *Manager) Path() string { return m.statePath() }

// Exists reports whether there is a state file (a symbolic link counts
// when its target exists).
func (m *Manager) Exists() (bool, error) {
	_, err := os.Stat(m.statePath())
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read state: %w", err)
	}
	return true, nil
}

// Load reads the state. Without a state file it returns New(), which is
// not written until saved. A file of an older format is upgraded in
// memory (and written in the current format by the next Save that changes
// something); a newer format gives *NewerFormatError, an unreadable file
// *CorruptError.
func (m *Manager) Load() (*State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, d, err := m.read()
	if err != nil {
		return nil, err
	}
	m.disk = d
	if s == nil {
		return New(), nil
	}
	return s, nil
}

// Peek reads the state as Load does, without making what it read the
// version the next Save or a prepared commit goes on from (state.Peeker):
// a reader beside this Manager's writer (the dashboard) cannot make that
// commit fail with "the state was read again between Prepare and its
// commit".
func (m *Manager) Peek() (*State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, _, err := m.read()
	if err != nil {
		return nil, err
	}
	if s == nil {
		return New(), nil
	}
	return s, nil
}

// read reads and decodes state.json and replays the journal; (nil, nil,
// nil) if there is no state file. It takes no lock: when a writer replaced
// state.json (a compaction) between reading it and the journal, or was
// appending the journal's last record, it reads again. A last record
// still incomplete after tornRetries reads (about 25 ms) is being written
// while the lock's holder still runs on this machine (a writer on a
// loaded machine can be preempted in the middle of its write): the reader
// waits for it up to tornRetriesLive reads (about 2 s), then reads the
// state without it, quietly. Otherwise it was cut short by a writer that
// died: it is dropped, with a warning.
func (m *Manager) read() (*State, *diskState, error) {
	for attempt := 0; ; attempt++ {
		retry := attempt < tornRetries || attempt < tornRetriesLive && m.writerRuns()
		s, d, again, err := m.readOnce(retry)
		if !again {
			if d != nil && d.journal.valid < d.journal.size && len(d.journal.warnings) > 0 && m.writerRuns() {
				w := d.journal.warnings
				if i := d.journal.torn; i >= 0 && i < len(w) && strings.Contains(w[i], "is incomplete") {
					d.journal.warnings = append(w[:i:i], w[i+1:]...)
				}
			}
			return s, d, err
		}
		if attempt >= 100 && !retry || attempt >= tornRetriesLive+100 {
			return nil, nil, fmt.Errorf("read state: %s keeps being replaced while it is read; try again", m.statePath())
		}
		if attempt >= 3 {
			time.Sleep(time.Millisecond)
		}
	}
}

const (
	tornRetries     = 28
	tornRetriesLive = 2000
)

// writerRuns reports whether the state lock is held by a process of this
// machine that still runs, from the lock file's holder information (read
// without taking the lock: a probe would make a writer's Lock fail), and
// not by this Manager: its own appends are done by the time it reads (both
// hold mu), so a torn last record it reads was left by a writer that died
// (or by its own append that failed: a full disk).
func (m *Manager) writerRuns() bool {
	b, err := os.ReadFile(m.lockPath())
	if err != nil || len(b) == 0 {
		return false
	}
	var info LockInfo
	if json.Unmarshal(b, &info) != nil || !info.RunsHere() {
		return false
	}
	m.heldMu.Lock()
	defer m.heldMu.Unlock()
	return m.heldLock == "" || info.ID != m.heldLock
}

// holding records the ID of the state lock this Manager took ("": it
// released it).
func (m *Manager) holding(id string) {
	m.heldMu.Lock()
	m.heldLock = id
	m.heldMu.Unlock()
}

func (m *Manager) readOnce(retryTorn bool) (s *State, d *diskState, again bool, err error) {
	path := m.statePath()
	f, err := fsread.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("read state: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, false, fmt.Errorf("read state: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + 512)
	if fi.Size() > fsread.MaxState {
		return nil, nil, false, fmt.Errorf("read state: %w", &fsread.TooLargeError{Path: path, Limit: fsread.MaxState})
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, fsread.MaxState+1)); err != nil {
		return nil, nil, false, fmt.Errorf("read state %s: %w", path, err)
	}
	jdata, jid, err := m.readJournal()
	if err != nil {
		return nil, nil, false, err
	}
	if fi2, err := os.Stat(path); err == nil && idOf(fi2) != idOf(fi) {
		return nil, nil, true, nil // replaced meanwhile
	}
	s, version, err := decode(path, buf.Bytes())
	if err != nil {
		return nil, nil, false, err
	}
	d = &diskState{id: idOf(fi), version: version, serial: s.Serial, lineage: s.Lineage, raw: buf.Bytes(), src: buf.Bytes()}
	d.journal.id, d.journal.size = jid, jid.size
	if len(jdata) > 0 {
		if err := replayJournal(m.journalPath(), jdata, s, &d.journal); err != nil {
			return nil, nil, false, err
		}
		if retryTorn && d.journal.valid < int64(len(jdata)) && d.journal.foreign == "" {
			return nil, nil, true, nil // a writer may be appending it
		}
		d.jdata = jdata[:d.journal.valid]
		if d.journal.applied > 0 {
			// state.json alone is no longer the state: no byte
			// comparison with it can say "unchanged".
			d.serial = s.Serial
			d.raw = nil
			d.body = encoded{}
			return s, d, false, nil
		}
	}
	if version != FormatVersion {
		// Upgraded: raw is no guide to what an unchanged state encodes to.
		if d.body, err = m.enc.encode(s); err != nil {
			return nil, nil, false, fmt.Errorf("read state %s: %w", path, err)
		}
		d.raw = nil
	}
	return s, d, false, nil
}

// decode parses a state file's content, upgrading older formats. It
// returns the file's own format version too.
func decode(path string, data []byte) (*State, int, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, 0, &CorruptError{Path: path, Problem: "is empty"}
	}
	// Fast path: a current-format file decodes in one pass.
	if s, err := decodeWire(data); err == nil && s.Version == FormatVersion {
		return checkDecoded(path, s, FormatVersion)
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, 0, syntaxProblem(path, data, err, true)
	}
	if head.Version == nil {
		return nil, 0, &CorruptError{Path: path, Problem: `has no "version" field (is it a trialform state file?)`}
	}
	version := *head.Version
	switch {
	case version > FormatVersion:
		return nil, 0, &NewerFormatError{Path: path, Version: version, Supported: FormatVersion}
	case version < 0:
		return nil, 0, &CorruptError{Path: path, Problem: fmt.Sprintf("has an invalid format version %d", version)}
	case version < FormatVersion:
		up, err := upgrade(data, version)
		if err != nil {
			return nil, 0, &CorruptError{Path: path, Problem: fmt.Sprintf("cannot be upgraded from format version %d: %v", version, err), Err: err}
		}
		data = up
	}
	s, err := decodeWireV1(data)
	if err != nil {
		return nil, 0, syntaxProblem(path, data, err, version == FormatVersion)
	}
	return checkDecoded(path, s, version)
}

// checkDecoded checks what decode parsed from a file of format version.
func checkDecoded(path string, s *State, version int) (*State, int, error) {
	if s.Version != FormatVersion {
		return nil, 0, &CorruptError{Path: path, Problem: fmt.Sprintf("has format version %d after upgrading, want %d", s.Version, FormatVersion)}
	}
	if s.Lineage == "" {
		return nil, 0, &CorruptError{Path: path, Problem: `has no "lineage"`}
	}
	if s.Experiments == nil {
		s.Experiments = map[string]*Experiment{}
	}
	for name, e := range s.Experiments {
		if e == nil {
			return nil, 0, &CorruptError{Path: path, Problem: fmt.Sprintf("has experiment %q set to null", name)}
		}
		if p := NameProblem(name); p != "" {
			return nil, 0, &CorruptError{Path: path, Problem: fmt.Sprintf("has an experiment named %q, which %s", name, p)}
		}
		if e.Name != "" && e.Name != name {
			return nil, 0, &CorruptError{Path: path, Problem: fmt.Sprintf("has experiment %q whose name is %q", name, e.Name)}
		}
		if e.Trials == nil {
			e.Trials = map[string]*Trial{}
		}
		for id, t := range e.Trials {
			if t == nil {
				return nil, 0, &CorruptError{Path: path, Problem: fmt.Sprintf("has trial %q of experiment %q set to null", id, name)}
			}
			if p := NameProblem(id); p != "" {
				return nil, 0, &CorruptError{Path: path, Problem: fmt.Sprintf("has a trial %q of experiment %q, an id which %s", id, name, p)}
			}
			if t.ID != "" && t.ID != id {
				return nil, 0, &CorruptError{Path: path, Problem: fmt.Sprintf("has trial %q of experiment %q whose id is %q", id, name, t.ID)}
			}
		}
	}
	return s, version, nil
}

// NameProblem says why an experiment name or trial id read from a state
// cannot be one trialform wrote (trialform never writes such a name; the
// platforms and the metric series name directories and files by them), or
// "" when it can.
func NameProblem(n string) string {
	switch {
	case n == "":
		return "is empty"
	case len(n) > 200:
		return "is longer than 200 bytes"
	case strings.HasPrefix(n, "."), strings.ContainsAny(n, "/\\\x00"):
		return "cannot name a directory (it starts with a dot or holds a slash, a backslash or NUL)"
	}
	return ""
}

func syntaxProblem(path string, data []byte, err error, lines bool) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && se.Offset >= int64(len(bytes.TrimRight(data, " \t\r\n"))):
		return &CorruptError{Path: path, Problem: "is truncated (it ends in the middle of the JSON document)", Err: err}
	case errors.As(err, &se):
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return &CorruptError{Path: path, Problem: fmt.Sprintf("is not valid JSON (line %d: %v)", line, err), Err: err}
	}
	// A value of the wrong type (a hand edit gone wrong): the wire decoder
	// says where it is; encoding/json named Go's types or nothing at all.
	if at := misfit(data, lines); at != "" {
		return &CorruptError{Path: path, Problem: "does not have the shape of a state: " + at, Err: err}
	}
	if errors.As(err, &te) {
		return &CorruptError{Path: path, Problem: fmt.Sprintf("does not have the shape of a state (%v)", err), Err: err}
	}
	return &CorruptError{Path: path, Problem: fmt.Sprintf("cannot be decoded (%v)", err), Err: err}
}

// misfit says where in data the wire decoder meets a value of the wrong
// type and what is wrong ("line 4, /experiments/a/trials/t0000/value:
// \"6.1\" is not a number"; the line only when lines, as data may be an
// upgrade of the file), or "" when it does not say.
func misfit(data []byte, lines bool) string {
	_, err := decodeWire(data)
	var se *jsonv2.SemanticError
	if !errors.As(err, &se) || se.JSONPointer == "" {
		return ""
	}
	var what string
	switch {
	case se.Err != nil:
		what = strings.TrimPrefix(se.Err.Error(), "state: ")
	case se.GoType != nil && se.JSONKind != 0:
		want := "a " + se.GoType.String()
		switch se.GoType.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
			reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			want = "a number"
		case reflect.String:
			want = "a string"
		case reflect.Bool:
			want = "true or false"
		case reflect.Map, reflect.Struct:
			want = "an object"
		case reflect.Slice, reflect.Array:
			want = "an array"
		}
		what = fmt.Sprintf("a JSON %s where %s belongs", se.JSONKind, want)
	default:
		return ""
	}
	at := string(se.JSONPointer)
	if lines {
		at = fmt.Sprintf("line %d, %s", 1+bytes.Count(data[:min(max(int(se.ByteOffset), 0), len(data))], []byte("\n")), at)
	}
	return at + ": " + what
}

// Save writes s if it differs from what the state file holds (ignoring the
// serial): it bumps s.Serial, keeps the current file as state.json.backup
// and replaces state.json atomically (temporary file, fsync, rename, fsync
// of the directory). An unchanged state is not written and keeps its
// serial.
//
// Save refuses, with *ConflictError, to write over a file of another
// lineage or one written since s was loaded (its serial is not s.Serial),
// and, with the error Load gives, over a corrupt or newer-format file.
//
// Save does not lock: callers hold the state lock (Lock) and serialize
// their Saves.
func (m *Manager) Save(s *State) error {
	if s == nil {
		return errors.New("save state: no state")
	}
	if s.Lineage == "" {
		return errors.New("save state: the state has no lineage (make states with New or Load)")
	}
	if s.Version > FormatVersion {
		return fmt.Errorf("save state: the state has format version %d, this trialform writes %d", s.Version, FormatVersion)
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	path := m.statePath()
	disk, err := m.current()
	if err != nil {
		return err
	}
	if disk != nil {
		if disk.lineage != s.Lineage || disk.serial != s.Serial {
			return &ConflictError{Path: path, FileLineage: disk.lineage, StateLineage: s.Lineage, FileSerial: disk.serial, StateSerial: s.Serial}
		}
	}
	if disk != nil && m.journaling(disk) {
		err := m.saveJournal(s, disk)
		if !errors.Is(err, errCompact) {
			return err
		}
	}
	return m.saveWhole(s, disk)
}

// SaveWhole is Save that writes the whole state to state.json and empties
// the journal, so state.json.backup holds the state as it was just before:
// for edits a user may want to undo by hand (state mv, state rm).
func (m *Manager) SaveWhole(s *State) error {
	if s == nil || s.Lineage == "" {
		return m.Save(s)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	disk, err := m.current()
	if err != nil {
		return err
	}
	if disk != nil && (disk.lineage != s.Lineage || disk.serial != s.Serial) {
		return &ConflictError{Path: m.statePath(), FileLineage: disk.lineage, StateLineage: s.Lineage, FileSerial: disk.serial, StateSerial: s.Serial}
	}
	if disk != nil {
		disk.snap = nil
	}
	return m.saveWhole(s, disk)
}

// journaling reports whether a Save over disk may append to the journal
// rather than write state.json: state.json is of this format, is not a
// symbolic link (its journal would not follow it), and no journal of
// another lineage is in the way.
func (m *Manager) journaling(disk *diskState) bool {
	if m.noJournal || disk.version != FormatVersion || disk.journal.foreign != "" {
		return false
	}
	fi, err := os.Lstat(m.statePath())
	return err == nil && fi.Mode().IsRegular()
}

// saveJournal appends what changed to the journal; errCompact when the
// journal has grown past state.json's size (nothing was written).
func (m *Manager) saveJournal(s *State, disk *diskState) error {
	line, err := m.prepareJournal(s, disk, nil)
	if err != nil || line == nil {
		return err
	}
	return m.appendPrepared(line, disk)
}

// errCompact says the journal is full: write the whole state.
var errCompact = errors.New("compact")

// prepareJournal computes the record that brings the journal to s, bumps
// s.Serial and makes the Manager's copy of the state s; nil when nothing
// changed. With errCompact nothing was changed.
//
// refs, when not nil, names every trial changed since the last Save or
// Prepare (see PrepareTrials): only those are compared.
func (m *Manager) prepareJournal(s *State, disk *diskState, refs []TrialRef) ([]byte, error) {
	if disk.snap == nil {
		// A copy read from disk (the first save, or after a failed
		// append): the names cover changes since the caller's last save,
		// which may not be all the disk lacks. Compare everything.
		refs = nil
		snap, _, err := decode(m.statePath(), disk.src)
		if err != nil {
			return nil, err
		}
		var js journalState
		if err := replayJournal(m.journalPath(), disk.jdata, snap, &js); err != nil {
			return nil, err
		}
		disk.snap = snap
	}
	var rec *journalRecord
	var err error
	ok := false
	if refs != nil {
		rec, ok, err = diffTrials(disk.snap, s, refs)
	}
	if !ok && err == nil {
		rec, err = diff(disk.snap, s)
	}
	if err != nil {
		return nil, fmt.Errorf("save state: %w", err)
	}
	if rec == nil {
		return nil, nil
	}
	serial := s.Serial + 1
	rec.Serial = serial
	line, err := encodeRecord(rec)
	if err != nil {
		return nil, fmt.Errorf("save state: %w", err)
	}
	limit := max(int64(journalMin), disk.id.size)
	if m.journalLimit != 0 {
		limit = m.journalLimit
	}
	if disk.journal.valid+int64(len(line)) > limit {
		disk.snap = nil // compaction: state.json will hold everything
		return nil, errCompact
	}
	s.Serial = serial
	s.Version = FormatVersion
	disk.serial = serial
	disk.jdata = nil // snap is kept up to date from here on
	commit(disk.snap, rec, s)
	return line, nil
}

// appendPrepared appends a prepared record and makes it durable.
func (m *Manager) appendPrepared(line []byte, disk *diskState) error {
	if err := m.appendJournal(line, &disk.journal); err != nil {
		m.disk = nil // read again: what the journal holds is unknown
		return fmt.Errorf("save state %s: %w", m.journalPath(), err)
	}
	disk.journal.warnings = nil
	if disk.body.body != nil {
		m.enc.recycle(disk.body.body)
	}
	disk.body, disk.raw, disk.src = encoded{}, nil, nil // state.json alone is no longer the state
	return nil
}

// Prepare is the first half of Save for callers that group changes: it
// checks s as Save does, computes what changed since the last Save or
// Prepare and bumps s.Serial, but writes nothing (except when the journal
// is due for compaction, or state.json is written whole: then it saves,
// and returns a nil commit). It reads s only while it runs, so the caller
// may let s change during commit (the append and fsync), and the next
// Prepare covers those changes. Call commit before the next Prepare; nil
// means nothing is left to commit.
func (m *Manager) Prepare(s *State) (commit func() error, err error) {
	return m.prepare(s, nil)
}

// PrepareTrials is Prepare for a caller that knows which trials it
// changed: refs names every trial added, modified or removed since the
// last Save, Prepare or PrepareTrials of s (experiments' own fields are
// always compared). Only those trials are compared and encoded, so the
// cost is that of the change, not of the state. When the names do not
// account for the change (an experiment added or removed, a trial count
// they do not explain), it compares everything, as Prepare does. A nil
// refs is Prepare.
func (m *Manager) PrepareTrials(s *State, refs []TrialRef) (commit func() error, err error) {
	if refs == nil {
		refs = []TrialRef{}
	}
	return m.prepare(s, refs)
}

func (m *Manager) prepare(s *State, refs []TrialRef) (commit func() error, err error) {
	if s == nil || s.Lineage == "" || s.Version > FormatVersion {
		return nil, m.Save(s)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	disk, err := m.current()
	if err != nil {
		return nil, err
	}
	if disk != nil && (disk.lineage != s.Lineage || disk.serial != s.Serial) {
		return nil, &ConflictError{Path: m.statePath(), FileLineage: disk.lineage, StateLineage: s.Lineage, FileSerial: disk.serial, StateSerial: s.Serial}
	}
	if disk == nil || !m.journaling(disk) {
		return nil, m.saveWhole(s, disk)
	}
	line, err := m.prepareJournal(s, disk, refs)
	if errors.Is(err, errCompact) {
		return nil, m.saveWhole(s, disk)
	}
	if err != nil || line == nil {
		return nil, err
	}
	return func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.disk != disk {
			return fmt.Errorf("save state: the state was read again between Prepare and its commit")
		}
		return m.appendPrepared(line, disk)
	}, nil
}

// Compact writes the state the journal holds changes to into state.json
// and state.json.backup (a copy) and empties the journal. The serial stays: the content is the same. Nothing happens
// when the journal holds no change. Callers hold the lock (Lock.Unlock
// compacts).
func (m *Manager) Compact() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	disk, err := m.current()
	if err != nil || disk == nil || disk.journal.applied == 0 || disk.journal.foreign != "" {
		return err
	}
	s := disk.snap
	if s == nil {
		if s, _, err = decode(m.statePath(), disk.src); err != nil {
			return err
		}
		var js journalState
		if err := replayJournal(m.journalPath(), disk.jdata, s, &js); err != nil {
			return err
		}
	}
	disk.snap = nil
	if err := m.writeWhole(s, disk, false); err != nil {
		return err
	}
	// The backup becomes a copy of the state as this command leaves it
	// (not the state.json it started from, which lacks every change the
	// journal held): what a lost state.json is recovered from.
	dst := m.statePath() + backupSuffix
	if err := copyFile(m.statePath(), dst); err != nil {
		return fmt.Errorf("keep backup: %w", err)
	}
	return fsx.SyncDir(m.dir)
}

// saveWhole writes the whole state to state.json (keeping the backup) and
// empties the journal.
func (m *Manager) saveWhole(s *State, disk *diskState) error {
	return m.writeWhole(s, disk, true)
}

func (m *Manager) writeWhole(s *State, disk *diskState, bump bool) error {
	path := m.statePath()
	body, err := m.enc.encode(s)
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	if bump && disk != nil && disk.same(body) {
		m.enc.recycle(body.body)
		return nil
	}
	serial := s.Serial
	if bump {
		serial++
	}
	id, err := m.write(body.parts(serial), disk != nil)
	if err != nil {
		m.enc.recycle(body.body)
		return fmt.Errorf("save state %s: %w", path, err)
	}
	js := m.journalOf(disk)
	if err := m.resetJournal(js); err != nil {
		// state.json holds everything; the journal's records are all
		// at or below its serial and are skipped when read.
		m.disk = nil
		s.Serial = serial
		s.Version = FormatVersion
		return fmt.Errorf("save state: empty the journal %s: %w", m.journalPath(), err)
	}
	s.Serial = serial
	s.Version = FormatVersion
	if disk != nil && disk.body.body != nil {
		m.enc.recycle(disk.body.body)
	}
	nd := &diskState{id: id, version: FormatVersion, serial: serial, lineage: s.Lineage, body: body}
	if !m.noJournal {
		nd.snap = s.Clone()
	}
	if jfi, err := os.Stat(m.journalPath()); err == nil {
		nd.journal.id = idOf(jfi)
	}
	m.disk = nd
	return nil
}

// current returns what state.json holds now (nil if there is none),
// re-reading it only if it changed since the Manager last saw it.
func (m *Manager) current() (*diskState, error) {
	fi, err := os.Stat(m.statePath())
	if errors.Is(err, fs.ErrNotExist) {
		m.disk = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("save state: %w", err)
	}
	if m.disk != nil && m.disk.id == idOf(fi) {
		jfi, err := os.Stat(m.journalPath())
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if m.disk.journal.id == (fileID{}) {
				return m.disk, nil
			}
		case err != nil:
			return nil, fmt.Errorf("save state: %w", err)
		case idOf(jfi) == m.disk.journal.id:
			return m.disk, nil
		}
	}
	_, d, err := m.read()
	if err != nil {
		return nil, err
	}
	m.disk = d
	return d, nil
}

// write replaces state.json with content, first keeping the current file
// as the backup, and returns the new file's identity.
func (m *Manager) write(content [3][]byte, hasCurrent bool) (fileID, error) {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return fileID{}, err
	}
	path, err := m.target()
	if err != nil {
		return fileID{}, err
	}
	if hasCurrent {
		if err := m.backup(path); err != nil {
			return fileID{}, fmt.Errorf("keep backup: %w", err)
		}
	}
	f, err := fsx.NewPendingFile(path, 0o644, fsx.Options{TempPrefix: tempPrefix})
	if err != nil {
		return fileID{}, err
	}
	defer f.Cleanup()
	for _, p := range content {
		if _, err := f.Write(p); err != nil {
			return fileID{}, err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return fileID{}, err
	}
	if err := f.Commit(); err != nil {
		return fileID{}, err
	}
	return idOf(fi), nil
}

// target returns the file a save replaces: state.json itself or, when it
// is a symbolic link, the file it leads to (followed link by link, so a
// dangling link is written through too). Replacing the link by a regular
// file would leave the file the user meant to keep behind.
func (m *Manager) target() (string, error) {
	path := m.statePath()
	for range 40 {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				return "", fmt.Errorf("%s is not a regular file (%v); replace it with a file or a link to one", path, fi.Mode().Type())
			}
			return path, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", m.statePath())
}

// backup makes the current state.json the backup, atomically: a hard link
// renamed over the old backup (state.json is never written in place, so
// the link keeps the old content after the rename that replaces
// state.json), or a copy where the file system has no hard links.
//
// A backup of another lineage than the state being replaced (left by a
// state that was lost and started again) is first moved aside to
// state.json.backup.LINEAGE, so no lineage's last backup is overwritten.
func (m *Manager) backup(path string) error {
	dst := m.statePath() + backupSuffix
	lineage := ""
	if m.disk != nil {
		lineage = m.disk.lineage
	}
	if err := m.keepForeignBackup(dst, lineage); err != nil {
		return err
	}
	tmp := filepath.Join(m.dir, tempPrefix+"backup-"+NewExperimentID())
	if err := os.Link(path, tmp); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone meanwhile: nothing to keep
		}
		if err := copyFile(path, dst); err != nil {
			return err
		}
		m.backupLineage = lineage
		return nil
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	m.backupLineage = lineage
	return nil
}

// keepForeignBackup moves the backup dst aside when it belongs to another
// lineage than lineage.
func (m *Manager) keepForeignBackup(dst, lineage string) error {
	if fi, err := os.Lstat(dst); err == nil && !fi.Mode().IsRegular() {
		// Not a file this package wrote: neither overwrite nor move it.
		return fmt.Errorf("%s is not a regular file (%s): move it away, then run the command again", dst, fi.Mode().Type())
	}
	if lineage == "" || m.backupLineage == lineage {
		return nil
	}
	other, serial, err := peekFile(dst)
	if errors.Is(err, fs.ErrNotExist) {
		m.backupLineage = lineage
		return nil
	}
	if err != nil || other == lineage {
		// An unreadable backup is kept aside too: it may be all that is
		// left of something.
		if err == nil {
			m.backupLineage = lineage
			return nil
		}
		other = "unreadable"
	}
	prefix := other
	if len(prefix) > 8 {
		prefix = prefix[:8]
	}
	aside := dst + "." + prefix
	for i := 0; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s.%s-%d-%d", dst, prefix, serial, i)
	}
	if err := os.Rename(dst, aside); err != nil {
		return fmt.Errorf("keep the backup of lineage %s: %w", other, err)
	}
	return fsx.SyncDir(m.dir)
}

// peekFile reads the lineage and serial at the head of a state file
// without decoding its experiments (they come after both in every format
// this package wrote).
func peekFile(path string) (lineage string, serial uint64, err error) {
	f, err := fsread.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", 0, fmt.Errorf("%s is not a state file", path)
	}
	found := 0
	for dec.More() && found < 2 {
		t, err := dec.Token()
		if err != nil {
			return "", 0, err
		}
		switch t {
		case "lineage":
			if err := dec.Decode(&lineage); err != nil {
				return "", 0, err
			}
			found++
		case "serial":
			if err := dec.Decode(&serial); err != nil {
				return "", 0, err
			}
			found++
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", 0, err
			}
		}
	}
	if lineage == "" {
		return "", 0, fmt.Errorf("%s has no lineage", path)
	}
	return lineage, serial, nil
}

// copyFile replaces dst with a copy of src; the caller syncs the
// directory.
func copyFile(src, dst string) error {
	data, err := fsread.ReadFile(src, fsread.MaxState)
	if err != nil {
		return err
	}
	return fsx.ReplaceFile(dst, data, 0o644, fsx.Options{TempPrefix: tempPrefix + "backup-", NoSyncDir: true})
}

// removeTemps deletes temporary files a crashed Save left behind. Only the
// lock holder calls it, so no Save is under way.
func (m *Manager) removeTemps() {
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			os.Remove(filepath.Join(m.dir, e.Name()))
		}
	}
}
