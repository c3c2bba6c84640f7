package kubernetes_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/trialform/trialform/providers"
	k8s "github.com/trialform/trialform/providers/kubernetes"
)

// requestLog wraps a rest config so that it records the requests made
// through it ("GET /apis/batch/v1/namespaces/ns/jobs?watch=true" ...).
// With lag, every read of a watch's stream waits that long first (podLag
// for the pods'): the watched copies fall behind the API, and each other,
// as they may on a busy apiserver.
type requestLog struct {
	lag, podLag time.Duration
	mu          sync.Mutex
	reqs        []string
}

func (l *requestLog) config(rc *rest.Config) *rest.Config {
	c := rest.CopyConfig(rc)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			l.mu.Lock()
			l.reqs = append(l.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
			l.mu.Unlock()
			resp, err := rt.RoundTrip(r)
			lag := l.lag
			if strings.HasSuffix(r.URL.Path, "/pods") {
				lag = l.podLag
			}
			if err == nil && lag > 0 && r.URL.Query().Get("watch") == "true" {
				resp.Body = &slowBody{ReadCloser: resp.Body, lag: lag}
			}
			return resp, err
		})
	})
	return c
}

type slowBody struct {
	io.ReadCloser
	lag time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	time.Sleep(b.lag)
	return b.ReadCloser.Read(p)
}

// take returns the requests recorded since the last take, less the
// informers' own (watches, and the list a watch restarts with).
func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.reqs {
		if strings.Contains(r, "watch=true") || strings.Contains(r, "resourceVersion=") {
			continue
		}
		out = append(out, r)
	}
	l.reqs = nil
	return out
}

// following is a platform that can follow its trials.
type following interface {
	Follow()
	FollowReady() bool
	Close() error
}

// follow makes p follow its trials, closes it when the test ends, and
// waits until it answers from its copies (before, it reads the API).
func follow(t *testing.T, p following) {
	t.Helper()
	p.Follow()
	t.Cleanup(func() { p.Close() })
	for deadline := time.Now().Add(60 * time.Second); !p.FollowReady(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watches never became ready")
		}
	}
}

// untilRunning reads a trial until it runs and reported one metric, and
// returns its metric offsets.
func untilRunning(ctx context.Context, t *testing.T, p providers.Provider, ns, exp, trial string) map[string]int64 {
	t.Helper()
	var off map[string]int64
	for {
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: trial, MetricsOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		off = o.MetricsOffset
		if o.Phase == providers.PhaseRunning && len(o.Metrics) == 1 {
			return off
		}
		if ctx.Err() != nil {
			dump(t, ns)
			t.Fatalf("trial %s: %+v", trial, o)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// releasedTrial is a trial's shell command: one intermediate result,
// then, once the file release exists, its final result.
func releasedTrial(release string) string {
	return "echo \"NNISDK_MEb'{\\\"type\\\": \\\"PERIODICAL\\\", \\\"sequence\\\": 0, \\\"value\\\": \\\"0.1\\\"}'\"; " +
		"while [ ! -e " + release + " ]; do sleep 0.1; done; echo \"NNISDK_MEb'{\\\"type\\\": \\\"FINAL\\\", \\\"sequence\\\": 1, \\\"value\\\": \\\"0.9\\\"}'\""
}

// untilSucceeded1 reads a trial from off until it ended: it must succeed
// with exactly its final result as the new metric.
func untilSucceeded1(ctx context.Context, t *testing.T, p providers.Provider, exp, trial string, off map[string]int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		o, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: trial, MetricsOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		off = o.MetricsOffset
		if o.Phase.Ended() {
			if o.Phase != providers.PhaseSucceeded || len(o.Metrics) != 1 || o.Metrics[0].Type != "FINAL" {
				t.Fatalf("trial %s: %s %s %+v", trial, o.Phase, o.Reason, o.Metrics)
			}
			return
		}
		if len(o.Metrics) != 0 {
			t.Fatalf("trial %s reported %+v before it ended", trial, o.Metrics)
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial %s never ended: %+v", trial, o)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopThenRead stops a trial and reads it at once: it must read killed,
// with the reason given.
func stopThenRead(ctx context.Context, t *testing.T, p providers.Provider, exp, trial string) {
	t.Helper()
	if err := p.Stop(ctx, providers.StopRequest{Experiment: exp, TrialID: trial, Reason: "test stop"}); err != nil {
		t.Fatal(err)
	}
	o, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: trial})
	if err != nil {
		t.Fatal(err)
	}
	if o.Phase != providers.PhaseKilled || o.Reason != "test stop" {
		t.Errorf("read right after Stop: %s %q, want killed %q", o.Phase, o.Reason, "test stop")
	}
}

// TestFollowAnswersFromTheWatch: a following provider (apply -wait, watch,
// the controller) lists and reads its trials from the watched copies: a
// refresh asks the API for the running trials' logs only, not for a List
// of Jobs and pods or a Job per trial; a trial that ends wakes the run
// loop (Changed) without any refresh; and the provider never answers with
// an older Job than the one it just created or stopped.
func TestFollowAnswersFromTheWatch(t *testing.T) {
	need(t)
	t.Parallel()
	ns := namespace(t, "follow")
	// The watches lag, the pods' more than the Jobs': what this process
	// did must still read back, and a Job that ended before its pod's
	// copy shows it must not lose the pod's last results.
	log := requestLog{lag: time.Second, podLag: 3 * time.Second}
	// (metrics_interval 20 s: the refresh checked below comes well within
	// it of the last log read, however loaded the machine.)
	p, err := k8s.New(k8s.Config{Rest: log.config(cp.Config), Namespace: ns, MetricsInterval: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	exp := "fw"
	start := func(id, shell string) {
		t.Helper()
		if _, err := p.Start(ctx, providers.StartRequest{Experiment: exp, ExperimentID: "eid", TrialID: id, Params: map[string]any{"x": 1},
			Shell: shell, CodeDir: smallCodeDir(t), Lineage: "L"}); err != nil {
			t.Fatal(err)
		}
	}
	start("long", "echo \"NNISDK_MEb'{\\\"type\\\": \\\"PERIODICAL\\\", \\\"sequence\\\": 0, \\\"value\\\": \\\"0.5\\\"}'\"; sleep 1000")
	// The short trial reports one result, then its final one once the
	// test releases it (the node agent runs pods on this machine).
	release := filepath.Join(t.TempDir(), "release")
	start("short", releasedTrial(release))
	follow(t, p)
	off := untilRunning(ctx, t, p, ns, exp, "long")
	log.take()

	// A refresh: List, then a Read of the running trial, whose log was
	// just read (within metrics_interval).
	obs, err := p.List(ctx, exp)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 2 || obs[0].TrialID != "long" || obs[0].Phase != providers.PhaseRunning {
		t.Fatalf("List from the copies: %+v", obs)
	}
	if _, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: "long", MetricsOffset: off}); err != nil {
		t.Fatal(err)
	}
	if got := log.take(); len(got) != 0 {
		t.Errorf("a refresh of a following provider asked the API: %q (want nothing: the log was read less than metrics_interval ago)", got)
	}

	// The short trial's log read while it runs: not read again within
	// metrics_interval unless its pod ended.
	soff := untilRunning(ctx, t, p, ns, exp, "short")
	log.take()
	for len(p.Changed()) > 0 {
		<-p.Changed()
	}

	// The short trial ends: Changed wakes the loop with no refresh made.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Changed():
	case <-ctx.Done():
		t.Fatal("the short trial's end did not signal Changed")
	}
	// Its Job's copy (1 s behind) says it ended before its pod's (3 s
	// behind) does: the final result must still be read.
	untilSucceeded1(ctx, t, p, exp, "short", soff)
	for _, r := range log.take() {
		path, query, _ := strings.Cut(r, "?")
		// Its log, and its pods once its Job ended before they did.
		if !strings.HasSuffix(path, "/log") && !(strings.HasSuffix(path, "/pods") && strings.Contains(query, "controller-uid")) {
			t.Errorf("reading a trial from the copies asked the API for %s (want its log only)", r)
		}
	}

	// Stopped, then read at once: Killed, never the Running Job the copy
	// may still hold.
	stopThenRead(ctx, t, p, exp, "long")
	// Started, then listed and read at once: there, though the copy may
	// not hold its Job yet.
	start("new", "sleep 1000")
	if o, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: "new"}); err != nil || !o.Exists {
		t.Errorf("read right after Start: %+v, %v", o, err)
	}
	obs, err = p.List(ctx, exp)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 3 {
		t.Errorf("list right after Start: %d trials, want 3: %+v", len(obs), obs)
	}
	// A Job another process creates is listed once its event arrives.
	other, err := k8s.New(k8s.Config{Rest: cp.Config, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Start(ctx, providers.StartRequest{Experiment: exp, ExperimentID: "eid", TrialID: "orphan", Params: map[string]any{"x": 2},
		Shell: "sleep 1000", CodeDir: smallCodeDir(t), Lineage: "L"}); err != nil {
		t.Fatal(err)
	}
	for {
		obs, err := p.List(ctx, exp)
		if err != nil {
			t.Fatal(err)
		}
		if len(obs) == 4 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the other process's trial never listed: %+v", obs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.PurgeExperiment(ctx, exp, "L"); err != nil {
		t.Fatal(err)
	}
	// Purged, then listed at once: nothing, whatever the copy still holds.
	if obs, err := p.List(ctx, exp); err != nil || len(obs) != 0 {
		t.Errorf("list right after the purge: %+v, %v", obs, err)
	}
	// Close stops the watches.
	p.Close()
	log.take()
	time.Sleep(200 * time.Millisecond)
	log.mu.Lock()
	n := len(log.reqs)
	log.mu.Unlock()
	if n != 0 {
		t.Errorf("%d requests after Close", n)
	}
	if jobs, _ := cp.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{}); len(jobs.Items) != 0 {
		t.Errorf("%d jobs left", len(jobs.Items))
	}
}

// TestConformanceFollowing runs the provider suite on a provider that
// follows its trials from the start: every contract (start, adopt, stop,
// a lost trial, resume, metrics) holds when the reads come from the
// watched copies.
func TestConformanceFollowing(t *testing.T) {
	need(t)
	t.Parallel()
	jobConformance(t, "conformance-follow", true)
}

// TestCRDFollowAnswersFromTheWatch: the same on a TFJob platform (the real
// training operator), with lagging watches: a refresh asks the API for
// nothing but logs that are due; a stopped trial reads killed (from its
// tombstone) at once; a purged experiment lists nothing at once.
func TestCRDFollowAnswersFromTheWatch(t *testing.T) {
	need(t)
	t.Parallel()
	ns := namespace(t, "follow-crd")
	log := requestLog{lag: time.Second, podLag: 3 * time.Second}
	p, err := k8s.NewCRD(k8s.CRDConfig{Kind: k8s.KindKubeflow, Operator: "tfjob", Roles: []k8s.Role{{Name: "worker", Replicas: 1}},
		Config: k8s.Config{Rest: log.config(cp.Config), Namespace: ns, Image: "python:3.11-slim", MetricsInterval: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	exp := "cf"
	if _, err := p.Start(ctx, providers.StartRequest{Experiment: exp, ExperimentID: "eid", TrialID: "long", Params: map[string]any{"x": 1},
		Shell:   "echo \"NNISDK_MEb'{\\\"type\\\": \\\"PERIODICAL\\\", \\\"sequence\\\": 0, \\\"value\\\": \\\"0.5\\\"}'\"; sleep 1000",
		CodeDir: smallCodeDir(t), Lineage: "L"}); err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(t.TempDir(), "release")
	if _, err := p.Start(ctx, providers.StartRequest{Experiment: exp, ExperimentID: "eid", TrialID: "short", Params: map[string]any{"x": 2},
		Shell: releasedTrial(release), CodeDir: smallCodeDir(t), Lineage: "L"}); err != nil {
		t.Fatal(err)
	}
	follow(t, p)
	off := untilRunning(ctx, t, p, ns, exp, "long")
	log.take()
	obs, err := p.List(ctx, exp)
	if err != nil || len(obs) != 2 || obs[0].Phase != providers.PhaseRunning {
		t.Fatalf("List from the copies: %+v, %v", obs, err)
	}
	if _, err := p.Read(ctx, providers.ReadRequest{Experiment: exp, TrialID: "long", MetricsOffset: off}); err != nil {
		t.Fatal(err)
	}
	if got := log.take(); len(got) != 0 {
		t.Errorf("a refresh of a following provider asked the API: %q", got)
	}
	// The TFJob's copy says it ended before its pod's does: the final
	// result must still be read.
	soff := untilRunning(ctx, t, p, ns, exp, "short")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	untilSucceeded1(ctx, t, p, exp, "short", soff)
	stopThenRead(ctx, t, p, exp, "long")
	if obs, err := p.List(ctx, exp); err != nil || len(obs) != 1 || obs[0].TrialID != "short" {
		t.Errorf("list right after Stop (the object is deleted, its tombstone stays): %+v, %v", obs, err)
	}
	if err := p.PurgeExperiment(ctx, exp, "L"); err != nil {
		t.Fatal(err)
	}
}

// TestFollowWarnsWhenTheWatchIsRefused: an account that may list but not
// watch the trials (a Role without `watch`) still refreshes, by listing
// as before, and the user is told once why the trials are not followed
// and what to grant.
func TestFollowWarnsWhenTheWatchIsRefused(t *testing.T) {
	need(t)
	t.Parallel()
	ns := namespace(t, "follow-refused")
	rc := rest.CopyConfig(cp.Config)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Query().Get("watch") == "true" {
				body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"jobs.batch is forbidden: User \"alice\" cannot watch resource \"jobs\"","reason":"Forbidden","code":403}`
				return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
			}
			return rt.RoundTrip(r)
		})
	})
	p, err := k8s.New(k8s.Config{Rest: rc, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := p.Start(ctx, providers.StartRequest{Experiment: "fr", ExperimentID: "eid", TrialID: "t0", Params: map[string]any{"x": 1},
		Shell: "sleep 1000", CodeDir: smallCodeDir(t), Lineage: "L"}); err != nil {
		t.Fatal(err)
	}
	p.Follow()
	var warned []string
	for len(warned) == 0 {
		if ctx.Err() != nil {
			t.Fatal("no warning about the refused watch")
		}
		if obs, err := p.List(ctx, "fr"); err != nil || len(obs) != 1 {
			t.Fatalf("list without a watch: %+v, %v", obs, err)
		}
		if p.FollowReady() {
			t.Fatal("following without a watch")
		}
		warned = p.Warnings()
		time.Sleep(200 * time.Millisecond)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "cannot watch the trials' Jobs and pods") || !strings.Contains(warned[0], "forbidden") ||
		!strings.Contains(warned[0], "list and watch") {
		t.Errorf("warnings: %q", warned)
	}
	time.Sleep(300 * time.Millisecond)
	if again := p.Warnings(); len(again) != 0 {
		t.Errorf("warned twice: %q", again)
	}
	if err := p.PurgeExperiment(ctx, "fr", "L"); err != nil {
		t.Fatal(err)
	}
}
