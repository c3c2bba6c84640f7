package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/trialform/trialform/internal/duration"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner"
	"github.com/trialform/trialform/tuner/space"
)

// Options change what Compute plans.
type Options struct {
	Destroy bool     // tear everything down and remove the experiments
	Targets []string // "experiment.NAME"; empty = all
	// Replace and Stop hold trial addresses ("experiment.NAME.trial.ID"):
	// trials to tear down and start again with the same parameters (a new
	// attempt), and trials to stop for good (USER_CANCELED, results kept).
	Replace []string
	Stop    []string
}

// ParseTrialAddress splits "experiment.NAME.trial.ID".
func ParseTrialAddress(addr string) (exp, id string, err error) {
	rest, ok := strings.CutPrefix(addr, "experiment.")
	if ok {
		if i := strings.LastIndex(rest, ".trial."); i > 0 && i+len(".trial.") < len(rest) {
			return rest[:i], rest[i+len(".trial."):], nil
		}
	}
	return "", "", fmt.Errorf("%q is not a trial address; write experiment.NAME.trial.ID, e.g. experiment.svm.trial.t0003", addr)
}

// Input is everything Compute reads.
type Input struct {
	Config   *schema.Config
	State    *state.State // refreshed (see Observe)
	Observed []Observed   // what Observe reported, copied into the plan
	Listed   map[string][]providers.Observation
	Warnings []string
	Now      time.Time
	Options  Options
	// Drift holds what DetectDrift found, by experiment.
	Drift map[string][]TrialDrift
	// Moves are the moves already made to State (see Plan.Moves).
	Moves []Move
	// Curves holds, for experiments with an assessor, each trial's
	// intermediate objective values in report order (see CurveOf):
	// experiment -> trial id -> values.
	Curves map[string]map[string][]float64
	// Values holds, for the trials whose recorded Value is not the
	// configuration's objective's (NeedsSeriesValue: an earlier
	// generation's, under another metric or strategy), that objective's
	// value taken from their series (SeriesValue): experiment -> trial
	// id -> value, nil when the series has none. The tuner is told a
	// trial absent here only by what the state holds (its final result
	// without a strategy), else it is left out.
	Values map[string]map[string]*float64
	// Me is the id of the working copy planning ("" = none: every trial
	// is its own). Unfinished trials another working copy owns
	// (state.Trial.Elsewhere) are left to it: never resumed, started or
	// torn down here, counted toward concurrency and max_trials as the
	// state records them (ExperimentPlan.Elsewhere).
	Me string
}

// Compute builds the plan. It is pure: the same input gives the same plan.
func Compute(in Input) (*Plan, error) {
	st := in.State
	p := &Plan{
		FormatVersion: FormatVersion,
		Lineage:       st.Lineage,
		Serial:        st.Serial,
		CreatedAt:     in.Now.UTC(),
		Destroy:       in.Options.Destroy,
		Targets:       in.Options.Targets,
		Observed:      in.Observed,
		Moves:         in.Moves,
		Warnings:      append([]string(nil), in.Warnings...),
	}
	requests, err := trialRequests(in)
	if err != nil {
		return nil, err
	}
	targeted := func(name string) bool {
		if len(in.Options.Targets) == 0 {
			return true
		}
		for _, t := range in.Options.Targets {
			if t == "experiment."+name || t == name {
				return true
			}
		}
		return false
	}
	for _, t := range in.Options.Targets {
		name := strings.TrimPrefix(t, "experiment.")
		if in.Config.Experiments[name] == nil && st.Experiments[name] == nil {
			return nil, fmt.Errorf("-target=%s: no experiment %q in the configuration or the state (experiments: %s)", t, name, experimentNames(in.Config, st))
		}
	}

	names := map[string]bool{}
	for n := range in.Config.Experiments {
		names[n] = true
	}
	for n := range st.Experiments {
		names[n] = true
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)

	for _, name := range sorted {
		if !targeted(name) {
			continue
		}
		cfg := in.Config.Experiments[name]
		cur := st.Experiments[name]
		var ep *ExperimentPlan
		var err error
		switch {
		case in.Options.Destroy || cfg == nil:
			if cur == nil {
				continue
			}
			ep, err = planDelete(cur, in.Options.Destroy, in.Me)
			if err != nil {
				return nil, err
			}
		default:
			if cur == nil {
				if err := state.NameFree(st, name, ""); err != nil {
					return nil, fmt.Errorf("experiment %q (%s): %w", name, posOf(cfg), nameTakenAdvice(st, name, err))
				}
			}
			ep, err = planExperiment(cfg, cur, st, in.Now, series{in.Curves[name], in.Values[name]}, requests[name], in.Me, unknownTrials(cur, in.Listed[name], false), unknownTrials(cur, in.Listed[name], true))
			if err != nil {
				return nil, fmt.Errorf("experiment %q: %w", name, err)
			}
			for _, d := range in.Drift[name] {
				if !tornDown(ep, d.TrialID) {
					ep.Drift = append(ep.Drift, d)
				}
			}
		}
		if cur != nil {
			addOrphans(ep, cur, in.Listed[name], st.Lineage, p)
		} else {
			warnUnknown(ep, name, in.Listed[name], st.Lineage, p)
		}
		p.Experiments = append(p.Experiments, ep)
	}
	if !in.Options.Destroy {
		noteRenames(p)
	}
	for _, ep := range p.Experiments {
		if ep.Action != NoOp {
			p.Summary.Update++
		}
		for _, t := range ep.Trials {
			switch t.Action {
			case Create:
				p.Summary.Create++
			case Resume:
				p.Summary.Resume++
			case Teardown:
				p.Summary.Teardown++
			}
		}
	}
	return p, nil
}

// nameTakenAdvice says, for a block whose name an experiment renamed from
// it still carries on its platform, both ways out: the block may be that
// experiment (the block was not renamed with state mv), or a new one.
func nameTakenAdvice(st *state.State, name string, err error) error {
	for n, e := range st.Experiments {
		if n != name && e.OnPlatform() == name {
			return fmt.Errorf("experiment %q was renamed to %q and its trials still carry the name %q on platform %s: if this block is that experiment, rename it to experiment %q (or undo the rename: trialform state mv experiment.%s experiment.%s); else give this one another name",
				name, n, name, e.Platform, n, n, name)
		}
	}
	return err
}

// noteRenames adds to each experiment the plan removes because its block
// is gone, while it creates another, how to keep it if the block was only
// renamed: a moved block. Without one, a renamed block loses the
// experiment's history and tears its running trials down.
func noteRenames(p *Plan) {
	var created []string
	for _, ep := range p.Experiments {
		if ep.Action == Create {
			created = append(created, "experiment."+ep.Name)
		}
	}
	if len(created) == 0 {
		return
	}
	to, renamed := "experiment.NEW", "to one of "+strings.Join(created, ", ")
	if len(created) == 1 {
		to, renamed = created[0], "to "+created[0]
	}
	for _, ep := range p.Experiments {
		if ep.Action != Delete {
			continue
		}
		// The block is described, not quoted: HCL has no one-line form of
		// a block with two attributes, so a one-line snippet would not parse.
		ep.Notes = append(ep.Notes, fmt.Sprintf("experiment.%s is not in the configuration any more: apply removes it from the state with its history. If it was renamed %s, add a moved block instead, which keeps them: a block moved with from = experiment.%s and to = %s, one attribute a line (docs/language.md, \"Renaming an experiment\")",
			ep.Name, renamed, ep.Name, to))
	}
}

// idRange names sorted sequence numbers briefly: "t0003" or "t0000..t0009".
func idRange(seqs []int) string {
	if len(seqs) == 1 {
		return TrialID(seqs[0])
	}
	return TrialID(seqs[0]) + ".." + TrialID(seqs[len(seqs)-1])
}

// addOrphans plans the teardown of running trials the platform holds for
// this experiment that the state does not know. Objects with another
// lineage belong to another state and are left alone, with a warning.
func addOrphans(ep *ExperimentPlan, cur *state.Experiment, listed []providers.Observation, lineage string, p *Plan) {
	for _, o := range listed {
		if _, known := cur.Trials[o.TrialID]; known {
			continue
		}
		if o.Phase.Ended() || !o.Exists || o.Phase == providers.PhaseLost {
			continue
		}
		if o.Lineage != "" && o.Lineage != lineage {
			p.Warnings = append(p.Warnings, fmt.Sprintf("experiment %s: trial %s runs on %s but belongs to another state (lineage %s); left alone (adopt it into this state with `trialform import %s %s`)", cur.Name, o.TrialID, cur.Platform, o.Lineage, cur.Name, o.TrialID))
			continue
		}
		ep.Trials = append(ep.Trials, &TrialAction{
			Action: Teardown, Experiment: cur.Name, TrialID: o.TrialID, Status: string(o.Phase),
			Reason: "orphan: running on " + cur.Platform + " but not in the state", Cause: CauseOrphan,
		})
		ep.Notes = append(ep.Notes, fmt.Sprintf("trial %s is an orphan: apply tears it down; to keep it, adopt it with `trialform import %s %s`", o.TrialID, cur.Name, o.TrialID))
		if ep.Action == NoOp {
			ep.Action = Update
		}
	}
}

// warnUnknown handles the unfinished trials the platform holds of an
// experiment the state does not have. Those this state started (its
// lineage: the experiment was removed with `state rm`) are orphans, torn
// down as addOrphans tears down a known experiment's (they ran beside the
// new trials, past concurrency and the budget). Of the others (another
// state's, or a lost state's) it warns: the plan's new trials are numbered
// past them (unknownTrials) and run beside them, and their results reach
// no tuner, until adopted.
func warnUnknown(ep *ExperimentPlan, name string, listed []providers.Observation, lineage string, p *Plan) {
	var ids []string
	for _, o := range listed {
		if !o.Exists || o.Phase.Ended() {
			continue
		}
		if o.Lineage != "" && o.Lineage == lineage && o.Phase != providers.PhaseLost {
			ep.Trials = append(ep.Trials, &TrialAction{
				Action: Teardown, Experiment: name, TrialID: o.TrialID, Status: string(o.Phase),
				Reason: "orphan: running on " + ep.Platform + " but not in the state", Cause: CauseOrphan,
			})
			ep.Notes = append(ep.Notes, fmt.Sprintf("trial %s is an orphan of this state (its experiment was removed from the state): apply tears it down; to keep it, adopt it with `trialform import %s %s`", o.TrialID, name, o.TrialID))
			continue
		}
		ids = append(ids, o.TrialID)
	}
	if len(ids) == 0 {
		return
	}
	p.Warnings = append(p.Warnings, fmt.Sprintf("experiment %s is not in the state but %s holds %d unfinished trial(s) of it (%s): another state started them, or this one lost them (a state lost, a backend changed); new trials are numbered past them and run beside them. If they are this experiment's, adopt them first with `trialform import -all %s`; else remove them on the platform or rename the experiment",
		name, ep.Platform, len(ids), strings.Join(ids, ", "), name))
}

func planDelete(cur *state.Experiment, destroy bool, me string) (*ExperimentPlan, error) {
	ep := &ExperimentPlan{
		Name: cur.Name, ID: cur.ID, Platform: cur.Platform, Action: Delete,
		Generation: cur.Generation, SpecHash: cur.SpecHash,
		Settings: settingsOfState(cur), Progress: progress(cur, cur.Generation),
	}
	reason, cause := "experiment removed from the configuration", CauseRemoved
	if destroy {
		reason, cause = "destroy", CauseDestroy
	}
	for _, t := range cur.SortedTrials() {
		if t.Elsewhere(me) {
			ep.Elsewhere = append(ep.Elsewhere, elsewhereOf(t))
		}
	}
	if len(ep.Elsewhere) > 0 {
		if destroy {
			return nil, fmt.Errorf("experiment %s cannot be destroyed from this working copy: %s; only that working copy can stop them. Run `trialform destroy` there, or wait until they end and it records that; if that working copy is gone for good, take its trials over first with `trialform apply -take-over`",
				cur.Name, DescribeElsewhere(ep.Elsewhere))
		}
		ep.Notes = append(ep.Notes, fmt.Sprintf("%s: left to that working copy, which tears them down; the experiment leaves the state once they have ended", DescribeElsewhere(ep.Elsewhere)))
	}
	for _, t := range cur.SortedTrials() {
		if state.Terminal(t.Status) || t.Elsewhere(me) {
			continue
		}
		ep.Trials = append(ep.Trials, &TrialAction{
			Action: Teardown, Experiment: cur.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
			Generation: t.Generation, Params: t.Params, Status: t.Status, Reason: reason, Cause: cause, Purge: destroy,
		})
	}
	if len(ep.Elsewhere) > 0 && len(ep.Trials) == 0 {
		// Nothing to do here until its owner has torn them down: the
		// record stays (apply deletes no experiment with unfinished
		// trials), and a plan without changes says so.
		ep.Action = NoOp
	}
	return ep, nil
}

func elsewhereOf(t *state.Trial) ElsewhereTrial {
	return ElsewhereTrial{TrialID: t.ID, Status: t.Status, Generation: t.Generation, Where: t.Owner.Where}
}

// DescribeElsewhere says, for people, which trials run where:
// "trials t0000, t0001 run in alice@lab:/home/alice/exp/.trialform".
func DescribeElsewhere(ts []ElsewhereTrial) string {
	var places []string
	ids := map[string][]string{}
	for _, t := range ts {
		if ids[t.Where] == nil {
			places = append(places, t.Where)
		}
		ids[t.Where] = append(ids[t.Where], t.TrialID)
	}
	var parts []string
	for _, w := range places {
		if len(ids[w]) == 1 {
			parts = append(parts, fmt.Sprintf("trial %s runs in %s", ids[w][0], w))
		} else {
			parts = append(parts, fmt.Sprintf("trials %s run in %s", strings.Join(ids[w], ", "), w))
		}
	}
	return strings.Join(parts, "; ")
}

// SpecHash hashes what defines a generation of trials: the search space,
// the tuner, the objective, the trial spec and the platform.
func SpecHash(e *schema.Experiment) string {
	return hashParts(specParts(e, false))
}

// legacySpecHash is SpecHash as states written before the code directory
// was hashed relative to the configuration directory recorded it (the
// absolute path): a state that recorded it is not at a new generation.
func legacySpecHash(e *schema.Experiment) string {
	return hashParts(specParts(e, true))
}

// sameSpec reports whether cur's recorded spec is cfg's.
func sameSpec(cur *state.Experiment, cfg *schema.Experiment) bool {
	return cur.SpecHash == SpecHash(cfg) || cur.SpecHash == legacySpecHash(cfg)
}

func hashParts(parts map[string][]byte) string {
	h := sha256.New()
	for _, k := range partNames {
		h.Write([]byte(k))
		h.Write(parts[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// partNames are the parts of an experiment whose change starts a new
// generation of trials, as the plan names them.
var partNames = []string{"search_space", "tuner", "objective", "trial", "platform"}

func specParts(e *schema.Experiment, legacy bool) map[string][]byte {
	type trialSpec struct {
		CodeDir     string            `json:"code_dir"`
		Command     string            `json:"command,omitempty"`
		Args        []string          `json:"args,omitempty"`
		Env         map[string]string `json:"env,omitempty"`
		GPUs        int               `json:"gpus"`
		MetricRegex string            `json:"metric_regex,omitempty"`
	}
	// A sensitive env value is not hashed: the hash is saved in the
	// state, and a rotated secret is not a new trial spec.
	env := e.Trial.Env
	if len(e.Trial.SensitiveEnv) > 0 {
		env = map[string]string{}
		for k, v := range e.Trial.Env {
			if e.Trial.SensitiveEnv[k] {
				v = schema.SensitiveText
			}
			env[k] = v
		}
	}
	codeDir := e.Trial.CodeDir
	if !legacy && e.Trial.CodeDirInConfig != "" {
		// Relative, so working copies at other paths agree; "./" marks
		// it apart from an absolute path.
		codeDir = "./" + e.Trial.CodeDirInConfig
	}
	ts := trialSpec{CodeDir: codeDir, Env: env, GPUs: e.Trial.GPUs, MetricRegex: e.Trial.MetricRegex}
	if e.Trial.Command != nil {
		ts.Command = e.Trial.Command.String()
	}
	for _, a := range e.Trial.Args {
		ts.Args = append(ts.Args, a.String())
	}
	m := func(v any) []byte { b, _ := json.Marshal(v); return b }
	return map[string][]byte{
		"search_space": m(e.SearchSpace.Space),
		"tuner":        m(map[string]any{"name": e.Tuner.Name, "settings": e.Tuner.Settings}),
		"objective":    objectivePart(e, m),
		"trial":        m(ts),
		"platform":     m(e.Platform.Key()),
	}
}

// objectivePart is what the objective part of the spec hash holds: the
// one objective as before several were possible (so one objective block
// keeps its hash), or the list of them.
func objectivePart(e *schema.Experiment, m func(any) []byte) []byte {
	if e.MultiObjective() {
		return m(e.Objectives)
	}
	return m(e.Objective)
}

// PartHashes returns one short hash per spec part; apply records them with
// the experiment so a later plan can say which part changed.
func PartHashes(e *schema.Experiment) map[string]string {
	return partHashes(e, false)
}

func partHashes(e *schema.Experiment, legacy bool) map[string]string {
	out := map[string]string{}
	for k, v := range specParts(e, legacy) {
		s := sha256.Sum256(v)
		out[k] = hex.EncodeToString(s[:])[:8]
	}
	return out
}

// durString renders a duration the way users write it: "10m", "2h30m",
// "1h0m5s" stays as is.
func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return duration.Format(d)
}

// SettingsOf returns the settings an experiment block asks for.
func SettingsOf(e *schema.Experiment) Settings { return settingsOf(e) }

func settingsOf(e *schema.Experiment) Settings {
	return Settings{
		Tuner: e.Tuner.Name, Metric: e.Objective.Metric, Goal: e.Objective.Goal, Strategy: e.Objective.Strategy,
		MaxTrials: e.MaxTrials, Concurrency: e.Concurrency, MaxFailedTrials: e.MaxFailedTrials,
		MaxDuration: durString(e.MaxDuration), TrialMaxDuration: durString(e.Trial.MaxDuration),
		OnMaxDuration: onMaxDuration(e), Paused: e.Paused, Objectives: objectivesOf(e),
	}
}

// objectivesOf is the state's list of objectives: nil for one.
func objectivesOf(e *schema.Experiment) []Objective {
	if !e.MultiObjective() {
		return nil
	}
	out := make([]Objective, len(e.Objectives))
	for i, o := range e.Objectives {
		out[i] = Objective{Metric: o.Metric, Goal: o.Goal}
	}
	return out
}

// onMaxDuration is what happens at the experiment's max_duration ("stop"
// or "finish"); "" without one.
func onMaxDuration(e *schema.Experiment) string {
	if e.MaxDuration == 0 {
		return ""
	}
	return nonEmpty(e.OnMaxDuration, schema.OnMaxDurationStop)
}

func settingsOfState(e *state.Experiment) Settings {
	return Settings{
		Metric: e.Metric, Goal: e.Goal, Strategy: e.Strategy, MaxTrials: e.MaxTrials, Concurrency: e.Concurrency,
		MaxFailedTrials: e.MaxFailedTrials, MaxDuration: e.MaxDuration, TrialMaxDuration: e.TrialMaxDuration,
		OnMaxDuration: e.OnMaxDuration, Paused: e.Paused, Objectives: objectivesOfState(e),
	}
}

// Equal reports whether two experiments' settings are the same.
func (s Settings) Equal(o Settings) bool {
	return reflect.DeepEqual(s, o)
}

// Diff names each setting that differs between s and o, as
// "name: S -> O" (by the settings' JSON names).
func (s Settings) Diff(o Settings) []string {
	var out []string
	a, b := reflect.ValueOf(s), reflect.ValueOf(o)
	for i := range a.NumField() {
		if reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			continue
		}
		name, _, _ := strings.Cut(a.Type().Field(i).Tag.Get("json"), ",")
		out = append(out, fmt.Sprintf("%s: %v -> %v", name, a.Field(i).Interface(), b.Field(i).Interface()))
	}
	return out
}

func objectivesOfState(e *state.Experiment) []Objective {
	var out []Objective
	for _, o := range e.Objectives {
		out = append(out, Objective{Metric: o.Metric, Goal: o.Goal})
	}
	return out
}

// ExperimentID derives a new experiment instance id from the state's
// lineage, the experiment name and the state serial, so the same inputs
// give the same plan and a re-created experiment gets a new id.
func ExperimentID(lineage, name string, serial uint64) string {
	s := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", lineage, name, serial)))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, 8)
	for i := range out {
		out[i] = alphabet[int(s[i])%len(alphabet)]
	}
	return string(out)
}

// TrialID is the deterministic id of the trial with sequence number seq.
func TrialID(seq int) string { return fmt.Sprintf("t%04d", seq) }

func progress(e *state.Experiment, gen int) Progress {
	b := e.BudgetOf(gen)
	pr := Progress{ByStatus: map[string]int{}, Generation: gen, GenerationTotal: b.Trials,
		GenerationByStatus: b.ByStatus, GenerationEnded: b.Ended, BudgetUsed: b.Used}
	for _, t := range e.SortedTrials() {
		pr.Total++
		pr.ByStatus[t.Status]++
	}
	if e.MultiObjective() {
		// No one best trial: the front of the generation.
		for _, r := range e.ParetoRanks(gen) {
			if r == 1 {
				pr.ParetoFront++
			}
		}
		return pr
	}
	if b := e.BestOf(gen); b != nil {
		v := *b.Value
		pr.Best, pr.BestTrial = &v, b.ID
	}
	return pr
}

// unknownTrials returns the sequence numbers of the trials the platform
// holds of an experiment (listed) that the state does not record (cur
// may be nil), sorted: a trial removed with state rm, or one a lost
// journal forgot.
func unknownTrials(cur *state.Experiment, listed []providers.Observation, endedOnly bool) []int {
	var out []int
	for _, o := range listed {
		if cur != nil && cur.Trials[o.TrialID] != nil {
			continue
		}
		if endedOnly && o.Exists && !o.Phase.Ended() {
			continue // running: an orphan the plan tears down, and says so
		}
		var seq int
		if _, err := fmt.Sscanf(o.TrialID, "t%d", &seq); err == nil && seq >= 0 && TrialID(seq) == o.TrialID {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	return out
}

// planExperiment plans one experiment of the configuration. unknown are
// the sequence numbers of trials the platform holds that the state does
// not record: new trials are numbered past them, as a trial cannot start
// where another of its id is.
func planExperiment(cfg *schema.Experiment, cur *state.Experiment, st *state.State, now time.Time, sr series, requests map[string]string, me string, unknown, unknownEnded []int) (*ExperimentPlan, error) {
	hash := SpecHash(cfg)
	ep := &ExperimentPlan{
		Name: cfg.Name, Platform: cfg.Platform.Key(), Action: NoOp,
		SpecHash: hash, Settings: settingsOf(cfg), Generation: 1,
	}
	var created time.Time
	if cur == nil {
		ep.Action = Create
		ep.ID = ExperimentID(st.Lineage, cfg.Name, st.Serial)
		cur = &state.Experiment{Name: cfg.Name, ID: ep.ID, Trials: map[string]*state.Trial{}}
		created = now
	} else {
		ep.ID = cur.ID
		ep.Generation = cur.Generation
		created = cur.CreatedAt
		ep.Changes = settingChanges(cur, cfg)
		if !sameSpec(cur, cfg) {
			ep.NewGeneration = true
			ep.Generation = cur.Generation + 1
			ep.GenerationReason = generationReasons(cur, cfg)
			for _, r := range ep.GenerationReason {
				ep.Changes = append(ep.Changes, Change{Path: r, Before: "", After: "changed", InPlace: false})
			}
		}
		if len(ep.Changes) > 0 || ep.NewGeneration {
			ep.Action = Update
		}
	}
	ep.Progress = progress(cur, ep.Generation)

	// Trials of the current generation drive the budget.
	var active, lost, waiting []*state.Trial
	counted, failed, succeeded := 0, 0, 0
	var oldRunning []*state.Trial
	busyElsewhere := 0 // current-generation trials another working copy runs
	for _, t := range cur.SortedTrials() {
		if t.Elsewhere(me) {
			// Left to its owner, counted as the state records it.
			if req := requests[t.ID]; req != "" {
				return nil, fmt.Errorf("-%s=experiment.%s.trial.%s: the trial runs in %s, where only that working copy can stop or start it: run the command there", req, cfg.Name, t.ID, t.Owner.Where)
			}
			ep.Elsewhere = append(ep.Elsewhere, elsewhereOf(t))
			if t.Generation == ep.Generation {
				if t.Status != state.Canceled {
					counted++
				}
				busyElsewhere++
			} else if t.Status == state.Running || t.Status == state.Waiting {
				// An older generation's trial this working copy cannot
				// tear down still runs: it holds a concurrency slot until
				// its owner stops it (not a budget one).
				busyElsewhere++
			}
			continue
		}
		if req := requests[t.ID]; req != "" {
			// -stop and -replace: the trial keeps its budget slot.
			if err := userRequest(ep, cfg, t, req); err != nil {
				return nil, err
			}
			if t.Generation == ep.Generation {
				counted++
			}
			continue
		}
		if t.Generation != ep.Generation {
			if !state.Terminal(t.Status) {
				oldRunning = append(oldRunning, t)
			}
			continue
		}
		if t.Status != state.Canceled {
			counted++
		}
		switch t.Status {
		case state.Failed:
			failed++
		case state.Succeeded:
			succeeded++
		}
		switch t.Status {
		case state.Running:
			active = append(active, t)
		case state.Lost, state.Paused:
			lost = append(lost, t)
		case state.Waiting:
			waiting = append(waiting, t)
		}
	}

	if len(ep.Elsewhere) > 0 {
		ep.Notes = append(ep.Notes, fmt.Sprintf("%s: left to that working copy, which reads, resumes and tears them down; here they count toward concurrency (and, of this generation, max_trials) as the state records them", DescribeElsewhere(ep.Elsewhere)))
	}

	// Older generations' unfinished trials are torn down.
	ep.GenerationTeardowns = len(oldRunning)
	for _, t := range oldRunning {
		ep.Trials = append(ep.Trials, &TrialAction{
			Action: Teardown, Experiment: cfg.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
			Generation: t.Generation, Params: t.Params, Status: t.Status,
			Reason: fmt.Sprintf("generation %d replaces generation %d (%s changed)", ep.Generation, t.Generation, strings.Join(ep.GenerationReason, ", ")),
			Cause:  CauseGeneration,
		})
	}

	// max_duration keeps counting while paused: past it the experiment is
	// done, paused or not, and its PAUSED trials never resume.
	deadline := cfg.MaxDuration > 0 && !created.IsZero() && now.Sub(created) >= cfg.MaxDuration
	if cfg.Paused && !deadline {
		ep.Paused = true
		for _, t := range active {
			ep.Trials = append(ep.Trials, &TrialAction{
				Action: Teardown, Experiment: cfg.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
				Generation: t.Generation, Params: t.Params, Status: t.Status,
				Reason: "paused: the experiment has paused = true; it resumes when paused is removed",
				Cause:  CausePaused,
			})
		}
		n := len(active) + len(lost)
		note := "paused: no new trials are proposed"
		if n > 0 {
			note += fmt.Sprintf("; %d trial(s) stay PAUSED (results and history kept) and resume with the same id and parameters when paused is removed", n)
		}
		ep.Notes = append(ep.Notes, note)
		finish(ep)
		return ep, nil
	}

	// Done?
	switch {
	case deadline:
		ep.Done, ep.DoneReason = true, fmt.Sprintf("max_duration (%s) reached", durString(cfg.MaxDuration))
		// Trials not running (lost, paused, never started) do not start
		// again after the deadline, whatever on_max_duration says: they
		// end CANCELED, so the experiment can end.
		for _, t := range append(append([]*state.Trial{}, lost...), waiting...) {
			ep.Trials = append(ep.Trials, &TrialAction{
				Action: Teardown, Experiment: cfg.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
				Generation: t.Generation, Params: t.Params, Status: t.Status,
				Reason: fmt.Sprintf("experiment %s while the trial was %s: it does not start again", ep.DoneReason, strings.ToLower(t.Status)),
				Cause:  CauseMaxDuration,
			})
		}
		if cfg.OnMaxDuration == schema.OnMaxDurationFinish && !cfg.Paused {
			// NNI's meaning: no new trials, the running ones finish (and
			// may still succeed: the experiment fails only once none did).
			if len(active) == 0 {
				failIfNone(ep, succeeded)
			}
			note := "max_duration reached: no new trials are proposed (on_max_duration = \"finish\")"
			if len(active) > 0 {
				note += fmt.Sprintf("; %d running trial(s) are left to finish", len(active))
			}
			ep.Notes = append(ep.Notes, note)
			finish(ep)
			return ep, nil
		}
		reached := ep.DoneReason
		failIfNone(ep, succeeded)
		for _, t := range active {
			ep.Trials = append(ep.Trials, &TrialAction{
				Action: Teardown, Experiment: cfg.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
				Generation: t.Generation, Params: t.Params, Status: t.Status,
				Reason: "experiment " + reached + stopWhy(cfg),
				Cause:  CauseMaxDuration,
			})
		}
		if len(active) > 0 {
			ep.Notes = append(ep.Notes, "max_duration reached: running trials are torn down (on_max_duration = \"stop\"; \"finish\" would let them finish)")
		}
		finish(ep)
		return ep, nil
	case cfg.MaxFailedTrials > 0 && failed >= cfg.MaxFailedTrials:
		ep.Done, ep.DoneReason = true, fmt.Sprintf("max_failed_trials (%d) reached", cfg.MaxFailedTrials)
		ep.Failed = true
		if len(active) > 0 {
			ep.Notes = append(ep.Notes, fmt.Sprintf("%d running trial(s) are left to finish", len(active)))
		}
		finish(ep)
		return ep, nil
	}

	// Trials past their own max_duration are torn down.
	running := busyElsewhere
	for _, t := range active {
		if cfg.Trial.MaxDuration > 0 && t.StartedAt != nil && now.Sub(*t.StartedAt) > cfg.Trial.MaxDuration+30*time.Second {
			ep.Trials = append(ep.Trials, &TrialAction{
				Action: Teardown, Experiment: cfg.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
				Generation: t.Generation, Params: t.Params, Status: t.Status,
				Reason: fmt.Sprintf("trial max_duration (%s) exceeded", cfg.Trial.MaxDuration),
				Cause:  CauseTrialMaxDuration,
			})
			continue
		}
		running++
	}
	// The assessor stops running trials whose intermediate results say
	// they will not be good. Their slots free up on the next pass.
	if cfg.Assessor != nil {
		stops, err := assess(cfg, cur, ep.Generation, sr.curves)
		if err != nil {
			return nil, err
		}
		for _, t := range active {
			why, ok := stops[t.ID]
			if !ok || tornDown(ep, t.ID) {
				continue
			}
			ep.Trials = append(ep.Trials, &TrialAction{
				Action: Teardown, Experiment: cfg.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
				Generation: t.Generation, Params: t.Params, Status: t.Status,
				Reason: "early stop: " + why, Cause: CauseEarlyStop,
			})
		}
	}
	slots := cfg.Concurrency - running
	if slots < 0 {
		ep.Notes = append(ep.Notes, fmt.Sprintf("concurrency lowered to %d: %d running trials drain as they finish", cfg.Concurrency, running))
		slots = 0
	}

	// Lost trials resume first (same id, parameters and output dir), then
	// recorded-but-unstarted trials start, then new trials.
	for _, t := range lost {
		if slots == 0 {
			ep.Notes = append(ep.Notes, fmt.Sprintf("trial %s waits for a free slot to resume", t.ID))
			continue
		}
		slots--
		ep.Trials = append(ep.Trials, &TrialAction{
			Action: Resume, Experiment: cfg.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
			Generation: t.Generation, Params: t.Params, Status: t.Status,
			Command: renderCommand(cfg, t.Params), Reason: nonEmpty(t.Reason, "lost while unfinished"),
		})
	}
	for _, t := range waiting {
		if slots == 0 {
			continue
		}
		slots--
		ep.Trials = append(ep.Trials, &TrialAction{
			Action: Create, Experiment: cfg.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
			Generation: t.Generation, Params: t.Params, Status: t.Status, Recorded: true,
			Command: renderCommand(cfg, t.Params), Reason: nonEmpty(t.Reason, "recorded but not started"),
		})
	}
	remaining := cfg.MaxTrials - counted
	if remaining < 0 && len(active) > 0 && len(lost)+len(waiting) == 0 {
		// max_trials lowered below what already ran: as concurrency
		// lowered, the running trials drain.
		ep.Notes = append(ep.Notes, fmt.Sprintf("max_trials is %d, below the %d trials of this generation so far: the %d running finish and count toward it (nothing is torn down); no new trial starts",
			cfg.MaxTrials, counted, len(active)))
	}
	if remaining <= 0 && len(active)+len(lost)+len(waiting)+len(ep.Elsewhere) == 0 {
		ep.Done, ep.DoneReason = true, fmt.Sprintf("budget used (%d trials)", cfg.MaxTrials)
		failIfNone(ep, succeeded)
		finish(ep)
		return ep, nil
	}
	n := slots
	if remaining < n {
		n = remaining
	}
	if n > 0 {
		next := cur.NextSeq
		if len(unknown) > 0 && unknown[len(unknown)-1] >= next {
			next = unknown[len(unknown)-1] + 1
			ep.Notes = append(ep.Notes, fmt.Sprintf("new trials are numbered from %s, past %d trial(s) %s holds that the state does not record (%s): `trialform import -all %s` adds them to the state, their results to the tuner's history",
				TrialID(next), len(unknown), ep.Platform, idRange(unknown), cfg.Name))
		} else if len(unknownEnded) > 0 {
			// Removed with state rm (or a record lost): their budget slots
			// are free again, which these new trials take.
			ep.Notes = append(ep.Notes, fmt.Sprintf("%s holds %d ended trial(s) that the state does not record (%s), so their part of the budget goes to new trials: `trialform import -all %s` adds them back to the state, their results to the tuner's history",
				ep.Platform, len(unknownEnded), idRange(unknownEnded), cfg.Name))
		}
		seqs := make([]int, n)
		for i := range seqs {
			seqs[i] = next + i
		}
		params, notes, err := suggest(cfg, cur, ep.Generation, seqs, sr)
		var wait *tuner.WaitError
		if errors.As(err, &wait) {
			// The tuner can only propose the first wait.Ready now.
			ep.Notes = append(ep.Notes, fmt.Sprintf("%d trial slot(s) wait: %s", len(seqs)-wait.Ready, wait.Why))
			seqs, err = seqs[:wait.Ready], nil
		}
		var ex *tuner.ExhaustedError
		if errors.As(err, &ex) {
			err = exhaustedAdvice(ex, cfg, cur, ep.Generation, sr)
		}
		if err != nil {
			return nil, err
		}
		for i, seq := range seqs {
			ta := &TrialAction{
				Action: Create, Experiment: cfg.Name, TrialID: TrialID(seq), Seq: seq, ParameterID: seq,
				Generation: ep.Generation, Params: params[i], Command: renderCommand(cfg, params[i]),
			}
			if i < len(notes) && notes[i].RepeatOf > 0 {
				ta.RepeatOf = notes[i].RepeatOf
				ta.Reason = fmt.Sprintf("repeat_of %s: %s", TrialID(notes[i].RepeatOf), notes[i].Why)
			}
			ep.Trials = append(ep.Trials, ta)
		}
	}
	finish(ep)
	return ep, nil
}

// failIfNone marks a done experiment failed when no trial of its current
// generation succeeded: it ended without a result (Katib's experiment
// fails so too).
func failIfNone(ep *ExperimentPlan, succeeded int) {
	if succeeded > 0 {
		return
	}
	ep.Failed = true
	if ep.Generation > 1 {
		ep.DoneReason += fmt.Sprintf(" and no trial of generation %d succeeded", ep.Generation)
	} else {
		ep.DoneReason += " and no trial succeeded"
	}
}

// exhaustedAdvice explains an exhausted grid or batch: with max_trials
// above its size, lower max_trials; when trials of earlier generations
// took the points (their parameters still fit the space, so the tuner
// counts them as tried), lowering max_trials is no help.
func exhaustedAdvice(ex *tuner.ExhaustedError, cfg *schema.Experiment, cur *state.Experiment, gen int, sr series) error {
	widen := "widen the grid (more options or values, a smaller q, a larger grid_points)"
	again := "set repeat = true in the tuner block to sweep it again"
	if ex.Tuner == "batch" {
		widen, again = "add sets to params", "remove the sets already run from params"
	}
	if cfg.MaxTrials > ex.Size {
		return fmt.Errorf("tuner %s: %v; lower max_trials (%d) to %d or %s", ex.Tuner, ex, cfg.MaxTrials, ex.Size, widen)
	}
	// The earlier generations' trials the tuner was told of (those that
	// fit the space and, renamed objectives aside, have a value or failed).
	told := map[int]bool{}
	for _, o := range history(cfg, cur, gen, sr) {
		told[o.Seq] = true
	}
	older := 0
	for _, t := range cur.Trials {
		if t.Generation != gen && told[t.Seq] {
			older++
		}
	}
	if older > 0 {
		return fmt.Errorf("tuner %s: %v: %d of them ran in an earlier generation (before %s changed) and count as tried in generation %d; %s under the new definition, or %s",
			ex.Tuner, ex, older, strings.Join(nonEmptyList(generationParts(cur, cfg), "the definition"), ", "), gen, again, widen)
	}
	return fmt.Errorf("tuner %s: %v; %s", ex.Tuner, ex, widen)
}

func generationParts(cur *state.Experiment, cfg *schema.Experiment) []string {
	if sameSpec(cur, cfg) {
		return nil
	}
	return generationReasons(cur, cfg)
}

func nonEmptyList(l []string, def string) []string {
	if len(l) == 0 {
		return []string{def}
	}
	return l
}

func finish(ep *ExperimentPlan) {
	if ep.Action == NoOp && len(ep.Trials) > 0 {
		ep.Action = Update
	}
	sort.SliceStable(ep.Trials, func(i, j int) bool {
		return ep.Trials[i].Seq < ep.Trials[j].Seq
	})
}

func renderCommand(cfg *schema.Experiment, params map[string]any) string {
	if cfg.Trial.Command != nil {
		s, err := cfg.Trial.Command.Render(params, true)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return s
	}
	var parts []string
	for _, a := range cfg.Trial.Args {
		s, err := a.Render(params, false)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		parts = append(parts, schema.ShellQuote(s))
	}
	return strings.Join(parts, " ")
}

// suggest asks the experiment's tuner for the parameters of seqs, with the
// history of every trial whose parameters still fit the space.
// A tuner that explains its suggestions (tuner.Explainer) also gives a
// note per suggestion.
func suggest(cfg *schema.Experiment, cur *state.Experiment, gen int, seqs []int, sr series) ([]map[string]any, []tuner.Note, error) {
	tn, err := cfg.Tuner.New(cfg.SearchSpace.Space)
	if err != nil {
		return nil, nil, err
	}
	req := tuner.Request{
		Space: cfg.SearchSpace.Space, Goal: tuner.Goal(cfg.Objective.Goal), Seed: cfg.Tuner.Seed,
		History: history(cfg, cur, gen, sr), Seqs: seqs, Settings: cfg.Tuner.Settings,
	}
	if cfg.MultiObjective() {
		for _, o := range cfg.Objectives {
			req.Goals = append(req.Goals, tuner.Goal(o.Goal))
		}
	}
	var out []space.Params
	var notes []tuner.Note
	if ex, ok := tn.(tuner.Explainer); ok {
		out, notes, err = ex.SuggestNotes(req)
	} else {
		out, err = tn.Suggest(req)
	}
	var wait *tuner.WaitError
	if errors.As(err, &wait) {
		if wait.Ready > len(out) || wait.Ready > len(seqs) {
			return nil, nil, fmt.Errorf("tuner %s: %d suggestions ready of %d returned", cfg.Tuner.Name, wait.Ready, len(out))
		}
		res := make([]map[string]any, wait.Ready)
		for i := range res {
			res[i] = map[string]any(out[i])
		}
		return res, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tuner %s: %w", cfg.Tuner.Name, err)
	}
	if len(out) != len(seqs) {
		return nil, nil, fmt.Errorf("tuner %s returned %d suggestions for %d trials", cfg.Tuner.Name, len(out), len(seqs))
	}
	res := make([]map[string]any, len(out))
	for i, p := range out {
		if err := checkSuggestion(cfg.SearchSpace.Space, p); err != nil {
			return nil, nil, fmt.Errorf("tuner %s: %w", cfg.Tuner.Name, err)
		}
		res[i] = map[string]any(p)
	}
	return res, notes, nil
}

// history is what the tuner is told of an experiment's trials: each
// trial of generation gen, and of earlier ones whose parameters still fit
// the space, with its value (the objective's, as its strategy takes it).
// An earlier generation's trial that succeeded without a value of a
// renamed objective is left out: it is no failure.
// series is what Compute was given of an experiment's trials' series:
// their curves (Input.Curves) and their values of the objective that the
// state cannot tell (Input.Values).
type series struct {
	curves map[string][]float64
	values map[string]*float64
}

func history(cfg *schema.Experiment, cur *state.Experiment, gen int, sr series) []tuner.Observation {
	curves := sr.curves
	var hist []tuner.Observation
	for _, t := range cur.SortedTrials() {
		ps := space.Params(t.Params)
		if t.Generation != gen && !cfg.SearchSpace.Space.Contains(ps) {
			continue
		}
		o := tuner.Observation{Seq: t.Seq, Params: ps}
		if cfg.MultiObjective() {
			// Every objective's value, from the final result; a trial
			// stopped early has only the watched objective's curve, and
			// is told as failed.
			switch vals, ok := multiValues(cfg, t); {
			case t.Status == state.Succeeded && ok:
				o.State, o.Value, o.Values = tuner.Completed, vals[0], vals
			case t.Generation != gen && t.Status == state.Succeeded && lacksObjective(cfg, t):
				// It succeeded under objectives named otherwise: no
				// value of these, and no failure either.
				continue
			case state.Terminal(t.Status):
				o.State = tuner.Failed
			default:
				o.State = tuner.Pending
			}
			hist = append(hist, o)
			continue
		}
		val := t.Value
		if obj := configObjective(cfg); !t.ValueIsFor(obj, gen) {
			// An earlier generation's Value is its own objective's,
			// which may have been another metric or strategy (or the
			// state does not say): take this one's from what the trial
			// reported, unless apply took it from there already
			// (Retaken).
			var known bool
			if val, known = t.ValueOf(obj, gen); !known {
				val = valueNow(cfg, t, sr.values)
			}
			if val == nil && t.Status == state.Succeeded {
				// It has no value of this objective (it never reported
				// the metric, or its series cannot tell), and did not
				// fail either. Told as failed, a tuner would avoid (TPE,
				// gp: the worst loss) the region of every good trial so far.
				continue
			}
			if val == nil && t.Status == state.EarlyStopped && len(curves[t.ID]) == 0 {
				// An assessor stopped it as poor by another objective; of
				// this one nothing tells: no failure to tell either.
				continue
			}
		}
		switch {
		case t.Status == state.Succeeded && val != nil && !math.IsNaN(*val) && !math.IsInf(*val, 0):
			o.State, o.Value = tuner.Completed, *val
		case t.Status == state.EarlyStopped && cfg.Objective.Strategy != "" && val != nil && !math.IsNaN(*val) && !math.IsInf(*val, 0):
			// Under a strategy its value is taken as for any trial.
			o.State, o.Value = tuner.Completed, *val
		case t.Status == state.EarlyStopped && len(curves[t.ID]) > 0:
			// Told as its best intermediate value: an under-estimate of
			// what it would have reached, as befits a trial judged poor.
			o.State, o.Value = tuner.Completed, bestOf(curves[t.ID], cfg.Objective.Goal)
		case state.Terminal(t.Status):
			o.State = tuner.Failed
		default:
			o.State = tuner.Pending
		}
		hist = append(hist, o)
	}
	return hist
}

// configObjective is what cfg's (first) objective takes a trial's value
// for, as state.Trial.ValueFor records it.
func configObjective(cfg *schema.Experiment) state.ValueFor {
	return state.ObjectiveFor(cfg.Objective.Metric, cfg.Objective.Strategy)
}

// valueNow is t's value of cfg's objective when its Value is another
// objective's: without a strategy its final result's key of the metric,
// else (or in a state without final results) the value values has from
// its series; nil when neither tells.
func valueNow(cfg *schema.Experiment, t *state.Trial, values map[string]*float64) *float64 {
	if cfg.Objective.Strategy == "" && t.Final != nil {
		if v, ok := t.Final[objectiveMetric(cfg)]; ok {
			return &v
		}
		return nil
	}
	return values[t.ID]
}

// NeedsSeriesValue reports whether the tuner's history needs t's series
// to tell its value of cfg's objective (Input.Values): t succeeded or was
// stopped early, fits the space, and its Value is, or may be, another
// objective's (an earlier generation's, or e's objective is not cfg's
// yet), which its final result alone cannot replace (a strategy, or no
// final result recorded).
func NeedsSeriesValue(cfg *schema.Experiment, e *state.Experiment, t *state.Trial) bool {
	if cfg.MultiObjective() || (t.Status != state.Succeeded && t.Status != state.EarlyStopped) {
		return false
	}
	if cfg.Objective.Strategy == "" && t.Final != nil {
		return false
	}
	obj := configObjective(cfg)
	switch {
	case t.ValueFor != nil && *t.ValueFor == obj:
		return false
	case t.Retaken != nil && t.Retaken.ValueFor == obj:
		return false // apply took it from the series already
	case t.ValueFor == nil && t.Generation == e.Generation && state.ObjectiveFor(e.Metric, e.Strategy) == obj:
		return false
	}
	return cfg.SearchSpace.Space.Contains(space.Params(t.Params))
}

// SeriesValue is a trial's value of the objective (metric: "" is
// "default"; strategy as schema.Objective's) taken from its series as the
// state's metrics hold it, the way the refresh takes it: without a
// strategy the last final result's key, under one the least, greatest or
// last of every value of the metric it reported, intermediate and final
// results alike. nil when it reported none, or when the series cannot
// tell: intermediate results past providers.MaxIntermediate were not kept.
func SeriesValue(t *state.Trial, pts []state.MetricPoint, metric, strategy string) *float64 {
	if t.Intermediate >= providers.MaxIntermediate {
		return nil
	}
	var val *float64
	for _, p := range pts {
		v, _, ok, err := trialproto.Objective(string(p.Value), metric)
		if err != nil {
			ok = false
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			ok = false
		}
		switch {
		case strategy != "":
			if ok {
				val = foldObjective(strategy, val, v)
			}
		case p.Type == "FINAL":
			val = nil
			if ok {
				vv := v
				val = &vv
			}
		}
	}
	return val
}

// objectiveMetric is the key of the objective in a final result.
func objectiveMetric(cfg *schema.Experiment) string {
	if cfg.Objective.Metric == "" {
		return "default"
	}
	return cfg.Objective.Metric
}

// lacksObjective reports whether t's final result has no key of one of
// cfg's objectives (a NaN is a value: the trial reported it).
func lacksObjective(cfg *schema.Experiment, t *state.Trial) bool {
	for _, o := range cfg.Objectives {
		if _, ok := t.Final[o.Metric]; !ok {
			return true
		}
	}
	return false
}

// multiValues is a trial's value of each of cfg's objectives, each the key
// of its final result (Value only says it has one), false when one is
// missing or not finite.
func multiValues(cfg *schema.Experiment, t *state.Trial) ([]float64, bool) {
	if t.Value == nil {
		return nil, false
	}
	out := make([]float64, len(cfg.Objectives))
	for i, o := range cfg.Objectives {
		// Every one from the final result, the first too: Value is the
		// first objective of the trial's own generation, which an earlier
		// generation may have named or ordered otherwise.
		v, ok := t.Final[o.Metric]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func settingChanges(cur *state.Experiment, cfg *schema.Experiment) []Change {
	var ch []Change
	add := func(path, before, after string) {
		if before != after {
			ch = append(ch, Change{Path: path, Before: before, After: after, InPlace: true})
		}
	}
	itoa := func(i int) string { return fmt.Sprint(i) }
	add("max_trials", itoa(cur.MaxTrials), itoa(cfg.MaxTrials))
	add("concurrency", itoa(cur.Concurrency), itoa(cfg.Concurrency))
	add("max_failed_trials", itoa(cur.MaxFailedTrials), itoa(cfg.MaxFailedTrials))
	add("max_duration", cur.MaxDuration, durString(cfg.MaxDuration))
	before := cur.OnMaxDuration
	if before == "" && cur.MaxDuration != "" {
		before = schema.OnMaxDurationStop // states written before on_max_duration
	}
	add("on_max_duration", before, onMaxDuration(cfg))
	add("trial.max_duration", cur.TrialMaxDuration, durString(cfg.Trial.MaxDuration))
	add("paused", fmt.Sprint(cur.Paused), fmt.Sprint(cfg.Paused))
	return ch
}

// generationReasons names the parts of the spec that changed.
func generationReasons(cur *state.Experiment, cfg *schema.Experiment) []string {
	now, old := PartHashes(cfg), partHashes(cfg, true)
	var rs []string
	for _, k := range partNames {
		if prev, ok := cur.PartHashes[k]; ok && (prev == now[k] || prev == old[k]) {
			continue
		}
		rs = append(rs, k)
	}
	return rs
}

// experimentNames lists the experiments of cfg (nil: none) and st, sorted,
// for an error about a name that is neither; "none" when there are none.
func experimentNames(cfg *schema.Config, st *state.State) string {
	seen := map[string]bool{}
	if cfg != nil {
		for n := range cfg.Experiments {
			seen[n] = true
		}
	}
	for n := range st.Experiments {
		seen[n] = true
	}
	if len(seen) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), ", ")
}

// trialRequests checks the -stop and -replace addresses against the
// configuration and the state: experiment -> trial id -> "stop" or
// "replace".
func trialRequests(in Input) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	add := func(addrs []string, kind string) error {
		for _, addr := range addrs {
			exp, id, err := ParseTrialAddress(addr)
			if err != nil {
				return fmt.Errorf("-%s: %w", kind, err)
			}
			if in.Options.Destroy {
				return fmt.Errorf("-%s=%s: destroy tears every trial down already", kind, addr)
			}
			cfg, cur := in.Config.Experiments[exp], in.State.Experiments[exp]
			if cur == nil {
				return fmt.Errorf("-%s=%s: no experiment %q in the state (experiments: %s)", kind, addr, exp, experimentNames(nil, in.State))
			}
			if cur.Trials[id] == nil {
				return fmt.Errorf("-%s=%s: no trial %s of experiment %q in the state (`trialform trials %s` lists them)", kind, addr, id, exp, exp)
			}
			if cfg == nil {
				return fmt.Errorf("-%s=%s: experiment %q is not in the configuration any more; apply tears its trials down", kind, addr, exp)
			}
			if prev := out[exp][id]; prev != "" {
				return fmt.Errorf("-%s=%s: the trial is named by -%s too; choose one", kind, addr, prev)
			}
			if out[exp] == nil {
				out[exp] = map[string]string{}
			}
			out[exp][id] = kind
		}
		return nil
	}
	if err := add(in.Options.Stop, "stop"); err != nil {
		return nil, err
	}
	if err := add(in.Options.Replace, "replace"); err != nil {
		return nil, err
	}
	return out, nil
}

// userRequest plans -stop or -replace of trial t.
func userRequest(ep *ExperimentPlan, cfg *schema.Experiment, t *state.Trial, req string) error {
	addr := fmt.Sprintf("experiment.%s.trial.%s", cfg.Name, t.ID)
	a := &TrialAction{
		Experiment: cfg.Name, TrialID: t.ID, Seq: t.Seq, ParameterID: t.ParameterID,
		Generation: t.Generation, Params: t.Params, Status: t.Status,
	}
	switch req {
	case "stop":
		if state.Terminal(t.Status) {
			return fmt.Errorf("-stop=%s: the trial has ended already (%s); nothing to stop", addr, t.Status)
		}
		a.Action, a.Cause, a.Reason = Teardown, CauseStop, "stopped by the user (-stop); its results are kept"
		ep.Trials = append(ep.Trials, a)
	case "replace":
		switch {
		case cfg.Paused:
			return fmt.Errorf("-replace=%s: experiment %s is paused; remove paused = true first", addr, cfg.Name)
		case t.Generation != ep.Generation:
			return fmt.Errorf("-replace=%s: the trial belongs to generation %d and the experiment is at generation %d; only trials of the current generation can start again", addr, t.Generation, ep.Generation)
		case t.Status == state.Waiting:
			return fmt.Errorf("-replace=%s: the trial has not started yet; apply starts it", addr)
		}
		if t.Status == state.Running {
			td := *a
			td.Action, td.Cause, td.Reason = Teardown, CauseReplace, "replaced (-replace): torn down to start again"
			ep.Trials = append(ep.Trials, &td)
		}
		a.Action, a.Cause = Resume, CauseReplace
		a.Reason = fmt.Sprintf("replace (-replace): a new attempt with the same parameters (was %s)", t.Status)
		a.Command = renderCommand(cfg, t.Params)
		ep.Trials = append(ep.Trials, a)
	}
	return nil
}

func posOf(cfg *schema.Experiment) string {
	return fmt.Sprintf("%s:%d", cfg.DeclRange.Filename, cfg.DeclRange.Start.Line)
}

// tornDown reports whether ep already tears trial id down.
func tornDown(ep *ExperimentPlan, id string) bool {
	for _, a := range ep.Trials {
		if a.Action == Teardown && a.TrialID == id {
			return true
		}
	}
	return false
}

// assess runs the experiment's assessor over the current generation's
// curves.
func assess(cfg *schema.Experiment, cur *state.Experiment, gen int, curves map[string][]float64) (map[string]string, error) {
	as, err := cfg.Assessor.New()
	if err != nil {
		return nil, err
	}
	watched := cfg.WatchedObjective()
	var cs []tuner.Curve
	for _, t := range cur.SortedTrials() {
		if t.Generation != gen {
			continue
		}
		c := tuner.Curve{TrialID: t.ID, Seq: t.Seq, Values: curves[t.ID]}
		switch {
		case t.Status == state.Running:
			c.Running = true
		case t.Status == state.Succeeded && t.Value != nil:
			c.Completed, c.Final = true, watchedFinal(cfg, watched, t)
		default:
			continue
		}
		cs = append(cs, c)
	}
	return as.Assess(tuner.AssessRequest{Goal: tuner.Goal(cfg.WatchedObjective().Goal), Curves: cs}), nil
}

// watchedFinal is a succeeded trial's final value of the objective the
// assessor watches: its Value for the first objective, else that key of
// its final result (every objective is there, or it would have failed).
func watchedFinal(cfg *schema.Experiment, watched schema.Objective, t *state.Trial) float64 {
	if watched.Metric != cfg.Objective.Metric {
		if v, ok := t.Final[watched.Metric]; ok {
			return v
		}
	}
	return *t.Value
}

// stopWhy says why a trial running past the experiment's max_duration is
// torn down: on_max_duration = "stop", or paused (then no trial may run).
func stopWhy(cfg *schema.Experiment) string {
	if cfg.Paused {
		return ", paused = true"
	}
	return ", on_max_duration = \"stop\""
}

// CurveOf extracts the objective's intermediate values from a trial's
// metric series (PERIODICAL reports whose value holds the objective), of
// its last attempt alone: a resumed trial numbers its reports from 0
// again, and its curve is the attempt's that runs (or that ended it), not
// the lost one's followed by it.
func CurveOf(pts []state.MetricPoint, metric string) []float64 {
	last := 0
	for _, p := range pts {
		last = max(last, p.Attempt)
	}
	var out []float64
	for _, p := range pts {
		if p.Type == "FINAL" || p.Attempt != last {
			continue
		}
		if v, _, ok, err := trialproto.Objective(string(p.Value), metric); err == nil && ok {
			out = append(out, v)
		}
	}
	return out
}

func bestOf(vals []float64, goal string) float64 {
	b := vals[0]
	for _, v := range vals[1:] {
		if (goal == "minimize" && v < b) || (goal != "minimize" && v > b) {
			b = v
		}
	}
	return b
}

// checkSuggestion refuses a suggestion holding a value no trial can be
// given: a missing or null value of a search-space param, or a number that
// is not finite (it could not even be saved in the state).
func checkSuggestion(sp *space.Space, ps space.Params) error {
	if sp == nil {
		return nil
	}
	for _, p := range sp.Params {
		v, ok := ps[p.Name]
		if !ok || v == nil {
			return fmt.Errorf("suggested no value for param %q; this is a bug in the tuner, please report it", p.Name)
		}
		if x, isNum := space.ToFloat(v); isNum && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return fmt.Errorf("suggested %v for param %q, which is not a finite number; this is a bug in the tuner, please report it", x, p.Name)
		}
	}
	return nil
}
