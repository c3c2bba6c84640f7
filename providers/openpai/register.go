package openpai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
	"github.com/trialform/trialform/providers/registry"
)

// Settings is a platform "openpai" block (NNI's openpai training service
// fields, in HCL style).
type Settings struct {
	Host              string        `hcl:"host,attr" doc:"OpenPAI's address, e.g. \"https://pai.example.com\" (a bare host means http://, as in NNI)"`
	Username          string        `hcl:"username,attr" doc:"the OpenPAI user the jobs run as"`
	Token             string        `hcl:"token,attr" sensitive:"true" doc:"an OpenPAI access token of that user (the web portal's profile page makes one); give it from a sensitive variable"`
	DockerImage       string        `hcl:"docker_image,optional" doc:"the jobs' image, with python3 and the trial's libraries (default \"msranni/nni:latest\")"`
	VirtualCluster    string        `hcl:"virtual_cluster,optional" doc:"the virtual cluster the jobs are queued in (default \"default\")"`
	TrialCPUNumber    int           `hcl:"trial_cpu_number,optional" min:"1" doc:"CPUs of each trial's job (default 1)"`
	TrialMemorySize   string        `hcl:"trial_memory_size,optional" type:"a size such as \"8gb\" or \"512mb\"" doc:"memory of each trial's job (default \"4gb\")"`
	TrialGPUNumber    int           `hcl:"trial_gpu_number,optional" min:"0" doc:"GPUs of each trial's job (default the experiment's trial gpus)"`
	StorageConfigName string        `hcl:"storage_config_name,optional" doc:"the OpenPAI storage config the jobs mount (the team-wise storage holding the shared mount)"`
	RequestTimeout    time.Duration `hcl:"request_timeout,optional" doc:"how long one REST call may take before it is retried (default 30s)"`
	cloudjob.MountSettings

	tokenAt string // where token is written, for a refused token's message
}

var memRE = regexp.MustCompile(`^(?i)\s*([0-9]+(?:\.[0-9]+)?)\s*(b|kb|mb|gb|tb|k|m|g|t)?\s*$`)

// MemoryMB parses a size string ("8gb", "512mb", "1.5g"; a bare number is
// bytes) into MB.
func MemoryMB(s string) (int, error) {
	m := memRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size: write it as \"8gb\" or \"512mb\"", s)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	mult := map[string]float64{"": 1.0 / (1 << 20), "b": 1.0 / (1 << 20), "k": 1.0 / 1024, "kb": 1.0 / 1024, "m": 1, "mb": 1, "g": 1024, "gb": 1024, "t": 1 << 20, "tb": 1 << 20}[strings.ToLower(m[2])]
	mb := int(v * mult)
	if mb < 1 {
		return 0, fmt.Errorf("%q is less than 1 MB", s)
	}
	return mb, nil
}

// Check checks what types do not.
func (s *Settings) Check(w *decl.Where) hcl.Diagnostics {
	diags := s.MountSettings.Check(w)
	if u, err := url.Parse(hostURL(s.Host)); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		diags = append(diags, w.Error("host", "Invalid value", "host must be OpenPAI's address, e.g. \"https://pai.example.com\" (a bare host name or address means http://), got %q.", s.Host))
	}
	if strings.TrimSpace(s.Username) == "" {
		diags = append(diags, w.Error("username", "Invalid value", "username must name the OpenPAI user the jobs run as."))
	}
	if strings.TrimSpace(s.Token) == "" {
		diags = append(diags, w.Error("token", "Invalid value", "token must not be empty: give an OpenPAI access token from a sensitive variable."))
	}
	if s.TrialMemorySize != "" {
		if _, err := MemoryMB(s.TrialMemorySize); err != nil {
			diags = append(diags, w.Error("trial_memory_size", "Invalid value", "trial_memory_size: %s.", err))
		}
	}
	s.tokenAt = w.Range("token").String()
	return diags
}

// Registration is the openpai kind's entry in the platform registry.
func Registration() registry.Kind {
	return registry.Kind{
		Name:    "openpai",
		Summary: "OpenPAI jobs through its REST API v2; code and parameters through the shared storage (NNI's pai mode); contract-tested against a fake of the documented API, never run against a real cluster",
		Config:  func() any { return &Settings{TrialGPUNumber: -1} }, // -1: the trial's gpus
		New: func(cfg any, env registry.Env) (providers.Provider, error) {
			s, ok := cfg.(*Settings)
			if !ok {
				return nil, fmt.Errorf("openpai platform: configuration %T", cfg)
			}
			return New(s, env)
		},
	}
}

// New builds the provider of a decoded block.
func New(s *Settings, env registry.Env) (providers.Provider, error) {
	c, err := NewClient(s, env.Name)
	if err != nil {
		return nil, err
	}
	return cloudjob.New(c, Options(c, s, env)), nil
}

// NewClient builds the REST client of a decoded block.
func NewClient(s *Settings, name string) (*Client, error) {
	mem := 4096
	if s.TrialMemorySize != "" {
		var err error
		if mem, err = MemoryMB(s.TrialMemorySize); err != nil {
			return nil, providers.Permanent(err)
		}
	}
	job := JobSettings{Image: s.DockerImage, VirtualCluster: s.VirtualCluster, CPU: s.TrialCPUNumber, MemoryMB: mem, GPU: -1, StorageConfigName: s.StorageConfigName}
	if job.Image == "" {
		job.Image = "msranni/nni:latest"
	}
	if job.VirtualCluster == "" {
		job.VirtualCluster = "default"
	}
	if job.CPU == 0 {
		job.CPU = 1
	}
	if s.TrialGPUNumber >= 0 {
		job.GPU = s.TrialGPUNumber
	}
	timeout := s.RequestTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cred := fmt.Sprintf("the token attribute of platform \"openpai\" %q", name)
	if s.tokenAt != "" {
		cred += " (" + s.tokenAt + ")"
	}
	return &Client{Host: strings.TrimRight(hostURL(s.Host), "/"), Username: s.Username, Token: s.Token, Credential: cloudjob.Credential(cred),
		HTTP: &http.Client{Timeout: timeout}, Job: job}, nil
}

// Options are the cloudjob options of the openpai platform over c.
func Options(c *Client, s *Settings, env registry.Env) cloudjob.Options {
	return cloudjob.Options{
		Kind: "openpai", Name: env.Name, NNIPlatform: "pai",
		LocalMount: s.Local(env.Dir), ContainerMount: s.ContainerMount, LogsOnMount: true,
		Location: func(h providers.Handle) string {
			if h["name"] == "" {
				return ""
			}
			return c.URL(h["name"])
		},
		Validate: func(ctx context.Context) error { return c.Ping(ctx) },
		Secrets:  []string{s.Token},
	}
}

// hostURL adds http:// to a bare host, as NNI does.
func hostURL(h string) string {
	if h != "" && !strings.Contains(h, "://") {
		return "http://" + h
	}
	return h
}
