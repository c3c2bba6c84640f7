package openpai_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
	"github.com/trialform/trialform/providers/cloudjob/cloudtest"
	"github.com/trialform/trialform/providers/conformance"
	"github.com/trialform/trialform/providers/openpai"
	"github.com/trialform/trialform/providers/openpai/openpaitest"
	"github.com/trialform/trialform/providers/registry"
)

const token = "pai-T0ken-8c1f2e"

// lab is one fake cluster and the provider of a platform block over it.
type lab struct {
	srv   *openpaitest.Server
	p     *cloudjob.SpecProvider
	mount string
}

func newLab(t testing.TB, tok string, tweak func(*cloudjob.Options, *openpai.Client)) *lab {
	srv := openpaitest.New("alice", token)
	d := t.TempDir()
	// Registered after the first TempDir, so it runs before the test's
	// directories are removed: a job still writing there would fail that.
	t.Cleanup(srv.Close)
	local := filepath.Join(d, "nfs")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	// The container sees the same storage under another path.
	if err := os.Symlink(local, filepath.Join(d, "mnt")); err != nil {
		t.Fatal(err)
	}
	s := &openpai.Settings{Host: srv.URL, Username: "alice", Token: tok, TrialGPUNumber: -1,
		MountSettings: cloudjob.MountSettings{LocalMount: local, ContainerMount: filepath.Join(d, "mnt")}}
	env := registry.Env{Name: "lab", Dir: d}
	c, err := openpai.NewClient(s, env.Name)
	if err != nil {
		t.Fatal(err)
	}
	c.HTTP.Timeout = 2 * time.Second
	opts := openpai.Options(c, s, env)
	opts.Poll = 200 * time.Millisecond
	opts.Retry = cloudjob.Retry{Attempts: 8, Base: 10 * time.Millisecond, Max: 2 * time.Second}
	if tweak != nil {
		tweak(&opts, c)
	}
	return &lab{srv: srv, p: cloudjob.New(c, opts).(*cloudjob.SpecProvider), mount: local}
}

func TestConformance(t *testing.T) {
	var l *lab
	conformance.Run(t, func(t *testing.T) providers.Provider {
		l = newLab(t, token, nil)
		return l.p
	}, conformance.Options{
		NNIPlatform: "pai", CodeCopied: true,
		Unimplemented: map[string]string{conformance.CapTensorBoardSync: cloudjob.NoTensorBoardSync},
		Lose:          func(t *testing.T, h providers.Handle) { l.srv.Vanish(h["name"]) },
	})
}

func start(t *testing.T, l *lab, id, shell string) providers.Handle {
	t.Helper()
	return cloudtest.Start(t, l.p, id, shell)
}

func waitEnd(t *testing.T, l *lab, id string) providers.Observation {
	t.Helper()
	return cloudtest.WaitEnd(t, l.p, id)
}

// The cloud platforms' shared suite: faults converge, Retry-After is
// honoured, a lost job resumes in the same output dir.
func TestCloudSuite(t *testing.T) {
	post := cloudtest.Method(http.MethodPost, "/api/v2/jobs")
	get := cloudtest.Method(http.MethodGet, "~")
	cloudtest.Run(t, cloudtest.Suite{
		NewLab: func(t *testing.T) *cloudtest.Lab {
			l := newLab(t, token, nil)
			return &cloudtest.Lab{Provider: l.p, Faults: l.srv.Faults, Runner: l.srv.Runner, Creates: l.srv.Submits, Jobs: l.srv.JobNames,
				Vanish: func(h providers.Handle) { l.srv.Vanish(h["name"]) }}
		},
		Faults: []cloudtest.FaultCase{
			{Name: "throttled submit", Fault: cloudtest.Throttle, N: 3, Match: post},
			{Name: "server error on submit", Fault: cloudtest.ServerError, N: 2, Match: post},
			{Name: "connection dropped before submit", Fault: cloudtest.Drop, N: 2, Match: post},
			{Name: "connection dropped after submit", Fault: cloudtest.DropAfter, N: 2, Match: post},
			{Name: "slow submit past the client timeout", Fault: cloudtest.Slow, N: 1, Match: post},
			{Name: "throttled reads", Fault: cloudtest.Throttle, N: 4, Match: get},
			{Name: "dropped reads", Fault: cloudtest.Drop, N: 3, Match: get},
		},
		Submit: cloudtest.Method(http.MethodPost, ""),
		JobKey: "name",
	})
}

// A wrong token is a permanent error that names where the token comes
// from, and never shows the token.
func TestWrongTokenIsClear(t *testing.T) {
	l := newLab(t, "wrong-"+token, nil)
	_, err := l.p.Start(context.Background(), providers.StartRequest{Experiment: "e", TrialID: "t1", Shell: "true", CodeDir: t.TempDir()})
	if err == nil || !providers.IsPermanent(err) {
		t.Fatalf("Start with a wrong token: %v, want a permanent error", err)
	}
	for _, want := range []string{"HTTP 401", "the token attribute of platform \"openpai\" \"lab\""} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("error shows the token: %v", err)
	}
	if err := l.p.Validate(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("Validate with a wrong token: %v", err)
	}
	if l.srv.Submits() != 0 {
		t.Errorf("a job was created with a wrong token")
	}
}

// The drift check: the live job's spec equals what Start would submit.
func TestSpecMatchesLiveJob(t *testing.T) {
	l := newLab(t, token, nil)
	code := t.TempDir()
	req := providers.StartRequest{Experiment: "e", TrialID: "t1", Shell: "sleep 1000", CodeDir: code, GPUs: 1}
	if _, err := l.p.Start(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	o, err := l.p.Read(context.Background(), providers.ReadRequest{Experiment: "e", TrialID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := l.p.Spec(req)
	if err != nil {
		t.Fatal(err)
	}
	if o.Spec == "" || o.Spec != want {
		t.Errorf("live spec:\n%s\nwant:\n%s", o.Spec, want)
	}
	if !strings.Contains(want, "gpu = 1") || !strings.Contains(want, "image = msranni/nni:latest") {
		t.Errorf("spec %s", want)
	}
	req.GPUs = 2
	if other, _ := l.p.Spec(req); other == o.Spec {
		t.Errorf("a changed trial renders the same spec")
	}
}

func TestMemoryMB(t *testing.T) {
	for in, want := range map[string]int{"8gb": 8192, "512mb": 512, "1.5g": 1536, "2GB": 2048, "1tb": 1 << 20} {
		if got, err := openpai.MemoryMB(in); err != nil || got != want {
			t.Errorf("MemoryMB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-1gb", "10kb"} {
		if _, err := openpai.MemoryMB(bad); err == nil {
			t.Errorf("MemoryMB(%q) accepted", bad)
		}
	}
}
