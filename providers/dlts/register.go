package dlts

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
	"github.com/trialform/trialform/providers/registry"
)

// Environment variables NNI's dlts mode falls back on, as trialform does.
const (
	EnvEmail    = "DLWS_USER_EMAIL"
	EnvPassword = "DLTS_JOB_TOKEN"
	EnvTeam     = "DLWS_VC_NAME"
)

// Settings is a platform "dlts" block (NNI's dltsConfig fields).
type Settings struct {
	Dashboard      string        `hcl:"dashboard,attr" doc:"the cluster's dashboard URL, e.g. \"https://dlts.example.com/\""`
	Cluster        string        `hcl:"cluster,optional" doc:"the cluster's id in the dashboard (default \".default\")"`
	Team           string        `hcl:"team,optional" doc:"the team (virtual cluster) the jobs run in (default $DLWS_VC_NAME)"`
	Email          string        `hcl:"email,optional" doc:"the user's email (default $DLWS_USER_EMAIL)"`
	Password       string        `hcl:"password,optional" sensitive:"true" doc:"the user's password or job token (default $DLTS_JOB_TOKEN); give it from a sensitive variable"`
	GPUType        string        `hcl:"gpu_type,optional" doc:"the GPU type of the jobs (default the first the team's cluster lists)"`
	Image          string        `hcl:"image,optional" doc:"the jobs' image, with python3 and the trial's libraries (default \"msranni/nni:latest\")"`
	RequestTimeout time.Duration `hcl:"request_timeout,optional" doc:"how long one REST call may take before it is retried (default 30s)"`
	cloudjob.MountSettings

	passwordAt string // where password is written
}

// Check checks what types do not.
func (s *Settings) Check(w *decl.Where) hcl.Diagnostics {
	diags := s.MountSettings.Check(w)
	if u, err := url.Parse(s.Dashboard); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		diags = append(diags, w.Error("dashboard", "Invalid value", "dashboard must be the cluster's dashboard URL, e.g. \"https://dlts.example.com/\", got %q.", s.Dashboard))
	}
	if w.Has("password") {
		s.passwordAt = w.Range("password").String()
	}
	return diags
}

// Registration is the dlts kind's entry in the platform registry.
func Registration() registry.Kind {
	return registry.Kind{
		Name:    "dlts",
		Summary: "DLTS (DLWorkspace) jobs through its dashboard's REST API; code and parameters through the shared storage (NNI's dlts mode); contract-tested against a fake of the documented API, never run against a real cluster",
		Config:  func() any { return &Settings{} },
		New: func(cfg any, env registry.Env) (providers.Provider, error) {
			s, ok := cfg.(*Settings)
			if !ok {
				return nil, fmt.Errorf("dlts platform: configuration %T", cfg)
			}
			c, err := NewClient(s, env.Name, os.Getenv)
			if err != nil {
				return nil, err
			}
			return cloudjob.New(c, Options(c, s, env)), nil
		},
	}
}

// NewClient builds the dashboard client of a decoded block; getenv gives
// the fallbacks NNI uses.
func NewClient(s *Settings, name string, getenv func(string) string) (*Client, error) {
	where := fmt.Sprintf("platform \"dlts\" %q", name)
	pick := func(v, attr, env string) (string, cloudjob.Credential, error) {
		if v != "" {
			return v, cloudjob.Credential(fmt.Sprintf("the %s attribute of %s", attr, where)), nil
		}
		if e := getenv(env); e != "" {
			return e, cloudjob.Credential("the environment variable " + env), nil
		}
		return "", "", providers.Permanent(fmt.Errorf("%s: no %s: set %s in the block, or the environment variable %s", where, attr, attr, env))
	}
	email, _, err := pick(s.Email, "email", EnvEmail)
	if err != nil {
		return nil, err
	}
	team, _, err := pick(s.Team, "team", EnvTeam)
	if err != nil {
		return nil, err
	}
	password, cred, err := pick(s.Password, "password", EnvPassword)
	if err != nil {
		return nil, err
	}
	if s.Password != "" && s.passwordAt != "" {
		cred += cloudjob.Credential(" (" + s.passwordAt + ")")
	}
	cluster := s.Cluster
	if cluster == "" {
		cluster = ".default"
	}
	image := s.Image
	if image == "" {
		image = "msranni/nni:latest"
	}
	timeout := s.RequestTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	dash := s.Dashboard
	if !strings.HasSuffix(dash, "/") {
		dash += "/"
	}
	return &Client{Dashboard: dash, Cluster: cluster, Team: team, Email: email, Password: password, Credential: cred,
		HTTP: &http.Client{Timeout: timeout}, Image: image, GPUType: s.GPUType}, nil
}

// Options are the cloudjob options of the dlts platform over c.
func Options(c *Client, s *Settings, env registry.Env) cloudjob.Options {
	return cloudjob.Options{
		Kind: "dlts", Name: env.Name, NNIPlatform: "dlts",
		LocalMount: s.Local(env.Dir), ContainerMount: s.ContainerMount,
		Location: func(h providers.Handle) string {
			if h["job"] == "" {
				return ""
			}
			return strings.TrimRight(c.Dashboard, "/") + "/job/" + url.PathEscape(c.Team) + "/" + url.PathEscape(c.Cluster) + "/" + url.PathEscape(h["job"])
		},
		Validate: func(ctx context.Context) error { return c.Ping(ctx) },
		Secrets:  []string{c.Password},
	}
}
