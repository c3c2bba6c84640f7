package dlc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/alibabacloud-go/tea/dara"
	"github.com/aliyun/credentials-go/credentials"
	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
	"github.com/trialform/trialform/providers/registry"
)

// The standard Alibaba Cloud credential environment variables.
const (
	EnvAccessKeyID     = "ALIBABA_CLOUD_ACCESS_KEY_ID"
	EnvAccessKeySecret = "ALIBABA_CLOUD_ACCESS_KEY_SECRET"
)

// Settings is a platform "dlc" block: NNI's dlc training service fields
// (seed 003), in HCL style.
type Settings struct {
	JobType         string        `hcl:"job_type,attr" doc:"the DLC job type: \"TFJob\" or \"PyTorchJob\" (NNI's jobType)"`
	Image           string        `hcl:"image,attr" doc:"the jobs' image, with python3 and the trial's libraries (e.g. a pai-dlc pytorch-training image)"`
	PodCount        int           `hcl:"pod_count,optional" min:"1" doc:"pods of each trial's job, 1 to 100 (default 1); metrics come from the first pod"`
	EcsSpec         string        `hcl:"ecs_spec,attr" doc:"the ECS instance type of each pod, e.g. \"ecs.c6.large\""`
	Region          string        `hcl:"region,attr" doc:"the region of the DLC service and the NAS, e.g. \"cn-hangzhou\""`
	WorkspaceID     string        `hcl:"workspace_id,optional" doc:"the PAI workspace the jobs are created and listed in (default: the account's default workspace)"`
	NASDataSourceID string        `hcl:"nas_data_source_id,attr" doc:"the NAS data source the jobs mount at container_storage_mount_point; the same NAS is mounted here at local_storage_mount_point (code and parameters go through it)"`
	OSSDataSourceID string        `hcl:"oss_data_source_id,optional" doc:"an OSS data source the jobs also mount (its own mount path), for data on OSS"`
	AccessKeyID     string        `hcl:"access_key_id,optional" sensitive:"true" doc:"an Alibaba Cloud AccessKey ID, from a sensitive variable (default: the environment variable ALIBABA_CLOUD_ACCESS_KEY_ID)"`
	AccessKeySecret string        `hcl:"access_key_secret,optional" sensitive:"true" doc:"its AccessKey secret, from a sensitive variable (default: the environment variable ALIBABA_CLOUD_ACCESS_KEY_SECRET)"`
	Endpoint        string        `hcl:"endpoint,optional" doc:"the DLC OpenAPI endpoint (default \"pai-dlc.REGION.aliyuncs.com\" over HTTPS); a URL with a scheme for a private endpoint"`
	RequestTimeout  time.Duration `hcl:"request_timeout,optional" doc:"how long one API call may take before it is retried (default 30s)"`
	cloudjob.MountSettings

	keyAt string // where access_key_id is written, for a refused key's message
}

var (
	regionRE  = regexp.MustCompile(`^[a-z]{2,}(-[a-z0-9]+)+$`)
	ecsSpecRE = regexp.MustCompile(`^ecs\.[a-z0-9-]+\.[a-z0-9-]+$`)
	idRE      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// MaxPodCount is the most pods a trial's job may ask for.
const MaxPodCount = 100

// Check checks ranges and enums with the attributes' source ranges.
func (s *Settings) Check(w *decl.Where) hcl.Diagnostics {
	diags := s.MountSettings.Check(w)
	if s.JobType != "TFJob" && s.JobType != "PyTorchJob" {
		diags = append(diags, w.Error("job_type", "Invalid value", "job_type must be \"TFJob\" or \"PyTorchJob\" (case matters), got %q.", s.JobType))
	}
	if strings.TrimSpace(s.Image) == "" {
		diags = append(diags, w.Error("image", "Invalid value", "image must name the jobs' container image."))
	}
	if s.PodCount < 1 || s.PodCount > MaxPodCount {
		diags = append(diags, w.Error("pod_count", "Invalid value", "pod_count must be from 1 to %d, got %d.", MaxPodCount, s.PodCount))
	}
	if !ecsSpecRE.MatchString(s.EcsSpec) {
		diags = append(diags, w.Error("ecs_spec", "Invalid value", "ecs_spec must be an ECS instance type such as \"ecs.c6.large\", got %q.", s.EcsSpec))
	}
	if !regionRE.MatchString(s.Region) {
		diags = append(diags, w.Error("region", "Invalid value", "region must be an Alibaba Cloud region id such as \"cn-hangzhou\", got %q.", s.Region))
	}
	for _, a := range []struct{ name, v string }{{"nas_data_source_id", s.NASDataSourceID}, {"oss_data_source_id", s.OSSDataSourceID}, {"workspace_id", s.WorkspaceID}} {
		if (a.v != "" || a.name == "nas_data_source_id") && !idRE.MatchString(a.v) {
			diags = append(diags, w.Error(a.name, "Invalid value", "%s must be an id from the PAI console (letters, digits, '-', '_', '.'), got %q.", a.name, a.v))
		}
	}
	if (s.AccessKeyID == "") != (s.AccessKeySecret == "") {
		at := "access_key_secret"
		if s.AccessKeyID == "" {
			at = "access_key_id"
		}
		diags = append(diags, w.Error(at, "Missing value", "access_key_id and access_key_secret go together: set both (from sensitive variables) or neither (then %s and %s are read).", EnvAccessKeyID, EnvAccessKeySecret))
	}
	if s.Endpoint != "" && (strings.ContainsAny(s.Endpoint, " \t") || strings.HasPrefix(s.Endpoint, "/")) {
		diags = append(diags, w.Error("endpoint", "Invalid value", "endpoint must be a host name (\"pai-dlc.cn-hangzhou.aliyuncs.com\") or a URL, got %q.", s.Endpoint))
	}
	if w.Has("access_key_id") {
		s.keyAt = w.Range("access_key_id").String()
	}
	return diags
}

// Registration is the dlc kind's entry in the platform registry.
func Registration() registry.Kind {
	return registry.Kind{
		Name:    "dlc",
		Summary: "Alibaba Cloud PAI-DLC jobs through the DLC OpenAPI 2020-12-03; code and parameters through the NAS mount (NNI's dlc mode); contract-tested against a fake of the documented API, never run against the real service",
		Config:  func() any { return &Settings{PodCount: 1} },
		New: func(cfg any, env registry.Env) (providers.Provider, error) {
			s, ok := cfg.(*Settings)
			if !ok {
				return nil, fmt.Errorf("dlc platform: configuration %T", cfg)
			}
			return New(s, env)
		},
	}
}

// New builds the provider of a decoded block.
func New(s *Settings, env registry.Env) (providers.Provider, error) {
	c, err := NewClientFor(s, env.Name)
	if err != nil {
		return nil, err
	}
	return cloudjob.New(c, Options(c, s, env)), nil
}

// Credentials returns the access key and where it comes from: the block's
// attributes, else the standard environment variables.
func (s *Settings) Credentials(name string) (id, secret string, from cloudjob.Credential, err error) {
	if s.AccessKeyID != "" || s.AccessKeySecret != "" {
		from := fmt.Sprintf("the access_key_id/access_key_secret attributes of platform \"dlc\" %q", name)
		if s.keyAt != "" {
			from += " (" + s.keyAt + ")"
		}
		return s.AccessKeyID, s.AccessKeySecret, cloudjob.Credential(from), nil
	}
	from = cloudjob.Credential(fmt.Sprintf("the environment variables %s/%s", EnvAccessKeyID, EnvAccessKeySecret))
	id, secret = os.Getenv(EnvAccessKeyID), os.Getenv(EnvAccessKeySecret)
	if id == "" || secret == "" {
		return "", "", from, providers.Permanent(fmt.Errorf("platform \"dlc\" %q has no Alibaba Cloud credentials: set access_key_id and access_key_secret from sensitive variables, or export %s and %s", name, EnvAccessKeyID, EnvAccessKeySecret))
	}
	return id, secret, from, nil
}

// NewClientFor builds the OpenAPI client of a decoded block.
func NewClientFor(s *Settings, name string) (*Client, error) {
	id, secret, from, err := s.Credentials(name)
	if err != nil {
		return nil, err
	}
	pods := s.PodCount
	if pods == 0 {
		pods = 1
	}
	return NewClient(ClientConfig{Endpoint: s.Endpoint, Region: s.Region, AccessKeyID: id, AccessKeySecret: secret, Credential: from, Timeout: s.RequestTimeout,
		Job: JobSettings{JobType: s.JobType, Image: s.Image, PodCount: pods, EcsSpec: s.EcsSpec, WorkspaceID: s.WorkspaceID,
			NASDataSource: s.NASDataSourceID, OSSDataSource: s.OSSDataSourceID, ContainerMount: s.ContainerMount}})
}

// Options are the cloudjob options of the dlc platform over c.
func Options(c *Client, s *Settings, env registry.Env) cloudjob.Options {
	var secrets []string
	for _, v := range []string{s.AccessKeySecret, s.AccessKeyID} {
		if v != "" {
			secrets = append(secrets, v)
		}
	}
	if s.AccessKeyID == "" {
		if v := os.Getenv(EnvAccessKeySecret); v != "" {
			secrets = append(secrets, v)
		}
	}
	return cloudjob.Options{
		Kind: "dlc", Name: env.Name, NNIPlatform: "dlc",
		LocalMount: s.Local(env.Dir), ContainerMount: s.ContainerMount,
		Location: func(h providers.Handle) string {
			if h["job"] == "" {
				return ""
			}
			return "DLC job " + h["job"]
		},
		Validate: func(ctx context.Context) error { return c.Ping(ctx) },
		Secrets:  secrets,
	}
}

// accessKeyCredential is an access_key credential of Alibaba's credentials
// package.
func accessKeyCredential(id, secret string) (credentials.Credential, error) {
	if id == "" || secret == "" {
		return nil, errors.New("the AccessKey ID or secret is empty")
	}
	return credentials.NewCredential(&credentials.Config{Type: dara.String("access_key"), AccessKeyId: dara.String(id), AccessKeySecret: dara.String(secret)})
}
