package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/mask"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// Observations is what Refresh saw on the platforms.
type Observations struct {
	// Trials by experiment name, then trial id, for every unfinished
	// trial of the state.
	Trials map[string]map[string]providers.Observation
	// Listed holds, per experiment, what the platform's Lister found
	// (trials the state may have lost): for an experiment of the state on
	// a platform that is an UnknownLister, only the trials the state does
	// not hold.
	Listed map[string][]providers.Observation
	// Warnings: platforms that could not be read.
	Warnings []string
	// Drift holds, per experiment, the running trials whose platform
	// object differs from what trialform would create now (DetectDrift).
	Drift map[string][]TrialDrift
	// Me is this working copy (nil: none known, every trial is read).
	Me *state.WorkingCopy
	// Claim names, per experiment, the trials this working copy's
	// private platform holds whose owner the state does not record as
	// this working copy, where it was found now (a state written before
	// owners were recorded, or a working copy moved since): Observe
	// records Me as their owner.
	Claim map[string]map[string]bool
}

// ProviderSet finds the provider of a platform key ("local.default").
type ProviderSet interface {
	Provider(platform string) (providers.Provider, error)
}

// WorkingCopier is the optional part of a ProviderSet that knows the
// working copy it runs in: trials of its private platforms are this
// working copy's (state.Trial.Owner), and trials another working copy
// owns are left to it.
type WorkingCopier interface {
	WorkingCopy() *state.WorkingCopy
}

// WorkingCopyOf returns ps's working copy, nil when it knows none.
func WorkingCopyOf(ps ProviderSet) *state.WorkingCopy {
	if w, ok := ps.(WorkingCopier); ok {
		return w.WorkingCopy()
	}
	return nil
}

// MeOf is the id of a working copy, "" for none.
func MeOf(w *state.WorkingCopy) string {
	if w == nil {
		return ""
	}
	return w.ID
}

const defaultReadParallelism = 16

// Refresh reads every unfinished trial of st through its platform's
// provider (in parallel, bounded), but those another working copy owns
// (state.Trial.Elsewhere: its own platform cannot see them), and lists the trials each platform holds
// for each experiment: those of st on their recorded platform, and those
// of experiments (configured name -> platform key) st does not hold yet on
// their configured platform. It does not change st. A platform that cannot
// be reached becomes a warning and its trials keep their recorded status.
func Refresh(ctx context.Context, st *state.State, ps ProviderSet, experiments map[string]string) (*Observations, error) {
	return RefreshWith(ctx, st, ps, experiments, RefreshOptions{})
}

// RefreshOptions tune a refresh.
type RefreshOptions struct {
	// NoList names experiments whose platform is not listed this time
	// (their trials are still read): a run loop lists an experiment it
	// listed a moment ago only now and then, since a listing costs a look
	// at every trial the platform ever held for it.
	NoList map[string]bool
	// SkipRunningMetrics names experiments whose running trials' new
	// metrics the caller does not keep (providers.ReadRequest).
	SkipRunningMetrics map[string]bool
}

// RefreshWith is Refresh with options.
func RefreshWith(ctx context.Context, st *state.State, ps ProviderSet, experiments map[string]string, opts RefreshOptions) (*Observations, error) {
	obs := &Observations{
		Trials: map[string]map[string]providers.Observation{},
		Listed: map[string][]providers.Observation{},
		Me:     WorkingCopyOf(ps),
		Claim:  map[string]map[string]bool{},
	}
	me := MeOf(obs.Me)
	type job struct {
		exp      string
		on       string // the experiment's name on its platform
		expID    string
		trial    *state.Trial
		prov     providers.Provider
		platform string
		claim    bool // found here: recorded as this working copy's
	}
	var jobs []job
	names := map[string]bool{}
	for n := range experiments {
		names[n] = true
	}
	var expNames []string
	type namedWarner struct {
		platform string
		w        providers.Warner
	}
	var warners []namedWarner
	warned := map[string]bool{}
	for n := range st.Experiments {
		names[n] = true
	}
	for n := range names {
		expNames = append(expNames, n)
	}
	sort.Strings(expNames)
	for _, name := range expNames {
		platform := experiments[name]
		e := st.Experiments[name]
		if e != nil {
			platform = e.Platform
		}
		if platform == "" {
			continue
		}
		prov, err := ps.Provider(platform)
		if err != nil {
			obs.Warnings = append(obs.Warnings, fmt.Sprintf("experiment %s: platform %s: %v", name, platform, err))
			continue
		}
		if w, ok := prov.(providers.Warner); ok && !warned[platform] {
			// Asked once the reads and lists below are done: what they
			// met (a machine that did not answer a List) is told in this
			// refresh, not the next one.
			warned[platform] = true
			warners = append(warners, namedWarner{platform, w})
		}
		if e != nil {
			private := false
			if p, ok := prov.(providers.Private); ok && obs.Me != nil {
				private = p.PrivateToWorkingCopy()
			}
			// The map, not SortedTrials: over a long history nearly every
			// trial is skipped, and sorting them all costs more than the
			// reads (jobs are sorted below).
			for _, t := range e.Trials {
				if state.Terminal(t.Status) || t.Status == state.Paused {
					continue // a PAUSED trial was stopped on purpose: its end is not news
				}
				if t.Elsewhere(me) {
					continue // its owner's platform holds it, not this one
				}
				claim := private && (t.Owner == nil || *t.Owner != *obs.Me)
				jobs = append(jobs, job{name, e.OnPlatform(), e.ID, t, prov, platform, claim})
			}
		}
		if l, ok := prov.(providers.Lister); ok && !opts.NoList[name] {
			on := name
			if e != nil {
				on = e.OnPlatform()
			}
			var list []providers.Observation
			var err error
			if ul, ok := prov.(providers.UnknownLister); ok && e != nil {
				// Only what the state does not know can be an orphan
				// (Compute skips the rest): its known trials are not
				// opened, finished or not.
				list, err = ul.ListUnknown(ctx, on, func(id string) bool { return e.Trials[id] != nil })
			} else {
				list, err = l.List(ctx, on)
			}
			if err != nil {
				obs.Warnings = append(obs.Warnings, fmt.Sprintf("experiment %s: list trials on %s: %v", name, platform, err))
			} else {
				obs.Listed[name] = list
			}
		}
	}

	sort.Slice(jobs, func(i, j int) bool {
		a, b := jobs[i], jobs[j]
		if a.exp != b.exp {
			return a.exp < b.exp
		}
		return a.trial.Seq < b.trial.Seq || a.trial.Seq == b.trial.Seq && a.trial.ID < b.trial.ID
	})
	var mu sync.Mutex
	var wg sync.WaitGroup
	// Reads run in parallel, bounded per provider: 16 at once, or what a
	// provider asks for (network-bound ones ask for more).
	sems := map[providers.Provider]chan struct{}{}
	for _, j := range jobs {
		if sems[j.prov] == nil {
			n := defaultReadParallelism
			if rp, ok := j.prov.(providers.ReadParallelism); ok && rp.ReadParallelism() > 0 {
				n = rp.ReadParallelism()
			}
			sems[j.prov] = make(chan struct{}, n)
		}
	}
	var firstErr error
	readErrs := map[string][]string{}
	var readMsgs []string
	for _, j := range jobs {
		wg.Add(1)
		sem := sems[j.prov]
		sem <- struct{}{}
		go func(j job) {
			defer wg.Done()
			defer func() { <-sem }()
			o, err := j.prov.Read(ctx, providers.ReadRequest{
				Experiment:         j.on,
				TrialID:            j.trial.ID,
				Handle:             providers.Handle(j.trial.Handle),
				MetricsOffset:      j.trial.MetricsOffset,
				SkipRunningMetrics: opts.SkipRunningMetrics[j.exp],
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if ctx.Err() != nil && firstErr == nil {
					firstErr = ctx.Err()
				}
				// The same failure of many trials (their machine or
				// cluster did not answer) is told once, naming them.
				msg := err.Error()
				if readErrs[msg] == nil {
					readMsgs = append(readMsgs, msg)
				}
				readErrs[msg] = append(readErrs[msg], j.exp+"/"+j.trial.ID)
				return
			}
			if o.Exists && o.Lineage != "" && st.Lineage != "" && o.Lineage != st.Lineage {
				// Another state's trial under the same id (this state's
				// create was refused, or the trial was imported away): its
				// status and results are not this trial's.
				obs.Warnings = append(obs.Warnings, fmt.Sprintf("trial %s/%s on %s belongs to another state (lineage %s), not to this one: its status and results are not read; adopt it with `trialform import %s %s`, or remove it",
					j.exp, j.trial.ID, j.platform, o.Lineage, j.exp, j.trial.ID))
				o = providers.Observation{TrialID: o.TrialID, Experiment: o.Experiment}
			} else if want := (providers.Owner{ExperimentID: j.expID, Generation: j.trial.Generation, ParamsDigest: providers.ParamsDigest(j.trial.Params)}); o.Exists && want.Mismatch(o.Owner) != "" {
				// The same id, but started for another instance of the
				// experiment (destroyed and created again), generation or
				// parameters: not this trial either.
				obs.Warnings = append(obs.Warnings, fmt.Sprintf("trial %s/%s on %s was started for %s, not for this trial: its status and results are not read; adopt it with `trialform import %s %s`, or remove it",
					j.exp, j.trial.ID, j.platform, want.Mismatch(o.Owner), j.exp, j.trial.ID))
				o = providers.Observation{TrialID: o.TrialID, Experiment: o.Experiment}
			}
			if obs.Trials[j.exp] == nil {
				obs.Trials[j.exp] = map[string]providers.Observation{}
			}
			obs.Trials[j.exp][j.trial.ID] = o
			if j.claim && o.Exists {
				if obs.Claim[j.exp] == nil {
					obs.Claim[j.exp] = map[string]bool{}
				}
				obs.Claim[j.exp][j.trial.ID] = true
			}
		}(j)
	}
	wg.Wait()
	for _, msg := range readMsgs {
		ids := readErrs[msg]
		sort.Strings(ids)
		if len(ids) == 1 {
			obs.Warnings = append(obs.Warnings, fmt.Sprintf("read trial %s: %s", ids[0], msg))
		} else {
			named := strings.Join(ids, ", ")
			if len(ids) > 5 {
				named = strings.Join(ids[:5], ", ") + fmt.Sprintf(" and %d more", len(ids)-5)
			}
			obs.Warnings = append(obs.Warnings, fmt.Sprintf("read %d trials (%s): %s", len(ids), named, msg))
		}
	}
	for _, nw := range warners {
		for _, m := range nw.w.Warnings() {
			obs.Warnings = append(obs.Warnings, fmt.Sprintf("platform %s: %s", nw.platform, m))
		}
	}
	sort.Strings(obs.Warnings)
	return obs, firstErr
}

// MetricBatch is a set of metric points to append to one trial's series.
type MetricBatch struct {
	Experiment string
	TrialID    string
	Points     []state.MetricPoint
}

// Observe folds observations into st (which the caller owns: pass a
// clone to keep the original) and returns what changed and the metric
// points to append. It is pure apart from reading obs.
func Observe(st *state.State, obs *Observations, now time.Time) ([]Observed, []MetricBatch) {
	var changes []Observed
	var batches []MetricBatch
	var names []string
	for n := range st.Experiments {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		e := st.Experiments[name]
		seen := obs.Trials[name]
		// The observed trials in the state's order (few of a long
		// history: not all of them sorted).
		var ts []*state.Trial
		for id := range seen {
			if t := e.Trials[id]; t != nil {
				ts = append(ts, t)
			}
		}
		sort.Slice(ts, func(i, j int) bool {
			return ts[i].Seq < ts[j].Seq || ts[i].Seq == ts[j].Seq && ts[i].ID < ts[j].ID
		})
		for _, t := range ts {
			o := seen[t.ID]
			before := t.Status
			if obs.Claim[name][t.ID] && obs.Me != nil {
				me := *obs.Me
				t.Owner = &me
			}
			pts := observeTrial(e, t, o, now)
			if len(pts) > 0 {
				batches = append(batches, MetricBatch{Experiment: name, TrialID: t.ID, Points: pts})
			}
			if t.Status != before {
				ob := Observed{Experiment: name, TrialID: t.ID, Before: before, After: t.Status, Reason: t.Reason, Value: t.Value}
				if t.Value != nil && e.MultiObjective() {
					ob.Metric = e.Metric
				}
				if vals, ok := e.ValuesOf(t); ok && e.MultiObjective() && t.Status == state.Succeeded {
					for i, obj := range e.Objectives {
						ob.Values = append(ob.Values, NamedValue{Metric: obj.Metric, Value: vals[i]})
					}
				}
				changes = append(changes, ob)
			}
		}
	}
	return changes, batches
}

func observeTrial(e *state.Experiment, t *state.Trial, o providers.Observation, now time.Time) []state.MetricPoint {
	pts := observeRun(e, t, o, now)
	if st := t.Stopping; st != nil {
		switch {
		case !o.Exists || o.Phase == providers.PhaseLost || o.Phase == providers.PhaseFailed ||
			o.Phase == providers.PhaseKilled && !o.PastMaxDuration:
			// apply stopped it and was killed before it recorded the
			// end (destroy's purge may have removed it already): it
			// ends as the teardown meant, not FAILED or LOST.
			t.Status, t.Reason, t.Stopping = st.Status, st.Reason, nil
			stopClock(t, o.EndedAt, now)
		case state.Terminal(t.Status):
			t.Stopping = nil // it ended on its own first
		}
	}
	return pts
}

func observeRun(e *state.Experiment, t *state.Trial, o providers.Observation, now time.Time) []state.MetricPoint {
	o = maskObservation(e, o)
	if !o.Exists {
		switch t.Status {
		case state.Running:
			t.Status = state.Lost
			t.Reason = "gone from the platform while running"
			stopClock(t, nil, now)
		}
		return nil
	}
	if len(o.Handle) > 0 {
		t.Handle = map[string]string(o.Handle)
	}
	if t.Attempts == 0 {
		// The platform holds it, so it was started: the CLI was stopped
		// between the start and saving it (the trial is adopted here, not
		// by apply's Start), and it ran all the same.
		t.Attempts = 1
	}
	if o.MetricsOffset != nil {
		t.MetricsOffset = o.MetricsOffset
	}
	// Start and end come from the platform's clock, which saw both
	// (apply's own stamp of the start is only a placeholder until then):
	// two clocks would give negative durations to short trials.
	if o.StartedAt != nil {
		s := notAfter(o.StartedAt.UTC(), now)
		t.StartedAt = &s
	}
	// Value is the objective's as the trial recorded it: a trial of an
	// earlier generation read after the objective changed (torn down,
	// its last reports read now) keeps its own objective's value, never
	// one folded from two objectives' reports.
	objective := state.ObjectiveFor(e.Metric, e.Strategy)
	own := t.ValueFor == nil || *t.ValueFor == objective
	if own && len(o.Metrics) > 0 {
		t.ValueFor = &objective
	}
	var pts []state.MetricPoint
	var garbage []string
	lastFinal := "" // the last final result this refresh read
	for _, m := range o.Metrics {
		if m.Garbage != "" {
			garbage = append(garbage, m.Garbage)
			if m.Type == "FINAL" {
				// A final result that is not a number (NaN): the last
				// one wins, so no earlier value stands.
				lastFinal, t.Final = "", nil
				if e.Strategy == "" && own {
					t.Value = nil
				}
			}
			continue
		}
		if e.Strategy != "" && own {
			// Every value of the metric counts, intermediate and final
			// alike, past the series' cap too.
			if v, _, ok, err := trialproto.Objective(m.Value, e.Metric); err == nil && ok {
				t.Value = foldObjective(e.Strategy, t.Value, v)
			}
		}
		if m.Type != "FINAL" && t.Intermediate >= providers.MaxIntermediate {
			continue // the cap per trial, whatever the platform kept
		}
		pt := state.MetricPoint{Type: m.Type, Sequence: m.Sequence, Attempt: t.Attempts, Value: json.RawMessage(m.Value), Time: reportedAt(m, now)}
		pts = append(pts, pt)
		switch m.Type {
		case "FINAL":
			// The last final result wins, whole: nothing of an earlier
			// one stays beside it (its objective value beside the new
			// one's other metrics made a result no report held).
			lastFinal = m.Value
			t.Final = nil
			if e.Strategy == "" && own {
				t.Value = nil
			}
			v, all, ok, err := trialproto.Objective(m.Value, e.Metric)
			if err != nil {
				garbage = append(garbage, err.Error())
				continue
			}
			if len(all) > 0 {
				t.Final = all
			}
			if e.Strategy != "" {
				// Folded above; a final result without the metric is
				// fine when the trial reported it otherwise.
				continue
			}
			if ok && own {
				vv := v
				t.Value = &vv
			} else if why := trialproto.MissingObjective(m.Value, e.Metric); why != "" {
				garbage = append(garbage, why)
			}
			// The other objectives' keys that hold no number (NaN,
			// Infinity), kept in the reason of a trial still running so
			// that the refresh that sees it end says it too.
			for _, ob := range otherObjectives(e) {
				if _, has := all[ob.Metric]; !has {
					if why := trialproto.MissingObjective(m.Value, ob.Metric); strings.HasPrefix(why, "the final result's ") {
						garbage = append(garbage, why)
					}
				}
			}
		default:
			t.NoteIntermediate(pt, e.Metric, e.Goal)
			t.Intermediate++
		}
	}
	switch o.Phase {
	case providers.PhasePending, providers.PhaseRunning:
		if t.Status == state.Waiting || t.Status == state.Lost {
			t.Status = state.Running
			t.Reason = ""
			t.EndedAt = nil // running again: its clock runs
		}
	case providers.PhaseLost:
		if t.Status != state.Lost {
			t.Status = state.Lost
			t.Reason = nonEmpty(o.Reason, "the trial process vanished while running")
			stopClock(t, o.EndedAt, now)
		}
	case providers.PhaseSucceeded, providers.PhaseFailed, providers.PhaseKilled:
		end := now.UTC()
		if o.EndedAt != nil {
			end = notAfter(o.EndedAt.UTC(), now)
		}
		if t.StartedAt != nil && end.Before(*t.StartedAt) {
			end = *t.StartedAt // never a negative duration
		}
		t.EndedAt = &end
		if o.ExitCode != nil {
			c := *o.ExitCode
			t.ExitCode = &c
		}
		switch o.Phase {
		case providers.PhaseSucceeded:
			if missing := missingObjectives(e, t); t.Value != nil && len(missing) > 0 {
				// Several objectives: every one is in the final result.
				prev := t.Reason
				t.Status = state.Failed
				t.Reason = fmt.Sprintf("metrics unavailable: the final result lacks %s %s%s",
					plural(len(missing), "objective", "objectives"), strings.Join(missing, ", "), reportedKeys(t.Final))
				if lastFinal != "" {
					// Say why when the key is there but holds no number
					// (NaN, Infinity, text).
					var whys []string
					for _, o := range e.Objectives[1:] {
						if _, ok := t.Final[o.Metric]; !ok {
							if why := trialproto.MissingObjective(lastFinal, o.Metric); strings.HasPrefix(why, "the final result's ") {
								whys = append(whys, why)
							}
						}
					}
					if len(whys) > 0 {
						t.Reason = "metrics unavailable: " + strings.Join(limit(whys, 3), "; ")
					}
				} else if strings.HasPrefix(prev, unreadablePrefix+"the final result's ") {
					// An earlier refresh read the final result.
					t.Reason = "metrics unavailable: " + strings.TrimPrefix(prev, unreadablePrefix)
				}
			} else if t.Value != nil {
				t.Status = state.Succeeded
				t.Reason = ""
			} else {
				t.Status = state.Failed
				switch {
				case len(garbage) > 0:
					t.Reason = "metrics unavailable: " + strings.Join(limit(garbage, 3), "; ")
				case strings.HasPrefix(t.Reason, unreadablePrefix):
					// Reported while it ran (an earlier refresh).
					t.Reason = "metrics unavailable: " + strings.TrimPrefix(t.Reason, unreadablePrefix)
				default:
					t.Reason = "metrics unavailable: exited 0 without reporting " + quoteMetric(e.Metric)
				}
			}
		case providers.PhaseFailed:
			t.Status = state.Failed
			t.Reason = nonEmpty(o.Reason, "failed")
		case providers.PhaseKilled:
			t.Status = state.Failed
			t.Reason = nonEmpty(o.Reason, "killed")
			if o.PastMaxDuration {
				// The platform enforced the trial's own max_duration:
				// stopped early, as the plan's own teardown past it
				// (CauseTrialMaxDuration) and NNI's maxTrialDuration.
				t.Status = state.EarlyStopped
				t.Reason = nonEmpty(o.Reason, "max_duration exceeded")
			}
		}
	}
	if t.EndedAt != nil {
		// A result is never dated after the end of the attempt that
		// reported it (a clock that disagrees, or a reader's stamp).
		for i := range pts {
			if pts[i].Time.After(*t.EndedAt) {
				pts[i].Time = *t.EndedAt
			}
		}
	}
	if len(garbage) > 0 && !state.Terminal(t.Status) {
		t.Reason = unreadablePrefix + strings.Join(limit(garbage, 3), "; ")
	}
	// The platform's note (a limit it hit) replaces the reason of a
	// trial that has no other, and is added to a failure's once.
	switch {
	case o.Note == "":
		if t.Status == state.Running && len(garbage) == 0 && !strings.HasPrefix(t.Reason, unreadablePrefix) {
			// An earlier refresh's note no longer holds (a pod that
			// waited to be scheduled runs now).
			t.Reason = ""
		}
	case (t.Status == state.Running || t.Status == state.Succeeded) && len(garbage) == 0:
		t.Reason = o.Note
	case o.Phase.Ended() && !strings.Contains(t.Reason, o.Note):
		t.Reason = joinReason(t.Reason, o.Note)
	}
	return pts
}

// missingObjectives lists (quoted) the objectives of a multi-objective
// experiment that a trial's final result lacks, the first one aside
// (Value says whether it is there).
func missingObjectives(e *state.Experiment, t *state.Trial) []string {
	if !e.MultiObjective() {
		return nil
	}
	var out []string
	for _, o := range e.Objectives[1:] {
		if _, ok := t.Final[o.Metric]; !ok {
			out = append(out, strconv.Quote(o.Metric))
		}
	}
	return out
}

// otherObjectives is every objective of a multi-objective experiment but
// the first (Value holds that one); none with one objective.
func otherObjectives(e *state.Experiment) []state.Objective {
	if !e.MultiObjective() {
		return nil
	}
	return e.Objectives[1:]
}

// reportedKeys says which keys a final result had, for a reason.
func reportedKeys(final map[string]float64) string {
	if len(final) == 0 {
		return ""
	}
	keys := make([]string, 0, len(final))
	for k := range final {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return " (got: " + strings.Join(keys, ", ") + ")"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// reportedAt is when a result was reported: the platform's time for it
// (providers.Metric.Time) when it has one and it is not in the future,
// else now, when this refresh read it.
func reportedAt(m providers.Metric, now time.Time) time.Time {
	if m.Time.IsZero() || m.Time.After(now) {
		return now.UTC()
	}
	return m.Time.UTC()
}

// unreadablePrefix starts the reason of a running trial that reported
// metrics trialform could not use.
const unreadablePrefix = "unreadable metrics: "

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func quoteMetric(m string) string {
	if m == "" || m == "default" {
		return "a final result"
	}
	return fmt.Sprintf("the objective metric %q", m)
}

func nonEmpty(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func limit(ss []string, n int) []string {
	if len(ss) > n {
		return append(ss[:n:n], fmt.Sprintf("(%d more)", len(ss)-n))
	}
	return ss
}

// stopClock records when a trial's attempt stopped without ending (LOST):
// the platform's end time when it has one, else now, the first time this
// state saw it gone. Its run time stops there; a resume is a new attempt,
// timed from its own start.
// notAfter is t, or now when t is later: a platform's clock (or a file a
// trial could write) never dates a start or an end in the future.
func notAfter(t, now time.Time) time.Time {
	if t.After(now) {
		return now.UTC()
	}
	return t
}

func stopClock(t *state.Trial, end *time.Time, now time.Time) {
	e := now.UTC()
	if end != nil {
		e = notAfter(end.UTC(), now)
	}
	if t.StartedAt != nil && e.Before(*t.StartedAt) {
		e = *t.StartedAt
	}
	t.EndedAt = &e
}

// foldObjective takes one more reported value v of the objective into a
// trial's value under strategy (Katib's metricStrategies): the least, the
// greatest or the last.
func foldObjective(strategy string, cur *float64, v float64) *float64 {
	switch {
	case cur == nil, strategy == schema.StrategyLatest,
		strategy == schema.StrategyMin && v < *cur,
		strategy == schema.StrategyMax && v > *cur:
		return &v
	}
	return cur
}

// maskObservation hides the experiment's secrets (its masks, recorded by
// apply before any trial started) in what a trial's observation brings into
// the state: its metric values (a trial that reports its arguments, token
// included, as a string metric), the records that could not be read (they
// quote the line), and the platform's words on it. The state is shared
// (a pg or kubernetes backend) and shown by `trials`, `show`, export and
// the dashboard: a secret reported there would be kept for good.
func maskObservation(e *state.Experiment, o providers.Observation) providers.Observation {
	if e.Masks == nil || len(e.Masks.Hashes) == 0 {
		return o
	}
	set := mask.New()
	if set.Hashed(mask.Record{Salt: e.Masks.Salt, Hashes: e.Masks.Hashes}) != nil || set.Empty() {
		return o
	}
	o.Reason, o.Note = set.String(o.Reason), set.String(o.Note)
	var ms []providers.Metric
	for i, m := range o.Metrics {
		v, g := maskJSON(set, m.Value), set.String(m.Garbage)
		if v == m.Value && g == m.Garbage {
			continue
		}
		if ms == nil {
			ms = append([]providers.Metric(nil), o.Metrics...) // the caller's slice stays as it was
		}
		ms[i].Value, ms[i].Garbage = v, g
	}
	if ms != nil {
		o.Metrics = ms
	}
	return o
}

// maskJSON is the JSON text v with set's secrets hidden in its strings and
// keys. Masked as text first (the common case: a secret inside a string);
// where that breaks the JSON (a secret that is a number, or spans its
// syntax), each string, key and number is masked on its own.
func maskJSON(set *mask.Set, v string) string {
	out := set.String(v)
	if out == v || !json.Valid([]byte(v)) || json.Valid([]byte(out)) {
		return out // unchanged, or masked text of a value that was not strict JSON (NaN)
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return out
	}
	b, err := json.Marshal(maskTree(set, x))
	if err != nil {
		return out
	}
	return string(b)
}

func maskTree(set *mask.Set, x any) any {
	switch x := x.(type) {
	case string:
		return set.String(x)
	case json.Number:
		if set.String(string(x)) != string(x) {
			return set.String(string(x))
		}
		return x
	case []any:
		for i := range x {
			x[i] = maskTree(set, x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[set.String(k)] = maskTree(set, v)
		}
		return out
	}
	return x
}
