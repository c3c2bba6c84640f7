package command_test

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trialform/trialform/providers/openpai/openpaitest"
)

// Each script's fake cloud services.
var (
	fakesMu  sync.Mutex
	paiFakes = map[*testscript.TestScript]*openpaitest.Server{}
)

// openpaifake TOKEN: starts a fake OpenPAI (REST v2) for user alice with
// TOKEN for this script, and sets TRIALFORM_VAR_pai_host and
// TRIALFORM_VAR_mount (the shared storage, which the fake's jobs see at
// the same path).
// openpaifake jobs N: the fake holds N jobs.
func cmdOpenPAIFake(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 2 && args[0] == "jobs" {
		fakesMu.Lock()
		s := paiFakes[ts]
		fakesMu.Unlock()
		if s == nil {
			ts.Fatalf("openpaifake: start it first")
		}
		n := len(s.JobNames())
		if want, _ := strconv.Atoi(args[1]); (n == want) == neg {
			ts.Fatalf("the fake holds %d jobs, want %s %d (created %d)", n, map[bool]string{true: "not", false: ""}[neg], want, s.Submits())
		}
		return
	}
	if len(args) != 1 {
		ts.Fatalf("usage: openpaifake TOKEN | openpaifake jobs N")
	}
	s := openpaitest.New("alice", args[0])
	fakesMu.Lock()
	paiFakes[ts] = s
	fakesMu.Unlock()
	ts.Defer(func() {
		s.Close()
		fakesMu.Lock()
		delete(paiFakes, ts)
		fakesMu.Unlock()
	})
	mount := filepath.Join(ts.Getenv("WORK"), "nfs")
	if err := os.MkdirAll(mount, 0o755); err != nil {
		ts.Fatalf("openpaifake: %v", err)
	}
	ts.Setenv("TRIALFORM_VAR_pai_host", s.URL)
	ts.Setenv("TRIALFORM_VAR_mount", mount)
}
