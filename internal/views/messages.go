package views

import (
	"fmt"
	"io"
	"strings"

	"github.com/trialform/trialform/state"
)

// The one-line reports of the smaller commands (plan -out, import, state
// mv, validate, fmt, convert, ui, completion): internal/command calls
// these and writes nothing itself.

// PlanSaved is plan -out's last line.
func PlanSaved(w io.Writer, path string) {
	fmt.Fprintf(w, "\nSaved the plan to %s. Run `trialform apply %s` to perform exactly these actions.\n", path, path)
}

// NothingToImport says import -all found no trial to adopt.
func NothingToImport(w io.Writer, experiment string) {
	fmt.Fprintf(w, "No trial of experiment %s on its platform is missing from the state; nothing to import.\n", experiment)
}

// Imported reports one adopted trial; previousLineage is the state that
// owned it ("" : none, or this one).
func Imported(w io.Writer, experiment string, t *state.Trial, previousLineage string) {
	line := fmt.Sprintf("Imported %s/%s: %s  %s", experiment, t.ID, t.Status, FormatParams(t.Params))
	if t.Value != nil {
		line += "  value " + FormatMetric(t.Value)
	}
	if previousLineage != "" {
		line += fmt.Sprintf("  (was owned by the state of lineage %s)", previousLineage)
	}
	fmt.Fprintln(w, line)
}

// ImportDone ends a successful import.
func ImportDone(w io.Writer) {
	fmt.Fprintln(w, "The state holds the imported trials as if this state had started them: their parameters count in the tuner's history and the next plan no longer tears them down.")
}

// StateMoved reports state mv: the experiment renamed, where the previous
// state was kept ("" : nowhere to say), and what to do next.
func StateMoved(w io.Writer, from, to string, trials int, backup, platformName, platform string) {
	if backup != "" {
		fmt.Fprintf(w, "Moved experiment.%s to experiment.%s (%s; the previous state is in %s).\n", from, to, plural(trials, "trial"), backup)
	} else {
		fmt.Fprintf(w, "Moved experiment.%s to experiment.%s (%s).\n", from, to, plural(trials, "trial"))
	}
	if platformName != "" {
		fmt.Fprintf(w, "Its trials keep their name %q on platform %s, so running trials keep running.\n", platformName, platform)
	}
	fmt.Fprintf(w, "Rename its block in the configuration to experiment %q too: until then, plan refuses the block experiment %q (the moved trials still carry that name), and without a block %q the next apply tears its trials down as removed from the configuration.\n", to, from, to)
}

// Valid is validate's success line; unknown names the variables that had
// no value (as Terraform's validate: checked whatever they will be).
func Valid(w io.Writer, experiments, spaces, platforms int, builtinLocal bool, unknown string, unknownCount int) {
	plus := ""
	if builtinLocal {
		plus = " (and the built-in local.default)"
	}
	fmt.Fprintf(w, "Success! The configuration is valid: %d experiment(s), %d search space(s), %d platform(s)%s.\n", experiments, spaces, platforms, plus)
	if unknownCount > 0 {
		need := "their values"
		if unknownCount == 1 {
			need = "its value"
		}
		fmt.Fprintf(w, "Checked with %s unknown (no value given): plan and apply need %s.\n", unknown, need)
	}
}

// Text writes text the command produced whole (formatted HCL, a diff, a
// completion script, a list of names), as it is.
func Text(w io.Writer, text string) { io.WriteString(w, text) }

// Lines writes each of lines on its own line.
func Lines(w io.Writer, lines ...string) {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

// Warning is a "Warning: ..." line (escaped as Error's).
func Warning(w io.Writer, msg string) { fmt.Fprintf(w, "Warning: %s\n", SafeLines(msg)) }

// Converted is convert's last line, when it wrote a file.
func Converted(w io.Writer, path string, warnings int) {
	plural := "s"
	if warnings == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "Wrote %s (%d warning%s). Check it with: trialform validate\n", path, warnings, plural)
}

// UITokenMade says ui made a token because it listens beyond 127.0.0.1.
func UITokenMade(w io.Writer, addr string) {
	fmt.Fprintf(w, "trialform ui: %s is not 127.0.0.1, so every request needs a token; made one (pass -token to choose it)\n", addr)
}

// UIServing prints the dashboard's URL on out and what is served on errw.
func UIServing(out, errw io.Writer, url, dir string) {
	fmt.Fprintln(out, url)
	fmt.Fprintln(errw, "trialform ui: serving the dashboard (read-only) of", dir, "; Ctrl-C to stop")
}

// UINoBrowser says no browser could be opened.
func UINoBrowser(w io.Writer, err error) {
	fmt.Fprintf(w, "trialform ui: could not open a browser (%v); open the URL above\n", err)
}
