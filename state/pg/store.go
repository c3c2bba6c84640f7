package pg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trialform/trialform/state"
)

// snapshot is what this client last loaded or saved: what a save compares
// with, so that it writes only what changed.
type snapshot struct {
	lineage string
	serial  uint64
	exps    map[string]*snapExp
	// saved: the snapshot is what this client's last save of the state
	// wrote, so PrepareTrials' names can be trusted.
	saved bool
}

type snapExp struct {
	head    []byte // the experiment without its trials, as json.Marshal writes it
	version int64  // the serial that last wrote it
	trials  map[string]*state.Trial
}

// head encodes e without its trials.
func head(e *state.Experiment) ([]byte, error) {
	c := *e
	c.Trials = nil
	return json.Marshal(&c)
}

// Exists reports whether there is a state row.
func (b *Backend) Exists() (bool, error) {
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return false, err
	}
	var ok bool
	err = pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+b.t("state")+`)`).Scan(&ok)
	return ok, b.fail("read the state", err)
}

// Load reads the state in one repeatable-read transaction: one version.
// What it read becomes what this client's next save compares with, unless
// this client saved meanwhile (another goroutine: a controller's pass
// beside its dashboard, which loads at each NOTIFY): a snapshot from before
// that save would make the next save refuse the client's own write as
// someone else's ("experiment w was changed by someone else ... (serial 7
// there, 6 when loaded)"), so Load reads again, the last time holding the
// lock that saves take.
func (b *Backend) Load() (*state.State, error) {
	return b.LoadContext(context.Background())
}

// LoadContext is Load, given up when ctx ends (state.ContextReader): what
// this client loaded moves only once a whole read succeeded.
func (b *Backend) LoadContext(ctx context.Context) (*state.State, error) {
	ctx, cancel := within(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		last := attempt >= loadTries
		if last {
			b.mu.Lock()
		}
		s, snap, err := b.read(ctx)
		if err != nil {
			if last {
				b.mu.Unlock()
			}
			return nil, err
		}
		if !last {
			b.mu.Lock()
		}
		if !last && olderThan(snap, b.snap) {
			b.mu.Unlock()
			continue
		}
		b.snap = snap
		b.warnings = nil
		b.mu.Unlock()
		return s, nil
	}
}

// Peek reads the state as Load does without making it what this client's
// next save compares with (state.Peeker): a reader beside this client's
// writer (the controller's dashboard beside its pass) would otherwise move
// that base past what the writer loaded, and the writer's save would then
// refuse its own change ("experiment v changed, but this command locked
// only w (a bug: report it)") or write over a change someone else made to
// its experiments since it loaded them, undetected.
func (b *Backend) Peek() (*state.State, error) {
	return b.PeekContext(context.Background())
}

// PeekContext is Peek, given up when ctx ends (state.ContextReader).
func (b *Backend) PeekContext(ctx context.Context) (*state.State, error) {
	ctx, cancel := within(ctx)
	defer cancel()
	s, _, err := b.read(ctx)
	return s, err
}

var (
	_ state.Peeker        = (*Backend)(nil)
	_ state.ContextReader = (*Backend)(nil)
)

// loadTries is how many reads Load makes without the save lock before it
// reads holding it.
const loadTries = 3

// olderThan reports whether snapshot a, just read, is of an earlier version
// of the same state than b, which this client saved while a was read.
func olderThan(a, b *snapshot) bool {
	return a != nil && b != nil && a.lineage == b.lineage && a.serial < b.serial
}

// read reads the state and the snapshot of it; a nil snapshot when there
// is no state (s is then New()).
func (b *Backend) read(ctx context.Context) (*state.State, *snapshot, error) {
	pool, err := b.getPool(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, b.fail("read the state", err)
	}
	defer tx.Rollback(ctx)
	var lineage string
	var serial uint64
	var format int
	err = tx.QueryRow(ctx, `SELECT lineage, serial, format FROM `+b.t("state")).Scan(&lineage, &serial, &format)
	if errors.Is(err, pgx.ErrNoRows) {
		return state.New(), nil, nil
	}
	if err != nil {
		return nil, nil, b.fail("read the state", err)
	}
	if format > state.FormatVersion {
		return nil, nil, &state.NewerFormatError{Path: b.where + ", table " + b.schema + ".state", Version: format, Supported: state.FormatVersion}
	}
	var heads []headRow
	rows, err := tx.Query(ctx, `SELECT name, (head - 'trials')::text, version FROM `+b.t("experiments"))
	if err != nil {
		return nil, nil, b.fail("read the experiments", err)
	}
	for rows.Next() {
		var h headRow
		if err := rows.Scan(&h.name, &h.head, &h.version); err != nil {
			return nil, nil, b.fail("read the experiments", err)
		}
		heads = append(heads, h)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, b.fail("read the experiments", err)
	}
	for _, h := range heads {
		if p := state.NameProblem(h.name); p != "" {
			return nil, nil, b.corrupt(fmt.Sprintf("the row of experiment %q in table %s.experiments", h.name, b.schema), errors.New("its name "+p))
		}
	}
	var trials []bodyRow
	rows, err = tx.Query(ctx, `SELECT experiment, id, body::text FROM `+b.t("trials"))
	if err != nil {
		return nil, nil, b.fail("read the trials", err)
	}
	for rows.Next() {
		var r bodyRow
		if err := rows.Scan(&r.exp, &r.id, &r.body); err != nil {
			return nil, nil, b.fail("read the trials", err)
		}
		trials = append(trials, r)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, b.fail("read the trials", err)
	}
	for _, r := range trials {
		if p := state.NameProblem(r.id); p != "" {
			return nil, nil, b.corrupt(fmt.Sprintf("the row of trial %q of experiment %q in table %s.trials", r.id, r.exp, b.schema), errors.New("its id "+p))
		}
	}
	s, ok := decodeRows(lineage, serial, heads, trials)
	if !ok {
		// Row by row, to name the one that cannot be read.
		slowLoads.Add(1)
		if s, err = b.decodeEach(lineage, serial, heads, trials); err != nil {
			return nil, nil, err
		}
	}
	if b.afterRead != nil {
		b.afterRead()
	}
	snap := &snapshot{lineage: s.Lineage, serial: s.Serial, exps: make(map[string]*snapExp, len(heads))}
	for _, h := range heads {
		e := s.Experiments[h.name]
		enc, err := head(e)
		if err != nil {
			return nil, nil, b.corrupt(fmt.Sprintf("the row of experiment %q in table %s.experiments", h.name, b.schema), err)
		}
		se := &snapExp{head: enc, version: h.version, trials: make(map[string]*state.Trial, len(e.Trials))}
		for id, t := range e.Trials {
			se.trials[id] = t.Clone()
		}
		snap.exps[h.name] = se
	}
	return s, snap, nil
}

// slowLoads counts the loads that decoded row by row (for tests: a state
// trialform wrote takes the fast path).
var slowLoads atomic.Int64

type headRow struct {
	name    string
	head    []byte
	version int64
}

type bodyRow struct {
	exp, id string
	body    []byte
}

// decodeRows assembles the rows into one state document and decodes it
// with the state package's decoder (the fast path); ok is false when a
// row does not fit (decodeEach then names it).
func decodeRows(lineage string, serial uint64, heads []headRow, trials []bodyRow) (*state.State, bool) {
	byExp := make(map[string]*bytes.Buffer, len(heads))
	for _, h := range heads {
		byExp[h.name] = &bytes.Buffer{}
	}
	for _, r := range trials {
		buf := byExp[r.exp]
		if buf == nil {
			return nil, false
		}
		if buf.Len() > 0 {
			buf.WriteByte(',')
		}
		id, _ := json.Marshal(r.id)
		buf.Write(id)
		buf.WriteByte(':')
		buf.Write(r.body)
	}
	var doc bytes.Buffer
	l, _ := json.Marshal(lineage)
	fmt.Fprintf(&doc, `{"version":%d,"serial":%d,"lineage":%s,"experiments":{`, state.FormatVersion, serial, l)
	for i, h := range heads {
		hd := bytes.TrimSpace(h.head)
		if len(hd) < 2 || hd[0] != '{' || hd[len(hd)-1] != '}' {
			return nil, false
		}
		if i > 0 {
			doc.WriteByte(',')
		}
		n, _ := json.Marshal(h.name)
		doc.Write(n)
		doc.WriteByte(':')
		doc.Write(hd[:len(hd)-1])
		if len(bytes.TrimSpace(hd[1:len(hd)-1])) > 0 {
			doc.WriteByte(',')
		}
		doc.WriteString(`"trials":{`)
		doc.Write(byExp[h.name].Bytes())
		doc.WriteString("}}")
	}
	doc.WriteString("}}")
	s, err := state.Decode("pg", doc.Bytes())
	if err != nil || len(s.Experiments) != len(heads) {
		return nil, false
	}
	n := 0
	for name, e := range s.Experiments {
		if e.Name != name {
			return nil, false
		}
		if e.Trials == nil {
			e.Trials = map[string]*state.Trial{}
		}
		for id, t := range e.Trials {
			if t == nil || t.ID != id {
				return nil, false
			}
			n++
		}
	}
	return s, n == len(trials)
}

// decodeEach decodes the rows one by one: the slow path, which names a
// row that cannot be read.
func (b *Backend) decodeEach(lineage string, serial uint64, heads []headRow, trials []bodyRow) (*state.State, error) {
	s := state.New()
	s.Lineage, s.Serial = lineage, serial
	for _, h := range heads {
		e := &state.Experiment{}
		if err := json.Unmarshal(h.head, e); err != nil || e.Name != h.name {
			if err == nil {
				err = fmt.Errorf("its name is %q", e.Name)
			}
			return nil, b.corrupt(fmt.Sprintf("the row of experiment %q in table %s.experiments", h.name, b.schema), err)
		}
		e.Trials = map[string]*state.Trial{}
		s.Experiments[h.name] = e
	}
	for _, r := range trials {
		where := fmt.Sprintf("the row of trial %q of experiment %q in table %s.trials", r.id, r.exp, b.schema)
		e := s.Experiments[r.exp]
		if e == nil {
			return nil, b.corrupt(where, errors.New("its experiment has no row in "+b.schema+".experiments"))
		}
		tr := &state.Trial{}
		if err := json.Unmarshal(r.body, tr); err != nil {
			return nil, b.corrupt(where, err)
		}
		if tr.ID != r.id {
			return nil, b.corrupt(where, fmt.Errorf("its id is %q", tr.ID))
		}
		e.Trials[r.id] = tr
	}
	s.Version = state.FormatVersion
	return s, nil
}

// corrupt reports a row that cannot be read: edited by hand, or by
// something else than trialform; and the repairs that work on this backend.
func (b *Backend) corrupt(where string, err error) error {
	return &state.CorruptError{Path: fmt.Sprintf(`backend "pg" (%s): %s`, b.where, where), Problem: fmt.Sprintf("cannot be read as trialform wrote it: %v", err), Err: err,
		Repair: "No save writes over it. Someone or something changed it behind trialform's back: fix the row by hand, restore the database from a backup, or replace the whole state with a good copy (a file `trialform state pull` wrote): `trialform state push -force FILE`"}
}

// change is a prepared save: the rows to write.
type change struct {
	lineage    string
	fromSerial uint64 // the serial s was at (the whole-state check)
	scope      map[string]bool
	exists     bool // a state row existed when the client read it
	heads      map[string][]byte
	removed    []string // experiments
	upserts    []trialRow
	deletes    []trialKey
	touched    map[string]bool  // experiments written
	versions   map[string]int64 // what this client read of each touched experiment (-1: absent)
	base       *snapshot        // what the change was computed from; the commit applies it
}

type trialKey struct{ exp, id string }

type trialRow struct {
	trialKey
	body  []byte
	trial *state.Trial
}

// Save writes what changed in s since this client loaded or saved it.
func (b *Backend) Save(s *state.State) error {
	commit, err := b.prepare(s, nil)
	if err != nil || commit == nil {
		return err
	}
	return commit()
}

// Prepare computes the change and bumps s.Serial; commit writes it in one
// transaction.
func (b *Backend) Prepare(s *state.State) (func() error, error) { return b.prepare(s, nil) }

// PrepareTrials is Prepare for a caller that names every trial changed
// since its last save of s: only those are compared.
func (b *Backend) PrepareTrials(s *state.State, refs []state.TrialRef) (func() error, error) {
	if refs == nil {
		refs = []state.TrialRef{}
	}
	return b.prepare(s, refs)
}

func (b *Backend) prepare(s *state.State, refs []state.TrialRef) (func() error, error) {
	if s == nil {
		return nil, errors.New("save state: no state")
	}
	if s.Lineage == "" {
		return nil, errors.New("save state: the state has no lineage (make states with New or Load)")
	}
	if s.Version > state.FormatVersion {
		return nil, fmt.Errorf("save state: the state has format version %d, this trialform writes %d", s.Version, state.FormatVersion)
	}
	ctx, cancel := background()
	defer cancel()
	scope := b.scope()
	b.mu.Lock()
	defer b.mu.Unlock()
	snap := b.snap
	if snap == nil || snap.lineage != s.Lineage || (scope == nil && snap.serial != s.Serial) {
		// What the database holds now: a save compares with it (and is
		// refused below when it is not what s was loaded from).
		_, fresh, err := b.read(ctx)
		if err != nil {
			return nil, err
		}
		snap = fresh
		if snap != nil && snap.lineage == s.Lineage && (scope != nil || snap.serial == s.Serial) {
			b.snap = snap
		}
	}
	if snap != nil && snap.lineage != s.Lineage {
		return nil, &state.ConflictError{Path: b.where, FileLineage: snap.lineage, StateLineage: s.Lineage, FileSerial: snap.serial, StateSerial: s.Serial}
	}
	if snap != nil && scope == nil && snap.serial != s.Serial {
		return nil, &state.ConflictError{Path: b.where, FileLineage: snap.lineage, StateLineage: s.Lineage, FileSerial: snap.serial, StateSerial: s.Serial}
	}
	if snap == nil && s.Serial != 0 {
		return nil, fmt.Errorf(`save state: backend "pg" (%s): the state row was deleted since the state was loaded (at serial %d); not saving over it. Find out what deleted it; `+"`trialform state push`"+` writes a state back`, b.where, s.Serial)
	}
	base := snap
	if base == nil {
		base = &snapshot{lineage: s.Lineage, exps: map[string]*snapExp{}}
	}
	ch := &change{lineage: s.Lineage, fromSerial: s.Serial, scope: scope, exists: snap != nil,
		heads: map[string][]byte{}, touched: map[string]bool{}, versions: map[string]int64{}}
	// The trials named, by experiment; nil: compare every trial.
	var named map[string]map[string]bool
	if refs != nil && base.saved {
		named = map[string]map[string]bool{}
		for _, r := range refs {
			if named[r.Experiment] == nil {
				named[r.Experiment] = map[string]bool{}
			}
			named[r.Experiment][r.ID] = true
		}
	}
	out := func(what, n string) error {
		return fmt.Errorf("save state: %s %q changed, but this command locked only %s: not saving it (a bug: report it)", what, n, strings.Join(sortedKeys(scope), ", "))
	}
	for n, e := range s.Experiments {
		old := base.exps[n]
		h, err := head(e)
		if err != nil {
			return nil, fmt.Errorf("save state: experiment %q: %w", n, err)
		}
		changed := old == nil || string(old.head) != string(h)
		var ups []trialRow
		var dels []trialKey
		compare := func(id string, t *state.Trial) error {
			var was *state.Trial
			if old != nil {
				was = old.trials[id]
			}
			if t == nil {
				if was != nil {
					dels = append(dels, trialKey{n, id})
				}
				return nil
			}
			if was != nil && state.TrialEqual(was, t) {
				return nil
			}
			body, err := json.Marshal(t)
			if err != nil {
				return fmt.Errorf("save state: trial %s of %q: %w", id, n, err)
			}
			ups = append(ups, trialRow{trialKey{n, id}, body, t.Clone()})
			return nil
		}
		if ids, ok := named[n]; ok && old != nil && countsAgree(old, e, ids) {
			for id := range ids {
				if err := compare(id, e.Trials[id]); err != nil {
					return nil, err
				}
			}
		} else if named != nil && !ok && old != nil && len(old.trials) == len(e.Trials) {
			// No trial named: none changed.
		} else {
			for id, t := range e.Trials {
				if err := compare(id, t); err != nil {
					return nil, err
				}
			}
			if old != nil {
				for id := range old.trials {
					if e.Trials[id] == nil {
						dels = append(dels, trialKey{n, id})
					}
				}
			}
		}
		if changed || len(ups) > 0 || len(dels) > 0 {
			if scope != nil && !scope[n] {
				return nil, out("experiment", n)
			}
			ch.touched[n] = true
			ch.heads[n] = h
			ch.upserts = append(ch.upserts, ups...)
			ch.deletes = append(ch.deletes, dels...)
			ch.versions[n] = -1
			if old != nil {
				ch.versions[n] = old.version
			}
		}
	}
	for n, old := range base.exps {
		if s.Experiments[n] != nil {
			continue
		}
		if scope != nil && !scope[n] {
			return nil, out("experiment", n)
		}
		ch.removed = append(ch.removed, n)
		ch.touched[n] = true
		ch.versions[n] = old.version
	}
	if ch.exists && len(ch.touched) == 0 {
		return nil, nil
	}
	ch.base = base
	if scope == nil || !ch.exists {
		s.Serial = base.serial + 1
	} else {
		// The serial others may have moved: it goes on from the
		// database's (the commit takes whatever is next then).
		pool, err := b.getPool(ctx)
		if err != nil {
			return nil, err
		}
		var cur uint64
		if err := pool.QueryRow(ctx, `SELECT serial FROM `+b.t("state")).Scan(&cur); err != nil {
			return nil, b.fail("read the serial", err)
		}
		s.Serial = cur + 1
	}
	s.Version = state.FormatVersion
	return func() error {
		ctx, cancel := background()
		defer cancel()
		b.mu.Lock()
		defer b.mu.Unlock()
		serial, err := b.commit(ctx, ch)
		if err != nil {
			b.snap = nil // what the database holds is read again
			return err
		}
		// What this client holds now: the base with the change.
		base := ch.base
		base.serial, base.saved = serial, true
		for _, n := range ch.removed {
			delete(base.exps, n)
		}
		for n, h := range ch.heads {
			e := base.exps[n]
			if e == nil {
				e = &snapExp{trials: map[string]*state.Trial{}}
				base.exps[n] = e
			}
			e.head, e.version = h, int64(serial)
		}
		for _, d := range ch.deletes {
			delete(base.exps[d.exp].trials, d.id)
		}
		for _, u := range ch.upserts {
			base.exps[u.exp].trials[u.id] = u.trial
		}
		b.snap = base
		return nil
	}, nil
}

// countsAgree reports whether the names ids account for the difference in
// trial counts between old and e (a trial added or removed unnamed means
// compare everything).
func countsAgree(old *snapExp, e *state.Experiment, ids map[string]bool) bool {
	n := len(old.trials)
	for id := range ids {
		_, was := old.trials[id]
		_, is := e.Trials[id]
		switch {
		case was && !is:
			n--
		case !was && is:
			n++
		}
	}
	return n == len(e.Trials)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// commit writes a prepared change in one transaction and returns the
// serial it wrote.
func (b *Backend) commit(ctx context.Context, ch *change) (uint64, error) {
	pool, err := b.getPool(ctx)
	if err != nil {
		return 0, err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, b.fail("save the state", err)
	}
	defer tx.Rollback(ctx)
	var lineage string
	var serial uint64
	err = tx.QueryRow(ctx, `SELECT lineage, serial FROM `+b.t("state")+` FOR UPDATE`).Scan(&lineage, &serial)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if ch.exists {
			return 0, fmt.Errorf(`save state: backend "pg" (%s): the state row was deleted since the state was loaded (at serial %d); not saving over it. Find out what deleted it; `+"`trialform state push`"+` writes a state back`, b.where, ch.fromSerial)
		}
		// The first save: the state row is created; another client's
		// first save at the same time conflicts on the primary key.
		if _, err := tx.Exec(ctx, `INSERT INTO `+b.t("state")+` (lineage, serial, format) VALUES ($1, 0, $2)`, ch.lineage, state.FormatVersion); err != nil {
			return 0, b.conflictOr("save the state", err, ch)
		}
	case err != nil:
		return 0, b.fail("save the state", err)
	default:
		if lineage != ch.lineage || (!ch.exists) || (ch.scope == nil && serial != ch.fromSerial) {
			return 0, &state.ConflictError{Path: b.where, FileLineage: lineage, StateLineage: ch.lineage, FileSerial: serial, StateSerial: ch.fromSerial}
		}
	}
	// Never a save under a lock this client lost (a server restart).
	if err := b.checkHeld(ctx, tx, "save state"); err != nil {
		return 0, err
	}
	if ch.scope != nil && len(ch.touched) > 0 {
		// Per experiment: nobody wrote it since this client read it.
		names := sortedKeys(ch.touched)
		rows, err := tx.Query(ctx, `SELECT name, version FROM `+b.t("experiments")+` WHERE name = ANY($1) FOR UPDATE`, names)
		if err != nil {
			return 0, b.fail("save the state", err)
		}
		now := map[string]int64{}
		for rows.Next() {
			var n string
			var v int64
			if err := rows.Scan(&n, &v); err != nil {
				return 0, b.fail("save the state", err)
			}
			now[n] = v
		}
		if err := rows.Err(); err != nil {
			return 0, b.fail("save the state", err)
		}
		for _, n := range names {
			v, ok := now[n]
			if !ok {
				v = -1
			}
			if v != ch.versions[n] {
				return 0, &state.ConflictError{Path: fmt.Sprintf("%s, experiment %s", b.where, n), FileLineage: lineage, StateLineage: ch.lineage, FileSerial: uint64(max(v, 0)), StateSerial: uint64(max(ch.versions[n], 0))}
			}
		}
	}
	next := serial + 1
	batch := &pgx.Batch{}
	if len(ch.removed) > 0 {
		batch.Queue(`DELETE FROM `+b.t("trials")+` WHERE experiment = ANY($1)`, ch.removed)
		batch.Queue(`DELETE FROM `+b.t("experiments")+` WHERE name = ANY($1)`, ch.removed)
	}
	if len(ch.heads) > 0 {
		names, heads := make([]string, 0, len(ch.heads)), make([]string, 0, len(ch.heads))
		for _, n := range sortedKeys(ch.heads) {
			names, heads = append(names, n), append(heads, string(ch.heads[n]))
		}
		batch.Queue(`INSERT INTO `+b.t("experiments")+` (name, head, version) SELECT n, h::jsonb, $3 FROM unnest($1::text[], $2::text[]) AS u(n, h)
			ON CONFLICT (name) DO UPDATE SET head = excluded.head, version = excluded.version`, names, heads, int64(next))
	}
	if len(ch.deletes) > 0 {
		es, ids := make([]string, len(ch.deletes)), make([]string, len(ch.deletes))
		for i, d := range ch.deletes {
			es[i], ids[i] = d.exp, d.id
		}
		batch.Queue(`DELETE FROM `+b.t("trials")+` t USING unnest($1::text[], $2::text[]) AS u(e, i) WHERE t.experiment = u.e AND t.id = u.i`, es, ids)
	}
	if len(ch.upserts) > 0 {
		es, ids, bodies := make([]string, len(ch.upserts)), make([]string, len(ch.upserts)), make([]string, len(ch.upserts))
		for i, u := range ch.upserts {
			es[i], ids[i], bodies[i] = u.exp, u.id, string(u.body)
		}
		batch.Queue(`INSERT INTO `+b.t("trials")+` (experiment, id, body, serial) SELECT e, i, b::jsonb, $4 FROM unnest($1::text[], $2::text[], $3::text[]) AS u(e, i, b)
			ON CONFLICT (experiment, id) DO UPDATE SET body = excluded.body, serial = excluded.serial`, es, ids, bodies, int64(next))
	}
	batch.Queue(`UPDATE `+b.t("state")+` SET serial = $1, format = $2, written = now()`, int64(next), state.FormatVersion)
	batch.Queue(`SELECT pg_notify($1, 'state')`, b.channel)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return 0, b.fail("save the state", err)
	}
	if b.beforeCommit != nil {
		if err := b.beforeCommit(ctx, tx); err != nil {
			return 0, b.fail("save the state", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, b.fail("save the state (commit)", err)
	}
	return next, nil
}

// conflictOr turns a unique violation of the first save (another client
// created the state meanwhile) into a ConflictError.
func (b *Backend) conflictOr(what string, err error, ch *change) error {
	if isUnique(err) {
		return &state.ConflictError{Path: b.where, FileLineage: "(written meanwhile)", StateLineage: ch.lineage}
	}
	return b.fail(what, err)
}

// Replace makes s the state as it is, lineage and serial included
// (migrate-state, state push -force). The caller holds the whole-state
// lock.
func (b *Backend) Replace(s *state.State) error {
	if s == nil || s.Lineage == "" {
		return errors.New("replace state: the state has no lineage")
	}
	if s.Version > state.FormatVersion {
		return fmt.Errorf("replace state: the state has format version %d, this trialform writes %d", s.Version, state.FormatVersion)
	}
	ctx, cancel := background()
	defer cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	pool, err := b.getPool(ctx)
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return b.fail("replace the state", err)
	}
	defer tx.Rollback(ctx)
	// Never under a lock this client lost: someone else may hold the
	// state now.
	if err := b.checkHeld(ctx, tx, "replace state"); err != nil {
		return err
	}
	next := &snapshot{lineage: s.Lineage, serial: s.Serial, exps: map[string]*snapExp{}, saved: true}
	batch := &pgx.Batch{}
	batch.Queue(`DELETE FROM ` + b.t("trials"))
	batch.Queue(`DELETE FROM ` + b.t("experiments"))
	batch.Queue(`DELETE FROM ` + b.t("state"))
	batch.Queue(`INSERT INTO `+b.t("state")+` (lineage, serial, format) VALUES ($1, $2, $3)`, s.Lineage, int64(s.Serial), state.FormatVersion)
	var es, ids, bodies []string
	for n, e := range s.Experiments {
		h, err := head(e)
		if err != nil {
			return fmt.Errorf("replace state: experiment %q: %w", n, err)
		}
		batch.Queue(`INSERT INTO `+b.t("experiments")+` (name, head, version) VALUES ($1, $2::text::jsonb, $3)`, n, string(h), int64(s.Serial))
		se := &snapExp{head: h, version: int64(s.Serial), trials: map[string]*state.Trial{}}
		for id, t := range e.Trials {
			body, err := json.Marshal(t)
			if err != nil {
				return fmt.Errorf("replace state: trial %s of %q: %w", id, n, err)
			}
			es, ids, bodies = append(es, n), append(ids, id), append(bodies, string(body))
			se.trials[id] = t.Clone()
		}
		next.exps[n] = se
	}
	if len(es) > 0 {
		batch.Queue(`INSERT INTO `+b.t("trials")+` (experiment, id, body, serial) SELECT e, i, b::jsonb, $4 FROM unnest($1::text[], $2::text[], $3::text[]) AS u(e, i, b)`, es, ids, bodies, int64(s.Serial))
	}
	batch.Queue(`SELECT pg_notify($1, 'state')`, b.channel)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return b.fail("replace the state", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return b.fail("replace the state (commit)", err)
	}
	b.snap = next
	return nil
}

// StateStamp is the state's lineage and serial and the refresh marks'
// version: one cheap query.
func (b *Backend) StateStamp() (state.Stamp, error) {
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return state.Stamp{}, err
	}
	var st state.Stamp
	var lineage *string
	var serial *int64
	var written *time.Time
	var marks int64
	err = pool.QueryRow(ctx, `SELECT s.lineage, s.serial, s.written, (SELECT coalesce(max(version), 0) FROM `+b.t("refreshed")+`)
		FROM (SELECT 1) AS one LEFT JOIN `+b.t("state")+` s ON true`).Scan(&lineage, &serial, &written, &marks)
	if err != nil {
		return st, b.fail("read the state's stamp", err)
	}
	if lineage != nil {
		st.State = fmt.Sprintf("%s:%d", *lineage, *serial)
		st.Written = *written
	}
	st.Refreshed = fmt.Sprint(marks)
	return st, nil
}
