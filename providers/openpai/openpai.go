// Package openpai runs trials as OpenPAI jobs through OpenPAI's REST API v2
// (POST /api/v2/jobs with a job protocol YAML, GET /api/v2/jobs/USER~NAME,
// GET .../config, PUT .../executionType, bearer token auth), on the shared
// base in providers/cloudjob. Code and parameters reach the job through the
// shared storage (NNI's nniManagerNFSMountPath / containerNFSMountPath);
// the job's output is copied (tee) into the trial's directory there, where
// metrics and `trialform logs` read it: OpenPAI's REST API serves no log
// text of its own (its log endpoints point at the cluster's log manager).
//
// It is contract-tested against a fake of the documented API
// (openpaitest); it has never run against a real OpenPAI cluster.
package openpai

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
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
)

// Client is OpenPAI's REST API v2 for one user: the cloudjob.API of the
// openpai platform.
type Client struct {
	Host     string // "https://pai.example.com" (no trailing slash)
	Username string
	Token    string
	// Credential names where Token came from, for a refused token's message.
	Credential cloudjob.Credential
	HTTP       *http.Client
	// Job is what every job gets besides its command.
	Job JobSettings
}

// JobSettings are the job protocol's settings a platform block gives.
type JobSettings struct {
	Image             string
	VirtualCluster    string
	CPU               int
	MemoryMB          int
	GPU               int // -1: the trial's gpus
	StorageConfigName string
}

var (
	_ cloudjob.API          = (*Client)(nil)
	_ cloudjob.SpecRenderer = (*Client)(nil)
)

// Protocol is the part of OpenPAI's job protocol (version 2) trialform
// writes and reads back.
type Protocol struct {
	ProtocolVersion int                 `yaml:"protocolVersion"`
	Name            string              `yaml:"name"`
	Type            string              `yaml:"type"`
	JobRetryCount   int                 `yaml:"jobRetryCount"`
	Prerequisites   []Prerequisite      `yaml:"prerequisites"`
	TaskRoles       map[string]TaskRole `yaml:"taskRoles"`
	Defaults        map[string]string   `yaml:"defaults,omitempty"`
	Extras          map[string]any      `yaml:"extras,omitempty"`
}

// Prerequisite is a docker image the task roles use.
type Prerequisite struct {
	Type string `yaml:"type"`
	URI  string `yaml:"uri"`
	Name string `yaml:"name"`
}

// TaskRole is one task role (trialform uses one: "main", one instance).
type TaskRole struct {
	Instances           int       `yaml:"instances"`
	DockerImage         string    `yaml:"dockerImage"`
	ResourcePerInstance Resources `yaml:"resourcePerInstance"`
	Commands            []string  `yaml:"commands"`
}

// Resources of one instance.
type Resources struct {
	CPU      int `yaml:"cpu"`
	MemoryMB int `yaml:"memoryMB"`
	GPU      int `yaml:"gpu"`
}

// TaskRoleName is the one task role of a trial's job.
const TaskRoleName = "main"

// tagsKey is where, in the protocol's extras, trialform keeps its tags.
const tagsKey = "trialform"

// Protocol renders the job protocol of spec.
func (c *Client) Protocol(spec cloudjob.JobSpec) Protocol {
	gpu := c.Job.GPU
	if gpu < 0 {
		gpu = spec.GPUs
	}
	cmds := []string{}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmds = append(cmds, "export "+k+"="+shq(spec.Env[k]))
	}
	cmds = append(cmds, "cd "+shq(spec.WorkDir), spec.Command)
	p := Protocol{
		ProtocolVersion: 2, Name: spec.Name, Type: "job",
		Prerequisites: []Prerequisite{{Type: "dockerimage", URI: c.Job.Image, Name: "image"}},
		TaskRoles: map[string]TaskRole{TaskRoleName: {Instances: 1, DockerImage: "image",
			ResourcePerInstance: Resources{CPU: c.Job.CPU, MemoryMB: c.Job.MemoryMB, GPU: gpu}, Commands: cmds}},
		Defaults: map[string]string{"virtualCluster": c.Job.VirtualCluster},
	}
	extras := map[string]any{}
	if len(spec.Tags) > 0 {
		extras[tagsKey] = map[string]any{"tags": spec.Tags}
	}
	if c.Job.StorageConfigName != "" {
		extras["com.microsoft.pai.runtimeplugin"] = []any{map[string]any{
			"plugin": "teamwise_storage", "parameters": map[string]any{"storageConfigNames": []string{c.Job.StorageConfigName}}}}
	}
	if len(extras) > 0 {
		p.Extras = extras
	}
	return p
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// RenderSpec is the canonical text of what the job runs, for drift: the
// image, resources, virtual cluster and commands, one a line.
func (c *Client) RenderSpec(spec cloudjob.JobSpec) (string, error) {
	return renderProtocol(c.Protocol(spec)), nil
}

func renderProtocol(p Protocol) string {
	var lines []string
	for _, pr := range p.Prerequisites {
		lines = append(lines, "image = "+pr.URI)
	}
	lines = append(lines, "virtual_cluster = "+p.Defaults["virtualCluster"])
	if tr, ok := p.TaskRoles[TaskRoleName]; ok {
		lines = append(lines, fmt.Sprintf("cpu = %d", tr.ResourcePerInstance.CPU), fmt.Sprintf("memory_mb = %d", tr.ResourcePerInstance.MemoryMB),
			fmt.Sprintf("gpu = %d", tr.ResourcePerInstance.GPU), fmt.Sprintf("instances = %d", tr.Instances))
		for i, cmd := range tr.Commands {
			lines = append(lines, fmt.Sprintf("command[%d] = %s", i, strings.ReplaceAll(cmd, "\n", `\n`)))
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func (c *Client) id(name string) string { return c.Username + "~" + name }

func (c *Client) do(ctx context.Context, op, method, path string, ctype string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.Host+path, bytes.NewReader(body))
	if err != nil {
		return providers.Permanent(fmt.Errorf("%s: %w", op, err))
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := cloudjob.CheckResponse(op, resp, c.Credential); err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
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

// Submit POSTs the job protocol. The job name is the idempotency key: a
// name OpenPAI already has (409, a retry of a submit that went through)
// is that job.
func (c *Client) Submit(ctx context.Context, spec cloudjob.JobSpec) (string, error) {
	b, err := yaml.Marshal(c.Protocol(spec))
	if err != nil {
		return "", err
	}
	err = c.do(ctx, "submit job "+spec.Name, http.MethodPost, "/api/v2/jobs", "text/yaml", b, nil)
	var he *cloudjob.HTTPError
	if errors.As(err, &he) && he.Status == http.StatusConflict {
		return c.id(spec.Name), nil
	}
	if err != nil {
		return "", err
	}
	return c.id(spec.Name), nil
}

// JobInfo is GET /api/v2/jobs/USER~NAME's answer (the fields trialform reads).
type JobInfo struct {
	Name      string    `json:"name"`
	JobStatus JobStatus `json:"jobStatus"`
}

// JobStatus is a job's status.
type JobStatus struct {
	Username           string `json:"username"`
	State              string `json:"state"` // WAITING RUNNING SUCCEEDED STOPPED FAILED STOPPING UNKNOWN
	ExecutionType      string `json:"executionType"`
	CreatedTime        int64  `json:"createdTime"`   // ms since the epoch
	LaunchedTime       int64  `json:"launchedTime"`  // ms; 0 until it runs
	CompletedTime      int64  `json:"completedTime"` // ms; 0 until it ends
	AppExitCode        *int   `json:"appExitCode"`
	AppExitDiagnostics string `json:"appExitDiagnostics"`
}

// ListItem is one job of GET /api/v2/jobs.
type ListItem struct {
	Name     string `json:"name"`
	Username string `json:"username"`
	State    string `json:"state"`
}

func ms(t int64) *time.Time {
	if t <= 0 {
		return nil
	}
	v := time.UnixMilli(t).UTC()
	return &v
}

// Get reads the job's status and its config (tags and spec).
func (c *Client) Get(ctx context.Context, id string) (cloudjob.Job, error) {
	var info JobInfo
	if err := c.do(ctx, "get job "+id, http.MethodGet, "/api/v2/jobs/"+url.PathEscape(id), "", nil, &info); err != nil {
		return cloudjob.Job{}, err
	}
	var raw []byte
	if err := c.do(ctx, "get job config "+id, http.MethodGet, "/api/v2/jobs/"+url.PathEscape(id)+"/config", "", nil, &raw); err != nil {
		return cloudjob.Job{}, err
	}
	var p Protocol
	if err := yaml.Unmarshal(raw, &p); err != nil {
		return cloudjob.Job{}, fmt.Errorf("get job config %s: %w", id, err)
	}
	j := cloudjob.Job{ID: id, Name: info.Name, Tags: protocolTags(p), Spec: renderProtocol(p), URL: c.URL(info.Name),
		Started: ms(info.JobStatus.LaunchedTime), Ended: ms(info.JobStatus.CompletedTime), ExitCode: info.JobStatus.AppExitCode}
	j.Phase, j.Reason = phase(info.JobStatus)
	if j.Phase.Ended() && j.Started == nil {
		j.Started = ms(info.JobStatus.CreatedTime)
	}
	return j, nil
}

// URL is the job's page in OpenPAI's web portal.
func (c *Client) URL(name string) string {
	return c.Host + "/job-detail.html?username=" + url.QueryEscape(c.Username) + "&jobName=" + url.QueryEscape(name)
}

func protocolTags(p Protocol) map[string]string {
	t := map[string]string{}
	if m, ok := p.Extras[tagsKey].(map[string]any); ok {
		if tags, ok := m["tags"].(map[string]any); ok {
			for k, v := range tags {
				t[k] = fmt.Sprint(v)
			}
		}
	}
	return t
}

func phase(s JobStatus) (providers.Phase, string) {
	switch s.State {
	case "WAITING":
		return providers.PhasePending, "waiting in the virtual cluster's queue"
	case "RUNNING", "STOPPING":
		return providers.PhaseRunning, ""
	case "SUCCEEDED":
		return providers.PhaseSucceeded, ""
	case "STOPPED":
		return providers.PhaseKilled, "stopped"
	case "FAILED":
		why := s.AppExitDiagnostics
		if s.AppExitCode != nil {
			why = strings.TrimSpace(fmt.Sprintf("exit status %d %s", *s.AppExitCode, why))
		}
		return providers.PhaseFailed, why
	}
	return providers.PhasePending, "OpenPAI says " + s.State
}

// List finds the user's jobs carrying tags. With the job-name tag it asks
// for that job alone.
func (c *Client) List(ctx context.Context, tags map[string]string) ([]cloudjob.Job, error) {
	var names []string
	if name := tags[cloudjob.TagJob]; name != "" {
		names = []string{name}
	} else {
		var items []ListItem
		if err := c.do(ctx, "list jobs", http.MethodGet, "/api/v2/jobs?username="+url.QueryEscape(c.Username), "", nil, &items); err != nil {
			return nil, err
		}
		for _, it := range items {
			if strings.HasPrefix(it.Name, "tf-") {
				names = append(names, it.Name)
			}
		}
	}
	var out []cloudjob.Job
	for _, n := range names {
		j, err := c.Get(ctx, c.id(n))
		if errors.Is(err, providers.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		match := true
		for k, v := range tags {
			match = match && j.Tags[k] == v
		}
		if match {
			out = append(out, j)
		}
	}
	return out, nil
}

// Stop sets the job's execution type to STOP; a job OpenPAI does not know
// is gone, which is fine.
func (c *Client) Stop(ctx context.Context, id string) error {
	err := c.do(ctx, "stop job "+id, http.MethodPut, "/api/v2/jobs/"+url.PathEscape(id)+"/executionType", "application/json", []byte(`{"value":"STOP"}`), nil)
	if errors.Is(err, providers.ErrNotFound) {
		return nil
	}
	return err
}

// Delete: OpenPAI's REST API v2 cannot delete a job.
func (c *Client) Delete(ctx context.Context, id string) error {
	return fmt.Errorf("delete job %s: %w", id, cloudjob.ErrUnsupported)
}

// Logs: the job's output is read from the shared storage (LogsOnMount).
func (c *Client) Logs(ctx context.Context, id string, from int64) ([]byte, int64, error) {
	return nil, from, fmt.Errorf("logs of job %s: %w", id, cloudjob.ErrUnsupported)
}

// Ping checks the host answers and accepts the token: GET the job list.
func (c *Client) Ping(ctx context.Context) error {
	var items []ListItem
	return c.do(ctx, "list jobs", http.MethodGet, "/api/v2/jobs?username="+url.QueryEscape(c.Username), "", nil, &items)
}
