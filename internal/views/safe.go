package views

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Safe makes text that comes from outside trialform (a trial's metric
// names and the reasons that quote them, parameter values, commands built
// from them, platform messages) safe to print on a terminal. Text with a
// control character (ESC, BEL, CR, a line break: an escape sequence could
// retitle the window, clear the screen or forge output), an invisible
// format character such as a bidirectional override, or invalid UTF-8 is
// shown Go-quoted, every such character visible as an escape ("\x1b]0;…");
// any other text is unchanged. Every human renderer passes such text
// through it; -json output carries the text as it is.
func Safe(s string) string {
	if !needsQuote(s) {
		return s
	}
	return strconv.Quote(s)
}

// SafeLines is Safe for a message of several lines (errors.Join's, a
// list under a sentence): each line passes through Safe, the line breaks
// stay. Errors and warnings that quote a machine (a remote command's
// stderr, a file name a trial chose) are printed through it.
func SafeLines(s string) string {
	if !needsQuote(s) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Safe(l)
	}
	return strings.Join(lines, "\n")
}

func needsQuote(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return true
		}
		i += n
	}
	return false
}
