package ui

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/importance"
	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner/space"
)

// Querier filters and sorts an experiment's trials with the trials
// command's query language. A mistake in q or sort is a *QueryError.
type Querier interface {
	Select(e *state.Experiment, q, sort string, now time.Time) ([]*state.Trial, error)
}

// QueryError locates a mistake in a query or sort string, for a caret.
type QueryError struct {
	Param string `json:"param"`  // "q" or "sort"
	Msg   string `json:"error"`  // the message, without the caret
	Col   int    `json:"column"` // 0-based column (in characters) in the string; -1 unknown
}

func (e *QueryError) Error() string { return e.Msg }

// snapshot is one version of the state with what was derived from it.
type snapshot struct {
	st      *state.State
	modTime time.Time
	id      string // the backend's stamp of this version ("" when unknown)
	err     error
	// ver numbers the versions this server read (1, 2, ...): the
	// change log and the events say what changed from one to another.
	ver uint64
	// cursor is where a following backend's read stopped (nil: read
	// whole).
	cursor *state.Cursor

	mu      sync.Mutex
	derived map[string]*derived
	answers *answerCache // filtered or sorted trials tables
}

// The bounds of a state version's cache of filtered or sorted trials
// tables (the unfiltered table of each experiment is kept apart).
const (
	maxAnswers     = 32
	maxAnswerBytes = 24 << 20
)

type derived struct {
	once sync.Once
	v    any
}

// get returns the value derived under key, computing it once (f may
// call get for another key).
func (s *snapshot) get(key string, f func() any) any {
	s.mu.Lock()
	d := s.derived[key]
	if d == nil {
		d = &derived{}
		s.derived[key] = d
	}
	s.mu.Unlock()
	d.once.Do(func() { d.v = f() })
	return d.v
}

// store reads the state through the backend, without the lock (a Load
// sees one whole version), and caches what it derives per version.
type store struct {
	o  Options
	b  state.Backend
	mu sync.Mutex
	sn *snapshot
	// log says what changed between the recent versions (guarded by mu).
	log changeLog

	metricsMu sync.Mutex
	metrics   map[string]metricsEntry // "EXP/ID" -> series

	impMu sync.Mutex
	imp   map[string]impEntry // experiment -> last importance
}

type metricsEntry struct {
	key string // the backend's stamp of the series
	pts []point
}

type impEntry struct {
	n   int    // succeeded trials it was computed on
	obj string // the objective it was fitted on: metric and goal
	res any
}

func newStore(o Options) *store {
	b := o.Backend
	if b == nil {
		b = state.Open(o.StateDir)
	}
	return &store{o: o, b: b, metrics: map[string]metricsEntry{}, imp: map[string]impEntry{}}
}

// current returns the snapshot of the state as it is now: the cached one
// while the backend's stamp says the state has not changed. A backend
// that follows (the local one) reads only the journal records written
// since the cached version; any other is read whole and compared. Either
// way the change log learns which trials changed.
func (d *store) current() *snapshot {
	st, stamped, err := state.StateStampOf(d.b)
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.sn
	if stamped && err == nil && st.State != "" && old != nil && old.err == nil && old.id == st.State {
		return old
	}
	sn := &snapshot{id: st.State, modTime: st.Written, derived: map[string]*derived{}, answers: newAnswerCache(maxAnswers, maxAnswerBytes)}
	var ch *state.Changes
	switch f, ok := d.b.(state.Follower); {
	case stamped && err == nil && st.State == "":
		sn.st = state.New()
	case ok:
		var prev *state.State
		var cur *state.Cursor
		if old != nil && old.err == nil {
			prev, cur = old.st, old.cursor
		}
		sn.st, sn.cursor, ch, sn.err = f.Follow(prev, cur)
	default:
		// Peek: a controller saves through the same client (state.Peeker).
		sn.st, sn.err = state.Peek(d.b)
	}
	if !stamped {
		sn.id = ""
	}
	if old != nil && old.err == nil && sn.err == nil {
		if ch == nil && old.st.Lineage == sn.st.Lineage {
			ch = state.Diff(old.st, sn.st)
		}
		if ch != nil && ch.Empty() && old.st.Serial == sn.st.Serial {
			// Nothing changed (a rewrite of the same content): keep the
			// version and what was derived from it.
			old.id, old.cursor = sn.id, sn.cursor
			return old
		}
	}
	if old != nil {
		sn.ver = old.ver + 1
	} else {
		sn.ver = 1
	}
	if old != nil && old.err == nil && sn.err == nil {
		d.log.add(old, sn, ch)
	} else {
		d.log.reset()
	}
	d.sn = sn
	return sn
}

// point is one intermediate value.
type point struct {
	Seq int `json:"seq"`
	// Attempt is the trial's attempt that reported it (each attempt
	// numbers its steps from 0); absent when the series did not record it.
	Attempt int     `json:"attempt,omitempty"`
	Value   float64 `json:"value"`
	Time    int64   `json:"t"` // unix milliseconds
}

// series returns the intermediate values of a trial (cached per version
// of the series, when the backend can tell one).
func (d *store) series(e *state.Experiment, t *state.Trial) []point {
	k, stamped, err := state.MetricsStampOf(d.b, e.Name, t.ID)
	if err != nil || (stamped && k == "") {
		return nil
	}
	key := e.Name + "/" + t.ID
	d.metricsMu.Lock()
	if m, ok := d.metrics[key]; ok && stamped && m.key == k {
		d.metricsMu.Unlock()
		return m.pts
	}
	d.metricsMu.Unlock()
	// The shared parser of the trials command and export (a fast path for
	// the lines the state writes).
	data, err := d.b.ReadMetricsFile(e.Name, t.ID)
	if err != nil || data == nil {
		return nil
	}
	parsed, err := results.ParseSeries(data, e.Metric)
	if err != nil && parsed == nil {
		return nil
	}
	pts := make([]point, 0, len(parsed))
	for _, p := range parsed {
		if p.Value == nil || math.IsNaN(*p.Value) || math.IsInf(*p.Value, 0) {
			continue
		}
		pts = append(pts, point{Seq: p.Step, Attempt: p.Attempt, Value: *p.Value, Time: p.Time.UnixMilli()})
	}
	d.metricsMu.Lock()
	d.metrics[key] = metricsEntry{key: k, pts: pts}
	d.metricsMu.Unlock()
	return pts
}

// ---- the JSON models of the API ----

// ExperimentJSON is one experiment's summary (overview and header).
type ExperimentJSON struct {
	Name       string `json:"name"`
	ID         string `json:"id"`
	Platform   string `json:"platform"`
	Tuner      string `json:"tuner"`
	Generation int    `json:"generation"`
	Goal       string `json:"goal"`
	Metric     string `json:"metric"`
	// Strategy is the objective's strategy ("min", "max", "latest");
	// absent: a trial's value is its final result.
	Strategy  string         `json:"strategy,omitempty"`
	Counts    map[string]int `json:"counts"`
	Trials    int            `json:"trials"` // every generation's
	MaxTrials int            `json:"max_trials"`
	// BudgetUsed is what max_trials counts: the trials of the current
	// generation but the CANCELED ones; GenerationTrials counts that
	// generation's trials; Budget says it in the CLI's words ("8/8 trials
	// done", "generation 2: 8/8 trials done; 16 in all").
	BudgetUsed       int    `json:"budget_used"`
	GenerationTrials int    `json:"generation_trials"`
	Budget           string `json:"budget"`
	// Failed is set with DoneAt when the experiment ended failed.
	Failed bool `json:"failed,omitempty"`
	// Paused is set while the configuration pauses the experiment (its
	// trials are stopped, PAUSED, and none starts).
	Paused      bool      `json:"paused,omitempty"`
	Concurrency int       `json:"concurrency"`
	Best        *BestJSON `json:"best"`
	// Objectives and Front are set when the experiment has several
	// objectives (Best is then null): every objective, and the trials on
	// the Pareto front of the current generation with their values.
	Objectives []state.Objective `json:"objectives,omitempty"`
	Front      []FrontJSON       `json:"front,omitempty"`
	CreatedAt  time.Time         `json:"created_at"`
	DoneAt     *time.Time        `json:"done_at,omitempty"`
	DoneReason string            `json:"done_reason,omitempty"`
	ElapsedSec float64           `json:"elapsed_s"`
	Written    time.Time         `json:"written"`             // the state file's last write
	Refreshed  *time.Time        `json:"refreshed,omitempty"` // last refresh from the platform (refreshed.json)
	// Edit says where to change what the page cannot (read-only by design).
	Edit *EditJSON `json:"edit,omitempty"`
	// Hold is the change the controller holds until approved, Approved
	// whether Approval approves it (state.Hold).
	Hold     *state.Hold     `json:"hold,omitempty"`
	Approval *state.Approval `json:"approval,omitempty"`
	Approved bool            `json:"approved,omitempty"`
}

// BestJSON is the best trial.
type BestJSON struct {
	ID    string  `json:"id"`
	Seq   int     `json:"seq"`
	Value float64 `json:"value"`
}

// FrontJSON is one trial of the Pareto front: its value of each
// objective, in order.
type FrontJSON struct {
	ID     string    `json:"id"`
	Seq    int       `json:"seq"`
	Values []float64 `json:"values"`
}

// EditJSON points at the HCL to edit.
type EditJSON struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// ParamJSON describes one param's axis.
type ParamJSON struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`  // the NNI type, or "number"/"text" when inferred
	Scale   string   `json:"scale"` // "linear" | "log" | "category"
	Options []string `json:"options,omitempty"`
	Lo      *float64 `json:"lo,omitempty"`
	Hi      *float64 `json:"hi,omitempty"`
}

// RowJSON is one row of the trials table.
type RowJSON struct {
	ID           string             `json:"id"`
	Seq          int                `json:"seq"`
	Generation   int                `json:"gen"`
	Status       string             `json:"status"`
	Reason       string             `json:"reason,omitempty"`
	Value        *float64           `json:"value"`
	Params       map[string]any     `json:"params"`
	Metrics      map[string]float64 `json:"metrics,omitempty"`
	Intermediate int                `json:"intermediate"`
	Attempts     int                `json:"attempts"`
	Start        int64              `json:"start,omitempty"` // unix ms
	End          int64              `json:"end,omitempty"`
	// Best marks the best trial; with several objectives, each trial on
	// the Pareto front, whose rank ParetoRank is 1.
	Best       bool `json:"best,omitempty"`
	ParetoRank int  `json:"pareto_rank,omitempty"`
	// Objective is the trial's value of the experiment's current (first)
	// objective, as /api/compare and the importance take it
	// (results.ObjectiveValue: Value, but an earlier generation's by its
	// final result's key of that objective, its own first objective may
	// have been another); absent when the trial did not succeed or has
	// no value of it.
	Objective *float64 `json:"objective,omitempty"`
	// ObjectiveValue is what the trials table shows in the objective's
	// column and sorts it by, as `trials`' metric (results.ObjectiveValue):
	// Value, but an earlier generation's from its final result's key of
	// the current objective (under a strategy, only a Value taken for the
	// same one); any status; absent when there is none.
	ObjectiveValue *float64 `json:"objective_value,omitempty"`
}

// bestOf is the best trial of e's current generation; nil with several
// objectives (no one trial is best: see ranksOf).
func bestOf(e *state.Experiment) *state.Trial {
	if e.MultiObjective() {
		return nil
	}
	return e.Best()
}

// ranksOf is the Pareto rank of each ranked trial of e's current
// generation with several objectives; nil with one.
func ranksOf(e *state.Experiment) map[string]int {
	if !e.MultiObjective() {
		return nil
	}
	return e.ParetoRanks(e.Generation)
}

func (d *store) summary(sn *snapshot, e *state.Experiment, cfg *schema.Config) ExperimentJSON {
	j := ExperimentJSON{
		Name: e.Name, ID: e.ID, Platform: e.Platform, Generation: e.Generation, Goal: e.Goal, Metric: e.Metric, Strategy: e.Strategy,
		Counts: map[string]int{}, Trials: len(e.Trials), MaxTrials: e.MaxTrials, Concurrency: e.Concurrency,
		CreatedAt: e.CreatedAt, DoneAt: e.DoneAt, DoneReason: e.DoneReason, Written: sn.modTime, Failed: e.Failed,
		Paused: e.Paused,
	}
	j.Hold, j.Approval, j.Approved = e.Hold, e.Approval, e.Pending()
	b := e.Budget()
	j.BudgetUsed, j.GenerationTrials = b.Used, b.Trials
	j.Budget = views.BudgetText(b.Generation, b.Ended, e.MaxTrials, b.All, b.All != b.Trials)
	if at, ok := d.b.RefreshedAt(sn.st.Lineage)[e.Name]; ok && !at.IsZero() {
		j.Refreshed = &at
	}
	for _, t := range e.Trials {
		j.Counts[t.Status]++
	}
	if b := bestOf(e); b != nil {
		j.Best = &BestJSON{ID: b.ID, Seq: b.Seq, Value: *b.Value}
	}
	if ranks := ranksOf(e); ranks != nil {
		j.Objectives = e.Objectives
		for _, t := range e.SortedTrials() {
			if ranks[t.ID] == 1 {
				vals, _ := e.ValuesOf(t)
				j.Front = append(j.Front, FrontJSON{ID: t.ID, Seq: t.Seq, Values: vals})
			}
		}
	}
	end := time.Now()
	if e.DoneAt != nil {
		end = *e.DoneAt
	}
	if !e.CreatedAt.IsZero() {
		j.ElapsedSec = end.Sub(e.CreatedAt).Seconds()
	}
	if cfg != nil {
		if ce := cfg.Experiments[e.Name]; ce != nil {
			j.Tuner = ce.Tuner.Name
			j.Edit = &EditJSON{File: ce.DeclRange.Filename, Line: ce.DeclRange.Start.Line}
		}
	}
	return j
}

func rowOf(e *state.Experiment, t *state.Trial, best string, ranks map[string]int) RowJSON {
	r := RowJSON{
		ID: t.ID, Seq: t.Seq, Generation: t.Generation, Status: t.Status, Reason: t.Reason, Value: t.Value,
		Params: t.Params, Metrics: t.Final, Intermediate: t.Intermediate, Attempts: t.Attempts, Best: t.ID == best,
	}
	if v, ok := objectiveNow(e, t); ok {
		r.Objective = &v
	}
	r.ObjectiveValue = results.ObjectiveValue(e, t)
	if ranks != nil {
		r.ParetoRank = ranks[t.ID]
		r.Best = r.ParetoRank == 1
	}
	if r.Params == nil {
		r.Params = map[string]any{}
	}
	if t.StartedAt != nil {
		r.Start = t.StartedAt.UnixMilli()
	}
	if t.EndedAt != nil {
		r.End = t.EndedAt.UnixMilli()
	}
	return r
}

// params describes the axes of e's params: from the search space of the
// configuration when it has the experiment, else inferred from the values.
func paramsOf(e *state.Experiment, cfg *schema.Config) []ParamJSON {
	var out []ParamJSON
	seen := map[string]bool{}
	if cfg != nil {
		if ce := cfg.Experiments[e.Name]; ce != nil && ce.SearchSpace != nil && ce.SearchSpace.Space != nil {
			for _, p := range ce.SearchSpace.Space.Params {
				pj := ParamJSON{Name: p.Name, Kind: string(p.Kind), Scale: "linear"}
				switch p.Kind {
				case space.Choice:
					pj.Scale = "category"
					for _, o := range p.Options {
						if o.Name != "" {
							pj.Options = append(pj.Options, o.Name)
						} else {
							pj.Options = append(pj.Options, space.FormatValue(o.Value))
						}
					}
				case space.Loguniform, space.Qloguniform, space.Lognormal, space.Qlognormal:
					pj.Scale = "log"
				}
				switch p.Kind {
				case space.Uniform, space.Quniform, space.Loguniform, space.Qloguniform, space.Randint:
					if len(p.Args) >= 2 {
						lo, hi := p.Args[0], p.Args[1]
						if p.Kind == space.Randint {
							hi--
						}
						pj.Lo, pj.Hi = &lo, &hi
					}
				}
				out = append(out, pj)
				seen[p.Name] = true
			}
		}
	}
	// Params the space does not name (an older generation, no config).
	kinds := map[string]string{}
	for _, t := range e.Trials {
		for k, v := range t.Params {
			if seen[k] {
				continue
			}
			if _, ok := v.(float64); ok && kinds[k] != "text" {
				kinds[k] = "number"
			} else {
				kinds[k] = "text"
			}
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		pj := ParamJSON{Name: k, Kind: kinds[k], Scale: "linear"}
		if kinds[k] == "text" {
			pj.Scale = "category"
			opts := map[string]bool{}
			for _, t := range e.Trials {
				if v, ok := t.Params[k]; ok {
					opts[space.FormatValue(v)] = true
				}
			}
			for o := range opts {
				pj.Options = append(pj.Options, o)
			}
			sort.Strings(pj.Options)
		}
		out = append(out, pj)
	}
	return out
}

// ImportanceJSON is the parameter importance answer.
type ImportanceJSON struct {
	Method  string              `json:"method"`
	Trials  int                 `json:"trials"` // succeeded trials it was computed on
	Params  []importance.Result `json:"params"`
	Skipped []string            `json:"skipped,omitempty"` // params it cannot place on an axis
	// Objective and Goal name the objective it was fitted on: the
	// experiment's current (first) one.
	Objective string `json:"objective"`
	Goal      string `json:"goal"`
}

// importanceOf computes (or returns the cached) importance of e's params;
// it is recomputed only when the number of succeeded trials changed.
func (d *store) importanceOf(e *state.Experiment, params []ParamJSON) ImportanceJSON {
	var ts []*state.Trial
	var tv []float64
	for _, t := range e.SortedTrials() {
		if v, ok := objectiveNow(e, t); ok {
			ts = append(ts, t)
			tv = append(tv, v)
		}
	}
	d.impMu.Lock()
	defer d.impMu.Unlock()
	// Refit only when the succeeded trials changed by 2% or more (at least
	// one): a large experiment's live updates do not refit the forest on
	// every trial. The answer says how many trials it was fitted on.
	// (An objective reordered or renamed since is fitted afresh.)
	obj := e.Metric + " " + e.Goal
	if c, ok := d.imp[e.Name]; ok && c.obj == obj && abs(c.n-len(ts)) < max(1, c.n/50) {
		return c.res.(ImportanceJSON)
	}
	var axes []importance.Param
	var use []ParamJSON
	var skipped []string
	for _, p := range params {
		if p.Kind == "text" && len(p.Options) > 50 {
			skipped = append(skipped, p.Name)
			continue
		}
		a := importance.Param{Name: p.Name}
		if p.Scale == "category" {
			a.Lo, a.Hi = -0.5, float64(len(p.Options))-0.5
		} else if p.Lo != nil && p.Hi != nil {
			a.Lo, a.Hi = *p.Lo, *p.Hi
		}
		axes = append(axes, a)
		use = append(use, p)
	}
	var X [][]float64
	var y []float64
rows:
	for i, t := range ts {
		row := make([]float64, len(use))
		for j, p := range use {
			v, ok := t.Params[p.Name]
			if !ok {
				continue rows
			}
			if p.Scale == "category" {
				s := space.FormatValue(v)
				if m, ok := v.(map[string]any); ok {
					s, _ = m["_name"].(string)
				}
				idx := -1
				for i, o := range p.Options {
					if o == s {
						idx = i
					}
				}
				if idx < 0 {
					continue rows
				}
				row[j] = float64(idx)
			} else {
				f, ok := v.(float64)
				if !ok {
					continue rows
				}
				row[j] = f
			}
		}
		X = append(X, row)
		y = append(y, tv[i])
	}
	res := ImportanceJSON{
		Method: importance.Method, Objective: e.Metric, Goal: e.Goal, Trials: len(X), Skipped: skipped,
		Params: importance.Compute(axes, X, y, importance.Options{Trees: 32, MaxSamples: 400, Seed: 1}),
	}
	res.Method = "fANOVA on a random forest (32 trees, at most 400 trials sampled), the method of Optuna's default FanovaImportanceEvaluator"
	d.imp[e.Name] = impEntry{n: len(ts), obj: obj, res: res}
	return res
}

func jsonString(s string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
