// Package pg is the "pg" state backend: the state of a working copy kept
// in PostgreSQL, so that a team shares its experiments, their trials and
// their metric series, with the database's transactions and locks.
//
// The tables, in one schema (schema_name, default "trialform"; two teams
// may share a database with two schemas), which trialform creates and
// migrates itself (schema_migrations records the versions applied):
//
//	state          one row: lineage, serial, format version, when written
//	experiments    one row per experiment: its fields without its trials
//	               (jsonb) and its version (the serial that last wrote it)
//	trials         one row per trial (jsonb) and the serial that wrote it
//	metrics        one row per metric point, in the order appended
//	refreshed      the refresh marks, per lineage and experiment
//	locks          who holds each lock (the lock itself is an advisory lock)
//
// A save writes, in one transaction, only the rows that changed since this
// client loaded or last saved the state (it keeps what it loaded to compare
// with), bumps the serial and sends a NOTIFY, so that another process's
// watch or dashboard sees the change at once (Changes). A transaction that
// does not commit (a client killed, a connection cut) leaves nothing.
//
// Locking. The local backend locks the whole state; pg, as the other
// shared backends, locks per experiment: a command locks the experiments
// it touches (LockExperiments), so two people applying different
// experiments do not wait for each other, while two applying the same
// experiment do; a whole-state lock (Lock: state mv, destroy of all, a
// migration) excludes every experiment lock and is excluded by any. The
// locks are session advisory locks, each on a connection of its own: the
// whole state is an exclusive lock on the state's key, an experiment lock
// a shared lock on the state's key plus an exclusive lock on the
// experiment's key. A client that dies loses its connection and with it
// its locks; the locks table only says who holds them (rows of a
// connection that is gone are ignored). While a client holds only some
// experiments, its saves write only those experiments and check, per
// experiment, that nobody wrote them since it loaded them.
package pg

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendreg"
)

// Name is the backend's kind.
const Name = "pg"

// DefaultSchema is the schema of the tables when schema_name is not set.
const DefaultSchema = "trialform"

// Settings is a backend "pg" block.
type Settings struct {
	ConnStr    string `hcl:"conn_str,optional" sensitive:"true" type:"a string (a PostgreSQL connection string or URL)" doc:"connection string (default: libpq's PG* environment variables: PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD, PGSSLMODE, ...); pass a password through a sensitive variable or PGPASSWORD"`
	SchemaName string `hcl:"schema_name,optional" type:"a string (a schema name)" doc:"schema of trialform's tables, created when missing (default \"trialform\"); two states share a database with two schemas"`
}

// Check reports an invalid schema_name at its line (Open refuses it too,
// without a line).
func (s *Settings) Check(w *decl.Where) hcl.Diagnostics {
	if s.SchemaName != "" && !validSchema(s.SchemaName) {
		return hcl.Diagnostics{w.Error("schema_name", "Invalid schema name",
			"schema_name = %q: use at most 63 lowercase letters, digits and _, starting with a letter or _ (e.g. \"team_vision\").", s.SchemaName)}
	}
	return nil
}

// InlineCredential says "a password" when conn_str holds one (a URL's
// user:password@ or a password/sslpassword parameter, keyword/value form
// or URL query): schema refuses it unless it comes from a sensitive
// variable.
func (*Settings) InlineCredential(setting, value string) string {
	if setting != "conn_str" {
		return ""
	}
	if strings.HasPrefix(value, "postgres://") || strings.HasPrefix(value, "postgresql://") {
		u, err := url.Parse(value)
		if err != nil {
			// unparseable: it may still hold one; do not guess
			if strings.Contains(strings.SplitN(value[strings.Index(value, "//")+2:], "@", 2)[0], ":") && strings.Contains(value, "@") {
				return "a password"
			}
			return ""
		}
		if _, ok := u.User.Password(); ok {
			return "a password"
		}
		q := u.Query()
		if q.Get("password") != "" || q.Get("sslpassword") != "" {
			return "a password"
		}
		return ""
	}
	if kwPassword.MatchString(value) {
		return "a password"
	}
	return ""
}

var kwPassword = regexp.MustCompile(`(?:^|\s)(?:ssl)?password\s*=`)

// Registration is the kind's registration for state/backends.
func Registration() backendreg.Kind {
	return backendreg.Kind{
		Name:    Name,
		Summary: "the state in PostgreSQL: a row per trial, metric points in a table, advisory locks per experiment, LISTEN/NOTIFY",
		Config:  func() any { return &Settings{} },
		Open: func(cfg any, env backendreg.Env) (state.Backend, error) {
			s, _ := cfg.(*Settings)
			if s == nil {
				s = &Settings{}
			}
			return Open(*s, env)
		},
	}
}

// Backend is a client of one state in PostgreSQL.
type Backend struct {
	cfg      *pgxpool.Config
	schema   string // the schema's name
	q        string // the schema, quoted, for SQL
	where    string // host:port/database, schema: for messages
	secret   string // the password, scrubbed from every error
	stateKey int64  // the advisory lock key of the whole state
	channel  string // the NOTIFY channel

	poolMu sync.Mutex
	pool   *pgxpool.Pool
	ready  bool // the schema is known to be migrated

	mu       sync.Mutex
	snap     *snapshot
	warnings []string

	lockMu sync.Mutex
	held   map[*held]bool
	// beforeRetake, for tests, runs in keepAlive before it takes a lost
	// lock again.
	beforeRetake func()
	// grace, for tests, replaces retakeGrace's 30 s when set.
	grace time.Duration
	// waiting is the holder a lock wait of this client last met (for
	// tests: the wait has begun).
	waiting atomic.Pointer[state.LockedError]

	// report is where a message for people goes (Env.Report), nil:
	// dropped; this package writes nothing itself.
	report func(msg string)

	// beforeCommit, for tests, runs in a save's transaction just before
	// its commit.
	beforeCommit func(ctx context.Context, tx pgx.Tx) error
	// afterRead, for tests, runs when a read of the state (Load, a save's
	// fresh read) has read its rows.
	afterRead func()
}

var pgEnv = map[string]string{
	"PGHOST": "host", "PGHOSTADDR": "hostaddr", "PGPORT": "port", "PGDATABASE": "dbname",
	"PGUSER": "user", "PGPASSWORD": "password", "PGPASSFILE": "passfile", "PGSERVICE": "service",
	"PGSERVICEFILE": "servicefile", "PGSSLMODE": "sslmode", "PGSSLCERT": "sslcert", "PGSSLKEY": "sslkey",
	"PGSSLROOTCERT": "sslrootcert", "PGSSLPASSWORD": "sslpassword", "PGAPPNAME": "application_name",
	"PGCONNECT_TIMEOUT": "connect_timeout", "PGTARGETSESSIONATTRS": "target_session_attrs",
	"PGOPTIONS": "options", "PGSSLSNI": "sslsni",
}

// Open opens the backend the settings name. It does not connect: the
// first call does (and creates or migrates the schema).
func Open(s Settings, env backendreg.Env) (*Backend, error) {
	schema := s.SchemaName
	if schema == "" {
		schema = DefaultSchema
	}
	if !validSchema(schema) {
		return nil, fmt.Errorf(`backend "pg": schema_name = %q: use at most 63 lowercase letters, digits and _, starting with a letter or _`, schema)
	}
	conn := s.ConnStr
	if env.Getenv != nil && conn == "" {
		// libpq's variables, read through env (pgx reads the process's
		// own otherwise).
		var kv []string
		for v, k := range pgEnv {
			if val := env.Getenv(v); val != "" {
				kv = append(kv, k+"='"+strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(val)+"'")
			}
		}
		conn = strings.Join(kv, " ")
	}
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		// pgx's parse errors may quote the string: say only what is wrong.
		msg := "it cannot be parsed"
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			msg = scrub(pe.Unwrap().Error(), s.ConnStr)
		}
		return nil, fmt.Errorf(`backend "pg": the connection string (conn_str or the PG* environment variables): %s; see https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING`, msg)
	}
	for _, h := range append([]*pgconn.FallbackConfig{{Host: cfg.ConnConfig.Host}}, cfg.ConnConfig.Fallbacks...) {
		if strings.Contains(h.Host, "@") {
			// (a URL's user:pass@word@host: pgx took "word@host" as the
			// host, and every message showed it)
			return nil, fmt.Errorf(`backend "pg": the connection string (conn_str or the PG* environment variables) names a host with an @ in it, not shown here: it may hold the end of a password; in a URL (postgres://USER:PASSWORD@HOST/...) write each @ of the user name or password as %%40`)
		}
	}
	if err := checkRuntimeParams(cfg.ConnConfig.RuntimeParams); err != nil {
		return nil, err
	}
	cfg.MaxConns = 8
	cfg.ConnConfig.ConnectTimeout = connectTimeout(cfg.ConnConfig.ConnectTimeout)
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "trialform"
	}
	b := &Backend{
		cfg: cfg, schema: schema, q: pgx.Identifier{schema}.Sanitize(),
		where:    fmt.Sprintf("%s database %s, schema %s", net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))), cfg.ConnConfig.Database, schema),
		secret:   cfg.ConnConfig.Password,
		stateKey: key("state", schema),
		channel:  "trialform:" + schema,
		held:     map[*held]bool{},
		report:   env.Report,
	}
	return b, nil
}

// libpqKeywords are libpq's connection settings
// (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-PARAMKEYWORDS),
// the names a misspelled key is compared with.
var libpqKeywords = []string{
	"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth", "channel_binding",
	"connect_timeout", "client_encoding", "options", "application_name", "fallback_application_name", "keepalives",
	"keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout", "replication", "gssencmode",
	"sslmode", "requiressl", "sslnegotiation", "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode",
	"sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer", "ssl_min_protocol_version",
	"ssl_max_protocol_version", "min_protocol_version", "max_protocol_version", "krbsrvname", "gsslib",
	"gssdelegation", "service", "servicefile", "target_session_attrs", "load_balance_hosts",
}

// serverKeywords are the libpq settings pgx sends to the server as
// run-time parameters, which the server takes.
var serverKeywords = map[string]bool{"application_name": true, "client_encoding": true, "options": true, "replication": true}

// pgEnvOf is the PG* variable of a libpq setting.
func pgEnvOf(keyword string) string {
	for v, k := range pgEnv {
		if k == keyword {
			return v
		}
	}
	return ""
}

// checkRuntimeParams refuses what pgx would send to the server as a
// run-time parameter, where libpq knows better: a libpq setting pgx does
// not implement (the server refuses it at connect: "unrecognized
// configuration parameter") and a misspelled setting (dbnmae). Other
// names are server parameters (search_path=...), sent as they are.
func checkRuntimeParams(params map[string]string) error {
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	const what = `backend "pg": the connection string (conn_str or the PG* environment variables)`
	for _, k := range names {
		if serverKeywords[k] {
			continue
		}
		if slices.Contains(libpqKeywords, k) {
			name := k
			if v := pgEnvOf(k); v != "" {
				name += " (" + v + ")"
			}
			return fmt.Errorf("%s sets %s, a libpq setting trialform's PostgreSQL driver (pgx) does not support: leave it out (for hostaddr, name the server in host or PGHOST); see docs/backends.md, \"The pg backend\"", what, name)
		}
		if s := didyoumean.Suggest(k, append(libpqKeywords, "database")); s != "" {
			return fmt.Errorf("%s sets %s, which is not a connection setting: did you mean %s?; see https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-PARAMKEYWORDS", what, k, s)
		}
	}
	return nil
}

func connectTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return 15 * time.Second
	}
	return d
}

func validSchema(s string) bool {
	if s == "" || len(s) > 63 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// key is an advisory lock key: a hash of the schema and a name.
func key(kind, schema string, name ...string) int64 {
	h := fnv.New64a()
	h.Write([]byte("trialform\x00" + kind + "\x00" + schema))
	for _, n := range name {
		h.Write([]byte("\x00" + n))
	}
	return int64(h.Sum64())
}

// Name is the backend's kind.
func (b *Backend) Name() string { return Name }

// Location is the server, database and schema (never a credential).
func (b *Backend) Location() string { return b.where }

// Servers are the host:port addresses the client would connect to, in
// order (the first, then libpq's fallbacks: a list of hosts), and never a
// credential.
func (b *Backend) Servers() []string {
	c := b.cfg.ConnConfig
	out := []string{net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))}
	for _, f := range c.Fallbacks {
		if a := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// ForeignServers returns the servers conn (a conn_str) names that the
// environment's PG* variables alone do not name (nil when none), and
// those the environment names, when the password conn would send there
// is the environment's PGPASSWORD. A controller runs definitions others
// commit: their conn_str = "host=theirs" got its PGPASSWORD, in cleartext
// if that server asked for it.
func ForeignServers(conn string, env backendreg.Env) (foreign, own []string) {
	pw := ""
	if env.Getenv != nil {
		pw = env.Getenv("PGPASSWORD")
	}
	if conn == "" || pw == "" {
		return nil, nil
	}
	named, err := Open(Settings{ConnStr: conn}, env)
	if err != nil || named.cfg.ConnConfig.Password != pw {
		return nil, nil // conn's own password (or one Open refuses)
	}
	mine, err := Open(Settings{}, env)
	if err != nil {
		return nil, nil
	}
	own = mine.Servers()
	for _, s := range named.Servers() {
		if !slices.Contains(own, s) {
			foreign = append(foreign, s)
		}
	}
	if foreign == nil {
		return nil, nil
	}
	return foreign, own
}

// Warnings returns what the last Load noticed.
func (b *Backend) Warnings() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.warnings...)
}

// Close closes the client's connections (its locks are released by their
// own Unlock or with their connections).
func (b *Backend) Close() {
	b.poolMu.Lock()
	defer b.poolMu.Unlock()
	if b.pool != nil {
		b.pool.Close()
		b.pool = nil
		b.ready = false
	}
}

func background() (context.Context, context.CancelFunc) {
	return within(context.Background())
}

// within is ctx, ended after 2 minutes at the latest.
func within(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 2*time.Minute)
}

// scrub removes secret from msg.
func scrub(msg, secret string) string {
	if secret == "" {
		return msg
	}
	return strings.ReplaceAll(msg, secret, "********")
}

// fail wraps err, from doing what, with where and what to do; never with
// the password.
func (b *Backend) fail(what string, err error) error {
	if err == nil {
		return nil
	}
	var ce *state.ConflictError
	var le *state.LockedError
	if errors.As(err, &ce) || errors.As(err, &le) {
		return err
	}
	hint := "check that the server is up and reachable, and the connection settings (conn_str or PG* variables)"
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "42501": // insufficient_privilege
			hint = fmt.Sprintf("the role needs CREATE on the database (or an existing schema %s it may CREATE in and USAGE on) and SELECT, INSERT, UPDATE, DELETE on its tables; see docs/backends.md, \"The pg backend\"", b.schema)
		case strings.HasPrefix(pe.Code, "28"): // invalid authorization
			hint = "check the user and password (conn_str, PGUSER, PGPASSWORD or ~/.pgpass)"
		case pe.Code == "3D000":
			hint = "create the database, or name another in conn_str or PGDATABASE"
		case pe.Code == "42704" && errors.As(err, new(*pgconn.ConnectError)): // undefined_object, at connect
			hint = "a setting of the connection string (conn_str, PGOPTIONS) is neither a libpq connection setting nor a parameter the server knows: correct or remove it (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-PARAMKEYWORDS)"
		default:
			hint = "run the command again; if it persists, report it"
		}
	}
	msg := scrub(err.Error(), b.secret)
	e := &Error{What: what, Where: b.where, Msg: msg, Hint: hint, Err: err}
	if unreachable(err) {
		return state.Unavailable(e)
	}
	return e
}

// unreachable reports whether err says the server could not be reached
// or went away (by the error's type and SQLSTATE, never its text): a
// refused, reset or timed-out connection, a connection that ended (or
// that the driver closed when it met the end during an earlier call: the
// call fails with "conn closed" before anything is sent), the server
// shutting down or starting (SQLSTATE class 08, 57P01-57P03).
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// Error is an error of the pg backend: what it did, where, what went
// wrong and what to do. It never carries a credential.
type Error struct {
	What, Where, Msg, Hint string
	Err                    error
}

func (e *Error) Error() string {
	return fmt.Sprintf(`backend "pg" (%s): %s: %s; %s`, e.Where, e.What, e.Msg, e.Hint)
}

// Unwrap returns the driver's error (for retry decisions by type).
func (e *Error) Unwrap() error { return e.Err }

// getPool connects (once) and makes sure the schema is migrated.
func (b *Backend) getPool(ctx context.Context) (*pgxpool.Pool, error) {
	b.poolMu.Lock()
	defer b.poolMu.Unlock()
	if b.pool == nil {
		p, err := pgxpool.NewWithConfig(ctx, b.cfg)
		if err != nil {
			return nil, b.fail("connect", err)
		}
		b.pool = p
	}
	if !b.ready {
		if err := b.migrate(ctx, b.pool); err != nil {
			return nil, err
		}
		b.ready = true
	}
	return b.pool, nil
}

// connect opens a connection of its own (locks, LISTEN).
func (b *Backend) connect(ctx context.Context) (*pgx.Conn, error) {
	if _, err := b.getPool(ctx); err != nil {
		return nil, err
	}
	c, err := pgx.ConnectConfig(ctx, b.cfg.ConnConfig)
	if err != nil {
		return nil, b.fail("connect", err)
	}
	return c, nil
}

// migrations are the schema's versions, in order; %[1]s is the schema.
var migrations = []string{
	// 1: the first.
	`CREATE TABLE %[1]s.state (
		id int PRIMARY KEY DEFAULT 1 CHECK (id = 1),
		lineage text NOT NULL,
		serial bigint NOT NULL,
		format int NOT NULL,
		written timestamptz NOT NULL DEFAULT now());
	CREATE TABLE %[1]s.experiments (
		name text PRIMARY KEY,
		head jsonb NOT NULL,
		version bigint NOT NULL);
	CREATE TABLE %[1]s.trials (
		experiment text NOT NULL,
		id text NOT NULL,
		body jsonb NOT NULL,
		serial bigint NOT NULL,
		PRIMARY KEY (experiment, id));
	CREATE TABLE %[1]s.metrics (
		id bigserial PRIMARY KEY,
		experiment text NOT NULL,
		trial text NOT NULL,
		type text NOT NULL,
		seq integer NOT NULL,
		value text NOT NULL,
		point text NOT NULL);
	CREATE UNIQUE INDEX metrics_point ON %[1]s.metrics (experiment, trial, type, seq, md5(value));
	CREATE INDEX metrics_series ON %[1]s.metrics (experiment, trial, id);
	CREATE TABLE %[1]s.refreshed (
		lineage text NOT NULL,
		experiment text NOT NULL,
		at timestamptz NOT NULL,
		version bigserial,
		PRIMARY KEY (lineage, experiment));
	CREATE TABLE %[1]s.locks (
		id text PRIMARY KEY,
		whole boolean NOT NULL,
		experiments text[] NOT NULL,
		info jsonb NOT NULL,
		pid int NOT NULL,
		backend_start timestamptz NOT NULL);`,
}

// migrate creates the schema when it is missing and applies the
// migrations it lacks, one client at a time.
func (b *Backend) migrate(ctx context.Context, pool *pgxpool.Pool) error {
	var version int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+b.q+`.schema_migrations`).Scan(&version)
	if err == nil && version == len(migrations) {
		return nil
	}
	if err == nil && version > len(migrations) {
		return fmt.Errorf(`backend "pg" (%s): the schema is at version %d, written by a newer trialform (this one knows %d); upgrade trialform`, b.where, version, len(migrations))
	}
	var pe *pgconn.PgError
	if err != nil && !(errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000")) {
		return b.fail("read the schema version", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return b.fail("migrate the schema", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, key("migrate", b.schema)); err != nil {
		return b.fail("migrate the schema", err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, b.schema).Scan(&exists); err != nil {
		return b.fail("migrate the schema", err)
	}
	if !exists {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+b.q); err != nil {
			return b.fail("create schema "+b.schema, err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+b.q+`.schema_migrations (version int PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`); err != nil {
		return b.fail("create "+b.schema+".schema_migrations", err)
	}
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+b.q+`.schema_migrations`).Scan(&version); err != nil {
		return b.fail("read the schema version", err)
	}
	if version > len(migrations) {
		return fmt.Errorf(`backend "pg" (%s): the schema is at version %d, written by a newer trialform (this one knows %d); upgrade trialform`, b.where, version, len(migrations))
	}
	for v := version + 1; v <= len(migrations); v++ {
		if _, err := tx.Exec(ctx, fmt.Sprintf(migrations[v-1], b.q)); err != nil {
			return b.fail(fmt.Sprintf("migrate the schema to version %d", v), err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+b.q+`.schema_migrations (version) VALUES ($1)`, v); err != nil {
			return b.fail("migrate the schema", err)
		}
	}
	return b.fail("migrate the schema", tx.Commit(ctx))
}

// t is a table's name, schema-qualified and quoted.
func (b *Backend) t(table string) string { return b.q + "." + table }

// The whole contract and its options.
var (
	_ state.Backend          = (*Backend)(nil)
	_ state.ExperimentLocker = (*Backend)(nil)
	_ state.ChangeNotifier   = (*Backend)(nil)
	_ state.StateStamper     = (*Backend)(nil)
	_ state.MetricsStamper   = (*Backend)(nil)
	_ state.Replacer         = (*Backend)(nil)
)
