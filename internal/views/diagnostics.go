package views

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/hashicorp/hcl/v2"
	"github.com/trialform/trialform/schema"
)

// Error is an "Error: ..." report on standard error (the human view of an
// error diagnostic; -json commands send it as an event instead). The
// message may quote a machine or a trial: escape sequences are shown, not
// sent to the terminal (SafeLines).
func Error(w io.Writer, msg string) { fmt.Fprintf(w, "Error: %s\n", SafeLines(msg)) }

// ErrorWithCaret is an error in a query or sort expression: the message,
// then the expression with a caret under the column at fault.
func ErrorWithCaret(w io.Writer, flagName string, err error, caret string) {
	fmt.Fprintf(w, "Error: %s: %s\n\n%s\n", flagName, err, caret)
}

// Notice is a "trialform: ..." line on standard error: something the
// command notices while it works (a shared backend's server cannot be
// reached and the write is retried; it is back).
func Notice(w io.Writer, msg string) { fmt.Fprintf(w, "trialform: %s\n", msg) }

// Question asks the user to type "yes" (apply, destroy, state push,
// init -migrate-state); AnswerEnd ends the line the answer was typed on.
func Question(w io.Writer, question string) {
	fmt.Fprintf(w, "\n%s\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", question)
}

// AnswerEnd follows the answer to a Question.
func AnswerEnd(w io.Writer) { fmt.Fprintln(w) }

// JSONDocument writes v as one JSON document indented by two spaces
// (state show -json, validate -json).
func JSONDocument(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// Diagnostics shows the configuration's diagnostics as Terraform does: a
// snippet of the file under each, width columns wide (schema renders
// them, with hcl's diagnostic writer, for its tests too).
func Diagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, width uint, color bool) {
	_ = schema.WriteDiagnostics(w, files, diags, width, color)
}
