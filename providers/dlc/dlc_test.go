package dlc_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
	"github.com/trialform/trialform/providers/cloudjob/cloudtest"
	"github.com/trialform/trialform/providers/conformance"
	"github.com/trialform/trialform/providers/dlc"
	"github.com/trialform/trialform/providers/dlc/dlctest"
	"github.com/trialform/trialform/providers/registry"
)

const (
	keyID     = "LTAI5tFakeKeyId0001"
	keySecret = "dlc-S3cret-9a8b7c6d5e"
)

// lab is one fake DLC service and the provider of a platform block over it.
type lab struct {
	srv   *dlctest.Server
	p     *cloudjob.SpecProvider
	c     *dlc.Client
	mount string
}

func settings(t testing.TB, srv *dlctest.Server, secret string) (*dlc.Settings, registry.Env, string) {
	d := t.TempDir()
	local := filepath.Join(d, "nas")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	// The container sees the same NAS under another path.
	if err := os.Symlink(local, filepath.Join(d, "mnt")); err != nil {
		t.Fatal(err)
	}
	s := &dlc.Settings{JobType: "PyTorchJob", Image: "registry-vpc.cn-hangzhou.aliyuncs.com/pai-dlc/pytorch-training:1.6.0-gpu-py37-cu101-ubuntu18.04",
		PodCount: 1, EcsSpec: "ecs.c6.large", Region: "cn-hangzhou", WorkspaceID: "ws-1", NASDataSourceID: "data-nas1", OSSDataSourceID: "data-oss1",
		AccessKeyID: keyID, AccessKeySecret: secret, Endpoint: srv.URL,
		MountSettings: cloudjob.MountSettings{LocalMount: local, ContainerMount: filepath.Join(d, "mnt")}}
	return s, registry.Env{Name: "ali", Dir: d}, local
}

func newLab(t testing.TB, secret string) *lab {
	srv := dlctest.New(keyID, keySecret)
	s, env, local := settings(t, srv, secret)
	// Registered after settings' TempDir, so it runs before the test's
	// directories are removed: a job still writing there would fail that.
	t.Cleanup(srv.Close)
	s.RequestTimeout = 2 * time.Second
	c, err := dlc.NewClientFor(s, env.Name)
	if err != nil {
		t.Fatal(err)
	}
	opts := dlc.Options(c, s, env)
	opts.Poll = 200 * time.Millisecond
	opts.Retry = cloudjob.Retry{Attempts: 8, Base: 10 * time.Millisecond, Max: 2 * time.Second}
	return &lab{srv: srv, p: cloudjob.New(c, opts).(*cloudjob.SpecProvider), c: c, mount: local}
}

func TestConformance(t *testing.T) {
	var l *lab
	conformance.Run(t, func(t *testing.T) providers.Provider {
		l = newLab(t, keySecret)
		return l.p
	}, conformance.Options{
		NNIPlatform: "dlc", CodeCopied: true,
		Unimplemented: map[string]string{conformance.CapTensorBoardSync: cloudjob.NoTensorBoardSync},
		Lose:          func(t *testing.T, h providers.Handle) { l.srv.Vanish(h["job"]) },
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

const finalLine = cloudtest.FinalLine

// The cloud platforms' shared suite: faults converge, Retry-After is
// honoured, a lost job resumes.
func TestCloudSuite(t *testing.T) {
	create := cloudtest.Method(http.MethodPost, "/api/v1/jobs")
	get := cloudtest.Method(http.MethodGet, "/api/v1/jobs/")
	list := func(r *http.Request) bool { return r.Method == http.MethodGet && r.URL.Path == "/api/v1/jobs" }
	cloudtest.Run(t, cloudtest.Suite{
		NewLab: func(t *testing.T) *cloudtest.Lab {
			l := newLab(t, keySecret)
			return &cloudtest.Lab{Provider: l.p, Faults: l.srv.Faults, Runner: l.srv.Runner, Creates: l.srv.Creates, Jobs: l.srv.JobIDs,
				Vanish: func(h providers.Handle) { l.srv.Vanish(h["job"]) }}
		},
		Faults: []cloudtest.FaultCase{
			{Name: "throttled create", Fault: cloudtest.Throttle, N: 3, Match: create},
			{Name: "server error on create", Fault: cloudtest.ServerError, N: 2, Match: create},
			{Name: "connection dropped before create", Fault: cloudtest.Drop, N: 2, Match: create},
			// The retried Submit lists the job the first one created: one hit.
			{Name: "connection dropped after the job was created", Fault: cloudtest.DropAfter, N: 1, Match: create},
			{Name: "slow create past the client timeout", Fault: cloudtest.Slow, N: 1, Match: create},
			{Name: "throttled list before create", Fault: cloudtest.Throttle, N: 2, Match: list},
			{Name: "throttled reads", Fault: cloudtest.Throttle, N: 4, Match: get},
			{Name: "dropped reads", Fault: cloudtest.Drop, N: 3, Match: get},
			{Name: "server errors on reads", Fault: cloudtest.ServerError, N: 3, Match: get},
		},
		Submit: cloudtest.Method(http.MethodPost, ""),
		JobKey: "job",
	})
}

// Alibaba throttles with HTTP 400 and the code Throttling.User: retried,
// one job.
func TestThrottlingCodeIsRetried(t *testing.T) {
	l := newLab(t, keySecret)
	l.srv.ThrottleByCode(3)
	start(t, l, "t1", finalLine)
	if o := waitEnd(t, l, "t1"); o.Phase != providers.PhaseSucceeded || len(o.Metrics) != 1 {
		t.Errorf("after throttling: %+v", o)
	}
	if n := l.srv.Creates(); n != 1 {
		t.Errorf("%d jobs created, want 1", n)
	}
}

// A list without the jobs' settings: Submit reads each candidate's tags
// with GetJob, so a create whose answer was lost still makes one job.
func TestListWithoutSettings(t *testing.T) {
	l := newLab(t, keySecret)
	l.srv.ListWithoutSettings = true
	l.srv.Faults.Inject(cloudtest.DropAfter, 1, cloudtest.Method(http.MethodPost, "/api/v1/jobs"))
	start(t, l, "t1", finalLine)
	if o := waitEnd(t, l, "t1"); o.Phase != providers.PhaseSucceeded {
		t.Errorf("trial: %+v", o)
	}
	if n := l.srv.Creates(); n != 1 {
		t.Errorf("%d jobs created, want 1", n)
	}
	jobs, err := l.p.List(context.Background(), "e")
	if err != nil || len(jobs) != 1 {
		t.Errorf("List: %v %v", jobs, err)
	}
}

// The client reuses its connections (one TLS handshake, not one a call,
// against the real service).
func TestConnectionsReused(t *testing.T) {
	l := newLab(t, keySecret)
	for i := 0; i < 20; i++ {
		if err := l.c.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.srv.Conns(); n > 2 {
		t.Errorf("20 calls opened %d connections", n)
	}
}

// A wrong secret: the fake's signature check refuses it (403
// SignatureDoesNotMatch); the user sees a permanent error naming the
// credential source, never the secret.
func TestWrongSecretIsClear(t *testing.T) {
	l := newLab(t, "wrong-"+keySecret)
	_, err := l.p.Start(context.Background(), providers.StartRequest{Experiment: "e", TrialID: "t1", Shell: "true", CodeDir: t.TempDir()})
	if err == nil || !providers.IsPermanent(err) {
		t.Fatalf("Start with a wrong secret: %v, want a permanent error", err)
	}
	for _, want := range []string{"HTTP 403", "SignatureDoesNotMatch", `the access_key_id/access_key_secret attributes of platform "dlc" "ali"`, "check that value"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), keySecret) {
		t.Errorf("error shows the secret: %v", err)
	}
	if err := l.p.Validate(context.Background()); err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Errorf("Validate with a wrong secret: %v", err)
	}
	if l.srv.Creates() != 0 || l.srv.Refused() == 0 {
		t.Errorf("creates %d, refused %d", l.srv.Creates(), l.srv.Refused())
	}
}

// An unknown AccessKey ID from the environment: 401, naming the variables.
func TestWrongKeyFromEnvironment(t *testing.T) {
	srv := dlctest.New(keyID, keySecret)
	s, env, _ := settings(t, srv, "")
	t.Cleanup(srv.Close) // after settings' TempDir: runs before its removal
	s.AccessKeyID = ""
	t.Setenv(dlc.EnvAccessKeyID, "LTAI5tSomeoneElse")
	t.Setenv(dlc.EnvAccessKeySecret, keySecret)
	p, err := dlc.New(s, env)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Validate(context.Background())
	for _, want := range []string{"HTTP 401", "InvalidAccessKeyId.NotFound", "the environment variables ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), keySecret) {
		t.Errorf("error shows the secret: %v", err)
	}
	// The right key from the environment works.
	t.Setenv(dlc.EnvAccessKeyID, keyID)
	p, err = dlc.New(s, env)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(context.Background()); err != nil {
		t.Errorf("Validate with the environment's key: %v", err)
	}
	// No key anywhere: a clear error before any request.
	t.Setenv(dlc.EnvAccessKeyID, "")
	if _, err := dlc.New(s, env); err == nil || !strings.Contains(err.Error(), "sensitive variables") || !strings.Contains(err.Error(), dlc.EnvAccessKeySecret) {
		t.Errorf("no credentials: %v", err)
	}
}

// The job carries what seed 003's block says, and its live spec equals what
// Start would submit (drift).
func TestJobShapeAndSpec(t *testing.T) {
	l := newLab(t, keySecret)
	req := providers.StartRequest{Experiment: "e", TrialID: "t1", Shell: "sleep 1000", CodeDir: t.TempDir()}
	h, err := l.p.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	j, err := l.c.Get(context.Background(), h["job"])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"job_type = PyTorchJob", "workspace_id = ws-1", "spec[Worker] = image registry-vpc.cn-hangzhou.aliyuncs.com/pai-dlc/pytorch-training:1.6.0-gpu-py37-cu101-ubuntu18.04, pod_count 1, ecs_spec ecs.c6.large",
		"data_source = data-nas1 at \"" + filepath.Join(filepath.Dir(l.mount), "mnt") + "\"", "data_source = data-oss1", "env[NNI_PLATFORM] = dlc"} {
		if !strings.Contains(j.Spec, want) {
			t.Errorf("job spec lacks %q:\n%s", want, j.Spec)
		}
	}
	if j.Tags[cloudjob.TagTrial] != "t1" || j.Name != h["name"] {
		t.Errorf("job %+v", j)
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
	req.Shell = "sleep 999"
	if other, _ := l.p.Spec(req); other == o.Spec {
		t.Errorf("a changed trial renders the same spec")
	}
}

// Submit after a dropped answer finds the job it made by DisplayName and
// tag, also past the first page of ListJobs.
func TestSubmitFindsItsJobPastFirstPage(t *testing.T) {
	l := newLab(t, keySecret)
	ctx := context.Background()
	spec := cloudjob.JobSpec{Name: "tf-mine-1", Tags: map[string]string{cloudjob.TagJob: "tf-mine-1"}, Command: "sleep 1000", WorkDir: "/"}
	id, err := l.c.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	// 120 newer jobs whose DisplayName contains ours (ListJobs matches
	// names loosely) but that are not ours.
	for i := 0; i < 120; i++ {
		other := spec
		other.Name = fmt.Sprintf("tf-mine-1%03d", i)
		other.Tags = map[string]string{cloudjob.TagJob: other.Name}
		other.Command = "true"
		if _, err := l.c.Submit(ctx, other); err != nil {
			t.Fatal(err)
		}
	}
	again, err := l.c.Submit(ctx, spec)
	if err != nil || again != id {
		t.Errorf("second Submit: %q %v, want %q", again, err, id)
	}
	if n := l.srv.Creates(); n != 121 {
		t.Errorf("%d creates, want 121", n)
	}
}

// The block's checks name the attribute.
func TestCheck(t *testing.T) {
	s := &dlc.Settings{JobType: "pytorch", Image: "", PodCount: 0, EcsSpec: "c6.large", Region: "Hangzhou", NASDataSourceID: "",
		AccessKeyID: "x", MountSettings: cloudjob.MountSettings{LocalMount: "/mnt", ContainerMount: "rel"}}
	w := decl.NewWhere("ali", hcl.Range{Filename: "dlc.hcl", Start: hcl.Pos{Line: 3, Column: 1}})
	diags := s.Check(w)
	var all []string
	for _, d := range diags {
		all = append(all, d.Detail)
	}
	got := strings.Join(all, "\n")
	for _, want := range []string{"job_type must be \"TFJob\" or \"PyTorchJob\"", "image must", "pod_count must be from 1 to 100", "ecs_spec must", "region must", "nas_data_source_id must", "access_key_id and access_key_secret go together", "container_storage_mount_point"} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, got)
		}
	}
	s = &dlc.Settings{JobType: "TFJob", Image: "img", PodCount: 2, EcsSpec: "ecs.gn6v-c8g1.2xlarge", Region: "cn-hangzhou", NASDataSourceID: "datat56by9n1xt0a",
		MountSettings: cloudjob.MountSettings{LocalMount: "/mnt", ContainerMount: "/root/data"}}
	if diags := s.Check(w); diags.HasErrors() {
		t.Errorf("a valid block: %s", diags.Error())
	}
}
