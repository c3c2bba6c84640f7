package pg

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trialform/trialform/internal/pgtest"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendreg"
	"github.com/trialform/trialform/state/backendtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(backendtest.HoldEnv) != "" {
		// A lock holder of the suite (ExperimentLockKilledHolder).
		b, err := Open(Settings{ConnStr: os.Getenv("PGSTATE_TEST_CONN")}, backendreg.Env{})
		if err != nil {
			panic(err)
		}
		backendtest.Hold(b)
	}
	// Held locks' connections are checked often, so the suite's cases
	// (force-unlock, a server restart) meet the check.
	keepAliveEvery = 100 * time.Millisecond
	pgtest.Main(m)
}

// open opens a client of the database conn (schema "trialform").
func open(t testing.TB, conn string) *Backend {
	t.Helper()
	b, err := Open(Settings{ConnStr: conn}, backendreg.Env{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// pgStore is a fresh database with its faults: what a person (or a
// program that is not trialform) does to its rows.
func pgStore(t *testing.T) *backendtest.Store {
	conn := pgtest.DB(t)
	srv := pgtest.Shared(t)
	db := dbName(conn)
	run := func(t *testing.T, sql string, args ...any) {
		t.Helper()
		if err := srv.Exec(context.Background(), db, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	return &backendtest.Store{
		Open: func() state.Backend { return open(t, conn) },
		// The row of the trial change n added, edited by hand into
		// something trialform did not write.
		CorruptChange: func(t *testing.T, n int) {
			run(t, `UPDATE trialform.trials SET body = '{"id": 7, "seq": "x"}' WHERE serial = $1`, n+1)
		},
		Holder: func(t *testing.T) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "PGSTATE_TEST_CONN="+conn)
			return cmd
		},
		// The state row deleted.
		LoseState: func(t *testing.T) { run(t, `DELETE FROM trialform.state`) },
	}
}

func dbName(conn string) string {
	var db string
	for i := len(conn) - 1; i >= 0; i-- {
		if conn[i] == '/' {
			db = conn[i+1:]
			break
		}
	}
	for i := range db {
		if db[i] == '?' {
			return db[:i]
		}
	}
	return db
}

func TestPgBackend(t *testing.T) {
	backendtest.Run(t, pgStore)
}

// A transaction killed midway (its connection ended before the commit,
// as when the client is killed): nothing of the change is there, the
// save says so, and the next save goes on from the state before it.
func TestKilledTransactionLeavesNothing(t *testing.T) {
	conn := pgtest.DB(t)
	b := open(t, conn)
	s := backendtest.Sample(3)
	if err := b.Save(s); err != nil {
		t.Fatal(err)
	}
	before := s.Clone()
	s.Experiments["mnist"].Trials["t0000"].Attempts = 9
	s.Experiments["mnist"].Trials["t0100"] = backendtest.Trial(100)
	s.Experiments["cifar"].Paused = true
	b.beforeCommit = func(ctx context.Context, tx pgx.Tx) error {
		// The server ends this transaction's connection.
		_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
		return err
	}
	err := b.Save(s)
	if err == nil {
		t.Fatal("a save whose connection was ended before the commit succeeded")
	}
	if !strings.Contains(err.Error(), `backend "pg"`) {
		t.Fatalf("the error does not name the backend: %v", err)
	}
	b.beforeCommit = nil
	got, err := open(t, conn).Load()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, before) {
		t.Fatalf("after a killed transaction the state is not the one before it: serial %d, t0000 attempts %d", got.Serial, got.Experiments["mnist"].Trials["t0000"].Attempts)
	}
	// The writer reloads and saves the change again.
	again, err := b.Load()
	if err != nil {
		t.Fatal(err)
	}
	again.Experiments["mnist"].Trials["t0100"] = backendtest.Trial(100)
	if err := b.Save(again); err != nil {
		t.Fatal(err)
	}
	if got, _ := open(t, conn).Load(); got.Experiments["mnist"].Trials["t0100"] == nil || got.Serial != before.Serial+1 {
		t.Fatalf("the save after the killed one: serial %d", got.Serial)
	}
}

// Errors name the backend, the server and the database, and what to do;
// never the password.
func TestErrorsNameTheServerNotThePassword(t *testing.T) {
	srv := pgtest.Shared(t)
	conn := pgtest.DB(t)
	db := dbName(conn)
	for name, c := range map[string]string{
		"a wrong password": strings.Replace(conn, srv.Password, "s3cret-wrong-pw", 1),
		"no server":        strings.Replace(conn, fmt.Sprintf(":%d/", srv.Port), ":1/", 1),
	} {
		b := open(t, c)
		_, err := b.Load()
		if err == nil {
			t.Fatalf("%s: loaded", name)
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cret-wrong-pw") || strings.Contains(msg, srv.Password) {
			t.Fatalf("%s: the error shows the password: %s", name, msg)
		}
		if !strings.Contains(msg, `backend "pg"`) || !strings.Contains(msg, "database "+db) || !strings.Contains(msg, "127.0.0.1:") {
			t.Fatalf("%s: the error does not name the backend, server and database: %s", name, msg)
		}
		if name == "a wrong password" && !strings.Contains(msg, "password") {
			t.Fatalf("%s: the error does not say to check the password: %s", name, msg)
		}
	}
	// A connection string that cannot be parsed is not repeated.
	if _, err := Open(Settings{ConnStr: "postgres://u:s3cret-pw@host:notaport/db"}, backendreg.Env{}); err == nil || strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("a bad connection string: %v", err)
	}
}

// A password with an @ not percent-encoded in a URL conn_str: pgx took
// what follows its @ as the host, so every message (init's, the
// controller's log, the backend's location) showed the password's tail
// ("ETpw@127.0.0.1:1 database db ...: lookup ETpw@127.0.0.1: no such
// host"). It is refused at open, with what to do and none of the host.
func TestPasswordWithAnAtIsNotShown(t *testing.T) {
	for _, c := range []string{
		"postgres://u:S3CR@ETpw@127.0.0.1:1/db",
		"postgresql://u:S3CR@ETpw@127.0.0.1:1,127.0.0.2:1/db",
	} {
		b, err := Open(Settings{ConnStr: c}, backendreg.Env{})
		if err == nil {
			t.Errorf("%s: opened, at %s", c, b.Location())
			continue
		}
		if strings.Contains(err.Error(), "ETpw") || strings.Contains(err.Error(), "S3CR") || !strings.Contains(err.Error(), "%40") {
			t.Errorf("%s: want a refusal that says to write @ as %%40 and shows no part of the password: %v", c, err)
		}
	}
}

// Without conn_str the PG* variables (as libpq reads them) name the
// server; two schemas of one database hold two states.
func TestEnvironmentAndSchemas(t *testing.T) {
	srv := pgtest.Shared(t)
	db := dbName(pgtest.DB(t))
	env := srv.Env(db)
	getenv := func(k string) string { return env[k] }
	var clients []*Backend
	for _, schema := range []string{"", "team_b"} {
		b, err := Open(Settings{SchemaName: schema}, backendreg.Env{Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		clients = append(clients, b)
	}
	a, bb := clients[0], clients[1]
	if err := a.Save(backendtest.Sample(2)); err != nil {
		t.Fatal(err)
	}
	if ok, err := bb.Exists(); err != nil || ok {
		t.Fatalf("schema team_b sees the default schema's state: %v, %v", ok, err)
	}
	if !strings.Contains(bb.Location(), "schema team_b") {
		t.Fatalf("location %q does not name the schema", bb.Location())
	}
	if _, err := Open(Settings{SchemaName: "Bad-Name"}, backendreg.Env{}); err == nil {
		t.Fatal("a schema name that needs quoting was accepted")
	}
	// A schema migrated by a newer trialform is refused, not written.
	if err := srv.Exec(context.Background(), db, `INSERT INTO team_b.schema_migrations (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	nb, _ := Open(Settings{SchemaName: "team_b"}, backendreg.Env{Getenv: getenv})
	defer nb.Close()
	if _, err := nb.Load(); err == nil || !strings.Contains(err.Error(), "newer trialform") {
		t.Fatalf("a newer schema: %v", err)
	}
}

// Registration decodes into Settings and opens the backend.
func TestRegistration(t *testing.T) {
	k := Registration()
	cfg := k.Config().(*Settings)
	cfg.ConnStr = pgtest.DB(t)
	b, err := k.Open(cfg, backendreg.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.(*Backend).Close()
	if b.Name() != "pg" || k.Name != "pg" {
		t.Fatalf("name %q", b.Name())
	}
	if ok, err := b.Exists(); err != nil || ok {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
}

// The server goes away and comes back: a held lock went with its
// connection and is taken again (same ID) by its holder, the holder saves
// again, and the state is whole.
func TestServerRestart(t *testing.T) {
	srv := pgtest.NewServer(t)
	conn := srv.NewDB(t)
	a := open(t, conn)
	s := backendtest.Sample(5)
	if err := a.Save(s); err != nil {
		t.Fatal(err)
	}
	lk, err := a.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	srv.Stop(t)
	s.Experiments["mnist"].Trials["t0000"].Attempts++
	if err := a.Save(s); err == nil {
		t.Fatal("a save with the server stopped succeeded")
	} else if !strings.Contains(err.Error(), `backend "pg"`) || strings.Contains(err.Error(), srv.Password) {
		t.Fatalf("the error while the server is down: %v", err)
	}
	srv.Start(t)
	// The lock is held again by its holder (waited for, not timed).
	b := open(t, conn)
	for {
		locks, err := b.CurrentLocks()
		if err == nil && len(locks) == 1 && locks[0].ID == lk.Info().ID {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := b.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0); err == nil {
		t.Fatal("another client took the experiment its holder took again")
	}
	again, err := a.Load()
	if err != nil {
		t.Fatal(err)
	}
	again.Experiments["mnist"].Trials["t0000"].Attempts++
	if err := a.Save(again); err != nil {
		t.Fatalf("a save after the restart: %v", err)
	}
	if got, err := b.Load(); err != nil || got.Experiments["mnist"].Trials["t0000"].Attempts != 2 || got.Serial != 2 {
		t.Fatalf("after the restart: %v, %v", got, err)
	}
}

// A state trialform wrote is decoded in one document (the state
// package's decoder), not row by row; a row edited by hand is named.
func TestLoadDecodesOneDocument(t *testing.T) {
	conn := pgtest.DB(t)
	s := backendtest.Sample(20)
	s.Experiments["empty"] = &state.Experiment{Name: "empty", Trials: map[string]*state.Trial{}}
	if err := open(t, conn).Save(s); err != nil {
		t.Fatal(err)
	}
	before := slowLoads.Load()
	got, err := open(t, conn).Load()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatal("the state loaded is not the one saved")
	}
	if n := slowLoads.Load() - before; n != 0 {
		t.Fatalf("%d loads decoded row by row", n)
	}
	if err := pgtest.Shared(t).Exec(context.Background(), dbName(conn), `UPDATE trialform.trials SET body = jsonb_set(body, '{id}', '"t9999"') WHERE id = 't0003'`); err != nil {
		t.Fatal(err)
	}
	_, err = open(t, conn).Load()
	if err == nil || !strings.Contains(err.Error(), `trial "t0003" of experiment "mnist" in table trialform.trials`) {
		t.Fatalf("a row edited by hand: %v", err)
	}
}

// A row whose experiment name or trial id trialform never writes (a
// path: the platforms and the metric series name directories and files
// by them), well-formed otherwise, is reported, not read as the state.
func TestRowWithAPathAsNameIsReported(t *testing.T) {
	conn := pgtest.DB(t)
	if err := open(t, conn).Save(backendtest.Sample(4)); err != nil {
		t.Fatal(err)
	}
	db := pgtest.Shared(t)
	if err := db.Exec(context.Background(), dbName(conn), `UPDATE trialform.trials SET id = '../../../tmp/x', body = jsonb_set(body, '{id}', '"../../../tmp/x"') WHERE id = 't0001'`); err != nil {
		t.Fatal(err)
	}
	_, err := open(t, conn).Load()
	if err == nil || !strings.Contains(err.Error(), `the row of trial "../../../tmp/x" of experiment "mnist" in table trialform.trials cannot be read as trialform wrote it: its id cannot name a directory`) {
		t.Fatalf("a trial id that is a path: %v", err)
	}
	if err := db.Exec(context.Background(), dbName(conn), `UPDATE trialform.trials SET id = 't0001', body = jsonb_set(body, '{id}', '"t0001"') WHERE id = '../../../tmp/x'`); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, conn).Load(); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(context.Background(), dbName(conn), `UPDATE trialform.experiments SET name = '.evil', head = jsonb_set(head, '{name}', '".evil"') WHERE name = 'mnist'; UPDATE trialform.trials SET experiment = '.evil'`); err != nil {
		t.Fatal(err)
	}
	_, err = open(t, conn).Load()
	if err == nil || !strings.Contains(err.Error(), `the row of experiment ".evil" in table trialform.experiments cannot be read as trialform wrote it: its name cannot name a directory`) {
		t.Fatalf("an experiment name with a leading dot: %v", err)
	}
}

// An Unlock has released the lock when it returns: another client's
// Lock that follows at once gets it. The advisory locks used to go with
// the connection's end, which the server finishes after the client has
// closed its side, so a Lock right after an Unlock could find the lock
// still held and its record gone ("its lock information could not be
// read"; TestPgBackend/LockContention failed so on a clean CI run).
func TestUnlockReleasesAtOnce(t *testing.T) {
	conn := pgtest.DB(t)
	a, b := open(t, conn), open(t, conn)
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		la, err := a.Lock(ctx, "apply", "v", 0)
		if err != nil {
			t.Fatalf("round %d: a: %v", i, err)
		}
		if err := la.Unlock(); err != nil {
			t.Fatal(err)
		}
		lb, err := b.LockExperiments(ctx, []string{"x"}, "apply", "v", 0)
		if err != nil {
			t.Fatalf("round %d: right after a's Unlock: %v", i, err)
		}
		if err := lb.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReleasedLockIsNotListed: between releasing its advisory locks and
// deleting its record, an unlocking client's record must not read as a
// live lock (a test that stopped the controller in that moment saw
// "held by controller" while any client could take the lock).
func TestReleasedLockIsNotListed(t *testing.T) {
	conn := pgtest.DB(t)
	a, probe := open(t, conn), open(t, conn)
	ctx := context.Background()
	l, err := a.LockExperiments(ctx, []string{"x"}, "controller", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if locks, err := probe.currentLocks(ctx); err != nil || len(locks) != 1 {
		t.Fatalf("while held: %v, %v", locks, err)
	}
	// Unlock's first step, alone. Its keep-alive stops first, as Unlock
	// stops it: it pings the same connection (every 100 ms here), and
	// a pgx connection is not for two goroutines at once (a race -race
	// caught in CI). A new stop and a closed done let Unlock end it again.
	a.lockMu.Lock()
	for h := range a.held {
		close(h.stop)
		<-h.done
		h.stop, h.done = make(chan struct{}), make(chan struct{})
		close(h.done)
		h.mu.Lock()
		if _, err := h.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
			t.Fatal(err)
		}
		h.mu.Unlock()
	}
	a.lockMu.Unlock()
	if locks, err := probe.currentLocks(ctx); err != nil || len(locks) != 0 {
		t.Fatalf("after its advisory locks were released, the record still reads as a lock: %v, %v", locks, err)
	}
	if _, err := probe.LockExperiments(ctx, []string{"x"}, "apply", "v", 0); err != nil {
		t.Fatalf("the released lock cannot be taken: %v", err)
	}
}

// TestForceUnlockedHolderIsTold: a holder whose lock someone removed with
// force-unlock while it still ran says so, as the kubernetes backend's
// does: it went on without a word, so its person never learned that a
// teammate took the experiment.
func TestForceUnlockedHolderIsTold(t *testing.T) {
	conn := pgtest.DB(t)
	told := make(chan string, 16)
	a, err := Open(Settings{ConnStr: conn}, backendreg.Env{Report: func(msg string) { told <- msg }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	b := open(t, conn)
	if err := a.Save(backendtest.Sample(2)); err != nil {
		t.Fatal(err)
	}
	lk, err := a.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	if err := b.ForceUnlock(lk.Info().ID); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-told:
		for _, want := range []string{"state backend pg", lk.Info().ID, "experiment mnist", "force-unlock", "no longer holds it"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the holder was told %q, without %q", msg, want)
			}
		}
	case <-time.After(2 * time.Minute): // the check runs every 100 ms here
		t.Fatal("the holder of a force-unlocked lock said nothing")
	}
	// Its writes are refused for good, saying why (they were refused as
	// "the lock is being taken again", retried by apply for 2 minutes).
	cur, err := a.Load()
	if err != nil {
		t.Fatal(err)
	}
	cur.Experiments["mnist"].Trials["t0000"].Attempts++
	err = a.Save(cur)
	if err == nil || state.IsUnavailable(err) || !strings.Contains(err.Error(), "force-unlock") || !strings.Contains(err.Error(), "no longer holds the lock") {
		t.Errorf("the force-unlocked holder's save: %v, want it refused for good, naming force-unlock", err)
	}
	err = a.AppendMetrics("mnist", "t0000", []state.MetricPoint{{Type: "PERIODICAL", Sequence: 900, Value: []byte("0.5")}})
	if err == nil || !strings.Contains(err.Error(), "force-unlock") {
		t.Errorf("the force-unlocked holder's metric points: %v, want them refused", err)
	}
}

// TestSaveOnAClosedConnectionIsUnavailable: when the server went away
// during a save's earlier calls (a crash or a restart ends its
// connections), the driver has closed the connection and the commit fails
// with "conn closed" before it is sent. That is the server being away, as
// a refused connection is: apply retries it (2 minutes) and nothing of the
// save was written. It was taken for another error: `apply -wait` stopped
// at once ("save the state (commit): conn closed") when PostgreSQL
// restarted under it, where it retries a refused connection.
func TestSaveOnAClosedConnectionIsUnavailable(t *testing.T) {
	conn := pgtest.DB(t)
	srv := pgtest.Shared(t)
	a, b := open(t, conn), open(t, conn)
	s := backendtest.Sample(5)
	if err := a.Save(s); err != nil {
		t.Fatal(err)
	}
	a.beforeCommit = func(ctx context.Context, tx pgx.Tx) error {
		// The server ends the save's connection (and waits until it has)...
		if err := srv.Exec(ctx, dbName(conn), `SELECT pg_terminate_backend($1, 30000)`, int(tx.Conn().PgConn().PID())); err != nil {
			t.Error(err)
		}
		// ...and a call the save made meanwhile met the end: the driver
		// closed the connection (its error is not what this test is about).
		_ = tx.Conn().Ping(ctx)
		return nil
	}
	s.Experiments["mnist"].Trials["t0000"].Attempts++
	err := a.Save(s)
	if !state.IsUnavailable(err) {
		t.Fatalf("a save whose connection the server ended: %v, want the server reported as unavailable (retried)", err)
	}
	got, err := b.Load()
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Experiments["mnist"].Trials["t0000"].Attempts; n != 1 || got.Serial != 1 {
		t.Fatalf("the failed save wrote something: attempts %d, serial %d", n, got.Serial)
	}
}

// TestLockWaitOutlivesAServerRestart: B waits for an experiment A holds
// (-lock-timeout=2m) and the server restarts for a moment during the
// wait. B went on failing at once ("connect: ... connection refused")
// though it had asked to wait 2 minutes and the server was back at once.
// Now B says once that the server cannot be reached, tries again, does
// not take the lock A still holds (A takes it again after the restart),
// and gets it when A releases it.
func TestLockWaitOutlivesAServerRestart(t *testing.T) {
	srv := pgtest.NewServer(t)
	conn := srv.NewDB(t)
	a := open(t, conn)
	told := make(chan string, 16)
	b, err := Open(Settings{ConnStr: conn}, backendreg.Env{Report: func(msg string) { told <- msg }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	s := backendtest.Sample(5)
	if err := a.Save(s); err != nil {
		t.Fatal(err)
	}
	lk, err := a.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	// B is waiting (its first try named A) ...
	got := waitInBackground(t, b, func() (*state.Lock, error) {
		return b.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 2*time.Minute)
	})
	srv.Stop(t)
	select {
	case msg := <-told:
		for _, want := range []string{"state backend pg", "cannot be reached", "retrying"} {
			if !strings.Contains(msg, want) {
				t.Errorf("B was told %q, without %q", msg, want)
			}
		}
	case r := <-got:
		srv.Start(t)
		t.Fatalf("the lock wait ended when the server went away for a moment: %v, %v", r.lk, r.err)
	}
	srv.Start(t)
	// A holds its lock again, and B still waits.
	waitFor(t, func() bool {
		locks, err := b.CurrentLocks()
		return err == nil && len(locks) == 1 && locks[0].ID == lk.Info().ID
	})
	select {
	case r := <-got:
		t.Fatalf("B took the lock A held again: %v, %v", r.lk, r.err)
	default:
	}
	again, err := a.Load()
	if err != nil {
		t.Fatal(err)
	}
	again.Experiments["mnist"].Trials["t0000"].Attempts++
	if err := a.Save(again); err != nil {
		t.Fatalf("A's save under its lock, taken again: %v", err)
	}
	if err := lk.Unlock(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("B, once A released the lock: %v", r.err)
	}
	defer r.lk.Unlock()
	select {
	case msg := <-told:
		if !strings.Contains(msg, "back") {
			t.Errorf("B was told %q after the server came back", msg)
		}
	default:
		t.Error("B was not told that the server was back")
	}
}

// waitFor polls cond (every 20 ms, no deadline but the test's).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRestartDoesNotHandALostLockToAWaiter: the dangerous interleaving.
// A's lock (an advisory lock of its session) ends with the restart, and
// B, waiting for it, tries before A has taken it again: the advisory lock
// alone is free, and B took it while A went on running the experiment.
// Now B is refused (naming A) while A may still take it again, A's saves
// are refused while its lock is lost (retried), and B gets the lock when
// A releases it.
func TestRestartDoesNotHandALostLockToAWaiter(t *testing.T) {
	srv := pgtest.NewServer(t)
	conn := srv.NewDB(t)
	a := open(t, conn)
	retake := make(chan struct{})
	a.beforeRetake = func() { <-retake }
	b := open(t, conn)
	s := backendtest.Sample(5)
	if err := a.Save(s); err != nil {
		t.Fatal(err)
	}
	lk, err := a.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := waitInBackground(t, b, func() (*state.Lock, error) {
		return b.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 2*time.Minute)
	})
	srv.Stop(t)
	b.waiting.Store(nil)
	srv.Start(t)
	// B tried after the restart, before A took its lock again (or took
	// it: the failure below).
	waitFor(t, func() bool { return b.waiting.Load() != nil || len(got) > 0 })
	select {
	case r := <-got:
		close(retake)
		t.Fatalf("B took the lock A lost in the restart and was about to take again: %v, %v", r.lk, r.err)
	default:
	}
	if id := b.waiting.Load().Info.ID; id != lk.Info().ID {
		t.Errorf("B was refused naming %q, want A's lock %s", id, lk.Info().ID)
	}
	// A does not save without its lock.
	cur, err := a.Load()
	if err != nil {
		t.Fatal(err)
	}
	cur.Experiments["mnist"].Trials["t0000"].Attempts++
	if err := a.Save(cur); !state.IsUnavailable(err) || !strings.Contains(fmt.Sprint(err), "being taken again") {
		t.Errorf("A's save while its lock is lost: %v, want it refused (retried) until the lock is taken again", err)
	}
	// Its trials' metric points go in: nobody else can hold the lock.
	if err := a.AppendMetrics("mnist", "t0000", []state.MetricPoint{{Type: "PERIODICAL", Sequence: 900, Value: []byte("0.5")}}); err != nil {
		t.Errorf("A's metric points while its lock is being taken again: %v", err)
	}
	close(retake)
	waitFor(t, func() bool {
		locks, err := b.CurrentLocks()
		return err == nil && len(locks) == 1 && locks[0].ID == lk.Info().ID
	})
	if err := a.Save(cur); err != nil {
		t.Fatalf("A's save under its lock, taken again: %v", err)
	}
	select {
	case r := <-got:
		t.Fatalf("B took the lock A holds again: %v, %v", r.lk, r.err)
	default:
	}
	if err := lk.Unlock(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("B, once A released the lock: %v", r.err)
	}
	r.lk.Unlock()
}

// TestLockTakenAfterTheGraceRefusesTheHolder: A holds the whole-state
// lock (state push, init -migrate-state) and loses it in a restart; A
// comes back after the grace and B, who waited, has taken it. A says so
// once, and nothing it writes goes in any more: its saves, its Replace
// (which did not check and replaced the state B held) and its metric
// points (which went in too) are refused for good, naming B.
func TestLockTakenAfterTheGraceRefusesTheHolder(t *testing.T) {
	srv := pgtest.NewServer(t)
	conn := srv.NewDB(t)
	told := make(chan string, 16)
	a, err := Open(Settings{ConnStr: conn}, backendreg.Env{Report: func(msg string) { told <- msg }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	retake := make(chan struct{})
	a.beforeRetake = func() { <-retake }
	b := open(t, conn)
	b.grace = time.Millisecond // the grace is over at once
	if err := a.Save(backendtest.Sample(5)); err != nil {
		t.Fatal(err)
	}
	lk, err := a.Lock(context.Background(), "state push", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	got := waitInBackground(t, b, func() (*state.Lock, error) {
		return b.Lock(context.Background(), "apply", "v", 2*time.Minute)
	})
	srv.Stop(t)
	srv.Start(t)
	r := <-got // B takes the lock A lost, after the grace
	if r.err != nil {
		close(retake)
		t.Fatalf("B, after the grace: %v", r.err)
	}
	defer r.lk.Unlock()
	close(retake)
	msg := <-told
	for _, want := range []string{"state backend pg", lk.Info().ID, "the whole state", r.lk.Info().ID, "no longer holds it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("A was told %q, without %q", msg, want)
		}
	}
	cur, err := a.Load()
	if err != nil {
		t.Fatal(err)
	}
	cur.Experiments["mnist"].Trials["t0000"].Attempts++
	wantRefused := func(what string, err error) {
		t.Helper()
		if err == nil || state.IsUnavailable(err) || !strings.Contains(err.Error(), "no longer holds the lock") || !strings.Contains(err.Error(), r.lk.Info().ID) {
			t.Errorf("A's %s under the lock B took: %v, want it refused for good naming B", what, err)
		}
	}
	for range 2 {
		wantRefused("save", a.Save(cur.Clone()))
	}
	pushed := cur.Clone()
	pushed.Serial += 10
	wantRefused("replace (state push)", a.Replace(pushed))
	wantRefused("metric points", a.AppendMetrics("mnist", "t0000", []state.MetricPoint{{Type: "PERIODICAL", Sequence: 900, Value: []byte("0.5")}}))
	// Nothing of A's went in.
	now, err := open(t, conn).Load()
	if err != nil {
		t.Fatal(err)
	}
	if now.Serial != 1 || now.Experiments["mnist"].Trials["t0000"].Attempts != cur.Experiments["mnist"].Trials["t0000"].Attempts-1 {
		t.Errorf("A wrote the state under B's lock: serial %d", now.Serial)
	}
	if pts, err := open(t, conn).ReadMetrics("mnist", "t0000"); err != nil || slices.ContainsFunc(pts, func(p state.MetricPoint) bool { return p.Sequence == 900 }) {
		t.Errorf("A appended metric points under B's lock: %v, %v", pts, err)
	}
	select {
	case msg := <-told:
		t.Errorf("A was told again: %q", msg)
	default:
	}
}

// TestLockWaitRunsOutWhileTheServerIsDown: a wait that runs out while
// the server cannot be reached names the holder it last met and how long
// the server was away; one that never reached the server says who holds
// the lock is not known.
func TestLockWaitRunsOutWhileTheServerIsDown(t *testing.T) {
	srv := pgtest.NewServer(t)
	conn := srv.NewDB(t)
	a, b := open(t, conn), open(t, conn)
	if err := a.Save(backendtest.Sample(2)); err != nil {
		t.Fatal(err)
	}
	lk, err := a.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	got := make(chan error, 1)
	go func() {
		_, err := b.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 3*time.Second)
		got <- err
	}()
	waitFor(t, func() bool { return b.waiting.Load() != nil })
	srv.Stop(t)
	defer srv.Start(t)
	err = <-got
	for _, want := range []string{"gave up", lk.Info().ID, "then the server could not be reached for the last"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the wait that ran out while the server was down: %v, without %q", err, want)
		}
	}
	c := open(t, conn)
	_, err = c.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", time.Second)
	for _, want := range []string{"gave up", "could not be reached", "who holds the lock is not known"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the wait that never reached the server: %v, without %q", err, want)
		}
	}
}

// lockResult is what a lock wait run in the background ended with.
type lockResult struct {
	lk  *state.Lock
	err error
}

// waitInBackground runs lock (b's wait for a lock another client holds)
// in a goroutine and returns once the wait has met the holder (or ended):
// its result comes on the channel.
func waitInBackground(t *testing.T, b *Backend, lock func() (*state.Lock, error)) <-chan lockResult {
	t.Helper()
	got := make(chan lockResult, 1)
	go func() {
		l, err := lock()
		got <- lockResult{l, err}
	}()
	waitFor(t, func() bool { return b.waiting.Load() != nil || len(got) > 0 })
	return got
}

// A load by another goroutine of the client (a controller's dashboard
// loads at each NOTIFY, beside the pass that saves) that read the state
// before the client's save and returned after it does not make the
// client's next save refuse its own write as someone else's: once in about
// ten runs of controller_claim_pg under load, the controller's save met
// "experiment w was changed by someone else since it was loaded (serial 7
// there, 6 when loaded)".
func TestLoadBesideASaveKeepsItsBase(t *testing.T) {
	conn := pgtest.DB(t)
	b := open(t, conn)
	if err := b.Save(backendtest.Sample(3)); err != nil {
		t.Fatal(err)
	}
	lk, err := b.LockExperiments(context.Background(), []string{"mnist"}, "controller", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	s, err := b.Load()
	if err != nil {
		t.Fatal(err)
	}
	read, release := make(chan struct{}), make(chan struct{})
	first := true
	b.afterRead = func() {
		if first {
			first = false
			close(read)
			<-release
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Load()
		done <- err
	}()
	<-read // the dashboard's load has read the state before the save
	s.Experiments["mnist"].Trials["t0000"].Attempts = 5
	if err := b.Save(s); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.Experiments["mnist"].Trials["t0000"].Attempts = 6
	if err := b.Save(s); err != nil {
		t.Fatalf("the save after a load that ran beside the previous save: %v", err)
	}
	got, err := open(t, conn).Load()
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Experiments["mnist"].Trials["t0000"].Attempts; n != 6 {
		t.Fatalf("t0000's attempts are %d in the database, want 6", n)
	}
}

// A setting of the connection string that pgx would send to the server as
// a run-time parameter, where the server refuses it at connect with "run
// the command again; if it persists, report it": a misspelled keyword is
// refused at open with the keyword meant, a libpq setting the driver does
// not support (PGHOSTADDR's hostaddr, keepalives) is named with what to
// do, and one the server does not know says to correct or remove it. A
// server parameter the server knows (search_path) still connects.
func TestConnStrSettingsTheDriverWouldSendToTheServer(t *testing.T) {
	srv := pgtest.Shared(t)
	conn := pgtest.DB(t)
	db := dbName(conn)
	kv := fmt.Sprintf("host=127.0.0.1 port=%d dbname=%s user=%s password=%s", srv.Port, db, pgtest.Superuser, srv.Password)
	for _, tc := range []struct{ conn, want string }{
		{strings.Replace(kv, "dbname=", "dbnmae=", 1), `sets dbnmae, which is not a connection setting: did you mean dbname?`},
		{conn + "&sslmdoe=disable", `sets sslmdoe, which is not a connection setting: did you mean sslmode?`},
		{kv + " keepalives=1", `sets keepalives, a libpq setting trialform's PostgreSQL driver (pgx) does not support: leave it out`},
	} {
		_, err := Open(Settings{ConnStr: tc.conn}, backendreg.Env{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), srv.Password) {
			t.Errorf("%s: %v, want %q", strings.Replace(tc.conn, srv.Password, "***", 1), err, tc.want)
		}
	}
	// PGHOSTADDR, which libpq reads, is named as the variable.
	env := srv.Env(db)
	env["PGHOSTADDR"] = "127.0.0.1"
	if _, err := Open(Settings{}, backendreg.Env{Getenv: func(k string) string { return env[k] }}); err == nil || !strings.Contains(err.Error(), "hostaddr (PGHOSTADDR)") {
		t.Errorf("PGHOSTADDR: %v", err)
	}
	// A parameter the server does not know: the error says to correct it.
	b := open(t, kv+" no_such_param=1")
	if _, err := b.Load(); err == nil || !strings.Contains(err.Error(), "is neither a libpq connection setting nor a parameter the server knows") || strings.Contains(err.Error(), "report it") {
		t.Errorf("a parameter the server does not know: %v", err)
	}
	// One it knows is sent and taken.
	if _, err := open(t, kv+" search_path=public").Load(); err != nil {
		t.Errorf("search_path in the connection string: %v", err)
	}
}
