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

// cloudFake is a fake cloud service a script starts.
type cloudFake interface {
	Submits() int
	Close()
}

// fakeKey names one script's fake of one command.
type fakeKey struct {
	cmd string
	ts  *testscript.TestScript
}

// cloudFakes are each script's fake cloud services, by fakeKey.
var cloudFakes sync.Map

// keepFake records s as this script's CMD fake and closes it when the
// script ends.
func keepFake(ts *testscript.TestScript, cmd string, s cloudFake) {
	k := fakeKey{cmd, ts}
	cloudFakes.Store(k, s)
	ts.Defer(func() {
		s.Close()
		cloudFakes.Delete(k)
	})
}

// fakeJobs runs `CMD jobs N` (the fake holds N jobs, as held counts
// them) when args are that form, and reports whether they were.
func fakeJobs[S cloudFake](ts *testscript.TestScript, neg bool, args []string, cmd string, held func(S) int) bool {
	if len(args) != 2 || args[0] != "jobs" {
		return false
	}
	v, ok := cloudFakes.Load(fakeKey{cmd, ts})
	if !ok {
		ts.Fatalf("%s: start it first", cmd)
	}
	s := v.(S)
	n := held(s)
	if want, _ := strconv.Atoi(args[1]); (n == want) == neg {
		ts.Fatalf("the fake holds %d jobs, want %s %d (created %d)", n, map[bool]string{true: "not", false: ""}[neg], want, s.Submits())
	}
	return true
}

// fakeMount makes the folder NAME under the script's work dir (a fake's
// shared storage) and returns its path.
func fakeMount(ts *testscript.TestScript, cmd, name string) string {
	mount := filepath.Join(ts.Getenv("WORK"), name)
	if err := os.MkdirAll(mount, 0o755); err != nil {
		ts.Fatalf("%s: %v", cmd, err)
	}
	return mount
}

// openpaifake TOKEN: starts a fake OpenPAI (REST v2) for user alice with
// TOKEN for this script, and sets TRIALFORM_VAR_pai_host and
// TRIALFORM_VAR_mount (the shared storage, which the fake's jobs see at
// the same path).
// openpaifake jobs N: the fake holds N jobs.
func cmdOpenPAIFake(ts *testscript.TestScript, neg bool, args []string) {
	if fakeJobs(ts, neg, args, "openpaifake", func(s *openpaitest.Server) int { return len(s.JobNames()) }) {
		return
	}
	if len(args) != 1 {
		ts.Fatalf("usage: openpaifake TOKEN | openpaifake jobs N")
	}
	s := openpaitest.New("alice", args[0])
	keepFake(ts, "openpaifake", s)
	mount := fakeMount(ts, "openpaifake", "nfs")
	ts.Setenv("TRIALFORM_VAR_pai_host", s.URL)
	ts.Setenv("TRIALFORM_VAR_mount", mount)
}

// dltsfake PASSWORD: starts a fake DLTS dashboard (user alice@example.com,
// team my-team) for this script, and sets TRIALFORM_VAR_dashboard,
// TRIALFORM_VAR_team, TRIALFORM_VAR_local_mount and
// TRIALFORM_VAR_container_mount (the same path: the fake's jobs run here).
// dltsfake jobs N: the fake holds N jobs.
func cmdDLTSFake(ts *testscript.TestScript, neg bool, args []string) {
	if fakeJobs(ts, neg, args, "dltsfake", func(s *dltstest.Server) int { return len(s.JobIDs()) }) {
		return
	}
	if len(args) != 1 {
		ts.Fatalf("usage: dltsfake PASSWORD | dltsfake jobs N")
	}
	s := dltstest.New("alice@example.com", args[0], "my-team")
	keepFake(ts, "dltsfake", s)
	mount := fakeMount(ts, "dltsfake", "dlts-storage")
	ts.Setenv("TRIALFORM_VAR_dashboard", s.URL)
	ts.Setenv("TRIALFORM_VAR_team", "my-team")
	ts.Setenv("TRIALFORM_VAR_local_mount", mount)
	ts.Setenv("TRIALFORM_VAR_container_mount", mount)
}

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
	if fakeJobs(ts, neg, args, "amlfake", func(s *amltest.Server) int { return len(s.JobNames()) }) {
		return
	}
	if len(args) != 1 {
		ts.Fatalf("usage: amlfake SECRET | amlfake jobs N")
	}
	s := amltest.New(amlTenant, amlClient, args[0], amlSub, "rg-ml", "ws1")
	work := ts.Getenv("WORK")
	mount := fakeMount(ts, "amlfake", "blobfuse")
	s.Datastores["trialstore"] = mount
	cert, err := s.CertFile(work)
	if err != nil {
		ts.Fatalf("amlfake: %v", err)
	}
	keepFake(ts, "amlfake", s)
	ts.Setenv("TRIALFORM_VAR_aml_url", s.URL)
	ts.Setenv("TRIALFORM_VAR_mount", mount)
	ts.Setenv("TRIALFORM_VAR_cmount", filepath.Join(work, "job", "mnt", "trialstore"))
	ts.Setenv("SSL_CERT_FILE", cert)
}
