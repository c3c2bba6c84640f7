package aml

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/cloudjob"
	"github.com/trialform/trialform/providers/registry"
)

// Settings is a platform "aml" block: NNI's amlConfig fields in HCL style,
// plus the credential and the shared storage.
type Settings struct {
	SubscriptionID   string        `hcl:"subscription_id,attr" doc:"the Azure subscription id of the workspace, a GUID (NNI's subscriptionId)"`
	ResourceGroup    string        `hcl:"resource_group,attr" doc:"the workspace's resource group (NNI's resourceGroup)"`
	WorkspaceName    string        `hcl:"workspace_name,attr" doc:"the Azure Machine Learning workspace (NNI's workspaceName)"`
	ComputeTarget    string        `hcl:"compute_target,attr" doc:"the compute cluster the jobs run on (NNI's computeTarget)"`
	Image            string        `hcl:"image,optional" doc:"the jobs' container image, with python3 and the trial's libraries (NNI's dockerImage; default \"msranni/nni:latest\"); trialform registers it as an environment version named trialform-HASH"`
	Environment      string        `hcl:"environment,optional" doc:"an existing environment's id to run in instead of image (e.g. \"azureml:my-env:3\" or its ARM id)"`
	ExperimentName   string        `hcl:"experiment_name,optional" doc:"the Azure ML experiment the jobs are grouped under (default: the trialform experiment's name)"`
	Datastore        string        `hcl:"datastore,optional" doc:"the workspace datastore holding the shared storage: each job mounts it read-write and links container_storage_mount_point to it (default: none, the compute mounts the storage there itself)"`
	TenantID         string        `hcl:"tenant_id,optional" doc:"the Microsoft Entra tenant of client_id (default: the credential's own, e.g. AZURE_TENANT_ID)"`
	ClientID         string        `hcl:"client_id,optional" doc:"the application (service principal) id that client_secret belongs to"`
	ClientSecret     string        `hcl:"client_secret,optional" sensitive:"true" doc:"the service principal's client secret, from a sensitive variable; without it DefaultAzureCredential is used (AZURE_* environment variables, workload or managed identity, az login)"`
	Endpoint         string        `hcl:"endpoint,optional" doc:"Azure Resource Manager's address (default \"https://management.azure.com\"; another cloud's, or a test fake's)"`
	AuthorityHost    string        `hcl:"authority_host,optional" doc:"Microsoft Entra ID's address (default \"https://login.microsoftonline.com/\"; another cloud's, or a test fake's)"`
	ArtifactEndpoint string        `hcl:"artifact_endpoint,optional" doc:"the workspace's artifact service, where the jobs' logs are read (default \"https://LOCATION.api.azureml.ms\", LOCATION the workspace's)"`
	RequestTimeout   time.Duration `hcl:"request_timeout,optional" doc:"how long one REST call may take before it is retried (default 30s)"`
	cloudjob.MountSettings

	secretAt string // where client_secret is written
}

// Compiled on first use, not at every start of the binary: counted
// repeats ({0,254}) compile to large programs.
var (
	guidRE = lazyRE(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	rgRE   = lazyRE(`^[-\w._()]{1,90}$`)
	wsRE   = lazyRE(`^[A-Za-z0-9][A-Za-z0-9_-]{2,32}$`)
	nameRE = lazyRE(`^[A-Za-z][A-Za-z0-9_-]{0,254}$`)
)

func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// DefaultImage is NNI's aml default image.
const DefaultImage = "msranni/nni:latest"

// Check checks what types do not, with the attributes' source ranges.
func (s *Settings) Check(w *decl.Where) hcl.Diagnostics {
	diags := s.MountSettings.Check(w)
	if !guidRE().MatchString(s.SubscriptionID) {
		diags = append(diags, w.Error("subscription_id", "Invalid value", "subscription_id must be a subscription id, a GUID such as \"00000000-0000-0000-0000-000000000000\" (az account show), got %q.", s.SubscriptionID))
	}
	if !rgRE().MatchString(s.ResourceGroup) || strings.HasSuffix(s.ResourceGroup, ".") {
		diags = append(diags, w.Error("resource_group", "Invalid value", "resource_group must be a resource group name (1 to 90 letters, digits, '-', '_', '.', '(', ')'), got %q.", s.ResourceGroup))
	}
	if !wsRE().MatchString(s.WorkspaceName) {
		diags = append(diags, w.Error("workspace_name", "Invalid value", "workspace_name must be a workspace name (3 to 33 letters, digits, '-', '_', starting with a letter or digit), got %q.", s.WorkspaceName))
	}
	if !nameRE().MatchString(s.ComputeTarget) {
		diags = append(diags, w.Error("compute_target", "Invalid value", "compute_target must name the workspace's compute cluster (letters, digits, '-', '_'), got %q.", s.ComputeTarget))
	}
	if s.Image != "" && s.Environment != "" {
		diags = append(diags, w.Error("environment", "Conflicting attributes", "give image or environment, not both: environment already names the image the jobs run in."))
	}
	if s.Datastore != "" && !nameRE().MatchString(s.Datastore) {
		diags = append(diags, w.Error("datastore", "Invalid value", "datastore must name a datastore of the workspace, got %q.", s.Datastore))
	}
	if s.ClientSecret != "" {
		if s.ClientID == "" {
			diags = append(diags, w.Error("client_secret", "Missing client_id", "client_secret needs client_id, the application (service principal) it belongs to."))
		}
		if s.TenantID == "" {
			diags = append(diags, w.Error("client_secret", "Missing tenant_id", "client_secret needs tenant_id, the Microsoft Entra tenant of client_id."))
		}
	}
	for _, a := range []struct{ name, v string }{{"endpoint", s.Endpoint}, {"authority_host", s.AuthorityHost}, {"artifact_endpoint", s.ArtifactEndpoint}} {
		if a.v == "" {
			continue
		}
		if u, err := url.Parse(a.v); err != nil || u.Scheme != "https" || u.Host == "" {
			diags = append(diags, w.Error(a.name, "Invalid value", "%s must be an https:// URL (tokens are sent only over TLS), got %q.", a.name, a.v))
		}
	}
	if s.RequestTimeout < 0 {
		diags = append(diags, w.Error("request_timeout", "Invalid value", "request_timeout must not be negative."))
	}
	s.secretAt = w.Range("client_secret").String()
	return diags
}

// Registration is the aml kind's entry in the platform registry.
func Registration() registry.Kind {
	return registry.Kind{
		Name:    "aml",
		Summary: "Azure Machine Learning command jobs through the workspace jobs REST API (azidentity credentials, azcore pipeline); code and parameters through a datastore mount, metrics from the run's std_log.txt; contract-tested against a fake of the documented API, never run against the real service",
		Config:  func() any { return &Settings{} },
		New: func(cfg any, env registry.Env) (providers.Provider, error) {
			s, ok := cfg.(*Settings)
			if !ok {
				return nil, fmt.Errorf("aml platform: configuration %T", cfg)
			}
			return New(s, env, nil)
		},
	}
}

// New builds the provider of a decoded block; transport (nil: the default)
// carries every request, Entra ID's included.
func New(s *Settings, env registry.Env, transport *http.Client) (providers.Provider, error) {
	c, err := NewFromSettings(s, env.Name, transport, policy.RetryOptions{})
	if err != nil {
		return nil, err
	}
	return cloudjob.New(c, Options(c, s, env)), nil
}

// NewFromSettings builds the client of a decoded block.
func NewFromSettings(s *Settings, name string, transport *http.Client, retry policy.RetryOptions) (*Client, error) {
	cred, source, err := NewCredential(s, name, transport)
	if err != nil {
		return nil, err
	}
	timeout := s.RequestTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if retry.TryTimeout == 0 {
		retry.TryTimeout = timeout
	}
	if retry.MaxRetries == 0 {
		// The provider retries every call under trialform's one policy
		// (cloudjob.Retry, Retry-After included); azcore's retries under
		// it would multiply its calls (6 × 4).
		retry.MaxRetries = -1
	}
	endpoint := s.Endpoint
	if endpoint == "" {
		endpoint = cloud.AzurePublic.Services[cloud.ResourceManager].Endpoint
	}
	job := JobSettings{Compute: s.ComputeTarget, Image: s.Image, Environment: s.Environment, Experiment: s.ExperimentName, Datastore: s.Datastore, Mount: s.ContainerMount}
	if job.Image == "" && job.Environment == "" {
		job.Image = DefaultImage
	}
	return NewClient(&Client{Endpoint: endpoint, ArtifactEndpoint: s.ArtifactEndpoint, Subscription: s.SubscriptionID, ResourceGroup: s.ResourceGroup,
		Workspace: s.WorkspaceName, Credential: source, Job: job}, cred, transport, retry), nil
}

// NewCredential is the block's credential and a description of its source:
// ClientSecretCredential with client_secret, else DefaultAzureCredential.
func NewCredential(s *Settings, name string, transport *http.Client) (azcore.TokenCredential, cloudjob.Credential, error) {
	opts := azcore.ClientOptions{Cloud: cloud.AzurePublic}
	if s.AuthorityHost != "" {
		opts.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: s.AuthorityHost, Services: cloud.AzurePublic.Services}
	}
	if transport != nil {
		opts.Transport = transport
	}
	custom := s.AuthorityHost != ""
	if s.ClientSecret != "" {
		src := fmt.Sprintf("the client_secret attribute of platform \"aml\" %q", name)
		if s.secretAt != "" {
			src += " (" + s.secretAt + ")"
		}
		src += fmt.Sprintf(", for client_id %s in tenant %s", s.ClientID, s.TenantID)
		cred, err := azidentity.NewClientSecretCredential(s.TenantID, s.ClientID, s.ClientSecret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: custom})
		if err != nil {
			return nil, "", providers.Permanent(fmt.Errorf("platform \"aml\" %q: %s: %w", name, src, err))
		}
		return cred, cloudjob.Credential(src), nil
	}
	src := "DefaultAzureCredential (the AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET environment variables, a workload or managed identity, or `az login`)"
	cred, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: opts, TenantID: s.TenantID, DisableInstanceDiscovery: custom})
	if err != nil {
		return nil, "", providers.Permanent(fmt.Errorf("platform \"aml\" %q: %s: %w", name, src, err))
	}
	return cred, cloudjob.Credential(src), nil
}

// Options are the cloudjob options of the aml platform over c.
func Options(c *Client, s *Settings, env registry.Env) cloudjob.Options {
	var secrets []string
	if s.ClientSecret != "" {
		secrets = append(secrets, s.ClientSecret)
	}
	return cloudjob.Options{
		Kind: "aml", Name: env.Name, NNIPlatform: "aml",
		LocalMount: s.Local(env.Dir), ContainerMount: s.ContainerMount,
		Location: func(h providers.Handle) string {
			if h["name"] == "" {
				return ""
			}
			return "Azure ML job " + h["name"] + " in workspace " + s.WorkspaceName
		},
		Validate: func(ctx context.Context) error { return c.Ping(ctx) },
		Secrets:  secrets,
	}
}
