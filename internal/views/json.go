package views

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// The machine-readable outputs. Each carries a format_version and has a
// JSON Schema in docs/json/; tests validate the outputs against them.
//
//   - plan -json, show -json PLANFILE: plan.Plan (plan.FormatVersion);
//     experiments are an array sorted by name, each with its name.
//   - show -json: StateJSON (StateFormatVersion); experiments are an
//     array sorted by name as in the plan, each experiment's trials an
//     array in sequence order.
//   - apply -json, destroy -json: a stream of Event lines
//     (EventsFormatVersion in the first, "version", line).

// StateFormatVersion is the version of the show -json model.
const StateFormatVersion = "2"

// StateJSON is the show -json model of the state.
type StateJSON struct {
	FormatVersion string            `json:"format_version"`
	Serial        uint64            `json:"serial"`
	Lineage       string            `json:"lineage"`
	Experiments   []*ExperimentJSON `json:"experiments"`
}

// ExperimentJSON is a state experiment with its trials as an array.
type ExperimentJSON struct {
	*state.Experiment
	Trials []*state.Trial `json:"trials"`
}

// NewStateJSON builds the show -json model of st.
func NewStateJSON(st *state.State) StateJSON {
	out := StateJSON{FormatVersion: StateFormatVersion, Serial: st.Serial, Lineage: st.Lineage, Experiments: []*ExperimentJSON{}}
	names := make([]string, 0, len(st.Experiments))
	for n := range st.Experiments {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := st.Experiments[n]
		trials := e.SortedTrials()
		if trials == nil {
			trials = []*state.Trial{}
		}
		out.Experiments = append(out.Experiments, &ExperimentJSON{Experiment: e, Trials: trials})
	}
	return out
}

// StateJSONWrite writes the show -json model of st.
func StateJSONWrite(w io.Writer, st *state.State) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewStateJSON(st))
}

// EventsFormatVersion is the version of the apply -json event stream.
const EventsFormatVersion = "1"

// Event is one line of the apply -json stream. Type says which of the
// optional fields is set:
//
//	version         format_version, trialform
//	planned_change  change (one trial action of the plan)
//	change_summary  changes (operation "plan", then "apply" or "destroy")
//	apply_start     hook (a trial action begins)
//	apply_complete  hook (it succeeded; elapsed_seconds)
//	apply_errored   hook (it failed; error)
//	trial_status    observed (refresh saw a trial change status)
//	progress        progress (after every -wait pass)
//	diagnostic      diagnostic (errors, warnings, "Interrupted")
type Event struct {
	Level     string    `json:"@level"`
	Message   string    `json:"@message"`
	Timestamp time.Time `json:"@timestamp"`
	Type      string    `json:"type"`

	FormatVersion string `json:"format_version,omitempty"`
	Trialform     string `json:"trialform,omitempty"`

	Change     *ChangeJSON          `json:"change,omitempty"`
	Changes    *ChangeSummaryJSON   `json:"changes,omitempty"`
	Hook       *HookJSON            `json:"hook,omitempty"`
	Observed   *plan.Observed       `json:"observed,omitempty"`
	Progress   []ProgressJSON       `json:"progress,omitempty"`
	Diagnostic *EventDiagnosticJSON `json:"diagnostic,omitempty"`
}

// ChangeJSON is one planned trial action.
type ChangeJSON struct {
	Experiment string         `json:"experiment"`
	Trial      string         `json:"trial"`
	Action     plan.Action    `json:"action"`
	Reason     string         `json:"reason,omitempty"`
	Params     map[string]any `json:"params,omitempty"`
}

// ChangeSummaryJSON counts trial actions (planned, or done) and, for
// destroy, what was removed from the state.
type ChangeSummaryJSON struct {
	Operation   string `json:"operation"` // plan, apply, destroy
	Create      int    `json:"create"`
	Resume      int    `json:"resume"`
	Teardown    int    `json:"teardown"`
	Experiments int    `json:"experiments_destroyed,omitempty"`
	Trials      int    `json:"trials_destroyed,omitempty"`
}

// HookJSON is one trial action being applied.
type HookJSON struct {
	Experiment     string      `json:"experiment"`
	Trial          string      `json:"trial"`
	Action         plan.Action `json:"action"`
	ElapsedSeconds float64     `json:"elapsed_seconds,omitempty"`
	Error          string      `json:"error,omitempty"`
	Machine        string      `json:"machine,omitempty"`
}

// ProgressJSON is one experiment's progress after a -wait pass. Done,
// Running, Waiting and Failed count the trials of Generation, the one the
// budget (max_trials) counts; TrialsInAll counts every generation's.
type ProgressJSON struct {
	Experiment  string   `json:"experiment"`
	Generation  int      `json:"generation"`
	Done        int      `json:"done"`
	MaxTrials   int      `json:"max_trials"`
	BudgetUsed  int      `json:"budget_used"`
	Running     int      `json:"running"`
	Waiting     int      `json:"waiting"`
	Failed      int      `json:"failed"`
	TrialsInAll int      `json:"trials_in_all"`
	Best        *float64 `json:"best,omitempty"`
	BestTrial   string   `json:"best_trial,omitempty"`
	Finished    bool     `json:"finished"`
	Reason      string   `json:"reason,omitempty"`
	// ExperimentFailed is set with Finished when the experiment failed
	// (max_failed_trials reached, or no trial of its generation
	// succeeded); apply then exits 4.
	ExperimentFailed bool `json:"experiment_failed,omitempty"`
}

// EventDiagnosticJSON is an error or warning.
type EventDiagnosticJSON struct {
	Severity string `json:"severity"` // error, warning
	Summary  string `json:"summary"`
	Detail   string `json:"detail,omitempty"`
}

// Events writes the apply -json stream: one JSON object a line.
type Events struct {
	mu  sync.Mutex
	w   io.Writer
	Now func() time.Time
}

// NewEvents writes events to w.
func NewEvents(w io.Writer) *Events { return &Events{w: w, Now: time.Now} }

// Emit writes e, filling the timestamp and the level.
func (ev *Events) Emit(e Event) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	e.Timestamp = ev.Now().UTC()
	if e.Level == "" {
		e.Level = "info"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		b.Reset()
		enc.Encode(Event{Level: "error", Message: "trialform: encode event: " + err.Error(), Timestamp: e.Timestamp, Type: "diagnostic",
			Diagnostic: &EventDiagnosticJSON{Severity: "error", Summary: "encode event", Detail: err.Error()}})
	}
	ev.w.Write(b.Bytes())
}

// Version writes the first line.
func (ev *Events) Version(version string) {
	ev.Emit(Event{Type: "version", Message: "trialform " + version, FormatVersion: EventsFormatVersion, Trialform: version})
}

// Plan writes a planned_change per trial action and the plan's summary.
func (ev *Events) Plan(p *plan.Plan) {
	for _, wn := range p.Warnings {
		ev.Diagnostic("warning", wn, "")
	}
	for _, ep := range p.Experiments {
		for _, t := range ep.Trials {
			ev.Emit(Event{Type: "planned_change", Message: ep.Name + "/" + t.TrialID + ": plan to " + string(t.Action),
				Change: &ChangeJSON{Experiment: ep.Name, Trial: t.TrialID, Action: t.Action, Reason: t.Reason, Params: t.Params}})
		}
	}
	s := p.Summary
	ev.Emit(Event{Type: "change_summary", Message: SummaryLine(p),
		Changes: &ChangeSummaryJSON{Operation: "plan", Create: s.Create, Resume: s.Resume, Teardown: s.Teardown}})
}

// Diagnostic writes an error or a warning.
func (ev *Events) Diagnostic(severity, summary, detail string) {
	msg := summary
	if detail != "" {
		msg += ": " + detail
	}
	level := "error"
	if severity == "warning" {
		level = "warn"
	}
	ev.Emit(Event{Type: "diagnostic", Level: level, Message: msg, Diagnostic: &EventDiagnosticJSON{Severity: severity, Summary: summary, Detail: detail}})
}

// Progress writes the progress of each experiment of p.
func (ev *Events) Progress(p *plan.Plan) {
	rows := []ProgressJSON{}
	msg := ""
	for _, ep := range p.Experiments {
		pr := ep.Progress
		bs := pr.GenerationByStatus
		if bs == nil {
			bs = pr.ByStatus
		}
		rows = append(rows, ProgressJSON{
			Experiment: ep.Name, Generation: pr.Generation, MaxTrials: ep.Settings.MaxTrials, BudgetUsed: pr.BudgetUsed,
			Done: Ended(ep), Running: bs[state.Running], Waiting: bs[state.Waiting], Failed: bs[state.Failed],
			TrialsInAll: pr.Total, Best: pr.Best, BestTrial: pr.BestTrial, Finished: ep.Done, Reason: ep.DoneReason,
			ExperimentFailed: ep.Failed,
		})
		if msg != "" {
			msg += "; "
		}
		msg += StatusLine(ep)
	}
	ev.Emit(Event{Type: "progress", Message: msg, Progress: rows})
}
