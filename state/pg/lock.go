package pg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trialform/trialform/internal/duration"
	"github.com/trialform/trialform/internal/netretry"

	"github.com/trialform/trialform/state"
)

// held is a lock this client holds: its connection holds the advisory
// locks.
type held struct {
	info  state.LockInfo
	whole bool
	claim bool // the controller claim (state.Claimer), not a state lock

	mu   sync.Mutex
	conn *pgx.Conn // nil while the lock is lost and not yet taken again
	// lostTo is who took the lock after it was lost with its connection
	// (nil: nobody): this client no longer holds it, and its saves are
	// refused.
	lostTo *state.LockInfo
	// forced: the lock was released with force-unlock while this client
	// held it; it is not taken again, and its saves are refused.
	forced bool
	stop   chan struct{}
	done   chan struct{}
}

// keepAlive checks h's connection every few seconds; when it is gone (the
// server restarted, the network failed) the advisory locks went with it,
// and it takes them again, with the same lock ID, as soon as it can. For
// retakeGrace after the server started, nobody else can take a lock lost
// in the restart (tryLock); if someone did take it (after the grace, or
// when the connection alone was lost), the holder says so and stops: it
// no longer holds the lock. A save while its lock is lost is refused
// (checkHeld): retried while the lock may still be taken again, refused
// for good once someone else has it.
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
			h.mu.Lock()
			h.forced = true
			h.mu.Unlock()
			b.say(fmt.Sprintf("state backend pg: the lock %s (%s) was released by someone else (force-unlock?): this command no longer holds it, "+
				"and its saves and metric points of what it locked are refused from now on", h.info.ID, lockScope(h)))
			return
		}
		var other *state.LockedError
		if err == nil && b.beforeRetake != nil {
			b.beforeRetake()
		}
		if err == nil {
			// The same lock ID, its record taken over (never deleted
			// first: in between, a waiter would see the lock free).
			again, other, err = b.tryLock(ctx, h.info)
		}
		cancel()
		if err == nil && again != nil {
			h.mu.Lock()
			h.conn = again.conn
			h.mu.Unlock()
		}
		if err == nil && other != nil && other.Info.ID != "" && other.Info.ID != h.info.ID {
			// Someone else took it meanwhile (after the grace a lost lock
			// has): this command no longer holds it, and says so.
			h.mu.Lock()
			h.lostTo = &other.Info
			h.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if pool, err := b.getPool(ctx); err == nil {
				pool.Exec(ctx, `DELETE FROM `+b.t("locks")+` l WHERE id = $1 AND NOT `+live, h.info.ID)
			}
			cancel()
			b.say(fmt.Sprintf("state backend pg: the lock %s (%s) was lost with its connection (the server restarted or the network failed) and %s took it "+
				"before this command could take it again: this command no longer holds it, and its saves are refused", h.info.ID, lockScope(h), lockLine(other.Info)))
			return
		}
	}
}

// checkHeld, in a save's or a Replace's transaction (what names it for
// the message), refuses it when a lock this client holds is lost: being
// taken again after a server restart (an Unavailable error, which apply
// retries), taken by someone else, or released with force-unlock (for
// good).
func (b *Backend) checkHeld(ctx context.Context, tx pgx.Tx, what string) error {
	b.lockMu.Lock()
	var hs []*held
	for h := range b.held {
		hs = append(hs, h)
	}
	b.lockMu.Unlock()
	if len(hs) == 0 {
		return nil
	}
	var ids []string
	for _, h := range hs {
		ids = append(ids, h.info.ID)
	}
	rows, err := tx.Query(ctx, `SELECT id FROM `+b.t("locks")+` l WHERE id = ANY($1) AND `+live, ids)
	if err != nil {
		return b.fail(what+" (check the lock)", err)
	}
	ok := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return b.fail(what+" (check the lock)", err)
		}
		ok[id] = true
	}
	if err := rows.Err(); err != nil {
		return b.fail(what+" (check the lock)", err)
	}
	for _, h := range hs {
		if ok[h.info.ID] {
			continue
		}
		if err := b.lockGone(h, what); err != nil {
			return err
		}
		return state.Unavailable(fmt.Errorf(`%s: backend "pg" (%s): the lock %s (%s) was lost with its connection (the server restarted?) and is being taken again; `+
			`not writing without it`, what, b.where, h.info.ID, lockScope(h)))
	}
	return nil
}

// lockGone is the refusal, for good, of a write under h when h is no
// longer this client's: someone else took it after it was lost, or it
// was released with force-unlock; nil otherwise.
func (b *Backend) lockGone(h *held, what string) error {
	h.mu.Lock()
	to, forced := h.lostTo, h.forced
	h.mu.Unlock()
	switch {
	case to != nil:
		return fmt.Errorf(`%s: backend "pg" (%s): this command no longer holds the lock %s (%s): it was lost with its connection and %s took it; not writing. `+
			`Run the command again when that lock is released`, what, b.where, h.info.ID, lockScope(h), lockLine(*to))
	case forced:
		return fmt.Errorf(`%s: backend "pg" (%s): this command no longer holds the lock %s (%s): someone released it with force-unlock; not writing. `+
			`Run the command again (it waits for whoever holds the lock now)`, what, b.where, h.info.ID, lockScope(h))
	}
	return nil
}

// checkMetrics refuses metric points of an experiment whose lock this
// client held and no longer holds (taken by someone else after it was
// lost, or released with force-unlock): whoever holds it now reads those
// trials' points again from where they run, and may have removed the
// experiment's series. Points are kept while a lock lost in a restart is
// being taken again: they are the holder's own trials', written once
// however often they are sent, and nobody else can take the lock
// meanwhile. It reads only what keepAlive found, no query.
func (b *Backend) checkMetrics(batches []state.MetricsBatch) error {
	b.lockMu.Lock()
	var hs []*held
	for h := range b.held {
		hs = append(hs, h)
	}
	b.lockMu.Unlock()
	for _, h := range hs {
		if !state.LockCovers(h.whole, h.info.Experiments, batches) {
			continue
		}
		if err := b.lockGone(h, "append metric points"); err != nil {
			return err
		}
	}
	return nil
}

// lockScope names what h locks, for messages.
func lockScope(h *held) string {
	if h.whole {
		return state.LockedWhat(nil)
	}
	return state.LockedWhat(h.info.Experiments)
}

// keepAliveEvery is how often a held lock's connection is checked.
var keepAliveEvery = 5 * time.Second

// retakeGrace is how long after the server started a lock lost in its
// restart is kept for its holder: long enough for the holder's keepAlive
// to notice and take it again; a holder that died with the restart
// delays others that long.
// (b.grace, for tests, replaces it.)
func (b *Backend) retakeGrace() time.Duration {
	if b.grace > 0 {
		return b.grace
	}
	return max(30*time.Second, 6*keepAliveEvery)
}

// scope is the experiments this client's locks cover: nil when it holds
// the whole state, or no lock (a save then checks the whole state).
func (b *Backend) scope() map[string]bool {
	b.lockMu.Lock()
	defer b.lockMu.Unlock()
	var out map[string]bool
	for h := range b.held {
		if h.claim {
			continue
		}
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
	var locked *state.LockedError // the holder last met
	// While the server cannot be reached (restarting, a dropped
	// connection) the wait goes on until the timeout, trying again with a
	// short backoff: said once when it goes away, once when it is back.
	var down time.Time     // since when it cannot be reached; zero: it can
	var unreachable error  // its last error
	var away time.Duration // how long it could not be reached, in all
	tries := 0             // tries since it went away
	for {
		h, l, err := b.tryLock(ctx, info)
		if err != nil && (timeout <= 0 || !state.IsUnavailable(err)) {
			return nil, err
		}
		if err != nil {
			if down.IsZero() {
				down, tries = time.Now(), 0
				b.say(fmt.Sprintf("state backend pg: the server (%s) cannot be reached while waiting for the lock of %s (%v); retrying until the lock timeout (%s left)",
					b.where, state.LockedWhat(names), rootCause(err), duration.Format(max(0, time.Until(deadline)).Round(time.Second))))
			}
			unreachable = err
			tries++
		} else if !down.IsZero() {
			away += time.Since(down)
			b.say(fmt.Sprintf("state backend pg: the server (%s) is back after %s; still waiting for the lock of %s", b.where,
				duration.Format(time.Since(down).Round(time.Second)), state.LockedWhat(names)))
			down = time.Time{}
		}
		if err == nil {
			locked = l
			if l != nil {
				b.waiting.Store(l)
			}
		}
		if h != nil {
			b.lockMu.Lock()
			b.held[h] = true
			b.lockMu.Unlock()
			h.stop, h.done = make(chan struct{}), make(chan struct{})
			go b.keepAlive(h)
			return state.NewLock(info, func() error { return b.unlock(h) }), nil
		}
		if timeout <= 0 || !time.Now().Before(deadline) || ctx.Err() != nil {
			var end error
			switch {
			case !down.IsZero() && locked != nil:
				end = fmt.Errorf("%w; and then the server could not be reached for the last %s: %w", locked, duration.Format(time.Since(down).Round(time.Second)), unreachable)
			case !down.IsZero():
				end = fmt.Errorf("the server could not be reached for the last %s of the wait, so who holds the lock is not known: %w", duration.Format(time.Since(down).Round(time.Second)), unreachable)
			case away > 0:
				end = fmt.Errorf("%w (the server could not be reached for %s of the wait)", locked, duration.Format(away.Round(time.Second)))
			default:
				end = locked
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%v while waiting for the lock: %w", ctx.Err(), end)
			}
			if timeout > 0 {
				return nil, state.GaveUp(timeout, end)
			}
			return nil, end
		}
		pause := min(wait, time.Until(deadline))
		if !down.IsZero() {
			pause = min(netretry.Policy{Base: 200 * time.Millisecond, Max: 2 * time.Second}.Backoff(tries), time.Until(deadline))
		}
		if netretry.Sleep(ctx, pause) != nil {
			continue // the loop ends it, naming the holder
		}
		if down.IsZero() {
			wait = min(wait*2, 2*time.Second)
		}
	}
}

// say tells the person running the command (Env.Report), if anyone.
func (b *Backend) say(msg string) {
	if b.report != nil {
		b.report(msg)
	}
}

// rootCause is the driver's error under the backend's (the connect
// error's own text, without the backend's where and hint).
func rootCause(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return errors.New(e.Msg)
	}
	return err
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
	claim := state.IsClaim(info)
	var got bool
	if whole {
		err = conn.QueryRow(cctx, `SELECT pg_try_advisory_lock($1)`, b.stateKey).Scan(&got)
	} else if claim {
		// Apart from the state's locks: it excludes another claim only.
		err = conn.QueryRow(cctx, `SELECT pg_try_advisory_lock($1)`, key("claim", b.schema)).Scan(&got)
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
	if !got && claim {
		return nil, b.claimHolder(cctx), nil
	}
	if !got {
		return nil, b.holder(cctx, info.Experiments), nil
	}
	exps := info.Experiments
	if exps == nil {
		exps = []string{}
	}
	// A lock lost when the server restarted a moment ago is still its
	// holder's: it is taking it again (keepAlive). The advisory lock
	// alone would let a waiter take it first, and two commands would
	// run the experiment each thinking it holds it.
	var lost string
	err = conn.QueryRow(cctx, `SELECT info::text FROM `+b.t("locks")+` l WHERE id <> $1 AND NOT `+live+`
		AND l.backend_start < pg_postmaster_start_time() AND now() - pg_postmaster_start_time() < $2 * interval '1 millisecond'
		AND (($3 OR l.whole) AND NOT $5 AND NOT l.experiments @> $6::text[] OR l.experiments && $4::text[]) ORDER BY whole DESC, (info->>'created') LIMIT 1`,
		info.ID, b.retakeGrace().Milliseconds(), whole, exps, claim, []string{state.ClaimName}).Scan(&lost)
	if err == nil {
		var li state.LockInfo
		json.Unmarshal([]byte(lost), &li)
		conn.Exec(cctx, `SELECT pg_advisory_unlock_all()`)
		return nil, &state.LockedError{Info: li}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, b.fail("take the lock", err)
	}
	js, _ := json.Marshal(info)
	// ON CONFLICT: the holder taking its lost lock again.
	if _, err := conn.Exec(cctx, `INSERT INTO `+b.t("locks")+` (id, whole, experiments, info, pid, backend_start)
		SELECT $1, $2, $3, $4::text::jsonb, pg_backend_pid(), backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()
		ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, backend_start = excluded.backend_start`,
		info.ID, whole, exps, string(js)); err != nil {
		return nil, nil, b.fail("record the lock", err)
	}
	ok = true
	return &held{info: info, whole: whole, claim: claim, conn: conn}, nil, nil
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
	rows, err := pool.Query(ctx, `SELECT info::text FROM `+b.t("locks")+` l WHERE `+live+` AND NOT l.experiments @> $1::text[] ORDER BY whole DESC, (info->>'created'), id`,
		[]string{state.ClaimName})
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
	return fmt.Sprintf("%s by %s (pid %d, %s, since %s, lock ID %s)", state.LockedWhat(li.Experiments), li.Operation, li.PID, li.Who, li.Created.Format(time.RFC3339), li.ID)
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

// Claim takes the controller claim (state.Claimer): an advisory lock of
// its own (not the state's: people's locks are not excluded), recorded
// and kept alive like a lock, under the name state.ClaimName. A holder
// that dies loses it with its session; one whose connection is lost
// takes it again (the grace after a server restart is the locks').
func (b *Backend) Claim(ctx context.Context, operation, version string) (*state.Lock, error) {
	info := state.NewLockInfo(operation, version, b.where)
	info.Backend = Name
	info.Experiments = []string{state.ClaimName}
	h, l, err := b.tryLock(ctx, info)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, l
	}
	b.lockMu.Lock()
	b.held[h] = true
	b.lockMu.Unlock()
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go b.keepAlive(h)
	return state.NewClaimLock(info, func() error { return b.unlock(h) }, func() error {
		if err := b.lockGone(h, "the controller claim"); err != nil {
			return err
		}
		h.mu.Lock()
		conn := h.conn
		h.mu.Unlock()
		if conn == nil {
			return state.Unavailable(fmt.Errorf(`backend "pg" (%s): the controller claim %s was lost with its connection (the server restarted?) and is being taken again`, b.where, h.info.ID))
		}
		return nil
	}), nil
}

// CurrentClaim returns the controller claim's holder, nil when nobody
// holds it.
func (b *Backend) CurrentClaim() (*state.LockInfo, error) {
	ctx, cancel := background()
	defer cancel()
	le := b.claimHolderOnce(ctx)
	if le.err != nil {
		return nil, le.err
	}
	return le.info, nil
}

type claimRead struct {
	info *state.LockInfo
	err  error
}

func (b *Backend) claimHolderOnce(ctx context.Context) claimRead {
	pool, err := b.getPool(ctx)
	if err != nil {
		return claimRead{err: err}
	}
	var js []byte
	err = pool.QueryRow(ctx, `SELECT info::text FROM `+b.t("locks")+` l WHERE `+live+` AND l.experiments @> $1::text[] ORDER BY (info->>'created') LIMIT 1`,
		[]string{state.ClaimName}).Scan(&js)
	if errors.Is(err, pgx.ErrNoRows) {
		return claimRead{}
	}
	if err != nil {
		return claimRead{err: b.fail("read the controller claim", err)}
	}
	var li state.LockInfo
	if err := json.Unmarshal(js, &li); err != nil {
		return claimRead{err: fmt.Errorf(`backend "pg" (%s): the controller claim's record is unreadable: %v`, b.where, err)}
	}
	return claimRead{info: &li}
}

// claimHolder is the LockedError naming the claim's holder: its record
// comes just after its advisory lock, so a moment without one is tried
// again (up to 5 s, as holder).
func (b *Backend) claimHolder(ctx context.Context) *state.LockedError {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if r := b.claimHolderOnce(ctx); r.info != nil {
			return &state.LockedError{Info: *r.info}
		}
		select {
		case <-ctx.Done():
			return &state.LockedError{}
		case <-time.After(50 * time.Millisecond):
		}
	}
	return &state.LockedError{}
}

var _ state.Claimer = (*Backend)(nil)
