package cloudjob

import (
	"time"

	"github.com/trialform/trialform/providers"
)

// Options configures the provider New builds over one API.
type Options struct {
	// Kind is the platform kind ("openpai"), Name the platform block's name.
	Kind, Name string
	// LocalMount is the shared storage's path on this machine; ContainerMount
	// the same storage's path in the job's containers. Code and sys dirs go
	// under LocalMount/trialform/ and are seen in the job under
	// ContainerMount/trialform/.
	LocalMount     string
	ContainerMount string
	// Extra is passed to the API in every JobSpec.Extra.
	Extra any
	// Retry is the retry policy around every API call (zero: DefaultRetry).
	Retry Retry
	// ReadParallelism bounds refresh's concurrent Reads (0: 8).
	ReadParallelism int
	// LogPoll is how often Logs with Follow polls the service (0: 2s).
	LogPoll time.Duration
	// Location renders where a trial runs for a person from its handle
	// (nil: the job id and, when known, its URL).
	Location func(h providers.Handle) string
	// Validate, when set, is run by the provider's Validate after the mount
	// checks (a platform pings its service here, if it can without side
	// effects).
	Validate func() error
}
