// Package dlc runs trials as Alibaba Cloud PAI-DLC jobs through the DLC
// OpenAPI, version 2020-12-03 (CreateJob POST /api/v1/jobs, GetJob GET
// /api/v1/jobs/{JobId}, ListJobs GET /api/v1/jobs, StopJob POST
// /api/v1/jobs/{JobId}/stop, DeleteJob DELETE /api/v1/jobs/{JobId},
// GetPodLogs GET /api/v1/jobs/{JobId}/pods/{PodId}/logs), on the shared
// base in providers/cloudjob.
//
// Requests go through Alibaba's maintained OpenAPI client
// (darabonba-openapi v2, CallApi with the ROA paths above), which signs them
// with the ACS3-HMAC-SHA256 signature the service checks; credentials come
// from the platform block's access_key_id/access_key_secret (sensitive
// variables) or from ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET,
// through Alibaba's credentials package. The typed pai-dlc-20201203 SDK is
// not on the Go module proxy, so this package maps the documented request
// and response bodies itself.
//
// Code and parameters reach the job through the NAS data source, mounted
// at local_storage_mount_point here and container_storage_mount_point in
// the job, as NNI's dlc mode does. Metrics come from the first pod's log
// (GetPodLogs), where the NNI library prints NNISDK lines.
//
// Idempotency: CreateJob has no client token that we could confirm in the
// documentation, so Submit lists the workspace's jobs by the deterministic
// DisplayName first and creates only when none carries the job's tag.
//
// It is contract-tested against a fake of the documented API (dlctest); it
// has never run against the real service.
package dlc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	openapiutil "github.com/alibabacloud-go/darabonba-openapi/v2/utils"
	"github.com/alibabacloud-go/tea/dara"
	"github.com/alibabacloud-go/tea/tea"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
)

// Version is the DLC OpenAPI version every call names.
const Version = "2020-12-03"

// Client is the DLC OpenAPI for one workspace: the cloudjob.API of the dlc
// platform.
type Client struct {
	api *openapi.Client
	hc  *http.Client
	// Credential names where the access key came from, for a refused key's
	// message.
	Credential cloudjob.Credential
	// Job is what every job gets besides its command.
	Job JobSettings
	// Region is the job's region, for the console URL.
	Region string
	// MaxLogLines bounds the lines one GetPodLogs returns (0: 100000).
	MaxLogLines int

	mu   sync.Mutex
	pods map[string]string // job id -> the pod whose log is read
}

// JobSettings are the CreateJob settings a platform block gives.
type JobSettings struct {
	JobType        string // TFJob or PyTorchJob
	Image          string
	PodCount       int
	EcsSpec        string
	WorkspaceID    string
	NASDataSource  string
	OSSDataSource  string
	ContainerMount string // where the NAS data source is mounted in the job
}

var (
	_ cloudjob.API          = (*Client)(nil)
	_ cloudjob.SpecRenderer = (*Client)(nil)
)

// ClientConfig is what NewClient needs.
type ClientConfig struct {
	// Endpoint is "pai-dlc.REGION.aliyuncs.com", or a URL with a scheme
	// ("http://127.0.0.1:8080") for a private endpoint or a fake.
	Endpoint                     string
	Region                       string
	AccessKeyID, AccessKeySecret string
	Credential                   cloudjob.Credential
	Timeout                      time.Duration // one request (0: 30s)
	Job                          JobSettings
}

// NewClient builds the OpenAPI client with an access key credential.
func NewClient(cfg ClientConfig) (*Client, error) {
	protocol, host := "https", cfg.Endpoint
	if i := strings.Index(host, "://"); i >= 0 {
		protocol, host = strings.ToLower(host[:i]), host[i+3:]
	}
	host = strings.TrimRight(host, "/")
	if host == "" {
		host = "pai-dlc." + cfg.Region + ".aliyuncs.com"
	}
	cred, err := accessKeyCredential(cfg.AccessKeyID, cfg.AccessKeySecret)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("Alibaba Cloud credentials from %s: %w", cfg.Credential, err))
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	c := &Client{hc: &http.Client{Timeout: timeout}, Credential: cfg.Credential, Job: cfg.Job, Region: cfg.Region, pods: map[string]string{}}
	api, err := openapi.NewClient(&openapiutil.Config{
		Credential: cred,
		Endpoint:   dara.String(host),
		Protocol:   dara.String(protocol),
		RegionId:   dara.String(cfg.Region),
		HttpClient: recordingClient{c.hc},
	})
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("the DLC OpenAPI client: %w", err))
	}
	c.api = api
	return c, nil
}

// recordingClient is the OpenAPI client's HTTP client: it makes the call
// and notes, in the request's context, the status, Retry-After and any
// transport error, which the SDK's own error flattens (a 429 with a body
// that is not Alibaba's JSON, a dropped connection).
type recordingClient struct{ hc *http.Client }

type callNote struct {
	status     int
	retryAfter time.Duration
	err        error
}

type noteKey struct{}

func (r recordingClient) Call(req *http.Request, _ *http.Transport) (*http.Response, error) {
	n, _ := req.Context().Value(noteKey{}).(*callNote)
	resp, err := r.hc.Do(req)
	if n != nil {
		if err != nil {
			n.err = err
		} else {
			n.status = resp.StatusCode
			n.retryAfter = cloudjob.RetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
	}
	return resp, err
}

// authCodes are Alibaba's error codes of a refused credential, whatever
// the HTTP status the gateway answered with.
var authCodes = []string{"InvalidAccessKeyId", "SignatureDoesNotMatch", "IncompleteSignature", "InvalidSecurityToken", "Forbidden", "NoPermission", "Unauthorized"}

// call runs one API operation: method and pathname, query, JSON body; the
// answer's body is decoded into out.
func (c *Client) call(ctx context.Context, op, action, method, pathname string, query map[string]string, body any, out any) error {
	note := &callNote{}
	ctx = context.WithValue(ctx, noteKey{}, note)
	req := &openapiutil.OpenApiRequest{Query: map[string]*string{}, Headers: map[string]*string{}}
	for k, v := range query {
		req.Query[k] = dara.String(v)
	}
	if body != nil {
		req.Body = body
	}
	params := &openapiutil.Params{
		Action: dara.String(action), Version: dara.String(Version), Protocol: dara.String("HTTPS"),
		Pathname: dara.String(pathname), Method: dara.String(method), AuthType: dara.String("AK"),
		Style: dara.String("ROA"), ReqBodyType: dara.String("json"), BodyType: dara.String("json"),
	}
	res, err := c.api.CallApiWithCtx(ctx, params, req, &dara.RuntimeOptions{Autoretry: dara.Bool(false)})
	if err != nil {
		return c.classify(ctx, op, note, err)
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(res["body"])
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: the answer is not the JSON expected: %w", op, err)
	}
	return nil
}

// classify turns the SDK's error into cloudjob's classes.
func (c *Client) classify(ctx context.Context, op string, n *callNote, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	if n.err != nil { // the transport failed: a dropped connection, a timeout
		return fmt.Errorf("%s: %w", op, n.err)
	}
	code, msg := "", err.Error()
	var se *tea.SDKError
	if errors.As(err, &se) {
		code = tea.StringValue(se.Code)
		msg = tea.StringValue(se.Message)
	}
	for _, a := range authCodes {
		if code != "" && strings.HasPrefix(code, a) {
			st := n.status
			if st != http.StatusForbidden {
				st = http.StatusUnauthorized
			}
			return fmt.Errorf("%w (Alibaba Cloud says %s)", cloudjob.AuthError(op, st, c.Credential), code)
		}
	}
	switch {
	case n.status == http.StatusUnauthorized || n.status == http.StatusForbidden:
		return cloudjob.AuthError(op, n.status, c.Credential)
	case n.status == 0:
		// The SDK failed before an answer (credentials, request building).
		return providers.Permanent(fmt.Errorf("%s: %s", op, msg))
	case strings.HasPrefix(code, "Throttling"):
		return &cloudjob.HTTPError{Op: op, Status: http.StatusTooManyRequests, RetryAfter: n.retryAfter, Body: code + ": " + msg}
	}
	he := &cloudjob.HTTPError{Op: op, Status: n.status, RetryAfter: n.retryAfter, Body: strings.TrimSpace(code + " " + msg)}
	switch {
	case n.status == http.StatusNotFound || strings.HasSuffix(code, "NotFound"):
		return fmt.Errorf("%w: %w", providers.ErrNotFound, he)
	case n.status == http.StatusTooManyRequests || n.status >= 500 || n.status == http.StatusRequestTimeout:
		return he
	}
	return providers.Permanent(he)
}

// DataSource is one of CreateJob's DataSources.
type DataSource struct {
	DataSourceID string `json:"DataSourceId"`
	MountPath    string `json:"MountPath,omitempty"`
}

// JobSpecItem is one of CreateJob's JobSpecs (one kind of node).
type JobSpecItem struct {
	Type     string `json:"Type"`
	Image    string `json:"Image"`
	PodCount int    `json:"PodCount"`
	EcsSpec  string `json:"EcsSpec"`
}

// JobSettingsBody is CreateJob's and GetJob's Settings (the part trialform uses).
type JobSettingsBody struct {
	Tags map[string]string `json:"Tags,omitempty"`
}

// CreateJobRequest is CreateJob's body.
type CreateJobRequest struct {
	DisplayName string            `json:"DisplayName"`
	JobType     string            `json:"JobType"`
	JobSpecs    []JobSpecItem     `json:"JobSpecs"`
	UserCommand string            `json:"UserCommand"`
	DataSources []DataSource      `json:"DataSources,omitempty"`
	Envs        map[string]string `json:"Envs,omitempty"`
	WorkspaceID string            `json:"WorkspaceId,omitempty"`
	Settings    *JobSettingsBody  `json:"Settings,omitempty"`
}

// Pod is one of GetJob's Pods.
type Pod struct {
	PodID         string `json:"PodId"`
	Type          string `json:"Type"`
	Status        string `json:"Status"`
	GmtCreateTime string `json:"GmtCreateTime,omitempty"`
}

// JobInfo is GetJob's answer and one of ListJobs' Jobs (the fields
// trialform reads).
type JobInfo struct {
	JobID          string            `json:"JobId"`
	DisplayName    string            `json:"DisplayName"`
	JobType        string            `json:"JobType"`
	Status         string            `json:"Status"`
	ReasonCode     string            `json:"ReasonCode"`
	ReasonMessage  string            `json:"ReasonMessage"`
	WorkspaceID    string            `json:"WorkspaceId"`
	UserCommand    string            `json:"UserCommand"`
	JobSpecs       []JobSpecItem     `json:"JobSpecs"`
	DataSources    []DataSource      `json:"DataSources"`
	Envs           map[string]string `json:"Envs"`
	Settings       *JobSettingsBody  `json:"Settings"`
	Pods           []Pod             `json:"Pods"`
	GmtCreateTime  string            `json:"GmtCreateTime"`
	GmtRunningTime string            `json:"GmtRunningTime"`
	GmtFinishTime  string            `json:"GmtFinishTime"`
}

// nodeType is the JobSpecs type of a job's nodes (NNI's dlc mode uses one
// kind of node, Worker).
const nodeType = "Worker"

// Request renders CreateJob's body for spec.
func (c *Client) Request(spec cloudjob.JobSpec) CreateJobRequest {
	r := CreateJobRequest{
		DisplayName: spec.Name, JobType: c.Job.JobType, WorkspaceID: c.Job.WorkspaceID,
		JobSpecs:    []JobSpecItem{{Type: nodeType, Image: c.Job.Image, PodCount: c.Job.PodCount, EcsSpec: c.Job.EcsSpec}},
		UserCommand: "cd " + shq(spec.WorkDir) + " && " + spec.Command,
		Envs:        spec.Env,
	}
	if c.Job.NASDataSource != "" {
		r.DataSources = append(r.DataSources, DataSource{DataSourceID: c.Job.NASDataSource, MountPath: c.Job.ContainerMount})
	}
	if c.Job.OSSDataSource != "" {
		r.DataSources = append(r.DataSources, DataSource{DataSourceID: c.Job.OSSDataSource})
	}
	if len(spec.Tags) > 0 {
		r.Settings = &JobSettingsBody{Tags: spec.Tags}
	}
	return r
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// RenderSpec is the canonical text of what the job runs, for drift.
func (c *Client) RenderSpec(spec cloudjob.JobSpec) (string, error) {
	r := c.Request(spec)
	return render(JobInfo{JobType: r.JobType, WorkspaceID: r.WorkspaceID, JobSpecs: r.JobSpecs, UserCommand: r.UserCommand, DataSources: r.DataSources, Envs: r.Envs}), nil
}

func render(j JobInfo) string {
	lines := []string{"job_type = " + j.JobType, "workspace_id = " + j.WorkspaceID}
	for _, s := range j.JobSpecs {
		lines = append(lines, fmt.Sprintf("spec[%s] = image %s, pod_count %d, ecs_spec %s", s.Type, s.Image, s.PodCount, s.EcsSpec))
	}
	for _, d := range j.DataSources {
		lines = append(lines, fmt.Sprintf("data_source = %s at %q", d.DataSourceID, d.MountPath))
	}
	keys := make([]string, 0, len(j.Envs))
	for k := range j.Envs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("env[%s] = %s", k, j.Envs[k]))
	}
	lines = append(lines, "user_command = "+strings.ReplaceAll(j.UserCommand, "\n", `\n`))
	return strings.Join(lines, "\n") + "\n"
}

// Submit creates the job unless the workspace already has one of this
// DisplayName carrying this job's tag (a retry after a timeout or a
// dropped connection): CreateJob has no idempotency token.
func (c *Client) Submit(ctx context.Context, spec cloudjob.JobSpec) (string, error) {
	have, err := c.List(ctx, map[string]string{cloudjob.TagJob: spec.Name})
	if err != nil {
		return "", err
	}
	if len(have) > 0 {
		return have[0].ID, nil
	}
	var out struct {
		JobID string `json:"JobId"`
	}
	if err := c.call(ctx, "create job "+spec.Name, "CreateJob", http.MethodPost, "/api/v1/jobs", nil, c.Request(spec), &out); err != nil {
		return "", err
	}
	if out.JobID == "" {
		return "", fmt.Errorf("create job %s: the answer has no JobId", spec.Name)
	}
	return out.JobID, nil
}

func jobPath(id string) string { return "/api/v1/jobs/" + pathEscape(id) }

// pathEscape escapes a path segment the way the signature's canonical URI
// expects (RFC 3986 unreserved characters kept).
func pathEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.' || ch == '~' {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

// Get reads the job (GetJob).
func (c *Client) Get(ctx context.Context, id string) (cloudjob.Job, error) {
	info, err := c.getInfo(ctx, id)
	if err != nil {
		return cloudjob.Job{}, err
	}
	j := c.job(info)
	j.Spec = render(info)
	return j, nil
}

func (c *Client) getInfo(ctx context.Context, id string) (JobInfo, error) {
	var info JobInfo
	if err := c.call(ctx, "get job "+id, "GetJob", http.MethodGet, jobPath(id), nil, nil, &info); err != nil {
		return info, err
	}
	if info.JobID == "" {
		info.JobID = id
	}
	if len(info.Pods) > 0 {
		c.mu.Lock()
		c.pods[id] = firstPod(info.Pods)
		c.mu.Unlock()
	}
	return info, nil
}

func firstPod(pods []Pod) string {
	ids := make([]string, 0, len(pods))
	for _, p := range pods {
		if p.Type == "" || strings.EqualFold(p.Type, nodeType) {
			ids = append(ids, p.PodID)
		}
	}
	if len(ids) == 0 {
		for _, p := range pods {
			ids = append(ids, p.PodID)
		}
	}
	sort.Strings(ids)
	return ids[0]
}

func (c *Client) job(info JobInfo) cloudjob.Job {
	j := cloudjob.Job{ID: info.JobID, Name: info.DisplayName, Tags: map[string]string{}, URL: c.URL(info.JobID),
		Started: gmt(info.GmtRunningTime), Ended: gmt(info.GmtFinishTime)}
	if info.Settings != nil {
		for k, v := range info.Settings.Tags {
			j.Tags[k] = v
		}
	}
	j.Phase, j.Reason = phase(info)
	switch j.Phase {
	case providers.PhaseSucceeded:
		zero := 0
		j.ExitCode = &zero
	case providers.PhaseFailed:
		// GetJob has no exit code field: DLC's reason message says it.
		if m := exitRE.FindStringSubmatch(info.ReasonMessage); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				j.ExitCode = &n
			}
		}
	}
	if j.Phase.Ended() && j.Started == nil {
		j.Started = gmt(info.GmtCreateTime)
	}
	return j
}

var exitRE = regexp.MustCompile(`(?i)exit(?:ed with)? (?:code|status)[:= ]*(-?[0-9]+)`)

func gmt(s string) *time.Time {
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// URL is the job's page in the PAI console.
func (c *Client) URL(id string) string {
	if id == "" {
		return ""
	}
	return "https://pai.console.aliyun.com/?regionId=" + c.Region + "#/dlc/jobs/" + id
}

func phase(info JobInfo) (providers.Phase, string) {
	why := strings.TrimSpace(strings.TrimSpace(info.ReasonCode + " " + info.ReasonMessage))
	switch info.Status {
	case "Creating", "Queuing", "Bidding", "EnvPreparing", "SanityChecking", "Dequeued":
		return providers.PhasePending, "DLC says " + info.Status
	case "Running", "Restarting", "Stopping":
		return providers.PhaseRunning, ""
	case "Succeeded":
		return providers.PhaseSucceeded, ""
	case "Stopped":
		return providers.PhaseKilled, "stopped"
	case "Failed":
		if why == "" {
			why = "failed"
		}
		return providers.PhaseFailed, why
	}
	return providers.PhasePending, "DLC says " + info.Status
}

// List finds the workspace's jobs carrying tags (ListJobs, by DisplayName
// when tags name the job, page by page).
func (c *Client) List(ctx context.Context, tags map[string]string) ([]cloudjob.Job, error) {
	q := map[string]string{"PageSize": "100"}
	if c.Job.WorkspaceID != "" {
		q["WorkspaceId"] = c.Job.WorkspaceID
	}
	if n := tags[cloudjob.TagJob]; n != "" {
		q["DisplayName"] = n
	}
	var out []cloudjob.Job
	for page, seen := 1, 0; ; page++ {
		q["PageNumber"] = strconv.Itoa(page)
		var res struct {
			Jobs       []JobInfo   `json:"Jobs"`
			TotalCount json.Number `json:"TotalCount"`
		}
		if err := c.call(ctx, "list jobs", "ListJobs", http.MethodGet, "/api/v1/jobs", q, nil, &res); err != nil {
			return nil, err
		}
		for _, info := range res.Jobs {
			if (info.Settings == nil || len(info.Settings.Tags) == 0) && strings.HasPrefix(info.DisplayName, "tf-") {
				// A list item without its settings: GetJob has the tags.
				full, err := c.getInfo(ctx, info.JobID)
				if errors.Is(err, providers.ErrNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				info = full
			}
			j := c.job(info)
			match := true
			for k, v := range tags {
				match = match && j.Tags[k] == v
			}
			if match {
				out = append(out, j)
			}
		}
		seen += len(res.Jobs)
		total, _ := res.TotalCount.Int64()
		if len(res.Jobs) == 0 || int64(seen) >= total {
			return out, nil
		}
	}
}

// Stop stops the job (StopJob); a job DLC does not know is gone, which is
// fine, and so is one that already ended.
func (c *Client) Stop(ctx context.Context, id string) error {
	err := c.call(ctx, "stop job "+id, "StopJob", http.MethodPost, jobPath(id)+"/stop", nil, nil, nil)
	if errors.Is(err, providers.ErrNotFound) {
		return nil
	}
	var he *cloudjob.HTTPError
	if errors.As(err, &he) && he.Status == http.StatusBadRequest {
		// Stopping an ended job is refused; an ended job is what Stop wants.
		if j, gerr := c.Get(ctx, id); gerr == nil && j.Phase.Ended() {
			return nil
		}
	}
	return err
}

// Delete deletes the job's record (DeleteJob); gone is fine.
func (c *Client) Delete(ctx context.Context, id string) error {
	err := c.call(ctx, "delete job "+id, "DeleteJob", http.MethodDelete, jobPath(id), nil, nil, nil)
	if errors.Is(err, providers.ErrNotFound) {
		return nil
	}
	return err
}

// Logs returns the first pod's log past byte offset from (GetPodLogs
// answers lines: they are joined with newlines, and the offset counts the
// bytes of that text).
func (c *Client) Logs(ctx context.Context, id string, from int64) ([]byte, int64, error) {
	c.mu.Lock()
	pod := c.pods[id]
	c.mu.Unlock()
	if pod == "" {
		if _, err := c.Get(ctx, id); err != nil {
			return nil, from, err
		}
		c.mu.Lock()
		pod = c.pods[id]
		c.mu.Unlock()
		if pod == "" {
			return nil, from, nil // no pod yet: no log yet
		}
	}
	max := c.MaxLogLines
	if max <= 0 {
		max = 100000
	}
	var res struct {
		Logs []string `json:"Logs"`
	}
	err := c.call(ctx, "logs of job "+id, "GetPodLogs", http.MethodGet, jobPath(id)+"/pods/"+pathEscape(pod)+"/logs",
		map[string]string{"MaxLines": strconv.Itoa(max)}, nil, &res)
	if err != nil {
		return nil, from, err
	}
	var b strings.Builder
	for _, l := range res.Logs {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	text := b.String()
	if from < 0 || from > int64(len(text)) {
		return nil, from, nil
	}
	return []byte(text[from:]), int64(len(text)), nil
}

// Ping checks the endpoint answers and accepts the credentials: one page of
// ListJobs.
func (c *Client) Ping(ctx context.Context) error {
	q := map[string]string{"PageSize": "1", "PageNumber": "1"}
	if c.Job.WorkspaceID != "" {
		q["WorkspaceId"] = c.Job.WorkspaceID
	}
	return c.call(ctx, "list jobs", "ListJobs", http.MethodGet, "/api/v1/jobs", q, nil, nil)
}
