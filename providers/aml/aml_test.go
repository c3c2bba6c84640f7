package aml_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/aml"
	"github.com/trialform/trialform/providers/aml/amltest"
	"github.com/trialform/trialform/providers/cloudjob"
	"github.com/trialform/trialform/providers/cloudjob/cloudtest"
	"github.com/trialform/trialform/providers/conformance"
	"github.com/trialform/trialform/providers/registry"
)

const (
	tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	client = "0b3c9a7e-5d41-4b2f-8e6a-1f2d3c4b5a69"
	sub    = "11111111-2222-3333-4444-555555555555"
	secret = "aml~S3cret.Q8pZr-7vYx"
)

// lab is one fake workspace and the provider of a platform block over it.
type lab struct {
	srv   *amltest.Server
	p     *cloudjob.SpecProvider
	c     *aml.Client
	mount string
}

func newLab(t *testing.T, sec string, tweak func(*aml.Settings)) *lab {
	srv := amltest.New(tenant, client, secret, sub, "rg-ml", "ws1")
	d := t.TempDir()
	// Registered after the first TempDir, so it runs before the test's
	// directories are removed: a job still writing there would fail that.
	t.Cleanup(srv.Close)
	local := filepath.Join(d, "blobfuse")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	// The job mounts the datastore and links the container mount point
	// (which does not exist before) to it.
	srv.Datastores["trialstore"] = local
	s := &aml.Settings{SubscriptionID: sub, ResourceGroup: "rg-ml", WorkspaceName: "ws1", ComputeTarget: "cpu-cluster",
		TenantID: tenant, ClientID: client, ClientSecret: sec, Datastore: "trialstore",
		Endpoint: srv.URL, AuthorityHost: srv.URL + "/", ArtifactEndpoint: srv.URL, RequestTimeout: 2 * time.Second,
		MountSettings: cloudjob.MountSettings{LocalMount: local, ContainerMount: filepath.Join(d, "job", "mnt", "data")}}
	if tweak != nil {
		tweak(s)
	}
	env := registry.Env{Name: "ws", Dir: d}
	c, err := aml.NewFromSettings(s, env.Name, srv.Client, policy.RetryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := aml.Options(c, s, env)
	opts.Poll = 200 * time.Millisecond
	opts.Retry = cloudjob.Retry{Attempts: 8, Base: 10 * time.Millisecond, Max: 2 * time.Second}
	return &lab{srv: srv, p: cloudjob.New(c, opts).(*cloudjob.SpecProvider), c: c, mount: local}
}

func TestConformance(t *testing.T) {
	var l *lab
	conformance.Run(t, func(t *testing.T) providers.Provider {
		l = newLab(t, secret, nil)
		return l.p
	}, conformance.Options{
		NNIPlatform: "aml", CodeCopied: true,
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

const finalLine = cloudtest.FinalLine

// The cloud platforms' shared suite: faults converge, Retry-After is
// honoured, a lost job resumes.
func TestCloudSuite(t *testing.T) {
	put := cloudtest.Method(http.MethodPut, "/jobs/")
	get := cloudtest.Method(http.MethodGet, "/jobs/")
	token := cloudtest.Method(http.MethodPost, "/oauth2/v2.0/token")
	logs := cloudtest.Method(http.MethodGet, "/contentinfo/")
	cloudtest.Run(t, cloudtest.Suite{
		NewLab: func(t *testing.T) *cloudtest.Lab {
			l := newLab(t, secret, nil)
			return &cloudtest.Lab{Provider: l.p, Faults: l.srv.Faults, Runner: l.srv.Runner, Creates: l.srv.Submits, Jobs: l.srv.JobNames,
				Vanish: func(h providers.Handle) { l.srv.Vanish(h["name"]) }}
		},
		Faults: []cloudtest.FaultCase{
			{Name: "throttled create", Fault: cloudtest.Throttle, N: 3, Match: put},
			{Name: "server error on create", Fault: cloudtest.ServerError, N: 2, Match: put},
			{Name: "connection dropped before create", Fault: cloudtest.Drop, N: 2, Match: put},
			{Name: "connection dropped after create", Fault: cloudtest.DropAfter, N: 2, Match: put},
			{Name: "slow create past the client timeout", Fault: cloudtest.Slow, N: 1, Match: put},
			{Name: "throttled reads", Fault: cloudtest.Throttle, N: 4, Match: get},
			{Name: "dropped reads", Fault: cloudtest.Drop, N: 3, Match: get},
			{Name: "throttled token endpoint", Fault: cloudtest.Throttle, N: 1, Match: token},
			{Name: "server error on logs", Fault: cloudtest.ServerError, N: 3, Match: logs},
		},
		Submit: put,
		JobKey: "name",
	})
}

// The registered provider retries under one policy, cloudjob's: a create
// that keeps failing is called DefaultRetry.Attempts times, not that many
// times azcore's own retries.
func TestRetriesNotStacked(t *testing.T) {
	l := newLab(t, secret, nil)
	s := &aml.Settings{SubscriptionID: sub, ResourceGroup: "rg-ml", WorkspaceName: "ws1", ComputeTarget: "cpu-cluster",
		TenantID: tenant, ClientID: client, ClientSecret: secret, Datastore: "trialstore",
		Endpoint: l.srv.URL, AuthorityHost: l.srv.URL + "/", ArtifactEndpoint: l.srv.URL, RequestTimeout: 2 * time.Second,
		MountSettings: cloudjob.MountSettings{LocalMount: l.mount, ContainerMount: filepath.Join(t.TempDir(), "mnt")}}
	p, err := aml.New(s, registry.Env{Name: "ws", Dir: t.TempDir()}, l.srv.Client)
	if err != nil {
		t.Fatal(err)
	}
	l.srv.Faults.Inject(cloudtest.ServerError, 1000, cloudtest.Method(http.MethodPut, "/jobs/"))
	if _, err := p.Start(context.Background(), cloudtest.StartRequest(t, "t1", "true")); err == nil {
		t.Fatal("Start succeeded against a service that always fails")
	}
	if got, want := l.srv.Faults.Hits(cloudtest.ServerError), cloudjob.DefaultRetry.Attempts; got != want {
		t.Errorf("the failing create was called %d times, want %d (one retry policy)", got, want)
	}
}

// A wrong client secret: Entra ID refuses it, and the user gets a
// permanent error that names the credential source and what to do, never
// the secret; no job is created.
func TestWrongSecretIsClear(t *testing.T) {
	l := newLab(t, "wrong-"+secret, nil)
	_, err := l.p.Start(context.Background(), providers.StartRequest{Experiment: "e", TrialID: "t1", Shell: "true", CodeDir: t.TempDir()})
	if err == nil || !providers.IsPermanent(err) {
		t.Fatalf("Start with a wrong secret: %v, want a permanent error", err)
	}
	for _, want := range []string{"HTTP 401", `the client_secret attribute of platform "aml" "ws"`, "client_id " + client, "AADSTS7000215", "check that value"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error shows the secret: %v", err)
	}
	if err := l.p.Validate(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 401") || !providers.IsPermanent(err) {
		t.Errorf("Validate with a wrong secret: %v", err)
	}
	if l.srv.Submits() != 0 || l.srv.Tokens() != 0 {
		t.Errorf("%d jobs created, %d tokens issued with a wrong secret", l.srv.Submits(), l.srv.Tokens())
	}
}

// A token ARM refuses (not the one Entra ID issued) is a 401 naming the
// credential source, too.
func TestRefusedTokenIsClear(t *testing.T) {
	l := newLab(t, secret, nil)
	other := amltest.New(tenant, client, secret, sub, "rg-ml", "ws1") // issues another token
	t.Cleanup(other.Close)
	s := &aml.Settings{SubscriptionID: sub, ResourceGroup: "rg-ml", WorkspaceName: "ws1", ComputeTarget: "cpu-cluster",
		TenantID: tenant, ClientID: client, ClientSecret: secret, Endpoint: l.srv.URL, AuthorityHost: other.URL + "/", ArtifactEndpoint: l.srv.URL}
	// One transport trusting both fakes' certificates.
	tr := l.srv.Client.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.RootCAs.AppendCertsFromPEM(mustPEM(t, other))
	c, err := aml.NewFromSettings(s, "ws", &http.Client{Transport: tr}, policy.RetryOptions{MaxRetries: 1, RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Ping(context.Background())
	if err == nil || !providers.IsPermanent(err) || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "client_secret attribute") {
		t.Errorf("Ping with a token ARM refuses: %v", err)
	}
}

func mustPEM(t *testing.T, s *amltest.Server) []byte {
	p, err := s.CertFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The drift check: the live job's spec equals what Start would submit.
func TestSpecMatchesLiveJob(t *testing.T) {
	l := newLab(t, secret, nil)
	req := providers.StartRequest{Experiment: "e", TrialID: "t1", Shell: "sleep 1000", CodeDir: t.TempDir(), GPUs: 1}
	if _, err := l.p.Start(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// Stop the job before the test's directories go: its wrapper writes
	// the exit status on the mount when it ends.
	t.Cleanup(func() {
		if err := l.p.Stop(context.Background(), providers.StopRequest{Experiment: "e", TrialID: "t1"}); err != nil {
			t.Error(err)
		}
	})
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
	for _, w := range []string{"compute = /subscriptions/" + sub + "/resourceGroups/rg-ml/providers/Microsoft.MachineLearningServices/workspaces/ws1/computes/cpu-cluster",
		"environment = /subscriptions/" + sub + "/resourceGroups/rg-ml/providers/Microsoft.MachineLearningServices/workspaces/ws1/environments/" + aml.EnvironmentName(aml.DefaultImage) + "/versions/1",
		"input.trialform = uri_folder azureml://datastores/trialstore/paths/ ReadWriteMount"} {
		if !strings.Contains(want, w) {
			t.Errorf("spec lacks %q:\n%s", w, want)
		}
	}
	req.Shell = "sleep 999"
	if other, _ := l.p.Spec(req); other == o.Spec {
		t.Errorf("a changed trial renders the same spec")
	}
}

// The list pages (nextLink) and filters by tags: refresh finds every
// trial's job and none of another experiment's.
func TestListPagesAndFilters(t *testing.T) {
	l := newLab(t, secret, nil)
	for _, id := range []string{"a", "b", "c", "d", "e5"} {
		start(t, l, id, "true")
	}
	jobs, err := l.c.List(context.Background(), map[string]string{cloudjob.TagExperiment: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 5 {
		t.Errorf("listed %d jobs, want 5", len(jobs))
	}
	jobs, err = l.c.List(context.Background(), map[string]string{cloudjob.TagExperiment: "other"})
	if err != nil || len(jobs) != 0 {
		t.Errorf("another experiment's jobs: %v %v", jobs, err)
	}
}

func TestCheck(t *testing.T) {
	good := func() *aml.Settings {
		return &aml.Settings{SubscriptionID: sub, ResourceGroup: "rg-ml", WorkspaceName: "ws1", ComputeTarget: "cpu-cluster",
			MountSettings: cloudjob.MountSettings{LocalMount: "/mnt/x", ContainerMount: "/mnt/x"}}
	}
	if d := good().Check(decl.NewWhere("ws", hcl.Range{Filename: "aml.hcl", Start: hcl.Pos{Line: 3, Column: 1}})); d.HasErrors() {
		t.Fatalf("a good block: %v", d)
	}
	for name, tc := range map[string]struct {
		mut  func(*aml.Settings)
		want string
	}{
		"subscription":   {func(s *aml.Settings) { s.SubscriptionID = "my-sub" }, "subscription_id must be"},
		"workspace":      {func(s *aml.Settings) { s.WorkspaceName = "w" }, "workspace_name must be"},
		"compute":        {func(s *aml.Settings) { s.ComputeTarget = "" }, "compute_target must"},
		"image and env":  {func(s *aml.Settings) { s.Image, s.Environment = "x", "azureml:e:1" }, "not both"},
		"secret no id":   {func(s *aml.Settings) { s.ClientSecret = "x"; s.TenantID = tenant }, "needs client_id"},
		"secret no tnt":  {func(s *aml.Settings) { s.ClientSecret = "x"; s.ClientID = client }, "needs tenant_id"},
		"http endpoint":  {func(s *aml.Settings) { s.Endpoint = "http://127.0.0.1:1" }, "https:// URL"},
		"bad datastore":  {func(s *aml.Settings) { s.Datastore = "no/slash" }, "datastore must"},
		"relative mount": {func(s *aml.Settings) { s.ContainerMount = "mnt" }, "container_storage_mount_point"},
	} {
		s := good()
		tc.mut(s)
		d := s.Check(decl.NewWhere("ws", hcl.Range{Filename: "aml.hcl", Start: hcl.Pos{Line: 3, Column: 1}}))
		if !d.HasErrors() || !strings.Contains(d.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, d, tc.want)
		}
	}
}

// The name checks (their regexps compile on first use): each bound and
// what is refused just past it.
func TestCheckNameBounds(t *testing.T) {
	where := decl.NewWhere("ws", hcl.Range{Filename: "aml.hcl", Start: hcl.Pos{Line: 3, Column: 1}})
	for name, tc := range map[string]struct {
		mut func(*aml.Settings)
		ok  bool
	}{
		"compute 255":     {func(s *aml.Settings) { s.ComputeTarget = "c" + strings.Repeat("x", 254) }, true},
		"compute 256":     {func(s *aml.Settings) { s.ComputeTarget = "c" + strings.Repeat("x", 255) }, false},
		"compute digit":   {func(s *aml.Settings) { s.ComputeTarget = "1cpu" }, false},
		"datastore 255":   {func(s *aml.Settings) { s.Datastore = "d" + strings.Repeat("_", 254) }, true},
		"datastore 256":   {func(s *aml.Settings) { s.Datastore = "d" + strings.Repeat("_", 255) }, false},
		"workspace 3":     {func(s *aml.Settings) { s.WorkspaceName = "w-1" }, true},
		"workspace 33":    {func(s *aml.Settings) { s.WorkspaceName = "w" + strings.Repeat("1", 32) }, true},
		"workspace 34":    {func(s *aml.Settings) { s.WorkspaceName = "w" + strings.Repeat("1", 33) }, false},
		"workspace dash":  {func(s *aml.Settings) { s.WorkspaceName = "-ws" }, false},
		"group 90":        {func(s *aml.Settings) { s.ResourceGroup = strings.Repeat("(", 90) }, true},
		"group 91":        {func(s *aml.Settings) { s.ResourceGroup = strings.Repeat("r", 91) }, false},
		"group dot end":   {func(s *aml.Settings) { s.ResourceGroup = "rg." }, false},
		"group empty":     {func(s *aml.Settings) { s.ResourceGroup = "" }, false},
		"subscription":    {func(s *aml.Settings) { s.SubscriptionID = "ABCDEF01-2345-6789-abcd-ef0123456789" }, true},
		"subscription 13": {func(s *aml.Settings) { s.SubscriptionID = "abcdef01-2345-6789-abcd-ef01234567890" }, false},
	} {
		s := &aml.Settings{SubscriptionID: sub, ResourceGroup: "rg-ml", WorkspaceName: "ws1", ComputeTarget: "cpu-cluster",
			MountSettings: cloudjob.MountSettings{LocalMount: "/mnt/x", ContainerMount: "/mnt/x"}}
		tc.mut(s)
		if d := s.Check(where); d.HasErrors() == tc.ok {
			t.Errorf("%s: %v, want accepted %v", name, d, tc.ok)
		}
	}
}

// Without client_secret, DefaultAzureCredential is used: here its
// environment credential (AZURE_TENANT_ID, AZURE_CLIENT_ID,
// AZURE_CLIENT_SECRET) gets the token from the fake's Entra ID. A wrong
// secret there names DefaultAzureCredential as the source.
func TestDefaultAzureCredentialFromEnvironment(t *testing.T) {
	t.Setenv("AZURE_TOKEN_CREDENTIALS", "EnvironmentCredential")
	t.Setenv("AZURE_TENANT_ID", tenant)
	t.Setenv("AZURE_CLIENT_ID", client)
	t.Setenv("AZURE_CLIENT_SECRET", secret)
	l := newLab(t, "", func(s *aml.Settings) { s.TenantID, s.ClientID = "", "" })
	start(t, l, "t1", finalLine)
	if o := waitEnd(t, l, "t1"); o.Phase != providers.PhaseSucceeded || len(o.Metrics) != 1 {
		t.Errorf("trial with DefaultAzureCredential: %+v", o)
	}
	if l.srv.Tokens() == 0 {
		t.Errorf("no token was issued")
	}

	t.Setenv("AZURE_CLIENT_SECRET", "wrong-"+secret)
	l = newLab(t, "", func(s *aml.Settings) { s.TenantID, s.ClientID = "", "" })
	err := l.p.Validate(context.Background())
	t.Logf("wrong AZURE_CLIENT_SECRET: %v", err)
	if err == nil || !providers.IsPermanent(err) || !strings.Contains(err.Error(), "DefaultAzureCredential") || strings.Contains(err.Error(), secret) {
		t.Errorf("a wrong AZURE_CLIENT_SECRET: %v", err)
	}
}
