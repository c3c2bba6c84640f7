package pg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trialform/trialform/state"
)

// held is a lock this client holds: its connection holds the advisory
// locks.
type held struct {
	info  state.LockInfo
	whole bool

	mu   sync.Mutex
	conn *pgx.Conn // nil while the lock is lost and not yet taken again
	stop chan struct{}
	done chan struct{}
}

// keepAlive checks h's connection every few seconds; when it is gone (the
// server restarted, the network failed) the advisory locks went with it,
// and it takes them again, with the same lock ID, as soon as it can
// (unless someone else took them meanwhile: then it tries until Unlock).
// A save meanwhile still checks, per experiment, that nobody else wrote
// since, so a holder whose lock lapsed never overwrites another's change.
func (b *Backend) keepAlive(h *held) {
	defer close(h.done)
	t := time.NewTicker(keepAliveEvery)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		conn := h.conn
		h.mu.Unlock()
		if conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), keepAliveEvery)
			err := conn.Ping(ctx)
			cancel()
			if err == nil {
				continue
			}
			conn.Close(context.Background())
			h.mu.Lock()
			h.conn = nil
			h.mu.Unlock()
		}
		// Its record says whether it was force-unlocked (the record is
		// gone: it is not taken again) or lost with the connection.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var mine bool
		var again *held
		pool, err := b.getPool(ctx)
		if err == nil {
			err = pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+b.t("locks")+` l WHERE id = $1 AND NOT `+live+`)`, h.info.ID).Scan(&mine)
		}
		if err == nil && !mine {
			cancel()
			if b.report != nil {
				b.report(fmt.Sprintf("state backend pg: the lock %s (%s) was released by someone else (force-unlock?): this command no longer holds it, "+
					"and its saves are refused once another command has written what it locked", h.info.ID, lockScope(h)))
			}
			return
		}
		if err == nil {
			_, err = pool.Exec(ctx, `DELETE FROM `+b.t("locks")+` l WHERE id = $1 AND NOT `+live, h.info.ID)
		}
		if err == nil {
			again, _, err = b.tryLock(ctx, h.info)
		}
		cancel()
		if err == nil && again != nil {
			h.mu.Lock()
			h.conn = again.conn
			h.mu.Unlock()
		}
	}
}

// lockScope names what h locks, for messages.
func lockScope(h *held) string {
	if h.whole {
		return "the whole state"
	}
	if len(h.info.Experiments) == 1 {
		return "experiment " + h.info.Experiments[0]
	}
	return "experiments " + strings.Join(h.info.Experiments, ", ")
}

// keepAliveEvery is how often a held lock's connection is checked.
var keepAliveEvery = 5 * time.Second

// scope is the experiments this client's locks cover: nil when it holds
// the whole state, or no lock (a save then checks the whole state).
func (b *Backend) scope() map[string]bool {
	b.lockMu.Lock()
	defer b.lockMu.Unlock()
	var out map[string]bool
	for h := range b.held {
		if h.whole {
			return nil
		}
		if out == nil {
			out = map[string]bool{}
		}
		for _, e := range h.info.Experiments {
			out[e] = true
		}
	}
	return out
}

// Lock takes the whole-state lock.
func (b *Backend) Lock(ctx context.Context, operation, version string, timeout time.Duration) (*state.Lock, error) {
	return b.LockExperiments(ctx, nil, operation, version, timeout)
}

// LockExperiments takes the lock of experiments (the whole state when
// empty): all or nothing; with a timeout it tries again until it passes
// or ctx is done.
func (b *Backend) LockExperiments(ctx context.Context, experiments []string, operation, version string, timeout time.Duration) (*state.Lock, error) {
	names := append([]string(nil), experiments...)
	sort.Strings(names)
	names = compact(names)
	info := state.NewLockInfo(operation, version, b.where)
	info.Backend = Name
	info.Experiments = names
	deadline := time.Now().Add(timeout)
	wait := 100 * time.Millisecond
	for {
		h, locked, err := b.tryLock(ctx, info)
		if err != nil {
			return nil, err
		}
		if h != nil {
			b.lockMu.Lock()
			b.held[h] = true
			b.lockMu.Unlock()
			h.stop, h.done = make(chan struct{}), make(chan struct{})
			go b.keepAlive(h)
			return state.NewLock(info, func() error { return b.unlock(h) }), nil
		}
		if timeout <= 0 || !time.Now().Before(deadline) {
			if timeout > 0 {
				return nil, state.GaveUp(timeout, locked)
			}
			return nil, locked
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%v while waiting for the lock: %w", ctx.Err(), locked)
		}
		t := time.NewTimer(min(wait, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%v while waiting for the lock: %w", ctx.Err(), locked)
		case <-t.C:
		}
		wait = min(wait*2, 2*time.Second)
	}
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// tryLock tries once: a held lock, or the *LockedError of a holder.
func (b *Backend) tryLock(ctx context.Context, info state.LockInfo) (*held, *state.LockedError, error) {
	// One try even when ctx is done: the error then names the holder.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	conn, err := b.connect(cctx)
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			conn.Close(context.Background())
		}
	}()
	whole := len(info.Experiments) == 0
	var got bool
	if whole {
		err = conn.QueryRow(cctx, `SELECT pg_try_advisory_lock($1)`, b.stateKey).Scan(&got)
	} else {
		keys := []int64{}
		for _, e := range info.Experiments {
			keys = append(keys, key("experiment", b.schema, e))
		}
		// All or nothing: the shared state lock and each experiment's,
		// released together when one is missing.
		err = conn.QueryRow(cctx, `SELECT pg_try_advisory_lock_shared($1) AND
			(SELECT bool_and(pg_try_advisory_lock(k)) FROM unnest($2::bigint[]) AS k)`, b.stateKey, keys).Scan(&got)
		if err == nil && !got {
			_, err = conn.Exec(cctx, `SELECT pg_advisory_unlock_all()`)
		}
	}
	if err != nil {
		return nil, nil, b.fail("take the lock", err)
	}
	if !got {
		return nil, b.holder(cctx, info.Experiments), nil
	}
	js, _ := json.Marshal(info)
	exps := info.Experiments
	if exps == nil {
		exps = []string{}
	}
	if _, err := conn.Exec(cctx, `INSERT INTO `+b.t("locks")+` (id, whole, experiments, info, pid, backend_start)
		SELECT $1, $2, $3, $4::text::jsonb, pg_backend_pid(), backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()`,
		info.ID, whole, exps, string(js)); err != nil {
		return nil, nil, b.fail("record the lock", err)
	}
	ok = true
	return &held{info: info, whole: whole, conn: conn}, nil, nil
}

// live is the condition of a locks row whose connection is still there.
//
// A record whose session holds no advisory lock is not live either:
// Unlock releases the locks before it deletes the record, and a listing
// in between would name a holder of a lock that anyone can take.
// (Parenthesised: callers write NOT live.)
const live = `(EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.pid AND a.backend_start = l.backend_start)
	AND EXISTS (SELECT 1 FROM pg_locks k WHERE k.pid = l.pid AND k.locktype = 'advisory' AND k.granted))`

// holder returns the LockedError naming who holds what experiments
// wants (the whole state when empty). The holder records itself just
// after it takes the lock: a moment without a record is tried again.
//
// It looks for up to 5 s of wall clock, not a number of tries, and a
// failed read is tried again too: on a loaded machine 20 reads 50 ms apart
// could all come before the holder's record was visible, and the error
// named nobody.
func (b *Backend) holder(ctx context.Context, experiments []string) *state.LockedError {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		locks, err := b.currentLocks(ctx)
		if err != nil {
			locks = nil
		}
		for _, li := range locks {
			if len(experiments) == 0 || len(li.Experiments) == 0 || overlap(li.Experiments, experiments) {
				return &state.LockedError{Info: li}
			}
		}
		select {
		case <-ctx.Done():
			return &state.LockedError{}
		case <-time.After(50 * time.Millisecond):
		}
	}
	return &state.LockedError{}
}

func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// unlock releases h: its record, then its connection (and with it the
// advisory locks; a connection force-unlock ended is gone already).
func (b *Backend) unlock(h *held) error {
	b.lockMu.Lock()
	delete(b.held, h)
	b.lockMu.Unlock()
	close(h.stop)
	<-h.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.mu.Lock()
	conn := h.conn
	h.conn = nil
	h.mu.Unlock()
	if conn == nil {
		return nil // lost with its connection, not taken again
	}
	var err error
	if !conn.IsClosed() {
		// The advisory locks first, on the connection, so that the lock
		// is free when Unlock returns: left to the connection's end,
		// they stay held until the server has finished that backend,
		// after Close returns. Then the record (a locker that took the
		// lock meanwhile has its own).
		if _, e := conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`); e != nil && !conn.IsClosed() {
			err = b.fail("release the lock", e)
		}
		if _, e := conn.Exec(ctx, `DELETE FROM `+b.t("locks")+` WHERE id = $1`, h.info.ID); e != nil && !conn.IsClosed() && err == nil {
			err = b.fail("release the lock", e)
		}
	}
	conn.Close(ctx)
	return err
}

// currentLocks lists the live locks, the whole state's first, then by age.
func (b *Backend) currentLocks(ctx context.Context) ([]state.LockInfo, error) {
	pool, err := b.getPool(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT info::text FROM `+b.t("locks")+` l WHERE `+live+` ORDER BY whole DESC, (info->>'created'), id`)
	if err != nil {
		return nil, b.fail("read the locks", err)
	}
	var out []state.LockInfo
	for rows.Next() {
		var js []byte
		if err := rows.Scan(&js); err != nil {
			return nil, b.fail("read the locks", err)
		}
		var li state.LockInfo
		if err := json.Unmarshal(js, &li); err == nil {
			out = append(out, li)
		}
	}
	return out, b.fail("read the locks", rows.Err())
}

// CurrentLocks lists every lock held now.
func (b *Backend) CurrentLocks() ([]state.LockInfo, error) {
	ctx, cancel := background()
	defer cancel()
	return b.currentLocks(ctx)
}

// CurrentLock returns the whole-state lock's holder, else the oldest
// experiment lock's; nil when none is held.
func (b *Backend) CurrentLock() (*state.LockInfo, error) {
	locks, err := b.CurrentLocks()
	if err != nil || len(locks) == 0 {
		return nil, err
	}
	return &locks[0], nil
}

// ForceUnlock releases the lock whose ID is id: it ends the holder's
// connection (pg_terminate_backend: the role must be the holder's, or
// have pg_signal_backend) and removes its record.
func (b *Backend) ForceUnlock(id string) error {
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return err
	}
	var pid int
	err = pool.QueryRow(ctx, `SELECT pid FROM `+b.t("locks")+` l WHERE id = $1 AND `+live, id).Scan(&pid)
	if errors.Is(err, pgx.ErrNoRows) {
		locks, lerr := b.currentLocks(ctx)
		if lerr != nil {
			return lerr
		}
		if len(locks) == 0 {
			return fmt.Errorf(`backend "pg" (%s): no lock with ID %s: the state is not locked`, b.where, id)
		}
		var held []string
		for _, li := range locks {
			held = append(held, lockLine(li))
		}
		return fmt.Errorf(`backend "pg" (%s): no lock with ID %s; the locks held are: %s`, b.where, id, joinLines(held))
	}
	if err != nil {
		return b.fail("force-unlock", err)
	}
	// The record first: a holder whose connection ends looks for it to
	// tell a force-unlock from a lost connection.
	if _, err := pool.Exec(ctx, `DELETE FROM `+b.t("locks")+` WHERE id = $1`, id); err != nil {
		return b.fail("force-unlock", err)
	}
	var ok bool
	if err := pool.QueryRow(ctx, `SELECT pg_terminate_backend($1, 30000)`, pid).Scan(&ok); err != nil {
		return b.fail("force-unlock (end the holder's connection)", err)
	}
	return nil
}

func lockLine(li state.LockInfo) string {
	what := "the whole state"
	if len(li.Experiments) > 0 {
		what = fmt.Sprintf("experiments %v", li.Experiments)
	}
	return fmt.Sprintf("%s by %s (pid %d, %s, since %s, lock ID %s)", what, li.Operation, li.PID, li.Who, li.Created.Format(time.RFC3339), li.ID)
}

func joinLines(s []string) string {
	out := ""
	for i, l := range s {
		if i > 0 {
			out += "; "
		}
		out += l
	}
	return out
}
