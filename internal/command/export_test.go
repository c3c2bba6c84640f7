package command

import (
	"context"
	"fmt"
	"io"

	"github.com/trialform/trialform/state"
)

// UILogs streams one trial's output as the dashboard does (uiLogs), in
// the configuration directory dir with the environment environ.
func UILogs(ctx context.Context, dir string, environ []string, exp, trial string, w io.Writer) error {
	g := &Globals{Chdir: dir, IO: IO{Out: io.Discard, Err: io.Discard, Environ: environ}}
	sd, err := g.stateDir()
	if err != nil {
		return err
	}
	st, err := state.NewManager(sd).Load()
	if err != nil {
		return err
	}
	e := st.Experiment(exp)
	if e == nil || e.Trials[trial] == nil {
		return fmt.Errorf("no trial %s/%s in the state", exp, trial)
	}
	// As ui does: one provider set for the dashboard, closed when it ends.
	g.uiProviders = &sharedProviders{}
	defer g.uiProviders.close()
	return g.uiLogs(ctx, sd, e, e.Trials[trial], false, w)
}
