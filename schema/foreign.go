package schema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
)

// Names users bring from NNI: its tuner and assessor names, optimize_mode,
// and the training services trialform declares but does not run yet.

// nniTuners maps NNI's builtin tuner names to trialform's.
var nniTuners = map[string]string{
	"TPE": "tpe", "Random": "random", "Anneal": "anneal", "Evolution": "evolution",
	"GridSearch": "grid", "BatchTuner": "batch", "Hyperband": "hyperband", "BOHB": "bohb", "PBTTuner": "pbt",
	"GP": "gp", "GPTuner": "gp", "SMAC": "smac", "Metis": "metis", "MetisTuner": "metis",
}

// nniMissingTuners are NNI tuners trialform does not have, with the
// nearest one it has.
var nniMissingTuners = map[string]string{"DNGO": "gp", "DNGOTuner": "gp"}

// nniAssessors maps NNI's builtin assessor names to trialform's.
var nniAssessors = map[string]string{"MedianStop": "medianstop", "Curvefitting": "curvefitting"}

// foreignName finds name in m ignoring case.
func foreignName(m map[string]string, name string) (string, string, bool) {
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return k, v, true
		}
	}
	return "", "", false
}

// nniTunerHint explains an NNI tuner name ("" when name is not one).
func nniTunerHint(name string) string {
	if k, v, ok := foreignName(nniTuners, name); ok {
		return fmt.Sprintf(" NNI's %q tuner is trialform's %q: tuner %q { }.", k, v, v)
	}
	if k, v, ok := foreignName(nniMissingTuners, name); ok {
		return fmt.Sprintf(" NNI's %q tuner is not available in trialform; %q (Bayesian optimisation with a Gaussian process) is the nearest it has: tuner %q { }.", k, v, v)
	}
	return ""
}

// nniAssessorHint explains an NNI assessor name ("" when name is not one).
func nniAssessorHint(name string) string {
	if k, v, ok := foreignName(nniAssessors, name); ok {
		return fmt.Sprintf(" NNI's %q assessor is trialform's %q: assessor %q { }.", k, v, v)
	}
	return ""
}

// foreignSettings are the names NNI's classArgs and Katib's
// algorithmSettings give settings trialform's tuners take under another
// name (the converters map them; a hand-written block gets told).
var foreignSettings = map[string]string{
	"cold_start_num":       "startup_trials",
	"min_points_in_model":  "startup_trials",
	"n_startup_trials":     "startup_trials",
	"n_ei_candidates":      "candidates",
	"R":                    "max_budget",
	"r_l":                  "max_budget",
	"all_checkpoint_dir":   "checkpoint_dir",
	"suggestion_trial_dir": "checkpoint_dir",
	"n_population":         "population_size",
	"truncation_threshold": "factor",
	"random_state":         "seed",
	"no_resampling":        "resample",
}

// checkForeignSetting reports a setting under NNI's or Katib's name when
// the block's tuner or assessor (schema s, called what) takes it under
// trialform's; it returns true when a is one.
func (l *loader) checkForeignSetting(a *hcl.Attribute, s *decl.Schema, what string) bool {
	ours, ok := foreignSettings[a.Name]
	if !ok || s == nil || s.AttrNamed(a.Name) != nil || s.AttrNamed(ours) == nil {
		return false
	}
	negated := ""
	if a.Name == "no_resampling" {
		negated = ", negated: resample = false where NNI has no_resampling = true"
	}
	l.errorf(a.NameRange.Ptr(), "Unsupported argument",
		"An argument named %q is not expected in %s: it is NNI's or Katib's name of the setting trialform calls %q%s.", a.Name, what, ours, negated)
	return true
}

// checkOptimizeMode reports NNI's optimize_mode in a tuner or assessor
// block; it returns true when a is one.
func (l *loader) checkOptimizeMode(a *hcl.Attribute) bool {
	if a.Name != "optimize_mode" {
		return false
	}
	goal := "maximize"
	if v, ok := l.value(a.Expr); ok && v.Type().FriendlyName() == "string" && strings.EqualFold(v.AsString(), "minimize") {
		goal = "minimize"
	}
	l.errorf(a.NameRange.Ptr(), "NNI setting", "optimize_mode is NNI's classArgs setting; in trialform the direction belongs to the experiment: objective { goal = %q }. Remove optimize_mode here.", goal)
	return true
}

// warnNotYet warns about a platform block of a kind the registry declares
// but trialform does not run yet: validate warns, plan and apply refuse it.
func (l *loader) warnNotYet(b *hcl.Block) {
	k := l.platforms.Lookup(b.Labels[0])
	if k == nil || k.Implemented() {
		return
	}
	l.diags = append(l.diags, &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  "Platform not supported yet",
		Detail: fmt.Sprintf("trialform does not run %q platforms yet: validate accepts this block, but plan and apply refuse an experiment on it. "+
			"Use platform %s (see the status table in README.md).", k.Name, quotedOr(l.platforms.ImplementedNames())),
		Subject: b.LabelRanges[0].Ptr(),
	})
}

// quotedOr is `"a", "b" or "c"`.
func quotedOr(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
