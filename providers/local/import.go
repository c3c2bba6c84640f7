package local

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

var _ providers.Importer = (*Local)(nil)

// Import adopts the trial directory ROOT/EXPERIMENT/TRIAL into the state
// of req.Lineage: the parameters come from the trial's parameter.cfg (what
// the trial read), the sequence number from spec.json, which is then
// rewritten atomically with the new lineage, the ownership marker. The
// supervisor reads spec.json only when it starts, so a running trial is
// not disturbed.
func (l *Local) Import(ctx context.Context, req providers.ImportRequest) (providers.Imported, error) {
	dir, err := l.trialDir(req.Experiment, req.TrialID)
	if err != nil {
		return providers.Imported{}, err
	}
	notFound := fmt.Errorf("no trial %s of experiment %s in %s: %w", req.TrialID, req.Experiment, filepath.Join(l.cfg.Root, req.Experiment), providers.ErrNotFound)
	sp, st, unlock, err := openTrial(ctx, dir, syscall.LOCK_EX, true)
	if err != nil {
		return providers.Imported{}, err
	}
	if sp == nil {
		return providers.Imported{}, notFound
	}
	defer unlock()
	b, err := fsx.ReadFile(filepath.Join(dir, paramCfgFile))
	if err != nil {
		return providers.Imported{}, fmt.Errorf("trial %s/%s: %w", req.Experiment, req.TrialID, err)
	}
	pid, params, err := trialproto.ParseParameterCfg(b)
	if err != nil {
		return providers.Imported{}, fmt.Errorf("trial %s/%s: %w", req.Experiment, req.TrialID, err)
	}
	imp := providers.Imported{Seq: sp.Seq, ParameterID: pid, Params: params, PreviousLineage: sp.Lineage, Previous: sp.owner()}
	if reown(&sp.Lineage, &sp.ExperimentID, &sp.Generation, req) {
		if err := writeJSON(filepath.Join(dir, specFile), sp); err != nil {
			return providers.Imported{}, fmt.Errorf("trial %s/%s: re-own it: %w", req.Experiment, req.TrialID, err)
		}
	}
	imp.Observation = observe(dir, sp, st)
	return imp, nil
}

// reown sets an ownership marker's fields to those req names (an empty
// experiment id or a zero generation leaves that field) and reports
// whether anything changed.
func reown(lineage, expID *string, gen *int, req providers.ImportRequest) bool {
	changed := *lineage != req.Lineage
	*lineage = req.Lineage
	if req.ExperimentID != "" && *expID != req.ExperimentID {
		*expID, changed = req.ExperimentID, true
	}
	if req.Generation > 0 && *gen != req.Generation {
		*gen, changed = req.Generation, true
	}
	return changed
}
