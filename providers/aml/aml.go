// Package aml runs trials as Azure Machine Learning command jobs through the
// workspace jobs REST API (Azure Resource Manager, api-version 2023-04-01:
// PUT, GET, list, POST .../cancel and DELETE on
// /subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.MachineLearningServices/workspaces/{ws}/jobs/{name}),
// on the shared base in providers/cloudjob.
//
// Requests go through azcore's pipeline (per-try timeouts; its retries are
// off: cloudjob's policy retries every call, Retry-After included) with its
// bearer-token policy over an azidentity credential:
// ClientSecretCredential when the block gives client_secret, else
// DefaultAzureCredential (environment, workload or managed identity, Azure
// CLI).
//
// Job names are deterministic per trial attempt, so a retried PUT is the
// same job. The environment image becomes an environment version (PUT
// .../environments/{name}/versions/1, name derived from the image). Code
// and parameters reach the job through a datastore that is mounted here at
// local_storage_mount_point and, when `datastore` is set, in the job as a
// ReadWriteMount input linked at container_storage_mount_point (no code
// asset is uploaded: codeId is not set). Metrics and logs come from the
// run's user_logs/std_log.txt artifact, read from a byte offset (the
// artifact service's contentinfo call, then a ranged GET of its content
// URI).
//
// It is contract-tested against a fake of the documented API (amltest); it
// has never run against the real service.
package aml

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
)

// APIVersion is the Azure Machine Learning REST API version used.
const APIVersion = "2023-04-01"

// Scope is the token scope of Azure Resource Manager, which the workspace's
// data-plane services (artifacts) accept as well.
const Scope = "https://management.azure.com/.default"

// Client is one workspace's jobs API: the cloudjob.API of the aml platform.
type Client struct {
	// Endpoint is ARM's address ("https://management.azure.com").
	Endpoint string
	// ArtifactEndpoint is the workspace's artifact service
	// ("https://REGION.api.azureml.ms"); "" asks the workspace's location.
	ArtifactEndpoint string
	Subscription     string
	ResourceGroup    string
	Workspace        string
	// Credential names where the credential comes from, for a refusal.
	Credential cloudjob.Credential
	Job        JobSettings

	pl   runtime.Pipeline
	blob *http.Client // content URIs carry their own signature

	mu     sync.Mutex
	envID  string // the environment version made from Job.Image
	artURL string
}

// JobSettings are what every job gets besides its command.
type JobSettings struct {
	Compute     string // compute target name
	Image       string // container image (an environment version is made)
	Environment string // an existing environment id (instead of Image)
	Experiment  string // experimentName ("" : the trialform experiment)
	Datastore   string // datastore mounted at the container mount ("": none)
	Mount       string // container_storage_mount_point
}

var (
	_ cloudjob.API          = (*Client)(nil)
	_ cloudjob.SpecRenderer = (*Client)(nil)
)

// NewClient builds the client over cred; transport (nil: default) carries
// every request, retry is azcore's retry policy.
func NewClient(c *Client, cred azcore.TokenCredential, transport *http.Client, retry policy.RetryOptions) *Client {
	opts := &policy.ClientOptions{Retry: retry}
	if transport != nil {
		opts.Transport = transport
	}
	bearer := runtime.NewBearerTokenPolicy(cred, []string{Scope}, nil)
	c.pl = runtime.NewPipeline("trialform-aml", "v1", runtime.PipelineOptions{PerRetry: []policy.Policy{bearer}}, opts)
	c.blob = transport
	if c.blob == nil {
		c.blob = &http.Client{Timeout: 60 * time.Second}
	}
	c.Endpoint = strings.TrimRight(c.Endpoint, "/")
	c.ArtifactEndpoint = strings.TrimRight(c.ArtifactEndpoint, "/")
	return c
}

func (c *Client) workspacePath() string {
	return "/subscriptions/" + url.PathEscape(c.Subscription) + "/resourceGroups/" + url.PathEscape(c.ResourceGroup) +
		"/providers/Microsoft.MachineLearningServices/workspaces/" + url.PathEscape(c.Workspace)
}

func (c *Client) armURL(path string) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return c.Endpoint + c.workspacePath() + path + sep + "api-version=" + APIVersion
}

// ComputeID is the ARM id of the compute target.
func (c *Client) ComputeID() string { return c.workspacePath() + "/computes/" + c.Job.Compute }

// do sends one request through the pipeline and decodes a 2xx JSON answer
// into out (nil: discard). A refused token or credential is a Permanent
// AuthError naming the credential source.
func (c *Client) do(ctx context.Context, op, method, u string, body any, out any) error {
	req, err := runtime.NewRequest(ctx, method, u)
	if err != nil {
		return providers.Permanent(fmt.Errorf("%s: %w", op, err))
	}
	req.Raw().Header.Set("Accept", "application/json")
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return providers.Permanent(fmt.Errorf("%s: %w", op, err))
		}
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(b)), "application/json"); err != nil {
			return providers.Permanent(fmt.Errorf("%s: %w", op, err))
		}
	}
	resp, err := c.pl.Do(req)
	if err != nil {
		return c.credErr(op, err)
	}
	if err := cloudjob.CheckResponse(op, resp, c.Credential); err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s: the answer is not the JSON expected: %w", op, err)
		}
	}
	return nil
}

// credErr turns a credential's failure to get a token into a Permanent
// error naming the credential source and what to do; other errors (network)
// are returned as they are, to be retried.
func (c *Client) credErr(op string, err error) error {
	var afe *azidentity.AuthenticationFailedError
	if errors.As(err, &afe) {
		status := http.StatusUnauthorized
		code := ""
		if afe.RawResponse != nil {
			status = afe.RawResponse.StatusCode
			code = aadCode(afe.RawResponse)
		}
		e := cloudjob.AuthError(op+": getting a token from Microsoft Entra ID", status, c.Credential)
		if code != "" {
			e = providers.Permanent(fmt.Errorf("%w (Entra ID says %s)", e, code))
		}
		return e
	}
	var unavailable interface{ NonRetriable() }
	if errors.As(err, &unavailable) && strings.Contains(err.Error(), "Credential") {
		return providers.Permanent(fmt.Errorf("%s: no Azure credential could get a token from %s: give client_id, tenant_id and client_secret (from a sensitive variable), set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, or run `az login`: %w",
			op, c.Credential, err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

// aadCode is the error code and first words of an Entra ID error answer
// ({"error": "invalid_client", "error_description": "AADSTS7000215: ..."}).
func aadCode(resp *http.Response) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if json.Unmarshal(b, &e) != nil || e.Error == "" {
		return ""
	}
	d, _, _ := strings.Cut(e.Description, "\n")
	if i := strings.Index(d, ". "); i > 0 {
		d = d[:i+1]
	}
	return strings.TrimSpace(e.Error + ": " + d)
}

// JobResource is the ARM job resource (the fields trialform writes and
// reads).
type JobResource struct {
	ID         string        `json:"id,omitempty"`
	Name       string        `json:"name,omitempty"`
	Type       string        `json:"type,omitempty"`
	Properties JobProperties `json:"properties"`
	SystemData *SystemData   `json:"systemData,omitempty"`
}

// SystemData is ARM's record of when the resource was created and last
// changed: the job resource has no start or end time of its own, so the
// job started (was queued) at createdAt and an ended job ended at
// lastModifiedAt.
type SystemData struct {
	CreatedAt      *time.Time `json:"createdAt,omitempty"`
	LastModifiedAt *time.Time `json:"lastModifiedAt,omitempty"`
}

// JobProperties are a command job's properties.
type JobProperties struct {
	JobType              string              `json:"jobType"`
	DisplayName          string              `json:"displayName,omitempty"`
	ExperimentName       string              `json:"experimentName,omitempty"`
	Description          string              `json:"description,omitempty"`
	Tags                 map[string]string   `json:"tags,omitempty"`
	ComputeID            string              `json:"computeId"`
	EnvironmentID        string              `json:"environmentId"`
	Command              string              `json:"command"`
	CodeID               string              `json:"codeId,omitempty"`
	EnvironmentVariables map[string]string   `json:"environmentVariables,omitempty"`
	Inputs               map[string]JobInput `json:"inputs,omitempty"`
	Resources            *Resources          `json:"resources,omitempty"`
	Status               string              `json:"status,omitempty"`
	Services             map[string]Service  `json:"services,omitempty"`
	Properties           map[string]string   `json:"properties,omitempty"`
}

// JobInput is one job input (a datastore folder, mounted).
type JobInput struct {
	JobInputType string `json:"jobInputType"`
	URI          string `json:"uri"`
	Mode         string `json:"mode"`
}

// Resources of a command job.
type Resources struct {
	InstanceCount int `json:"instanceCount"`
}

// Service is one of a job's endpoints (Studio: its portal page).
type Service struct {
	Endpoint string `json:"endpoint,omitempty"`
}

// mountInput is the job input holding the datastore.
const mountInput = "trialform"

// Resource renders the job resource of spec with environment envID.
func (c *Client) Resource(spec cloudjob.JobSpec, envID string) JobResource {
	cmd := "cd " + shq(spec.WorkDir) + " && " + spec.Command
	var inputs map[string]JobInput
	if c.Job.Datastore != "" {
		// The datastore is mounted where AML chooses; the container mount
		// point becomes a link to it before the trial's command runs.
		m := shq(c.Job.Mount)
		cmd = "mkdir -p " + shq(parent(c.Job.Mount)) + " && { [ -e " + m + " ] || ln -sfn ${{inputs." + mountInput + "}} " + m + " || [ -e " + m + " ]; } && " + cmd
		inputs = map[string]JobInput{mountInput: {JobInputType: "uri_folder", URI: "azureml://datastores/" + c.Job.Datastore + "/paths/", Mode: "ReadWriteMount"}}
	}
	exp := c.Job.Experiment
	if exp == "" {
		exp = spec.Tags[cloudjob.TagExperiment]
	}
	return JobResource{Properties: JobProperties{
		JobType: "Command", DisplayName: spec.Name, ExperimentName: exp, Tags: spec.Tags,
		ComputeID: c.ComputeID(), EnvironmentID: envID, Command: cmd, EnvironmentVariables: spec.Env,
		Inputs: inputs, Resources: &Resources{InstanceCount: 1},
	}}
}

func parent(p string) string {
	if i := strings.LastIndex(strings.TrimRight(p, "/"), "/"); i > 0 {
		return p[:i]
	}
	return "/"
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// EnvironmentName is the environment trialform makes for an image.
func EnvironmentName(image string) string {
	sum := sha256.Sum256([]byte(image))
	return "trialform-" + hex.EncodeToString(sum[:6])
}

// environment returns the jobs' environment id, making the image's
// environment version once.
func (c *Client) environment(ctx context.Context) (string, error) {
	if c.Job.Environment != "" {
		return c.Job.Environment, nil
	}
	c.mu.Lock()
	id := c.envID
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	path := "/environments/" + EnvironmentName(c.Job.Image) + "/versions/1"
	body := map[string]any{"properties": map[string]any{"image": c.Job.Image, "description": "made by trialform for image " + c.Job.Image, "osType": "Linux"}}
	var out JobResource
	if err := c.do(ctx, "create environment "+EnvironmentName(c.Job.Image), http.MethodPut, c.armURL(path), body, &out); err != nil {
		return "", err
	}
	id = c.workspacePath() + path
	c.mu.Lock()
	c.envID = id
	c.mu.Unlock()
	return id, nil
}

// envIDFor is the environment id RenderSpec shows (without a request).
func (c *Client) envIDFor() string {
	if c.Job.Environment != "" {
		return c.Job.Environment
	}
	return c.workspacePath() + "/environments/" + EnvironmentName(c.Job.Image) + "/versions/1"
}

// RenderSpec is the canonical text of what the job runs, for drift.
func (c *Client) RenderSpec(spec cloudjob.JobSpec) (string, error) {
	return render(c.Resource(spec, c.envIDFor()).Properties), nil
}

func render(p JobProperties) string {
	lines := []string{"command = " + strings.ReplaceAll(p.Command, "\n", `\n`), "compute = " + p.ComputeID, "environment = " + p.EnvironmentID}
	if p.Resources != nil {
		lines = append(lines, fmt.Sprintf("instance_count = %d", p.Resources.InstanceCount))
	}
	var keys []string
	for k := range p.EnvironmentVariables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lines = append(lines, "env."+k+" = "+p.EnvironmentVariables[k])
	}
	keys = keys[:0]
	for k := range p.Inputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		in := p.Inputs[k]
		lines = append(lines, "input."+k+" = "+in.JobInputType+" "+in.URI+" "+in.Mode)
	}
	return strings.Join(lines, "\n") + "\n"
}

// Submit PUTs the job under its deterministic name: a retried PUT of a job
// that was created is the same job, never a second one.
func (c *Client) Submit(ctx context.Context, spec cloudjob.JobSpec) (string, error) {
	env, err := c.environment(ctx)
	if err != nil {
		return "", err
	}
	res := c.Resource(spec, env)
	var out JobResource
	err = c.do(ctx, "create job "+spec.Name, http.MethodPut, c.armURL("/jobs/"+url.PathEscape(spec.Name)), res, &out)
	var he *cloudjob.HTTPError
	if errors.As(err, &he) && he.Status == http.StatusConflict {
		return spec.Name, nil // the job exists (a retry after it was made)
	}
	if err != nil {
		return "", err
	}
	return spec.Name, nil
}

// Get reads the job.
func (c *Client) Get(ctx context.Context, id string) (cloudjob.Job, error) {
	var r JobResource
	if err := c.do(ctx, "get job "+id, http.MethodGet, c.armURL("/jobs/"+url.PathEscape(id)), nil, &r); err != nil {
		return cloudjob.Job{}, err
	}
	return c.job(r), nil
}

func (c *Client) job(r JobResource) cloudjob.Job {
	j := cloudjob.Job{ID: r.Name, Name: r.Name, Tags: r.Properties.Tags, Spec: render(r.Properties)}
	if j.Tags == nil {
		j.Tags = map[string]string{}
	}
	if s, ok := r.Properties.Services["Studio"]; ok {
		j.URL = s.Endpoint
	}
	j.Phase, j.Reason = phase(r.Properties.Status)
	if sd := r.SystemData; sd != nil {
		j.Started = sd.CreatedAt
		if j.Phase.Ended() {
			j.Ended = sd.LastModifiedAt
		}
	}
	return j
}

func phase(status string) (providers.Phase, string) {
	switch status {
	case "NotStarted", "Queued", "Preparing", "Starting", "Provisioning":
		return providers.PhasePending, "Azure ML says " + status
	case "Running", "Finalizing", "CancelRequested":
		return providers.PhaseRunning, ""
	case "NotResponding":
		return providers.PhaseRunning, "Azure ML says NotResponding"
	case "Completed":
		return providers.PhaseSucceeded, ""
	case "Failed":
		return providers.PhaseFailed, "" // the exit status from the mount says why
	case "Canceled":
		return providers.PhaseKilled, "canceled"
	}
	return providers.PhasePending, "Azure ML says " + status
}

type jobList struct {
	Value    []JobResource `json:"value"`
	NextLink string        `json:"nextLink"`
}

// List returns the workspace's jobs carrying tags (filtered here: the list
// call filters by one tag key only). With the job-name tag it GETs that job.
func (c *Client) List(ctx context.Context, tags map[string]string) ([]cloudjob.Job, error) {
	var all []JobResource
	if name := tags[cloudjob.TagJob]; name != "" {
		var r JobResource
		err := c.do(ctx, "get job "+name, http.MethodGet, c.armURL("/jobs/"+url.PathEscape(name)), nil, &r)
		if errors.Is(err, providers.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		all = append(all, r)
	} else {
		u := c.armURL("/jobs?tag=" + url.QueryEscape(cloudjob.TagManaged))
		for pages := 0; u != "" && pages < 1000; pages++ {
			var l jobList
			if err := c.do(ctx, "list jobs", http.MethodGet, u, nil, &l); err != nil {
				return nil, err
			}
			all = append(all, l.Value...)
			u = l.NextLink
		}
	}
	var out []cloudjob.Job
	for _, r := range all {
		match := true
		for k, v := range tags {
			match = match && r.Properties.Tags[k] == v
		}
		if match {
			out = append(out, c.job(r))
		}
	}
	return out, nil
}

// Stop cancels the job (POST .../cancel); a job Azure ML does not know is
// gone, which is fine.
func (c *Client) Stop(ctx context.Context, id string) error {
	err := c.do(ctx, "cancel job "+id, http.MethodPost, c.armURL("/jobs/"+url.PathEscape(id)+"/cancel"), nil, nil)
	if errors.Is(err, providers.ErrNotFound) {
		return nil
	}
	return err
}

// Delete deletes the job's record (DELETE answers 202 and deletes later).
func (c *Client) Delete(ctx context.Context, id string) error {
	err := c.do(ctx, "delete job "+id, http.MethodDelete, c.armURL("/jobs/"+url.PathEscape(id)), nil, nil)
	if errors.Is(err, providers.ErrNotFound) {
		return nil
	}
	return err
}

// LogPath is the run artifact holding the command's output.
const LogPath = "user_logs/std_log.txt"

// artifacts is the artifact service's address: the block's, or the
// workspace region's.
func (c *Client) artifacts(ctx context.Context) (string, error) {
	if c.ArtifactEndpoint != "" {
		return c.ArtifactEndpoint, nil
	}
	c.mu.Lock()
	u := c.artURL
	c.mu.Unlock()
	if u != "" {
		return u, nil
	}
	var ws struct {
		Location string `json:"location"`
	}
	if err := c.do(ctx, "get workspace "+c.Workspace, http.MethodGet, c.armURL(""), nil, &ws); err != nil {
		return "", err
	}
	if ws.Location == "" {
		return "", fmt.Errorf("get workspace %s: no location in the answer: set artifact_endpoint", c.Workspace)
	}
	u = "https://" + strings.ToLower(ws.Location) + ".api.azureml.ms"
	c.mu.Lock()
	c.artURL = u
	c.mu.Unlock()
	return u, nil
}

// Logs reads the run's std_log.txt past from: the artifact service gives
// the file's content URI, read with a Range header.
func (c *Client) Logs(ctx context.Context, id string, from int64) ([]byte, int64, error) {
	base, err := c.artifacts(ctx)
	if err != nil {
		return nil, from, err
	}
	u := base + "/artifact/v2.0" + c.workspacePath() + "/artifacts/contentinfo/ExperimentRun/dcid." + url.PathEscape(id) + "/" + LogPath
	var info struct {
		ContentURI string `json:"contentUri"`
	}
	err = c.do(ctx, "logs of job "+id, http.MethodGet, u, nil, &info)
	if errors.Is(err, providers.ErrNotFound) {
		// No log yet, or no job: the job says which.
		if _, gerr := c.Get(ctx, id); gerr != nil {
			return nil, from, gerr
		}
		return nil, from, nil
	}
	if err != nil {
		return nil, from, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, info.ContentURI, nil)
	if err != nil {
		return nil, from, fmt.Errorf("logs of job %s: content URI: %w", id, err)
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-", from))
	resp, err := c.blob.Do(req)
	if err != nil {
		return nil, from, fmt.Errorf("logs of job %s: %w", id, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusRequestedRangeNotSatisfiable:
		return nil, from, nil // nothing past from yet
	case http.StatusPartialContent, http.StatusOK:
	default:
		return nil, from, cloudjob.CheckResponse("logs of job "+id, resp, c.Credential)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, from, fmt.Errorf("logs of job %s: %w", id, err)
	}
	if resp.StatusCode == http.StatusOK { // the whole file
		if int64(len(b)) <= from {
			return nil, from, nil
		}
		b = b[from:]
	}
	return b, from + int64(len(b)), nil
}

// Ping reads the workspace: the credential works and the workspace exists.
func (c *Client) Ping(ctx context.Context) error {
	return c.do(ctx, "get workspace "+c.Workspace, http.MethodGet, c.armURL(""), nil, nil)
}
