package views

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trialform/trialform/state"
)

// TrialJSON is one row of `trials -json` (format version 1).
type TrialJSON struct {
	ID           string             `json:"id"`
	Seq          int                `json:"seq"`
	Generation   int                `json:"generation"`
	Status       string             `json:"status"`
	Reason       string             `json:"reason,omitempty"`
	Params       map[string]any     `json:"params"`
	Metric       *float64           `json:"metric"`
	Metrics      map[string]float64 `json:"metrics"`
	Intermediate int                `json:"intermediate"`
	Attempts     int                `json:"attempts"`
	ExitCode     *int               `json:"exit_code,omitempty"`
	StartedAt    *time.Time         `json:"started_at,omitempty"`
	EndedAt      *time.Time         `json:"ended_at,omitempty"`
	Best         bool               `json:"best,omitempty"`
}

// BestTrial returns the id of the best succeeded trial, or "".
func BestTrial(e *state.Experiment) string {
	best := ""
	var bv float64
	for _, t := range e.SortedTrials() {
		if t.Status != state.Succeeded || t.Value == nil {
			continue
		}
		if best == "" || (e.Goal == "minimize" && *t.Value < bv) || (e.Goal != "minimize" && *t.Value > bv) {
			best, bv = t.ID, *t.Value
		}
	}
	return best
}

// TrialsJSON writes the trials of e as a JSON array.
func TrialsJSON(w io.Writer, e *state.Experiment) error {
	best := BestTrial(e)
	rows := []TrialJSON{}
	for _, t := range e.SortedTrials() {
		m := t.Final
		if m == nil {
			m = map[string]float64{}
		}
		p := t.Params
		if p == nil {
			p = map[string]any{}
		}
		rows = append(rows, TrialJSON{
			ID: t.ID, Seq: t.Seq, Generation: t.Generation, Status: t.Status, Reason: t.Reason,
			Params: p, Metric: t.Value, Metrics: m, Intermediate: t.Intermediate, Attempts: t.Attempts,
			ExitCode: t.ExitCode, StartedAt: t.StartedAt, EndedAt: t.EndedAt, Best: t.ID == best,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// Trials writes the results table of e: one row per trial, the best
// marked with "*", parameters as columns in name order.
func Trials(w io.Writer, e *state.Experiment, c Colors) {
	best := BestTrial(e)
	names := map[string]bool{}
	for _, t := range e.Trials {
		for k := range t.Params {
			names[k] = true
		}
	}
	var cols []string
	for k := range names {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	metric := e.Metric
	if metric == "" {
		metric = "default"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := append([]string{"", "TRIAL", "STATUS", strings.ToUpper(metric)}, cols...)
	head = append(head, "DURATION", "NOTE")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, t := range e.SortedTrials() {
		mark := ""
		if t.ID == best {
			mark = "*"
		}
		row := []string{mark, t.ID, t.Status, FormatMetric(t.Value)}
		for _, k := range cols {
			v, ok := t.Params[k]
			if !ok {
				row = append(row, "")
				continue
			}
			row = append(row, FormatValue(v))
		}
		row = append(row, duration(t), t.Reason)
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	if best != "" {
		bt := e.Trials[best]
		fmt.Fprintf(w, "\nBest: %s %s = %s (%s)\n", best, metric, FormatMetric(bt.Value), FormatParams(bt.Params))
	}
}

func duration(t *state.Trial) string {
	if t.StartedAt == nil || t.EndedAt == nil {
		return ""
	}
	d := max(t.EndedAt.Sub(*t.StartedAt), 0) // a state from before one clock
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// StateList writes one address per line: experiment.NAME and
// experiment.NAME.trial.ID.
func StateList(w io.Writer, st *state.State) {
	var names []string
	for n := range st.Experiments {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "experiment.%s\n", n)
		for _, t := range st.Experiments[n].SortedTrials() {
			fmt.Fprintf(w, "experiment.%s.trial.%s\n", n, t.ID)
		}
	}
}

// ShowState writes a human summary of the whole state.
func ShowState(w io.Writer, st *state.State, c Colors) {
	if len(st.Experiments) == 0 {
		fmt.Fprintln(w, "The state is empty. Run `trialform apply` to create the experiments.")
		return
	}
	fmt.Fprintf(w, "State serial %d, lineage %s\n", st.Serial, st.Lineage)
	var names []string
	for n := range st.Experiments {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := st.Experiments[n]
		fmt.Fprintf(w, "\n%s (id %s, platform %s, generation %d)\n", c.Bold("experiment."+n), e.ID, e.Platform, e.Generation)
		fmt.Fprintf(w, "  objective: %s %s; max_trials %d, concurrency %d", e.Goal, e.Metric, e.MaxTrials, e.Concurrency)
		if e.DoneReason != "" {
			fmt.Fprintf(w, "; done: %s", e.DoneReason)
		}
		fmt.Fprintln(w)
		Trials(indent{w}, e, c)
	}
}

type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	lines := strings.SplitAfter(string(p), "\n")
	for _, l := range lines {
		if l == "" {
			continue
		}
		if l != "\n" {
			l = "  " + l
		}
		if _, err := io.WriteString(i.w, l); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
