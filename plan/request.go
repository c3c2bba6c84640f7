package plan

import (
	"fmt"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// StartRequest builds the provider request for trial t of experiment cfg.
func StartRequest(cfg *schema.Experiment, e *state.Experiment, t *state.Trial, resume bool) (providers.StartRequest, error) {
	req := providers.StartRequest{
		Experiment: e.OnPlatform(), ExperimentID: e.ID, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
		Params: t.Params, Generation: t.Generation, Env: cfg.Trial.Env, CodeDir: cfg.Trial.CodeDir, MaxDuration: cfg.Trial.MaxDuration,
		GPUs: cfg.Trial.GPUs, MetricRegex: cfg.Trial.MetricRegex, Resume: resume,
		Handle: providers.Handle(t.Handle),
	}
	if cfg.Trial.Command != nil {
		sh, err := cfg.Trial.Command.Render(t.Params, true)
		if err != nil {
			return req, fmt.Errorf("render command: %w", err)
		}
		req.Shell = sh
	} else {
		for _, a := range cfg.Trial.Args {
			v, err := a.Render(t.Params, false)
			if err != nil {
				return req, fmt.Errorf("render args: %w", err)
			}
			req.Args = append(req.Args, v)
		}
	}
	return req, nil
}
