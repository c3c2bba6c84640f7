package providers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Owner is what a trial's platform object records of the trial it was
// started for: the owning state's lineage, the experiment instance id
// (NNI_EXP_ID: a destroyed and re-created experiment gets a new one), the
// generation and a digest of the parameters. Start compares it with the
// request before adopting what it finds (CheckOwner); Read and List report
// it so that refresh can do the same. Empty fields (objects written before
// a field existed, tests) match anything.
type Owner struct {
	Lineage      string
	ExperimentID string
	Generation   int
	ParamsDigest string
}

// Owner returns the ownership marker Start records for req.
func (req StartRequest) Owner() Owner {
	return Owner{Lineage: req.Lineage, ExperimentID: req.ExperimentID, Generation: req.Generation, ParamsDigest: ParamsDigest(req.Params)}
}

// ParamsDigest is a short, canonical digest of a trial's parameters: the
// SHA-256 of their JSON (keys sorted, numbers as JSON writes them), so
// params that went through a JSON round trip digest the same. nil and
// empty params give "".
func ParamsDigest(params map[string]any) string {
	if len(params) == 0 {
		return ""
	}
	b, err := json.Marshal(params)
	if err != nil {
		return "unencodable"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// Mismatch says how found differs from o ("" when it does not): the
// fields both sides know that differ.
func (o Owner) Mismatch(found Owner) string {
	var diffs []string
	if o.Lineage != "" && found.Lineage != "" && o.Lineage != found.Lineage {
		diffs = append(diffs, fmt.Sprintf("another trialform state (lineage %s)", found.Lineage))
	}
	if o.ExperimentID != "" && found.ExperimentID != "" && o.ExperimentID != found.ExperimentID {
		diffs = append(diffs, fmt.Sprintf("another instance of the experiment (id %s, this one is %s: it was destroyed and created again)", found.ExperimentID, o.ExperimentID))
	}
	if o.Generation > 0 && found.Generation > 0 && o.Generation != found.Generation {
		diffs = append(diffs, fmt.Sprintf("generation %d, not %d", found.Generation, o.Generation))
	}
	if o.ParamsDigest != "" && found.ParamsDigest != "" && o.ParamsDigest != found.ParamsDigest {
		diffs = append(diffs, "other parameters")
	}
	return strings.Join(diffs, ", ")
}

// CheckOwner refuses to adopt a trial object (what describes it, found is
// the marker on it) that was started for another trial under the same id:
// another state, another instance of the experiment, another generation or
// other parameters. Its status and results are not this trial's. The error
// is Permanent and names `trialform import`.
func CheckOwner(what string, req StartRequest, found Owner) error {
	m := req.Owner().Mismatch(found)
	if m == "" {
		return nil
	}
	return Permanent(fmt.Errorf("%s already holds trial %s/%s, started for %s: it will not be taken over with these parameters; adopt it with `trialform import %s %s`, remove it, or use another experiment name",
		what, req.Experiment, req.TrialID, m, req.Experiment, req.TrialID))
}

// CheckLineage refuses to adopt a trial that another trialform state
// started (what is its lineage ownership marker, owner the lineage found
// on it): its parameters and results are that state's. Empty lineages
// (objects from before lineages, tests) match anything. CheckOwner checks
// the whole marker.
func CheckLineage(what string, req StartRequest, owner string) error {
	return CheckOwner(what, StartRequest{Experiment: req.Experiment, TrialID: req.TrialID, Lineage: req.Lineage}, Owner{Lineage: owner})
}
