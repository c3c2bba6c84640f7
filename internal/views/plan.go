// Package views is the only code that formats for people: the human plan
// (rendered from the same plan.Plan model that -json prints, so the two
// cannot disagree), the trials table, state listings and progress lines.
// It does no I/O beyond writing to the io.Writer it is given.
package views

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner/space"
)

// Colors applies ANSI colours when enabled.
type Colors struct{ On bool }

func (c Colors) wrap(code, s string) string {
	if !c.On {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (c Colors) Green(s string) string  { return c.wrap("32", s) }
func (c Colors) Yellow(s string) string { return c.wrap("33", s) }
func (c Colors) Red(s string) string    { return c.wrap("31", s) }
func (c Colors) Bold(s string) string   { return c.wrap("1", s) }
func (c Colors) Dim(s string) string    { return c.wrap("2", s) }

func (c Colors) symbol(a plan.Action) string {
	s := a.Symbol()
	switch a {
	case plan.Create:
		return c.Green(s)
	case plan.Resume, plan.Update:
		return c.Yellow(s)
	case plan.Teardown, plan.Delete:
		return c.Red(s)
	}
	return s
}

// PlanJSON writes the plan model as indented JSON (docs/json/plan.schema.json).
func PlanJSON(w io.Writer, p *plan.Plan) error {
	if p.Experiments == nil {
		cp := *p
		cp.Experiments = []*plan.ExperimentPlan{}
		p = &cp
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// FormatParams renders parameters as "name=value" pairs sorted by name,
// floats to 6 significant digits (the JSON model keeps full precision).
func FormatParams(ps map[string]any) string {
	keys := make([]string, 0, len(ps))
	for k := range ps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, Safe(k)+"="+FormatValue(ps[k]))
	}
	return strings.Join(parts, " ")
}

// FormatValue renders one value for people.
func FormatValue(v any) string {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return space.FormatValue(x)
		}
		return fmt.Sprintf("%.6g", x)
	case string:
		if x == "" || strings.ContainsAny(x, " \t\"'=;") {
			return fmt.Sprintf("%q", x)
		}
		return Safe(x)
	}
	return space.FormatValue(v)
}

// FormatMetric renders an objective value.
func FormatMetric(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.6g", *v)
}

// Plan renders p for people.
func Plan(w io.Writer, p *plan.Plan, c Colors) {
	if len(p.Observed) > 0 {
		fmt.Fprintln(w, c.Bold("Changes observed since the last apply:"))
		for _, o := range p.Observed {
			line := fmt.Sprintf("  %s/%s: %s -> %s", o.Experiment, o.TrialID, o.Before, o.After)
			if o.Value != nil {
				line += " (value " + FormatMetric(o.Value) + ")"
			}
			if o.Reason != "" {
				line += " (" + Safe(o.Reason) + ")"
			}
			fmt.Fprintln(w, line)
		}
		fmt.Fprintln(w)
	}
	for _, wn := range p.Warnings {
		fmt.Fprintln(w, c.Yellow("Warning: ")+Safe(wn))
	}
	for _, mv := range p.Moves {
		fmt.Fprintf(w, "  # experiment.%s has moved to experiment.%s (moved block at %s)\n", mv.From, mv.To, mv.Pos)
	}
	if len(p.Moves) > 0 {
		fmt.Fprintln(w)
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintln(w)
	}

	if !p.HasChanges() {
		fmt.Fprintln(w, c.Bold("No changes.")+" "+noChangeDetail(p))
		for _, ep := range p.Experiments {
			fmt.Fprintln(w, "  "+StatusLine(ep))
			for _, n := range ep.Notes {
				fmt.Fprintln(w, "    "+c.Dim("note: "+Safe(n)))
			}
			drift(w, ep, c, "    ")
		}
		return
	}
	fmt.Fprintln(w, "trialform will perform the following actions:")
	for _, ep := range p.Experiments {
		if ep.Action == plan.NoOp {
			continue
		}
		fmt.Fprintln(w)
		experiment(w, ep, c)
	}
	for _, ep := range p.Experiments {
		if ep.Action == plan.NoOp {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "  # "+StatusLine(ep))
			drift(w, ep, c, "    ")
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, c.Bold(SummaryLine(p)))
}

// SummaryLine is "Plan: 2 to create, 1 to resume, 0 to tear down.", and
// ", 1 experiment to destroy" before the period when experiments go (with
// their trials' records and results, ended ones too), ", 1 experiment to
// change" when settings of experiments change.
func SummaryLine(p *plan.Plan) string {
	s := p.Summary
	line := fmt.Sprintf("Plan: %d to create, %d to resume, %d to tear down", s.Create, s.Resume, s.Teardown)
	gone := 0
	for _, ep := range p.Experiments {
		if ep.Action == plan.Delete {
			gone++
		}
	}
	switch gone {
	case 0:
	case 1:
		line += ", 1 experiment to destroy"
	default:
		line += fmt.Sprintf(", %d experiments to destroy", gone)
	}
	// Experiments whose settings change in place (concurrency,
	// max_trials, ...; a new generation shows as its teardowns and creates):
	// a plan of only such changes read "0 to create, 0 to resume, 0 to
	// tear down" under the change it shows.
	changed := 0
	for _, ep := range p.Experiments {
		if ep.Action == plan.Update && len(ep.Changes) > 0 && !ep.NewGeneration {
			changed++
		}
	}
	if changed > 0 {
		line += ", " + plural(changed, "experiment") + " to change"
	}
	return line + "."
}

func noChangeDetail(p *plan.Plan) string {
	if len(p.Experiments) == 0 && p.Destroy {
		return "The state holds no experiment to destroy."
	}
	if len(p.Experiments) == 0 {
		return "The configuration has no experiments and the state is empty."
	}
	done := 0
	var paused []string // paused, not done, with no trial running
	for _, ep := range p.Experiments {
		bs := ep.Progress.ByStatus
		switch {
		case ep.Done:
			done++
		case ep.Paused && bs[state.Running]+bs[state.Waiting] == 0:
			paused = append(paused, ep.Name)
		}
	}
	if done == len(p.Experiments) {
		return "Every experiment is done."
	}
	if len(paused) > 0 {
		names := "(paused: " + strings.Join(paused, ", ") + "; they resume when paused is removed)"
		if done+len(paused) == len(p.Experiments) {
			// Nothing runs: a paused experiment is neither done nor running.
			return "Nothing to run: every experiment is done or paused " + names + "."
		}
		return "Trials are running; nothing to do until they finish " + names + "."
	}
	return "Trials are running; nothing to do until they finish."
}

// StatusLine summarises an experiment: "experiment.svm: 12/20 trials done,
// 2 running, best 0.93 (t0004)". The counts are of the generation the
// budget counts; when the experiment has trials of other generations the
// line says which and how many trials there are in all:
// "experiment.svm: generation 2: 8/8 trials done, 1 failed; 16 in all,
// best 0.95 (t0003)".
func StatusLine(ep *plan.ExperimentPlan) string {
	pr := ep.Progress
	bs := pr.GenerationByStatus
	if bs == nil {
		bs = pr.ByStatus // a plan saved before the generation counts
	}
	counts := []string{BudgetText(pr.Generation, Ended(ep), ep.Settings.MaxTrials, pr.Total, false)}
	for _, c := range []struct {
		status, what string
	}{{state.Running, "running"}, {state.Waiting, "waiting"}, {state.Lost, "lost"}, {state.Failed, "failed"}} {
		if n := bs[c.status]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, c.what))
		}
	}
	var later []string
	if n := bs[state.Paused]; n > 0 {
		later = append(later, fmt.Sprintf("%d paused", n))
	}
	if n := bs[state.UserCanceled]; n > 0 {
		later = append(later, fmt.Sprintf("%d stopped by the user", n))
	}
	var best string
	if pr.Best != nil {
		best = fmt.Sprintf("best %s (%s)", FormatMetric(pr.Best), pr.BestTrial)
	}
	if pr.ParetoFront > 0 {
		best = "Pareto front of " + plural(pr.ParetoFront, "trial")
	}
	var line string
	if pr.Generations() {
		// The generation's counts, then the whole history's.
		counts[0] = fmt.Sprintf("generation %d: %s", pr.Generation, counts[0])
		line = strings.Join(append(counts, later...), ", ") + fmt.Sprintf("; %d in all", pr.Total)
		if best != "" {
			line += ", " + best
		}
	} else {
		if best != "" {
			counts = append(counts, best)
		}
		line = strings.Join(append(counts, later...), ", ")
	}
	line = "experiment." + ep.Name + ": " + line
	if ep.Paused {
		line += "; paused"
	}
	switch {
	case ep.Failed:
		line += "; failed: " + Safe(ep.DoneReason)
	case ep.Done:
		line += "; done: " + Safe(ep.DoneReason)
	}
	return line
}

// BudgetText says how far a budget is used: "12/20 trials done", or, with
// generations (trials of other generations exist), "generation 2: 8/8
// trials done; 16 in all". ended counts the generation's ended trials,
// all the trials of every generation.
func BudgetText(gen, ended, maxTrials, all int, generations bool) string {
	s := fmt.Sprintf("%d/%d trials done", ended, maxTrials)
	if generations {
		s = fmt.Sprintf("generation %d: %s; %d in all", gen, s, all)
	}
	return s
}

func experiment(w io.Writer, ep *plan.ExperimentPlan, c Colors) {
	var head string
	switch ep.Action {
	case plan.Create:
		head = "will be created"
	case plan.Update:
		head = "will be updated in place"
		if ep.Paused {
			head = "is paused"
		}
		if ep.NewGeneration {
			head = fmt.Sprintf("starts generation %d", ep.Generation)
		}
	case plan.Delete:
		head = "will be destroyed"
	}
	fmt.Fprintf(w, "  # experiment.%s %s\n", ep.Name, head)
	if ep.Action != plan.Create {
		fmt.Fprintf(w, "  # %s\n", StatusLine(ep))
	}
	if ep.NewGeneration {
		// As Terraform's "forces replacement": what the new generation
		// costs, and what it starts afresh.
		fmt.Fprintf(w, "  # %s changed: forces generation %d, with a fresh budget of %s (max_trials)\n",
			strings.Join(ep.GenerationReason, ", "), ep.Generation, plural(ep.Settings.MaxTrials, "trial"))
		teardown := "nothing unfinished to tear down"
		if n := ep.GenerationTeardowns; n > 0 {
			teardown = "tears down " + plural(n, "unfinished trial") + " of earlier generations"
		}
		stay := "the " + plural(ep.Progress.Total, "trial") + " so far stay"
		if ep.Progress.Total == 1 {
			stay += "s"
		}
		fmt.Fprintf(w, "  # %s; %s in the history\n", teardown, stay)
	}
	fmt.Fprintf(w, "  %s experiment %q {\n", c.symbol(ep.Action), ep.Name)
	if ep.Action == plan.Create {
		s := ep.Settings
		attrs := [][2]string{
			{"platform", ep.Platform},
			{"tuner", s.Tuner},
			{"objective", objectiveText(s)},
			{"max_trials", fmt.Sprint(s.MaxTrials)},
			{"concurrency", fmt.Sprint(s.Concurrency)},
		}
		if s.MaxFailedTrials > 0 {
			attrs = append(attrs, [2]string{"max_failed_trials", fmt.Sprint(s.MaxFailedTrials)})
		}
		if s.MaxDuration != "" {
			attrs = append(attrs, [2]string{"max_duration", s.MaxDuration}, [2]string{"on_max_duration", s.OnMaxDuration})
		}
		if s.TrialMaxDuration != "" {
			// Each trial's own limit: past it the platform stops it.
			attrs = append(attrs, [2]string{"trial.max_duration", s.TrialMaxDuration})
		}
		width := 17
		for _, a := range attrs {
			width = max(width, len(a[0]))
		}
		for _, a := range attrs {
			fmt.Fprintf(w, "      %-*s = %s\n", width, a[0], a[1])
		}
	}
	for _, ch := range ep.Changes {
		if ch.InPlace {
			fmt.Fprintf(w, "    %s %s = %s -> %s\n", c.Yellow("~"), ch.Path, orNone(ch.Before), orNone(ch.After))
		} else {
			fmt.Fprintf(w, "    %s %s changed %s\n", c.Yellow("~"), ch.Path, c.Red("# forces a new generation"))
		}
	}
	if len(ep.Trials) > 0 && (ep.Action == plan.Create || len(ep.Changes) > 0) {
		fmt.Fprintln(w)
	}
	for _, t := range ep.Trials {
		trial(w, t, c)
	}
	for _, n := range ep.Notes {
		fmt.Fprintf(w, "      %s\n", c.Dim("# "+Safe(n)))
	}
	switch {
	case ep.Failed:
		fmt.Fprintf(w, "      %s\n", c.Red("# failed: "+Safe(ep.DoneReason)))
	case ep.Done:
		fmt.Fprintf(w, "      %s\n", c.Dim("# done: "+Safe(ep.DoneReason)))
	}
	drift(w, ep, c, "      ")
	fmt.Fprintln(w, "    }")
}

// drift shows the running trials whose platform object differs from what
// trialform would create for them now, each with its diff.
func drift(w io.Writer, ep *plan.ExperimentPlan, c Colors, indent string) {
	for _, d := range ep.Drift {
		fmt.Fprintln(w, indent+c.Yellow("# trial "+d.TrialID+" runs with another spec than trialform would start it with now:"))
		Diff(w, d.Diff, c, indent+"  ")
	}
	if len(ep.Drift) > 0 {
		fmt.Fprintln(w, indent+c.Dim("# trialform does not change running trials (restarting training is costly): they finish as they are;"))
		fmt.Fprintln(w, indent+c.Dim("# new trials and resumes get the new spec. To restart one with it now, delete it on its platform"))
		fmt.Fprintln(w, indent+c.Dim("# (on kubernetes, its Job): the next plan resumes it with the same id and parameters."))
	}
}

// Diff writes a unified diff, each line after indent, coloured: headers
// bold, additions green, removals red, hunk headers and "#" lines dim.
func Diff(w io.Writer, diff string, c Colors, indent string) {
	for _, line := range strings.SplitAfter(diff, "\n") {
		text := strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			text = c.Bold(text)
		case strings.HasPrefix(line, "+"):
			text = c.Green(text)
		case strings.HasPrefix(line, "-"):
			text = c.Red(text)
		case strings.HasPrefix(line, "#"), strings.HasPrefix(line, "@@"):
			text = c.Dim(text)
		}
		fmt.Fprintln(w, indent+text)
	}
}

func trial(w io.Writer, t *plan.TrialAction, c Colors) {
	switch t.Action {
	case plan.Create:
		fmt.Fprintf(w, "    %s trial %s  %s\n", c.symbol(t.Action), t.TrialID, FormatParams(t.Params))
		if t.Recorded || t.RepeatOf > 0 {
			fmt.Fprintf(w, "        %s\n", c.Dim("# "+Safe(t.Reason)))
		}
		if t.Command != "" {
			fmt.Fprintf(w, "        %s\n", c.Dim("$ "+Safe(t.Command)))
		}
	case plan.Resume:
		fmt.Fprintf(w, "    %s trial %s  resume (%s)  %s\n", c.symbol(t.Action), t.TrialID, Safe(t.Reason), FormatParams(t.Params))
	case plan.Teardown:
		fmt.Fprintf(w, "    %s trial %s  tear down (%s)\n", c.symbol(t.Action), t.TrialID, Safe(t.Reason))
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Ended counts the trials of ep's current generation that have ended
// (succeeded, failed, stopped early or by the user): the progress toward
// max_trials.
func Ended(ep *plan.ExperimentPlan) int {
	pr := ep.Progress
	if pr.GenerationByStatus == nil {
		// A plan saved before the generation counts.
		bs := pr.ByStatus
		return bs[state.Succeeded] + bs[state.Failed] + bs[state.EarlyStopped] + bs[state.UserCanceled]
	}
	return pr.GenerationEnded
}

// DestroySummary is "Destroy complete! 2 experiments, 20 trials destroyed.",
// or, when left experiments could not be destroyed, "Destroy incomplete!
// 1 of 2 experiments destroyed (20 trials); ...".
func DestroySummary(experiments, trials, left int) string {
	if left > 0 {
		return fmt.Sprintf("Destroy incomplete! %d of %s destroyed (%s); the errors above say why, run destroy again once they are fixed.",
			experiments, plural(experiments+left, "experiment"), plural(trials, "trial"))
	}
	return fmt.Sprintf("Destroy complete! %s, %s destroyed.", plural(experiments, "experiment"), plural(trials, "trial"))
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// objectiveText is "maximize accuracy", with the strategy when it is not
// the final result: "maximize accuracy (strategy max: the greatest value
// reported)".
func objectiveText(s plan.Settings) string {
	if len(s.Objectives) > 1 {
		// "maximize acc, minimize latency (Pareto front)"
		var parts []string
		for _, o := range s.Objectives {
			parts = append(parts, o.Goal+" "+o.Metric)
		}
		return strings.Join(parts, ", ") + " (Pareto front)"
	}
	out := s.Goal + " " + s.Metric
	switch s.Strategy {
	case "min":
		out += " (strategy min: the least value reported)"
	case "max":
		out += " (strategy max: the greatest value reported)"
	case "latest":
		out += " (strategy latest: the last value reported)"
	}
	return out
}

// ElsewhereLine says, after apply -wait, that an experiment still has
// trials another working copy runs ("" when it has none): this working
// copy stopped waiting because only that one can read their end.
func ElsewhereLine(ep *plan.ExperimentPlan) string {
	if len(ep.Elsewhere) == 0 {
		return ""
	}
	return fmt.Sprintf("experiment.%s: nothing left to do in this working copy: %s, which records their end", ep.Name, plan.DescribeElsewhere(ep.Elsewhere))
}
