package command_test

import (
	"net/url"
	"os"
	"strings"
	"testing"

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
	if testing.Short() {
		t.Skip("end-to-end scripts are not short")
	}
	srv := pgtest.NewServer(t)
	defer checkNoProcessLeft(t)()
	testscript.Run(t, testscript.Params{
		Dir:       "testdata/pg",
		Condition: scriptCondition, // [git], [curl]: a missing one fails in CI (testdeps)
		Setup: func(env *testscript.Env) error {
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
		},
	})
}
