package cloudjob

import (
	"context"
	"time"

	"github.com/trialform/trialform/providers"
)

// Options configures the provider New builds over one API.
type Options struct {
	// Kind is the platform kind ("openpai"), Name the platform block's name.
	Kind, Name string
	// NNIPlatform is the NNI_PLATFORM trials see (default Kind); anything
	// but "local" makes the NNI library print its metrics on stdout.
	NNIPlatform string
	// LocalMount is the shared storage's path on this machine; ContainerMount
	// the same storage's path in the job's containers. Code and sys dirs go
	// under LocalMount/trialform/ and are seen in the job under
	// ContainerMount/trialform/.
	LocalMount     string
	ContainerMount string
	// LogsOnMount makes the job's command copy its output into the trial's
	// directory on the mount (tee), and metrics and `trialform logs` read it
	// there instead of API.Logs: for services without a log API.
	LogsOnMount bool
	// Extra is passed to the API in every JobSpec.Extra.
	Extra any
	// Retry is the retry policy around every API call (zero: DefaultRetry).
	Retry Retry
	// ReadParallelism bounds refresh's concurrent Reads (0: 8).
	ReadParallelism int
	// Poll is how often Stop and Logs with Follow poll the service (0: 2s;
	// they start at a tenth of it).
	Poll time.Duration
	// StopWait bounds how long Stop waits, past the request's grace, for the
	// service to report the job ended (0: 2m).
	StopWait time.Duration
	// Location renders where a trial runs for a person from its handle
	// (nil: "job ID").
	Location func(h providers.Handle) string
	// Validate, when set, is run by the provider's Validate after the mount
	// checks (a platform asks its service something harmless here).
	Validate func(ctx context.Context) error
	// Secrets are values (tokens, passwords) that must never appear in an
	// error the provider returns or in what it says about a job: they are
	// replaced by "(sensitive value)" in every encoding a request carries
	// them (internal/mask). A platform that sends one in another form (a
	// basic authorization header: mask.BasicAuth) lists that form too.
	Secrets []string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}
