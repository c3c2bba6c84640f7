package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

var _ providers.Importer = (*Remote)(nil)

// seqLine finds the sequence number in a trial's run.sh (runScript writes
// every protocol variable as NAME=VALUE; export NAME, VALUE shell-quoted).
var seqLine = regexp.MustCompile(`(?m)^` + trialproto.EnvTrialSeqID + `='?([0-9]+)'?; export`)

// Import adopts a trial directory on one of the machines into the state of
// req.Lineage: the parameters come from its parameter.cfg, the sequence
// number from its run.sh; spec.json, the ownership marker, is then
// replaced (atomically, by rename) with one that names req.Lineage. The
// running trial is not touched.
func (r *Remote) Import(ctx context.Context, req providers.ImportRequest) (providers.Imported, error) {
	mu := r.uploadLock("trial\x00" + req.Experiment + "/" + req.TrialID)
	mu.Lock()
	defer mu.Unlock()
	tf, err := r.locate(ctx, req.Experiment, req.TrialID, nil)
	if err != nil {
		return providers.Imported{}, err
	}
	if tf == nil || tf.sp == nil {
		return providers.Imported{}, fmt.Errorf("no machine of platform %s holds trial %s of experiment %s: %w", r.cfg.Name, req.TrialID, req.Experiment, providers.ErrNotFound)
	}
	where := tf.m.key + ":" + tf.dir
	b, err := readSmall(tf.s, path.Join(tf.dir, "parameter.cfg"))
	if err != nil {
		return providers.Imported{}, fmt.Errorf("%s: %w", where, tf.m.sftpErr(tf.c, err))
	}
	pid, params, err := trialproto.ParseParameterCfg(b)
	if err != nil {
		return providers.Imported{}, fmt.Errorf("%s: %w", where, err)
	}
	run, err := readSmall(tf.s, path.Join(tf.dir, "run.sh"))
	if err != nil {
		return providers.Imported{}, fmt.Errorf("%s: %w", where, tf.m.sftpErr(tf.c, err))
	}
	m := seqLine.FindSubmatch(run)
	if m == nil {
		return providers.Imported{}, fmt.Errorf("%s: run.sh sets no %s: not a trial trialform started", where, trialproto.EnvTrialSeqID)
	}
	seq, _ := strconv.Atoi(string(m[1]))
	imp := providers.Imported{Seq: seq, ParameterID: pid, Params: params, PreviousLineage: tf.sp.Lineage, Previous: tf.sp.owner()}
	sp := *tf.sp
	if sp.ParamsDigest == "" {
		sp.ParamsDigest = providers.ParamsDigest(params)
	}
	changed := sp.Lineage != req.Lineage || sp.ParamsDigest != tf.sp.ParamsDigest
	sp.Lineage = req.Lineage
	if req.ExperimentID != "" && sp.ExperimentID != req.ExperimentID {
		sp.ExperimentID, changed = req.ExperimentID, true
	}
	if req.Generation > 0 && sp.Generation != req.Generation {
		sp.Generation, changed = req.Generation, true
	}
	if changed {
		spb, _ := json.Marshal(&sp)
		file := path.Join(tf.dir, specFile)
		if _, err := tf.m.sh(ctx, "printf '%s' "+shq(string(spb))+" >"+shq(file+".import")+" && mv -f "+shq(file+".import")+" "+shq(file)); err != nil {
			return providers.Imported{}, fmt.Errorf("%s: re-own it: %w", where, err)
		}
		tf.sp = &sp
	}
	imp.Observation = tf.observe()
	return imp, nil
}
