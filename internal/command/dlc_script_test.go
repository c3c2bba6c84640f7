package command_test

import (
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trialform/trialform/providers/dlc/dlctest"
)

// TestDLCScripts runs the end-to-end scripts of the dlc platform
// (testdata/dlc) with the real binary against dlctest, the fake of the DLC
// OpenAPI, whose jobs are real local processes.
func TestDLCScripts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end scripts are not short")
	}
	procs := newScriptProcs()
	defer procs.check(t)
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/dlc",
		UpdateScripts: update,
		Setup: func(env *testscript.Env) error {
			procs.setup(env)
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("PYTHONDONTWRITEBYTECODE", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfor":    cmdWaitFor,
			"trialcount": cmdTrialCount,
			"jsonfield":  cmdJSONField,
			"cpexample":  cmdCopyExample,
			"replace":    cmdReplace,
			// dlcfake KEY_ID SECRET: start a fake DLC service that accepts
			// that AccessKey; TRIALFORM_VAR_endpoint is its URL.
			"dlcfake": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: dlcfake KEY_ID SECRET")
				}
				srv := dlctest.New(args[0], args[1])
				ts.Defer(srv.Close)
				ts.Setenv("TRIALFORM_VAR_endpoint", srv.URL)
				fakes.Store(ts, srv)
			},
			// dlcjobs N [REFUSED]: the fake created N jobs, and refused
			// REFUSED requests' signatures when given.
			// dlcjobs live N: the fake holds N jobs (not deleted).
			"dlcjobs": func(ts *testscript.TestScript, neg bool, args []string) {
				v, ok := fakes.Load(ts)
				if !ok || len(args) < 1 {
					ts.Fatalf("usage: dlcjobs N [REFUSED] (after dlcfake)")
				}
				srv := v.(*dlctest.Server)
				if args[0] == "live" && len(args) == 2 {
					if n, _ := strconv.Atoi(args[1]); len(srv.JobIDs()) != n {
						ts.Fatalf("the fake holds %d jobs, want %d", len(srv.JobIDs()), n)
					}
					return
				}
				if n, _ := strconv.Atoi(args[0]); srv.Creates() != n {
					ts.Fatalf("the fake created %d jobs, want %d: %v", srv.Creates(), n, srv.DisplayNames())
				}
				if len(args) > 1 {
					if n, _ := strconv.Atoi(args[1]); srv.Refused() != n {
						ts.Fatalf("the fake refused %d requests, want %d", srv.Refused(), n)
					}
				}
			},
		},
	})
}

// fakes are the scripts' fake DLC services, by script.
var fakes sync.Map
