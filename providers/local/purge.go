package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/trialform/trialform/providers"
)

var _ providers.ExperimentPurger = (*Local)(nil)

// PurgeExperiment removes what destroy leaves of an experiment on this
// machine: every trial directory of the experiment whose ownership marker
// names lineage (or none), ended trials included, after stopping any
// process of it that still runs; then the experiment directory when
// nothing else is left in it. Trial directories of other lineages stay.
func (l *Local) PurgeExperiment(ctx context.Context, experiment, lineage string) error {
	if err := checkName("experiment", experiment); err != nil {
		return err
	}
	expDir := filepath.Join(l.cfg.Root, experiment)
	ents, err := os.ReadDir(expDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("purge experiment %s: %w", experiment, err)
	}
	var errs []error
	for _, ent := range ents {
		if !ent.IsDir() || checkName("trial id", ent.Name()) != nil {
			continue
		}
		dir := filepath.Join(expDir, ent.Name())
		sp, err := readSpec(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if sp != nil && sp.Lineage != "" && lineage != "" && sp.Lineage != lineage {
			continue // another state's trial
		}
		if err := l.stop(ctx, dir, l.cfg.StopGrace, "destroy"); err != nil {
			errs = append(errs, fmt.Errorf("purge trial %s/%s: %w", experiment, ent.Name(), err))
			continue
		}
		killStragglers(dir)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("purge trial %s/%s: %w", experiment, ent.Name(), err))
		}
	}
	_ = os.Remove(expDir) // only when empty
	return errors.Join(errs...)
}
