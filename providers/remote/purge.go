package remote

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/trialform/trialform/providers"
)

var _ providers.ExperimentPurger = (*Remote)(nil)

// PurgeExperiment removes what destroy leaves of an experiment on the
// machines: every trial directory of the experiment whose ownership marker
// names lineage (or none), ended trials included, stopping what still
// runs; then the experiment directory on each machine once it is empty.
// Trials of other lineages stay. An unreachable machine is an error (the
// next destroy retries).
func (r *Remote) PurgeExperiment(ctx context.Context, experiment, lineage string) error {
	obs, unread, err := r.list(ctx, experiment, nil)
	if err != nil {
		return fmt.Errorf("list trials of %s: %w", experiment, err)
	}
	var errs []error
	for _, err := range unread {
		// Its directory stays (the rmdir below fails quietly, as for
		// another lineage's trials): a purge that said nothing left it,
		// and whatever it runs, behind the experiment's last record.
		errs = append(errs, fmt.Errorf("%w: not purged (the next destroy tries again)", err))
	}
	for _, o := range obs {
		if o.Lineage != "" && lineage != "" && o.Lineage != lineage {
			continue
		}
		if err := r.Stop(ctx, providers.StopRequest{Experiment: experiment, TrialID: o.TrialID, Handle: o.Handle, Purge: true, Reason: "destroy"}); err != nil {
			errs = append(errs, err)
		}
	}
	for _, m := range r.machines {
		if _, _, err := m.connected(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		// rmdir fails (harmlessly) while other lineages' trials remain.
		if _, err := m.sh(ctx, "rmdir "+shq(path.Join(m.work, "trials", experiment))+" 2>/dev/null; true"); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.key, err))
		}
	}
	if len(errs) == 0 {
		r.forgetExperiment(experiment)
	}
	return errors.Join(errs...)
}
