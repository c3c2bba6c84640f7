package dlts_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
	"github.com/trialform/trialform/providers/cloudjob/cloudtest"
	"github.com/trialform/trialform/providers/conformance"
	"github.com/trialform/trialform/providers/dlts"
	"github.com/trialform/trialform/providers/dlts/dltstest"
	"github.com/trialform/trialform/providers/registry"
)

const password = "dlts-Pa55-4e3d2c"

type lab struct {
	srv *dltstest.Server
	p   *cloudjob.SpecProvider
}

func newLab(t *testing.T, s dlts.Settings, getenv func(string) string) *lab {
	srv := dltstest.New("alice@example.com", password, "team1")
	d := t.TempDir()
	// Registered after the first TempDir, so it runs before the test's
	// directories are removed: a job still writing there would fail that.
	t.Cleanup(srv.Close)
	local := filepath.Join(d, "nfs")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(local, filepath.Join(d, "mnt")); err != nil {
		t.Fatal(err)
	}
	s.Dashboard = srv.URL
	s.MountSettings = cloudjob.MountSettings{LocalMount: local, ContainerMount: filepath.Join(d, "mnt")}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	env := registry.Env{Name: "lab", Dir: d}
	c, err := dlts.NewClient(&s, env.Name, getenv)
	if err != nil {
		t.Fatal(err)
	}
	c.HTTP.Timeout = 2 * time.Second
	opts := dlts.Options(c, &s, env)
	opts.Poll = 200 * time.Millisecond
	opts.Retry = cloudjob.Retry{Attempts: 8, Base: 10 * time.Millisecond, Max: 2 * time.Second}
	return &lab{srv: srv, p: cloudjob.New(c, opts).(*cloudjob.SpecProvider)}
}

func good() dlts.Settings {
	return dlts.Settings{Team: "team1", Email: "alice@example.com", Password: password}
}

func TestConformance(t *testing.T) {
	var l *lab
	conformance.Run(t, func(t *testing.T) providers.Provider {
		l = newLab(t, good(), nil)
		return l.p
	}, conformance.Options{
		NNIPlatform: "dlts", CodeCopied: true,
		Unimplemented: map[string]string{conformance.CapTensorBoardSync: cloudjob.NoTensorBoardSync},
		Lose:          func(t *testing.T, h providers.Handle) { l.srv.Vanish(h["job"]) },
	})
}

func waitEnd(t *testing.T, l *lab, id string) providers.Observation {
	t.Helper()
	return cloudtest.WaitEnd(t, l.p, id)
}

func start(t *testing.T, l *lab, id, shell string) (providers.Handle, error) {
	return l.p.Start(context.Background(), cloudtest.StartRequest(t, id, shell))
}

// The cloud platforms' shared suite: faults converge, Retry-After is
// honoured, a lost job resumes. DLTS assigns job ids: a submit whose
// answer was lost is found by name, never made twice.
func TestCloudSuite(t *testing.T) {
	post := cloudtest.Method(http.MethodPost, "/jobs")
	get := cloudtest.Method(http.MethodGet, "/v2/clusters/")
	cloudtest.Run(t, cloudtest.Suite{
		NewLab: func(t *testing.T) *cloudtest.Lab {
			l := newLab(t, good(), nil)
			return &cloudtest.Lab{Provider: l.p, Faults: l.srv.Faults, Runner: l.srv.Runner, Creates: l.srv.Submits, Jobs: l.srv.JobIDs,
				Vanish: func(h providers.Handle) { l.srv.Vanish(h["job"]) }}
		},
		Faults: []cloudtest.FaultCase{
			{Name: "throttled submit", Fault: cloudtest.Throttle, N: 3, Match: post},
			{Name: "server error on submit", Fault: cloudtest.ServerError, N: 2, Match: post},
			{Name: "connection dropped before submit", Fault: cloudtest.Drop, N: 2, Match: post},
			// the retry finds the job by name: one drop, no second POST
			{Name: "connection dropped after submit", Fault: cloudtest.DropAfter, N: 1, Match: post},
			{Name: "slow submit past the client timeout", Fault: cloudtest.Slow, N: 1, Match: post},
			{Name: "throttled reads", Fault: cloudtest.Throttle, N: 4, Match: get},
			{Name: "dropped reads", Fault: cloudtest.Drop, N: 3, Match: get},
			{Name: "slow reads", Fault: cloudtest.Slow, N: 1, Match: get},
		},
		Submit: post,
		JobKey: "job",
	})
}

// A wrong password is a permanent error naming its source, never showing
// the password (which travels in every URL's query).
func TestWrongPasswordIsClear(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      dlts.Settings
		getenv func(string) string
		source string
	}{
		{"attribute", dlts.Settings{Team: "team1", Email: "alice@example.com", Password: "wrong-" + password}, nil, `the password attribute of platform "dlts" "lab"`},
		{"environment", dlts.Settings{Team: "team1", Email: "alice@example.com"},
			func(k string) string { return map[string]string{dlts.EnvPassword: "wrong-" + password}[k] }, "the environment variable DLTS_JOB_TOKEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t, tc.s, tc.getenv)
			_, err := start(t, l, "t1", "true")
			if err == nil || !providers.IsPermanent(err) {
				t.Fatalf("Start with a wrong password: %v, want a permanent error", err)
			}
			if !strings.Contains(err.Error(), "HTTP 403") || !strings.Contains(err.Error(), tc.source) {
				t.Errorf("error %q does not name HTTP 403 and %s", err, tc.source)
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("error shows the password: %v", err)
			}
			if l.srv.Submits() != 0 {
				t.Error("a job was created with a wrong password")
			}
		})
	}
}

// A transport error's URL holds the password in its query: it is dropped.
func TestTransportErrorHidesPassword(t *testing.T) {
	l := newLab(t, good(), nil)
	l.srv.Close()
	_, err := start(t, l, "t1", "true")
	if err == nil {
		t.Fatal("Start with the dashboard down succeeded")
	}
	if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "password=") {
		t.Errorf("error shows the password: %v", err)
	}
}

func TestMissingCredentials(t *testing.T) {
	_, err := dlts.NewClient(&dlts.Settings{Dashboard: "http://x/", Team: "t", Email: "e"}, "lab", func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "password") || !strings.Contains(err.Error(), "DLTS_JOB_TOKEN") {
		t.Errorf("no password: %v", err)
	}
}

func TestSpecMatchesLiveJob(t *testing.T) {
	l := newLab(t, good(), nil)
	req := providers.StartRequest{Experiment: "e", TrialID: "t1", Shell: "sleep 1000", CodeDir: t.TempDir(), GPUs: 2}
	if _, err := l.p.Start(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	o, err := l.p.Read(context.Background(), providers.ReadRequest{Experiment: "e", TrialID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := l.p.Spec(req)
	if o.Spec == "" || o.Spec != want || !strings.Contains(want, "gpus = 2") {
		t.Errorf("live spec:\n%s\nwant:\n%s", o.Spec, want)
	}
}

// A service that echoes the request in an error body (issue 25 D): the
// password travels URL-encoded in every query, and no encoding of it
// (raw, URL query or path, JSON-escaped) reaches the error.
func TestEchoedRequestHidesPassword(t *testing.T) {
	const pw = `p@ss w/rd+&="x'1-long`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, _ := json.Marshal(r.URL.Query())
		http.Error(w, "bad request: "+r.Method+" "+r.URL.RequestURI()+" query "+string(q), http.StatusBadRequest)
	}))
	defer srv.Close()
	d := t.TempDir()
	s := dlts.Settings{Team: "team1", Email: "alice@example.com", Password: pw, Dashboard: srv.URL, GPUType: "P40",
		MountSettings: cloudjob.MountSettings{LocalMount: d, ContainerMount: d}}
	env := registry.Env{Name: "lab", Dir: d}
	c, err := dlts.NewClient(&s, env.Name, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	opts := dlts.Options(c, &s, env)
	opts.Retry = cloudjob.Retry{Attempts: 1}
	p := cloudjob.New(c, opts)
	_, err = p.Start(context.Background(), cloudtest.StartRequest(t, "t1", "true"))
	if err == nil {
		t.Fatal("Start against a service that answers 400 succeeded")
	}
	if !strings.Contains(err.Error(), "bad request") {
		t.Fatalf("the error lost the service's words: %v", err)
	}
	jsonPW, _ := json.Marshal(pw)
	for _, form := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw), string(jsonPW[1 : len(jsonPW)-1]), "-long"} {
		if strings.Contains(err.Error(), form) {
			t.Errorf("the error shows the password as %q: %v", form, err)
		}
	}
}
