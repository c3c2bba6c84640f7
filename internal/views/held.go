package views

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/state"
)

// HeldChanges lists the changes the controller holds in st (state.Hold),
// each with its approval if any; with none, says so when empty is set
// (approve's listing) and prints nothing otherwise (plan).
func HeldChanges(w io.Writer, st *state.State, c Colors, now time.Time, empty bool) {
	var names []string
	for n, e := range st.Experiments {
		if e.Hold != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		if empty {
			fmt.Fprintln(w, "No held changes: the controller holds nothing for approval.")
		}
		return
	}
	fmt.Fprintf(w, "\n%s\n", c.Bold("Held by the controller until approved:"))
	for _, n := range names {
		e := st.Experiments[n]
		fmt.Fprintf(w, "  %s: %s\n", c.Bold("experiment."+Safe(n)), holdText(e.Hold, now))
		fmt.Fprintf(w, "    %s\n", approvalText(n, e, now))
	}
}

// HeldLine is show's line for an experiment's held change ("" when none).
func HeldLine(e *state.Experiment, now time.Time) string {
	if e.Hold == nil {
		return ""
	}
	return "held: " + holdText(e.Hold, now) + "\n    " + approvalText(e.Name, e, now)
}

func holdText(h *state.Hold, now time.Time) string {
	what := fmt.Sprintf("%s tears down %d trial(s)", changeText(h.Change), h.Teardowns)
	if h.Removed {
		what = fmt.Sprintf("removing it tears down %d trial(s)", h.Teardowns)
	}
	if len(h.Reasons) > 0 {
		what += " (" + Safe(strings.Join(h.Reasons, "; ")) + ")"
	}
	by := Safe(h.By)
	if h.Commit != "" {
		by += ", commit " + Safe(short(h.Commit))
	}
	return fmt.Sprintf("%s; held by %s for %s", what, by, Ago(now.Sub(h.Since)))
}

func approvalText(name string, e *state.Experiment, now time.Time) string {
	if e.Pending() {
		return fmt.Sprintf("approved by %s %s ago: the controller applies it at its next pass", Safe(e.Approval.By), Ago(now.Sub(e.Approval.At)))
	}
	return fmt.Sprintf("waits for approval: trialform approve %s %s", Safe(name), Safe(short(e.Hold.SpecHash)))
}

// changeText is state.Change.String with the spec hash made safe.
func changeText(c state.Change) string {
	c.SpecHash = Safe(c.SpecHash)
	return c.String()
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Approved prints what trialform approve recorded (already: it was
// approved before).
func Approved(w io.Writer, experiment string, h *state.Hold, a *state.Approval, already bool) {
	verb := "Approved"
	if already {
		verb = fmt.Sprintf("Already approved (by %s at %s)", Safe(a.By), a.At.Format(time.RFC3339))
	}
	what := changeText(h.Change)
	fmt.Fprintf(w, "%s: experiment %s, %s: %d trial(s) to tear down.\n", verb, Safe(experiment), what, h.Teardowns)
	if len(h.Reasons) > 0 {
		fmt.Fprintf(w, "  because: %s\n", Safe(strings.Join(h.Reasons, "; ")))
	}
	fmt.Fprintln(w, "The controller applies it at its next pass; a later, different change is held again.")
}
