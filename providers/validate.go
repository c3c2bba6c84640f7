package providers

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
)

// Validate checks what every provider needs of a StartRequest: exactly one
// of Shell and Args, an absolute code dir, no negative GPUs or duration,
// and a metric regex with a value group. Errors are Permanent.
func (req StartRequest) Validate() error {
	switch {
	case req.Shell == "" && len(req.Args) == 0:
		return Permanent(errors.New("trial has neither a command nor args"))
	case req.Shell != "" && len(req.Args) > 0:
		return Permanent(errors.New("trial has both a command and args"))
	case len(req.Args) > 0 && req.Args[0] == "":
		return Permanent(errors.New("trial args start with an empty program name"))
	case req.CodeDir == "" || !filepath.IsAbs(req.CodeDir):
		return Permanent(fmt.Errorf("code dir %q is not an absolute path", req.CodeDir))
	case req.GPUs < 0:
		return Permanent(fmt.Errorf("gpus = %d is negative", req.GPUs))
	case req.MaxDuration < 0:
		return Permanent(fmt.Errorf("max_duration %s is negative", req.MaxDuration))
	}
	if req.MetricRegex != "" {
		re, err := regexp.Compile(req.MetricRegex)
		if err != nil {
			return Permanent(fmt.Errorf("metric regex: %w", err))
		}
		if re.SubexpIndex("value") < 0 {
			return Permanent(fmt.Errorf("metric regex %q has no (?P<value>...) group", req.MetricRegex))
		}
	}
	return nil
}
