// Package didyoumean is the one place trialform guesses which name a user
// meant when they wrote one it does not know: an HCL attribute or block, a
// tuner, a setting, a command, a query field. Every suggestion in messages
// comes from Suggest, so they all agree on what counts as a typo
// (Terraform's internal/didyoumean is the model).
//
// It must stay a leaf: no I/O, no other trialform package.
package didyoumean

import (
	"fmt"
	"strings"

	"github.com/agext/levenshtein"
)

// Suggest returns the candidate closest to given by edit distance
// (Levenshtein, ignoring case), or "" when none is close enough to be a
// typo: within 2 edits, or a fifth of the name's length for long names
// (max_failed_trail is 3 edits from max_failed_trials). Ties go to the
// first candidate.
func Suggest(given string, candidates []string) string {
	limit := max(2, len([]rune(given))/5)
	g := strings.ToLower(given)
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := levenshtein.Distance(g, strings.ToLower(c), nil); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Sentence is " Did you mean X?" with Suggest's candidate printed by
// format ("%q", "var.%s"), or "" when there is none: the sentence HCL's
// diagnostics and the command line end with.
func Sentence(given string, candidates []string, format string) string {
	if s := Suggest(given, candidates); s != "" {
		return " Did you mean " + fmt.Sprintf(format, s) + "?"
	}
	return ""
}
