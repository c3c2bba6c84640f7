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
	p     *cloudjob.Provider
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
	return &lab{srv: srv, p: cloudjob.New(c, opts), mount: local}
}

func TestConformance(t *testing.T) {
	var l *lab
	conformance.Run(t, func(t *testing.T) providers.Provider {
		l = newLab(t, token, nil)
		return l.p
	}, conformance.Options{
		NNIPlatform: "pai", CodeCopied: true,
		Lose: func(t *testing.T, h providers.Handle) { l.srv.Vanish(h["name"]) },
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

// Every fault converges: the trial runs once, and its job exists once.
func TestFaultsConverge(t *testing.T) {
	post := cloudtest.Method(http.MethodPost, "/api/v2/jobs")
	get := cloudtest.Method(http.MethodGet, "~")
	for _, tc := range []struct {
		name  string
		fault cloudtest.Fault
		n     int
		match func(*http.Request) bool
	}{
		{"throttled submit", cloudtest.Throttle, 3, post},
		{"server error on submit", cloudtest.ServerError, 2, post},
		{"connection dropped before submit", cloudtest.Drop, 2, post},
		{"connection dropped after submit", cloudtest.DropAfter, 2, post},
		{"slow submit past the client timeout", cloudtest.Slow, 1, post},
		{"throttled reads", cloudtest.Throttle, 4, get},
		{"dropped reads", cloudtest.Drop, 3, get},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t, token, nil)
			l.srv.Faults.RetryAfter = 1
			l.srv.Faults.SlowFor = 3 * time.Second
			l.srv.Faults.Inject(tc.fault, tc.n, tc.match)
			start(t, l, "t1", `echo "NNISDK_MEb'{\"parameter_id\": 1, \"trial_job_id\": \"t1\", \"type\": \"FINAL\", \"sequence\": 0, \"value\": \"0.5\"}'"`)
			o := waitEnd(t, l, "t1")
			if o.Phase != providers.PhaseSucceeded || len(o.Metrics) != 1 || o.Metrics[0].Value != "0.5" {
				t.Errorf("after %s: %+v", tc.name, o)
			}
			if got := l.srv.Faults.Hits(tc.fault); got != tc.n {
				t.Errorf("fault injected %d times, want %d", got, tc.n)
			}
			if n := l.srv.Submits(); n != 1 {
				t.Errorf("%d jobs created, want 1", n)
			}
			if n := l.srv.Runner.Starts(l.srv.JobNames()[0]); n != 1 {
				t.Errorf("the job ran %d times", n)
			}
		})
	}
}

// Retry-After is honoured: a throttled call waits what the service said.
func TestRetryAfterHonoured(t *testing.T) {
	l := newLab(t, token, nil)
	l.srv.Faults.RetryAfter = 1
	l.srv.Faults.Inject(cloudtest.Throttle, 1, cloudtest.Method(http.MethodPost, ""))
	begin := time.Now()
	start(t, l, "t1", "true")
	if d := time.Since(begin); d < time.Second {
		t.Errorf("Start returned after %s, before the 1s Retry-After", d)
	}
}

// A job the cluster forgot is lost; Start resumes it as a new attempt in
// the same output dir.
func TestLostJobResumes(t *testing.T) {
	l := newLab(t, token, nil)
	h := start(t, l, "t1", "sleep 1000")
	l.srv.Vanish(h["name"])
	o, err := l.p.Read(context.Background(), providers.ReadRequest{Experiment: "e", TrialID: "t1"})
	if err != nil || o.Phase != providers.PhaseLost {
		t.Fatalf("after the job vanished: %+v %v", o, err)
	}
	h2, err := l.p.Start(context.Background(), providers.StartRequest{Experiment: "e", ExperimentID: "x1", TrialID: "t1", Seq: 1, ParameterID: 1,
		Params: map[string]any{"lr": 0.1}, Shell: "true", CodeDir: t.TempDir(), Lineage: "L", Generation: 1, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if h2["attempt"] != "2" || h2["name"] == h["name"] {
		t.Errorf("resumed handle %v (first %v)", h2, h)
	}
	if o := waitEnd(t, l, "t1"); o.Phase != providers.PhaseSucceeded {
		t.Errorf("resumed trial: %+v", o)
	}
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
