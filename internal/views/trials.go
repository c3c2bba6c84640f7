package views

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// BestLines returns the "Best: ..." line of each experiment that has a
// best trial.
func BestLines(exps []*state.Experiment) []string {
	var out []string
	for _, e := range exps {
		if front := results.ParetoFront(e); len(front) > 0 {
			out = append(out, paretoLine(e, front, len(exps) > 1))
			continue
		}
		best := results.BestTrial(e)
		if best == "" {
			continue
		}
		metric := Safe(e.Metric)
		if metric == "" {
			metric = "default"
		}
		bt := e.Trials[best]
		// Only the current generation's trials compete (state's BestOf):
		// say which generation that is once there were several.
		var of []string
		if len(exps) > 1 {
			of = append(of, e.Name)
		}
		if e.Generation > 1 {
			of = append(of, fmt.Sprintf("generation %d", e.Generation))
		}
		prefix := "Best:"
		if len(of) > 0 {
			prefix = "Best of " + strings.Join(of, ", ") + ":"
		}
		out = append(out, fmt.Sprintf("%s %s %s = %s (%s)", prefix, best, metric, FormatMetric(bt.Value), Safe(FormatParams(bt.Params))))
	}
	return out
}

// paretoLine is "Pareto front (maximize acc, minimize latency): t0001,
// t0004 (2 trials)" for an experiment with several objectives.
func paretoLine(e *state.Experiment, front []string, named bool) string {
	var of []string
	if named {
		of = append(of, e.Name)
	}
	if e.Generation > 1 {
		of = append(of, fmt.Sprintf("generation %d", e.Generation))
	}
	prefix := "Pareto front"
	if len(of) > 0 {
		prefix += " of " + strings.Join(of, ", ")
	}
	var objs []string
	for _, o := range e.ObjectiveList() {
		objs = append(objs, o.Goal+" "+o.Metric)
	}
	ids := front
	more := ""
	if len(ids) > 10 {
		ids, more = ids[:10], fmt.Sprintf(" and %d more", len(front)-10)
	}
	return fmt.Sprintf("%s (%s): %s%s (%s; `-q pareto:1` lists them)", prefix, Safe(strings.Join(objs, ", ")),
		strings.Join(ids, ", "), more, plural(len(front), "trial"))
}

// BudgetLines returns the "Budget: ..." line of each experiment: what its
// max_trials counts, the trials of its current generation ("Budget: 6/8
// trials done", "Budget: generation 2: 8/8 trials done; 16 in all").
func BudgetLines(exps []*state.Experiment) []string {
	var out []string
	for _, e := range exps {
		prefix := "Budget:"
		if len(exps) > 1 {
			prefix = "Budget of " + e.Name + ":"
		}
		out = append(out, prefix+" "+budgetOf(e))
	}
	return out
}

// budgetOf is BudgetText for an experiment of the state.
func budgetOf(e *state.Experiment) string {
	b := e.Budget()
	return BudgetText(b.Generation, b.Ended, e.MaxTrials, b.All, b.All != b.Trials)
}

// Trials writes the results table of e (the default columns) and its
// best trial.
func Trials(w io.Writer, e *state.Experiment, now time.Time) {
	rows := results.FromExperiment(e, now)
	footer := BestLines([]*state.Experiment{e})
	if len(footer) > 0 {
		footer = append([]string{""}, footer...)
	}
	ResultsTableText(w, ResultsTable{Rows: rows, Footer: footer})
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

// ShowState writes a human summary of the whole state; refreshed holds
// when each experiment was last refreshed from its platform.
func ShowState(w io.Writer, st *state.State, c Colors, refreshed map[string]time.Time, now time.Time) {
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
		label := "objective"
		if e.MultiObjective() {
			label = "objectives"
		}
		fmt.Fprintf(w, "  %s: %s; max_trials %d, concurrency %d", label, objectiveOfState(e), e.MaxTrials, e.Concurrency)
		if e.Paused {
			fmt.Fprint(w, "; paused")
		}
		switch {
		case e.Failed:
			fmt.Fprintf(w, "; failed: %s", Safe(e.DoneReason))
		case e.DoneReason != "":
			fmt.Fprintf(w, "; done: %s", Safe(e.DoneReason))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  budget: %s\n", budgetOf(e))
		if t, ok := refreshed[n]; ok {
			fmt.Fprintf(w, "  refreshed %s ago\n", Ago(now.Sub(t)))
		} else {
			fmt.Fprintln(w, "  never refreshed from its platform (`trialform refresh`)")
		}
		if l := HeldLine(e, now); l != "" {
			fmt.Fprintf(w, "  %s\n", l)
		}
		Trials(&indent{w: w}, e, now)
	}
}

// objectiveOfState is the plan's words for e's objective: every
// objective of a multi-objective experiment, and the strategy of one.
func objectiveOfState(e *state.Experiment) string {
	st := plan.Settings{Goal: e.Goal, Metric: e.Metric, Strategy: e.Strategy}
	if e.MultiObjective() {
		for _, o := range e.Objectives {
			st.Objectives = append(st.Objectives, plan.Objective{Metric: o.Metric, Goal: o.Goal})
		}
	}
	return objectiveText(st)
}

// indent prefixes every line written through it with two spaces. Writers
// such as tabwriter write a line in several pieces: only a piece that
// starts a line gets the prefix.
type indent struct {
	w   io.Writer
	mid bool // the last byte written was not a newline
}

func (i *indent) Write(p []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if l == "" {
			continue
		}
		if !i.mid && l != "\n" {
			l = "  " + l
		}
		if _, err := io.WriteString(i.w, l); err != nil {
			return 0, err
		}
		i.mid = !strings.HasSuffix(l, "\n")
	}
	return len(p), nil
}
