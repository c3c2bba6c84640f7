package views

import (
	"strconv"
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
