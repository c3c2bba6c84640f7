// Package dlts runs trials as jobs of DLTS (Microsoft's DLWorkspace)
// through its dashboard's REST API, with the fields of NNI's dltsConfig,
// on the shared base in providers/cloudjob:
//
//	POST api/clusters/CLUSTER/jobs                    submit (answers {"jobId"})
//	GET  api/v2/clusters/CLUSTER/jobs/ID              status (jobStatus, jobParams)
//	GET  api/v2/clusters/CLUSTER/teams/TEAM/jobs      list (find-by-name before a submit)
//	PUT  api/clusters/CLUSTER/jobs/ID/status          {"status": "killing"}
//	GET  api/v2/clusters/CLUSTER/jobs/ID/log          the job's output
//	GET  api/teams/TEAM/clusters/CLUSTER              the GPU type, when not given
//
// every call authenticated by the email and password query parameters, as
// NNI's dlts mode does. DLTS assigns job ids, so a submit first looks for
// a job of the same (deterministic) name: a retry never makes a second job.
// The password is in every URL: errors never show URLs with their query.
//
// It is contract-tested against a fake of the documented API (dltstest);
// it has never run against a real DLTS cluster.
package dlts

import (
	"bytes"
	"context"
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

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
)

// Client is the DLTS dashboard API for one user and team: the cloudjob.API
// of the dlts platform.
type Client struct {
	Dashboard string // with a trailing slash
	Cluster   string
	Team      string
	Email     string
	Password  string
	// Credential names where Password came from.
	Credential cloudjob.Credential
	HTTP       *http.Client
	Image      string
	GPUType    string // "" asks the team's cluster metadata once

	mu sync.Mutex
}

var (
	_ cloudjob.API          = (*Client)(nil)
	_ cloudjob.SpecRenderer = (*Client)(nil)
)

// EnvVar is one {name, value} of a job's env list.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// JobParams is the job DLTS runs (the fields trialform sets; NNI's
// DLTSJobConfig has the same).
type JobParams struct {
	JobName           string   `json:"jobName"`
	Team              string   `json:"team"`
	VCName            string   `json:"vcName"`
	UserName          string   `json:"userName"`
	Image             string   `json:"image"`
	Cmd               string   `json:"cmd"`
	ResourceGPU       int      `json:"resourcegpu"`
	GPUType           string   `json:"gpuType"`
	JobType           string   `json:"jobType"`
	JobTrainingType   string   `json:"jobtrainingtype"`
	PreemptionAllowed string   `json:"preemptionAllowed"`
	WorkPath          string   `json:"workPath"`
	EnableWorkPath    bool     `json:"enableworkpath"`
	EnableJobPath     bool     `json:"enablejobpath"`
	Env               []EnvVar `json:"env"`
}

// JobInfo is a job as GET answers it (the fields trialform reads).
type JobInfo struct {
	JobID           string    `json:"jobId"`
	JobName         string    `json:"jobName"`
	UserName        string    `json:"userName"`
	JobStatus       string    `json:"jobStatus"`
	ErrorMsg        string    `json:"errorMsg"`
	JobParams       JobParams `json:"jobParams"`
	JobStatusDetail []struct {
		StartedAt  string `json:"startedAt"`
		FinishedAt string `json:"finishedAt"`
	} `json:"jobStatusDetail"`
}

// tagsVar is the env variable that carries trialform's tags (DLTS jobs
// have no labels).
const tagsVar = "TRIALFORM_TAGS"

// Params renders the job of spec.
func (c *Client) Params(spec cloudjob.JobSpec, gpuType string) JobParams {
	p := JobParams{JobName: spec.Name, Team: c.Team, VCName: c.Team, UserName: c.Email, Image: c.Image,
		Cmd: "cd " + shq(spec.WorkDir) + " && " + spec.Command, ResourceGPU: spec.GPUs, GPUType: gpuType,
		JobType: "training", JobTrainingType: "RegularJob", PreemptionAllowed: "False", EnableWorkPath: true, EnableJobPath: true}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p.Env = append(p.Env, EnvVar{k, spec.Env[k]})
	}
	if len(spec.Tags) > 0 {
		b, _ := json.Marshal(spec.Tags)
		p.Env = append(p.Env, EnvVar{tagsVar, string(b)})
	}
	return p
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// RenderSpec renders what the job runs, one setting a line (the GPU type
// aside: it may be looked up).
func (c *Client) RenderSpec(spec cloudjob.JobSpec) (string, error) {
	return render(c.Params(spec, "")), nil
}

func render(p JobParams) string {
	lines := []string{"image = " + p.Image, "team = " + p.Team, fmt.Sprintf("gpus = %d", p.ResourceGPU), "cmd = " + strings.ReplaceAll(p.Cmd, "\n", `\n`)}
	for _, e := range p.Env {
		if e.Name != tagsVar {
			lines = append(lines, "env "+e.Name+" = "+e.Value)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// redact drops the query (the password) from a transport error's URL.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery = ""
			ue.URL = u.String()
		}
	}
	return err
}

func (c *Client) do(ctx context.Context, op, method, path string, query url.Values, body any, out any) error {
	if query == nil {
		query = url.Values{}
	}
	query.Set("email", c.Email)
	query.Set("password", c.Password)
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Dashboard+path+"?"+query.Encode(), rd)
	if err != nil {
		return providers.Permanent(fmt.Errorf("%s: %w", op, redact(err)))
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, redact(err))
	}
	if err := cloudjob.CheckResponse(op, resp, c.Credential); err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", op, redact(err))
	}
	switch o := out.(type) {
	case nil:
	case *[]byte:
		*o = b
	default:
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s: the answer is not the JSON expected: %w", op, err)
		}
	}
	return nil
}

func (c *Client) cluster() string { return url.PathEscape(c.Cluster) }

// gpuType is the configured GPU type, or the first of the team's cluster
// metadata (as NNI does).
func (c *Client) gpuType(ctx context.Context) (string, error) {
	c.mu.Lock()
	t := c.GPUType
	c.mu.Unlock()
	if t != "" {
		return t, nil
	}
	var info struct {
		Metadata string `json:"metadata"`
	}
	if err := c.do(ctx, "get the team's cluster", http.MethodGet, "api/teams/"+url.PathEscape(c.Team)+"/clusters/"+c.cluster(), nil, nil, &info); err != nil {
		return "", err
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(info.Metadata), &meta); err != nil || len(meta) == 0 {
		return "", providers.Permanent(fmt.Errorf("the cluster %s of team %s names no GPU type; set gpu_type", c.Cluster, c.Team))
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c.mu.Lock()
	c.GPUType = keys[0]
	c.mu.Unlock()
	return keys[0], nil
}

// find returns the user's job named name ("" when there is none).
func (c *Client) find(ctx context.Context, name string) (JobInfo, bool, error) {
	jobs, err := c.list(ctx)
	if err != nil {
		return JobInfo{}, false, err
	}
	for _, j := range jobs {
		if j.JobName == name && j.UserName == c.Email {
			return j, true, nil
		}
	}
	return JobInfo{}, false, nil
}

func (c *Client) list(ctx context.Context) ([]JobInfo, error) {
	var jobs []JobInfo
	q := url.Values{"user": {"all"}, "limit": {"100000"}}
	err := c.do(ctx, "list jobs", http.MethodGet, "api/v2/clusters/"+c.cluster()+"/teams/"+url.PathEscape(c.Team)+"/jobs", q, nil, &jobs)
	return jobs, err
}

// Submit looks for a job of the same name first (DLTS assigns ids), then
// posts the job.
func (c *Client) Submit(ctx context.Context, spec cloudjob.JobSpec) (string, error) {
	if j, ok, err := c.find(ctx, spec.Name); err != nil {
		return "", err
	} else if ok {
		return j.JobID, nil
	}
	gt, err := c.gpuType(ctx)
	if err != nil {
		return "", err
	}
	var out struct {
		JobID string `json:"jobId"`
	}
	if err := c.do(ctx, "submit job "+spec.Name, http.MethodPost, "api/clusters/"+c.cluster()+"/jobs", nil, c.Params(spec, gt), &out); err != nil {
		return "", err
	}
	if out.JobID == "" {
		return "", fmt.Errorf("submit job %s: the answer has no jobId", spec.Name)
	}
	return out.JobID, nil
}

func parseTime(s string) *time.Time {
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil
	}
	return &t
}

func (c *Client) job(info JobInfo) cloudjob.Job {
	j := cloudjob.Job{ID: info.JobID, Name: info.JobName, Tags: map[string]string{}, Spec: render(info.JobParams),
		URL: strings.TrimRight(c.Dashboard, "/") + "/job/" + url.PathEscape(c.Team) + "/" + c.cluster() + "/" + url.PathEscape(info.JobID)}
	for _, e := range info.JobParams.Env {
		if e.Name == tagsVar {
			_ = json.Unmarshal([]byte(e.Value), &j.Tags)
		}
	}
	if len(info.JobStatusDetail) > 0 {
		j.Started = parseTime(info.JobStatusDetail[0].StartedAt)
		j.Ended = parseTime(info.JobStatusDetail[0].FinishedAt)
	}
	switch info.JobStatus {
	case "unapproved", "queued", "scheduling":
		j.Phase, j.Reason = providers.PhasePending, "DLTS says "+info.JobStatus
	case "running", "killing", "pausing", "paused":
		j.Phase = providers.PhaseRunning
	case "finished":
		j.Phase = providers.PhaseSucceeded
	case "failed", "error":
		j.Phase, j.Reason = providers.PhaseFailed, info.ErrorMsg
	case "killed":
		j.Phase, j.Reason = providers.PhaseKilled, "killed"
	default:
		j.Phase, j.Reason = providers.PhasePending, "DLTS says "+info.JobStatus
	}
	return j
}

// Get reads one job.
func (c *Client) Get(ctx context.Context, id string) (cloudjob.Job, error) {
	var info JobInfo
	if err := c.do(ctx, "get job "+id, http.MethodGet, "api/v2/clusters/"+c.cluster()+"/jobs/"+url.PathEscape(id), nil, nil, &info); err != nil {
		return cloudjob.Job{}, err
	}
	return c.job(info), nil
}

// List returns the user's jobs in the team carrying tags.
func (c *Client) List(ctx context.Context, tags map[string]string) ([]cloudjob.Job, error) {
	infos, err := c.list(ctx)
	if err != nil {
		return nil, err
	}
	var out []cloudjob.Job
	for _, info := range infos {
		if info.UserName != c.Email {
			continue
		}
		j := c.job(info)
		match := true
		for k, v := range tags {
			match = match && (j.Tags[k] == v || (k == cloudjob.TagJob && j.Name == v))
		}
		if match {
			out = append(out, j)
		}
	}
	return out, nil
}

// Stop asks DLTS to kill the job; a job it does not know is fine.
func (c *Client) Stop(ctx context.Context, id string) error {
	err := c.do(ctx, "kill job "+id, http.MethodPut, "api/clusters/"+c.cluster()+"/jobs/"+url.PathEscape(id)+"/status", nil, map[string]string{"status": "killing"}, nil)
	if errors.Is(err, providers.ErrNotFound) {
		return nil
	}
	return err
}

// Delete: DLTS's dashboard API cannot delete a job.
func (c *Client) Delete(ctx context.Context, id string) error {
	return fmt.Errorf("delete job %s: %w", id, cloudjob.ErrUnsupported)
}

// Logs reads the job's log (DLTS serves it whole) past from.
func (c *Client) Logs(ctx context.Context, id string, from int64) ([]byte, int64, error) {
	var b []byte
	if err := c.do(ctx, "get the log of job "+id, http.MethodGet, "api/v2/clusters/"+c.cluster()+"/jobs/"+url.PathEscape(id)+"/log", nil, nil, &b); err != nil {
		return nil, from, err
	}
	if from > int64(len(b)) {
		from = int64(len(b))
	}
	return b[from:], int64(len(b)), nil
}

// Ping checks the dashboard answers and takes the credentials.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.list(ctx)
	return err
}
