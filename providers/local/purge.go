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
// process of it that still runs, with its TensorBoard logs; then the
// experiment directory when nothing else is left in it. Trial directories
// of other lineages, and their logs, stay. Then the experiment's
// TensorBoard logs that no trial directory owns any more (left by a
// destroy of a version that did not remove them) go too, and the
// experiment's TensorBoard directory with everything in it once no trial
// directory of the experiment is left.
func (l *Local) PurgeExperiment(ctx context.Context, experiment, lineage string) error {
	if err := checkName("experiment", experiment); err != nil {
		return err
	}
	expDir := filepath.Join(l.cfg.Root, experiment)
	ents, err := os.ReadDir(expDir)
	if errors.Is(err, fs.ErrNotExist) {
		return l.purgeTensorBoard(experiment)
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
			continue
		}
		if err := l.removeTensorBoard(experiment, ent.Name()); err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(expDir) // only when empty
	errs = append(errs, l.purgeTensorBoard(experiment))
	return errors.Join(errs...)
}

// purgeTensorBoard removes the experiment's TensorBoard logs that no trial
// directory owns: the whole experiment directory of them when no trial
// directory of the experiment is left, else each trial's whose trial
// directory is gone.
func (l *Local) purgeTensorBoard(experiment string) error {
	if l.cfg.TensorBoardRoot == "" {
		return nil
	}
	tbExp := filepath.Join(l.cfg.TensorBoardRoot, experiment)
	expDir := filepath.Join(l.cfg.Root, experiment)
	if _, err := os.Lstat(expDir); errors.Is(err, fs.ErrNotExist) {
		if err := os.RemoveAll(tbExp); err != nil {
			return fmt.Errorf("remove the tensorboard logs of %s: %w", experiment, err)
		}
		l.expDirs.Delete(tbExp)
		return nil
	}
	ents, err := os.ReadDir(tbExp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove the tensorboard logs of %s: %w", experiment, err)
	}
	var errs []error
	for _, ent := range ents {
		if !ent.IsDir() || checkName("trial id", ent.Name()) != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(expDir, ent.Name())); !errors.Is(err, fs.ErrNotExist) {
			continue // its trial's (another lineage's) or unknown: kept
		}
		if err := os.RemoveAll(filepath.Join(tbExp, ent.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove the tensorboard logs of trial %s/%s: %w", experiment, ent.Name(), err))
		}
	}
	l.dropTensorBoardExp(tbExp)
	return errors.Join(errs...)
}
