// Package pgtest runs a real PostgreSQL server for tests, from Debian's
// postgresql package (initdb and pg_ctl under /usr/lib/postgresql/*/bin),
// the way the remote platform's tests run their own sshd: in a temporary
// directory, on a private port of 127.0.0.1, its unix socket in that
// directory too. As root (CI containers) the server runs as the postgres
// user (or nobody), since PostgreSQL refuses to run as root.
//
// A test binary shares one server (Shared), started on first use and
// stopped by Main; each test gets a fresh database of it (DB). A test that
// stops the server (the server goes away for 10 s) starts its own
// (NewServer), so it does not take the shared one from the others.
//
// A missing postgresql skips the test, or fails it under
// TRIALFORM_REQUIRE_ALL=1 (internal/testdeps); scripts/deps.sh installs it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trialform/trialform/internal/testdeps"
)

// Superuser is the server's superuser (its password is Server.Password).
const Superuser = "postgres"

// Server is one PostgreSQL server of a test run.
type Server struct {
	// Dir holds the data directory (Dir/data), the socket and the log.
	Dir string
	// Port is the TCP port on 127.0.0.1 (and the socket's number).
	Port int
	// Password is Superuser's password (TCP connections need it; the
	// unix socket trusts).
	Password string

	bin     string // the directory of initdb and pg_ctl
	durable bool   // fsync and synchronous commits on (benchmarks)
	runAs   string // "" or the user the server runs as
	mu      sync.Mutex
	dbs     int
	closed  bool
}

// Bin returns the directory of the newest PostgreSQL's programs, or why
// there is none.
func Bin() (string, string) {
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(ms) == 0 {
		return "", "no /usr/lib/postgresql/*/bin/pg_ctl (Debian package postgresql; `make deps` installs it)"
	}
	sort.Slice(ms, func(i, j int) bool { return version(ms[i]) > version(ms[j]) })
	return filepath.Dir(ms[0]), ""
}

func version(pgctl string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(pgctl))))
	return v
}

var (
	sharedMu  sync.Mutex
	shared    *Server
	sharedErr error
)

// Shared returns the test binary's server, starting it on first use.
// Call Main from TestMain to stop it when the tests end.
func Shared(t testing.TB) *Server {
	t.Helper()
	bin, missing := Bin()
	testdeps.Require(t, "postgresql", missing)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = start(bin, false)
	}
	if sharedErr != nil {
		t.Fatalf("pgtest: %v", sharedErr)
	}
	return shared
}

// Main runs the tests of m and then stops the shared server, if one was
// started: TestMain(m) { pgtest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		shared.close()
	}
	sharedMu.Unlock()
	os.Exit(code)
}

// DB creates a fresh database on the shared server and returns its
// connection string (over TCP, with the password).
func DB(t testing.TB) string {
	t.Helper()
	return Shared(t).NewDB(t)
}

// NewServer starts a server of t's own, stopped when t ends: for tests
// that stop and start it.
func NewServer(t testing.TB) *Server {
	t.Helper()
	return newServer(t, false)
}

// NewDurableServer is NewServer with PostgreSQL's defaults for
// durability (fsync, synchronous commits), which the test servers turn
// off for speed: for benchmarks beside the local backend, which fsyncs.
func NewDurableServer(t testing.TB) *Server {
	t.Helper()
	return newServer(t, true)
}

func newServer(t testing.TB, durable bool) *Server {
	t.Helper()
	bin, missing := Bin()
	testdeps.Require(t, "postgresql", missing)
	s, err := start(bin, durable)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.close)
	return s
}

// runAsUser is the user the server runs as when the tests run as root.
func runAsUser() (string, error) {
	if os.Geteuid() != 0 {
		return "", nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		if _, err := user.Lookup(name); err == nil {
			return name, nil
		}
	}
	return "", fmt.Errorf("running as root, and there is neither a postgres nor a nobody user to run PostgreSQL as (it refuses root)")
}

func start(bin string, durable bool) (*Server, error) {
	runAs, err := runAsUser()
	if err != nil {
		return nil, err
	}
	// Not t.TempDir: its parents are 0700, closed to the server's user.
	dir, err := os.MkdirTemp("", "trialform-pg-")
	if err != nil {
		return nil, err
	}
	pw := make([]byte, 12)
	rand.Read(pw)
	s := &Server{Dir: dir, Password: hex.EncodeToString(pw), bin: bin, runAs: runAs, durable: durable}
	fail := func(err error) (*Server, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o644); err != nil {
		return fail(err)
	}
	if runAs != "" {
		u, _ := user.Lookup(runAs)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, p := range []string{dir, pwfile} {
			if err := os.Chown(p, uid, gid); err != nil {
				return fail(err)
			}
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", Superuser, "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return fail(fmt.Errorf("initdb: %v\n%s", err, out))
	}
	os.Remove(pwfile)
	// A free port can be taken between the probe and the server's
	// listen: try a few.
	for try := 0; ; try++ {
		s.Port, err = freePort()
		if err != nil {
			return fail(err)
		}
		if err = s.startServer(); err == nil {
			return s, nil
		}
		if try == 4 {
			return fail(err)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) data() string { return filepath.Join(s.Dir, "data") }

// run runs one of PostgreSQL's programs as the server's user.
func (s *Server) run(prog string, args ...string) ([]byte, error) {
	name, argv := filepath.Join(s.bin, prog), args
	if s.runAs != "" {
		name, argv = "runuser", append([]string{"-u", s.runAs, "--", filepath.Join(s.bin, prog)}, args...)
	}
	cmd := exec.Command(name, argv...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd.CombinedOutput()
}

func (s *Server) startServer() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", s.Port, s.Dir)
	if !s.durable {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.Dir, "log"), "-o", opts, "-w", "-t", "120", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, tail(log))
	}
	return nil
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Stop stops the server (fast: clients are disconnected); its data stays
// for Start.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if out, err := s.run("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "stop"); err != nil {
		t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

// Start starts a stopped server again, on the same port and data.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.startServer(); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.Dir)
}

// ConnString returns the connection string of database db over TCP,
// with the password.
func (s *Server) ConnString(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(Superuser, s.Password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// Env returns libpq's environment variables (PGHOST, PGPORT, PGUSER,
// PGPASSWORD, PGDATABASE, PGSSLMODE) for database db.
func (s *Server) Env(db string) map[string]string {
	return map[string]string{
		"PGHOST": "127.0.0.1", "PGPORT": strconv.Itoa(s.Port), "PGUSER": Superuser,
		"PGPASSWORD": s.Password, "PGDATABASE": db, "PGSSLMODE": "disable",
	}
}

// NewDB creates a fresh database and returns its connection string. It
// is dropped when t ends (when the server is up).
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.dbs++
	name := fmt.Sprintf("t%d_%s", s.dbs, sanitize(t.Name()))
	s.mu.Unlock()
	if len(name) > 60 {
		name = name[:60]
	}
	if err := s.Exec(context.Background(), "postgres", `CREATE DATABASE "`+name+`"`); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		s.Exec(context.Background(), "postgres", `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
	})
	return s.ConnString(name)
}

func sanitize(n string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(n) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Exec runs sql in database db as the superuser.
func (s *Server) Exec(ctx context.Context, db, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, s.ConnString(db))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql, args...)
	return err
}
