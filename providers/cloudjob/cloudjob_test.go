package cloudjob_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
	"github.com/trialform/trialform/providers/cloudjob/cloudtest"
	"github.com/trialform/trialform/providers/conformance"
)

// memAPI is the smallest service over a cloudtest.Runner: jobs by name,
// ids "id-NAME". It tests the base alone; each platform's own fake speaks
// its service's HTTP API.
type memAPI struct {
	run     *cloudtest.Runner
	mu      sync.Mutex
	jobs    map[string]cloudjob.JobSpec // by id
	submits int
}

func newMemAPI(t *testing.T) *memAPI {
	r := cloudtest.NewRunner()
	// The test's TempDir root first: its removal is registered now, so it
	// runs after r.Close (cleanups run last-in first-out), once no job
	// writes there any more.
	_ = t.TempDir()
	t.Cleanup(r.Close)
	return &memAPI{run: r, jobs: map[string]cloudjob.JobSpec{}}
}

func (m *memAPI) Submit(ctx context.Context, s cloudjob.JobSpec) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := "id-" + s.Name
	if _, ok := m.jobs[id]; ok {
		return id, nil
	}
	m.submits++
	m.jobs[id] = s
	return id, m.run.Start(id, "cd "+s.WorkDir+" && "+s.Command, s.Env, "/")
}

func (m *memAPI) job(id string) (cloudjob.Job, error) {
	m.mu.Lock()
	s, ok := m.jobs[id]
	m.mu.Unlock()
	st, known := m.run.Status(id)
	if !ok || !known {
		return cloudjob.Job{}, fmt.Errorf("job %s: %w", id, providers.ErrNotFound)
	}
	j := cloudjob.Job{ID: id, Name: s.Name, Tags: s.Tags}
	switch st.State {
	case cloudtest.Waiting:
		j.Phase = providers.PhasePending
	case cloudtest.Running:
		j.Phase = providers.PhaseRunning
	case cloudtest.Succeeded:
		j.Phase = providers.PhaseSucceeded
	case cloudtest.Failed:
		j.Phase = providers.PhaseFailed
	case cloudtest.Stopped:
		j.Phase = providers.PhaseKilled
	}
	if !st.Started.IsZero() {
		t := st.Started
		j.Started = &t
	}
	if st.Done() {
		t, c := st.Ended, st.ExitCode
		j.Ended, j.ExitCode = &t, &c
	}
	return j, nil
}

func (m *memAPI) Get(ctx context.Context, id string) (cloudjob.Job, error) { return m.job(id) }

func (m *memAPI) List(ctx context.Context, tags map[string]string) ([]cloudjob.Job, error) {
	m.mu.Lock()
	var ids []string
	for id, s := range m.jobs {
		ok := true
		for k, v := range tags {
			ok = ok && s.Tags[k] == v
		}
		if ok {
			ids = append(ids, id)
		}
	}
	m.mu.Unlock()
	sort.Strings(ids)
	var out []cloudjob.Job
	for _, id := range ids {
		if j, err := m.job(id); err == nil {
			out = append(out, j)
		}
	}
	return out, nil
}

func (m *memAPI) Stop(ctx context.Context, id string) error {
	go m.run.Stop(id) // the service stops jobs asynchronously
	return nil
}

func (m *memAPI) Delete(ctx context.Context, id string) error {
	m.run.Forget(id)
	m.mu.Lock()
	delete(m.jobs, id)
	m.mu.Unlock()
	return nil
}

func (m *memAPI) Logs(ctx context.Context, id string, from int64) ([]byte, int64, error) {
	b, ok := m.run.Log(id, from)
	if !ok {
		return nil, from, providers.ErrNotFound
	}
	return b, from + int64(len(b)), nil
}

// mounts returns a shared storage dir and the container's view of it (a
// symlink: another path to the same files).
func mounts(t *testing.T) (local, container string) {
	d := t.TempDir()
	local = filepath.Join(d, "nfs")
	container = filepath.Join(d, "in-container")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(local, container); err != nil {
		t.Fatal(err)
	}
	return local, container
}

func TestConformanceMem(t *testing.T) {
	for _, onMount := range []bool{false, true} {
		t.Run(fmt.Sprintf("LogsOnMount=%v", onMount), func(t *testing.T) {
			var api *memAPI
			conformance.Run(t, func(t *testing.T) providers.Provider {
				api = newMemAPI(t)
				local, container := mounts(t)
				return cloudjob.New(api, cloudjob.Options{Kind: "mem", Name: "t", LocalMount: local, ContainerMount: container,
					LogsOnMount: onMount, Poll: 200 * time.Millisecond})
			}, conformance.Options{
				NNIPlatform: "mem", CodeCopied: true,
				Lose:          func(t *testing.T, h providers.Handle) { api.run.Forget(h["job"]) },
				Unimplemented: map[string]string{conformance.CapSpecDiff: "the mem API renders no specs", conformance.CapTensorBoardSync: cloudjob.NoTensorBoardSync},
			})
		})
	}
}

func TestTeeKeepsExitStatus(t *testing.T) {
	api := newMemAPI(t)
	local, container := mounts(t)
	p := cloudjob.New(api, cloudjob.Options{Kind: "mem", LocalMount: local, ContainerMount: container, LogsOnMount: true}).(*cloudjob.Provider)
	code := t.TempDir()
	ctx := context.Background()
	if _, err := p.Start(ctx, providers.StartRequest{Experiment: "e", TrialID: "t1", Shell: "echo out; echo err >&2; exit 7", CodeDir: code}); err != nil {
		t.Fatal(err)
	}
	var o providers.Observation
	for o.Phase == "" || !o.Phase.Ended() {
		var err error
		if o, err = p.Read(ctx, providers.ReadRequest{Experiment: "e", TrialID: "t1"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if o.Phase != providers.PhaseFailed || o.ExitCode == nil || *o.ExitCode != 7 {
		t.Fatalf("tee'd job: %+v", o)
	}
	var b strings.Builder
	if err := p.Logs(ctx, providers.LogsRequest{Experiment: "e", TrialID: "t1", Out: &b}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "out\n") || !strings.Contains(b.String(), "err\n") {
		t.Errorf("log on the mount = %q", b.String())
	}
}
