package remote

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// waitFile waits until p holds want.
func waitFile(t *testing.T, p, want string) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q", p, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A LOST trial's machine still unreachable when the planner resumes it:
// the resume waits (no free capacity, no start failure counted), and when
// the machine is back the trial, which ended meanwhile, reads as ended
// with its result.
func TestResumeWaitsForUnreachableMachine(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	srv := l.Servers[1]
	cfg.Machines = cfg.Machines[1:]
	cfg.LostGrace = time.Millisecond
	r := newRemote(t, cfg)
	code := t.TempDir()
	goFile := filepath.Join(code, "go")
	req := trialReq("wait", "t1", `while [ ! -e `+shq(goFile)+` ]; do sleep 0.02; done; echo "trialform: 0.5"`, code)
	h, err := r.Start(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "wait", "t1", providers.PhaseRunning)
	srv.Stop()
	defer srv.Start()
	rr := providers.ReadRequest{Experiment: "wait", TrialID: "t1", Handle: h}
	deadline := time.Now().Add(eventWait)
	for {
		o, err := r.Read(ctx(t), rr)
		if err == nil && o.Phase == providers.PhaseLost {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never LOST: %+v %v", o, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The trial ends while its machine is away.
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(h["dir"], statusFile), "state=ended")
	resume := req
	resume.Resume, resume.Handle = true, h
	_, err = r.Start(ctx(t), resume)
	if !errors.Is(err, providers.ErrNoCapacity) || providers.IsPermanent(err) || !strings.Contains(err.Error(), srv.Addr()) {
		t.Fatalf("resume on an unreachable machine: %v, want a wait for capacity naming %s", err, srv.Addr())
	}
	// A new trial waits as well when no machine can be reached.
	if _, err := r.Start(ctx(t), trialReq("wait", "t2", "true", code)); !errors.Is(err, providers.ErrNoCapacity) {
		t.Errorf("new trial with every machine unreachable: %v, want a wait for capacity", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	o := waitPhase(t, r, "wait", "t1", providers.PhaseSucceeded)
	if len(o.Metrics) == 0 || o.Metrics[len(o.Metrics)-1].Type != "FINAL" || o.Metrics[len(o.Metrics)-1].Value != "0.5" {
		t.Errorf("the trial that ended while its machine was away: metrics %+v", o.Metrics)
	}
}

// A machine that cannot be dialled is said unreachable once, also by the
// starts that follow within a second and reuse what the failed dial found
// (they said "machine X unreachable: machine X unreachable: ...").
func TestUnreachableSaidOnce(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	srv := l.Servers[1]
	cfg.Machines = cfg.Machines[1:]
	srv.Stop()
	defer srv.Start()
	r := newRemote(t, cfg)
	code := t.TempDir()
	for _, id := range []string{"t1", "t2"} {
		_, err := r.Start(ctx(t), trialReq("down", id, "true", code))
		if !errors.Is(err, providers.ErrNoCapacity) || !strings.Contains(err.Error(), srv.Addr()) {
			t.Fatalf("start %s on an unreachable machine: %v, want a wait for capacity naming %s", id, err, srv.Addr())
		}
		if n := strings.Count(err.Error(), "unreachable"); n != 1 {
			t.Errorf("start %s: %q says unreachable %d times, want once", id, err, n)
		}
	}
}
