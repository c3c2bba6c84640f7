package command_test

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trialform/trialform/internal/pgtest"
)

// TestPgScripts runs testdata/pg/*.txtar against a real PostgreSQL
// server of the test's own (internal/pgtest: Debian's postgresql, skipped
// when it is missing, failed under TRIALFORM_REQUIRE_ALL=1). Each script
// gets a fresh database, as a connection string with the password in
// TRIALFORM_VAR_pg_conn (the configuration's sensitive variable) and in
// libpq's PG* variables, and the password alone in PG_PASSWORD, for the
// scripts to check it is written nowhere.
func TestPgScripts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end scripts are not short")
	}
	srv := pgtest.NewServer(t)
	procs := newScriptProcs()
	defer procs.check(t)
	testscript.Run(t, testscript.Params{
		Dir:       "testdata/pg",
		Condition: scriptCondition, // [git], [curl]: a missing one fails in CI (testdeps)
		Setup: func(env *testscript.Env) error {
			procs.setup(env)
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("PYTHONDONTWRITEBYTECODE", "1")
			conn := srv.NewDB(t)
			u, err := url.Parse(conn)
			if err != nil {
				return err
			}
			name := strings.TrimPrefix(u.Path, "/")
			env.Setenv("TRIALFORM_VAR_pg_conn", conn)
			for k, v := range srv.Env(name) {
				env.Setenv(k, v)
			}
			env.Setenv("PG_PASSWORD", srv.Password)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfor":    cmdWaitFor,
			"trialcount": cmdTrialCount,
			"jsonfield":  cmdJSONField,
			"waitlog":    cmdWaitLog,
			"waitfile":   cmdWaitFile,
			"replace":    cmdReplace,
			"pgsql":      cmdPgSQL,
		},
	})
}

// cmdPgSQL runs SQL (its one argument) in the script's database, as a
// person at psql would: pgsql 'CREATE ...'.
func cmdPgSQL(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pgsql SQL")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ts.Getenv("TRIALFORM_VAR_pg_conn"))
	if err != nil {
		ts.Fatalf("pgsql: connect: %v", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, args[0])
	if neg && err == nil {
		ts.Fatalf("pgsql: unexpected success")
	}
	if !neg && err != nil {
		ts.Fatalf("pgsql: %v", err)
	}
}
