// Package cloudjob is the shared base of every cloud job platform (openpai,
// dlts, dlc, aml): a service-neutral API interface that each platform
// implements over its client, and New, which turns such an API plus a
// shared storage mount into a providers.Provider (Lister, Importer,
// LogStreamer, Locator, SpecDiffer, ReadParallelism).
//
// How a trial reaches its code and parameters: every cloud platform mounts
// one shared storage (NFS, NAS, a datastore) both here (Options.LocalMount)
// and in its containers (Options.ContainerMount), as NNI's openpai
// (nniManagerNFSMountPath / containerNFSMountPath) and dlc (NAS) modes do.
// Start copies the code directory there once per content digest, writes the
// trial's sys dir with parameter.cfg atomically, and submits a job whose
// command runs in the container with the NNI protocol env (NNI_PLATFORM is
// not "local", so the NNI library prints `NNISDK_MEb'...'` lines on stdout).
// Metrics come from API.Logs through trialproto.Collector; the byte offsets
// live in Observation.MetricsOffset.
//
// Ownership (lineage, experiment id, generation, params digest) and the
// trial id travel in the job's tags, so Start adopts its own job and refuses
// another owner's, and refresh ignores jobs it does not own.
//
// This package must not know any one service: request shapes, auth and
// endpoints live in the platform packages. It must not import plan or apply.
package cloudjob

import (
	"context"
	"errors"
	"time"

	"github.com/trialform/trialform/providers"
)

// API is one cloud service's job calls, implemented per platform over its
// client. Every method may return an error wrapped by Retryable (or one
// Classify recognises: *HTTPError, net errors, timeouts) to be retried, and
// providers.Permanent errors that retrying cannot fix (401/403, bad
// request).
type API interface {
	// Submit creates the job described by spec and returns its id. It must
	// be idempotent: a second Submit of the same spec.Name (a retry after a
	// timeout or a dropped connection) returns the existing job's id and
	// never creates a second job. Use the service's client token or a
	// deterministic job name, or find the job by tag first.
	Submit(ctx context.Context, spec JobSpec) (id string, err error)
	// Get returns the job with id; an error wrapping providers.ErrNotFound
	// when the service no longer knows it.
	Get(ctx context.Context, id string) (Job, error)
	// List returns the jobs carrying every tag in tags (all values equal).
	List(ctx context.Context, tags map[string]string) ([]Job, error)
	// Stop stops the job; a job that is gone or already ended is nil.
	Stop(ctx context.Context, id string) error
	// Delete purges the job's record from the service; an error wrapping
	// ErrUnsupported when the service cannot, and nil when it is gone.
	Delete(ctx context.Context, id string) error
	// Logs returns the main container's output past byte offset from and
	// the offset to pass next. A job with no log yet returns no data and
	// from; a job the service no longer knows wraps providers.ErrNotFound.
	Logs(ctx context.Context, id string, from int64) (data []byte, next int64, err error)
}

// ErrUnsupported is returned (wrapped) by API methods a service lacks.
var ErrUnsupported = errors.New("not supported by this service")

// JobSpec is what Submit creates: a service-neutral job description that the
// platform package maps onto its own request.
type JobSpec struct {
	// Name is deterministic per trial and attempt (a valid name on every
	// service: lowercase letters, digits and '-', at most 63 characters,
	// starting with a letter), so a retried Submit finds the job it made.
	Name string
	// Tags are the job's labels: trial id, experiment, ownership. Platforms
	// store them where the service keeps labels (tags, description,
	// environment) and return them in Job.Tags.
	Tags map[string]string
	// Command is a /bin/sh command line run in the container.
	Command string
	// Env is the container's environment (the NNI protocol env included).
	Env map[string]string
	// WorkDir is the working directory, a path in the container.
	WorkDir string
	// GPUs the job needs (0 = none).
	GPUs int
	// Extra is the platform's own settings (its decoded configuration, or a
	// part of it) that New passes through from Options.Extra.
	Extra any
}

// Job is what the service says of one job.
type Job struct {
	ID   string
	Name string
	Tags map[string]string
	// Phase maps the service's state; PhaseLost is not used (a job the
	// service forgot is providers.ErrNotFound from Get).
	Phase    providers.Phase
	Reason   string // the service's words on why it ended or waits
	Started  *time.Time
	Ended    *time.Time
	ExitCode *int
	// Spec is the canonical rendering (one setting a line, sorted) of what
	// the service holds of the job, for drift ("" when the service does not
	// return it). RenderSpec of the submitted JobSpec must render the same
	// text for an unchanged job.
	Spec string
	// URL is where a person sees the job (a portal page); "" when unknown.
	URL string
}

// SpecRenderer is implemented by APIs that can render a JobSpec the way Get
// renders Job.Spec, without contacting the service. With it the provider is
// a providers.SpecDiffer.
type SpecRenderer interface {
	RenderSpec(spec JobSpec) (string, error)
}
