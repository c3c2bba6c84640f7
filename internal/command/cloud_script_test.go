package command_test

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trialform/trialform/providers/aml/amltest"
	"github.com/trialform/trialform/providers/dlts/dltstest"
	"github.com/trialform/trialform/providers/openpai/openpaitest"
)

// Each script's fake cloud services.
var (
	fakesMu   sync.Mutex
	paiFakes  = map[*testscript.TestScript]*openpaitest.Server{}
	dltsFakes = map[*testscript.TestScript]*dltstest.Server{}
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

// dltsfake PASSWORD: starts a fake DLTS dashboard (user alice@example.com,
// team my-team) for this script, and sets TRIALFORM_VAR_dashboard,
// TRIALFORM_VAR_team, TRIALFORM_VAR_local_mount and
// TRIALFORM_VAR_container_mount (the same path: the fake's jobs run here).
// dltsfake jobs N: the fake holds N jobs.
func cmdDLTSFake(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 2 && args[0] == "jobs" {
		fakesMu.Lock()
		s := dltsFakes[ts]
		fakesMu.Unlock()
		if s == nil {
			ts.Fatalf("dltsfake: start it first")
		}
		n := len(s.JobIDs())
		if want, _ := strconv.Atoi(args[1]); (n == want) == neg {
			ts.Fatalf("the fake holds %d jobs, want %s %d (created %d)", n, map[bool]string{true: "not", false: ""}[neg], want, s.Submits())
		}
		return
	}
	if len(args) != 1 {
		ts.Fatalf("usage: dltsfake PASSWORD | dltsfake jobs N")
	}
	s := dltstest.New("alice@example.com", args[0], "my-team")
	fakesMu.Lock()
	dltsFakes[ts] = s
	fakesMu.Unlock()
	ts.Defer(func() {
		s.Close()
		fakesMu.Lock()
		delete(dltsFakes, ts)
		fakesMu.Unlock()
	})
	mount := filepath.Join(ts.Getenv("WORK"), "dlts-storage")
	if err := os.MkdirAll(mount, 0o755); err != nil {
		ts.Fatalf("dltsfake: %v", err)
	}
	ts.Setenv("TRIALFORM_VAR_dashboard", s.URL)
	ts.Setenv("TRIALFORM_VAR_team", "my-team")
	ts.Setenv("TRIALFORM_VAR_local_mount", mount)
	ts.Setenv("TRIALFORM_VAR_container_mount", mount)
}

var amlFakes = map[*testscript.TestScript]*amltest.Server{}

// The fake Azure ML workspace's fixed identities.
const (
	amlTenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	amlClient = "0b3c9a7e-5d41-4b2f-8e6a-1f2d3c4b5a69"
	amlSub    = "11111111-2222-3333-4444-555555555555"
)

// amlfake SECRET: starts a TLS fake of Entra ID and an Azure ML workspace
// (subscription amlSub, resource group rg-ml, workspace ws1, service
// principal amlClient in amlTenant with SECRET) for this script; sets
// TRIALFORM_VAR_aml_url, TRIALFORM_VAR_mount (the datastore "trialstore"
// as mounted here), TRIALFORM_VAR_cmount (where jobs link it) and
// SSL_CERT_FILE (the fake's certificate, which trialform then trusts).
// amlfake jobs N: the fake holds N jobs.
func cmdAMLFake(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 2 && args[0] == "jobs" {
		fakesMu.Lock()
		s := amlFakes[ts]
		fakesMu.Unlock()
		if s == nil {
			ts.Fatalf("amlfake: start it first")
		}
		n := len(s.JobNames())
		if want, _ := strconv.Atoi(args[1]); (n == want) == neg {
			ts.Fatalf("the fake holds %d jobs, want %s %d (created %d)", n, map[bool]string{true: "not", false: ""}[neg], want, s.Submits())
		}
		return
	}
	if len(args) != 1 {
		ts.Fatalf("usage: amlfake SECRET | amlfake jobs N")
	}
	s := amltest.New(amlTenant, amlClient, args[0], amlSub, "rg-ml", "ws1")
	work := ts.Getenv("WORK")
	mount := filepath.Join(work, "blobfuse")
	if err := os.MkdirAll(mount, 0o755); err != nil {
		ts.Fatalf("amlfake: %v", err)
	}
	s.Datastores["trialstore"] = mount
	cert, err := s.CertFile(work)
	if err != nil {
		ts.Fatalf("amlfake: %v", err)
	}
	fakesMu.Lock()
	amlFakes[ts] = s
	fakesMu.Unlock()
	ts.Defer(func() {
		s.Close()
		fakesMu.Lock()
		delete(amlFakes, ts)
		fakesMu.Unlock()
	})
	ts.Setenv("TRIALFORM_VAR_aml_url", s.URL)
	ts.Setenv("TRIALFORM_VAR_mount", mount)
	ts.Setenv("TRIALFORM_VAR_cmount", filepath.Join(work, "job", "mnt", "trialstore"))
	ts.Setenv("SSL_CERT_FILE", cert)
}
