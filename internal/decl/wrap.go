package decl

import "strings"

// Wrap fills s into markdown lines of at most width characters (a word
// longer than that stays whole): the first line starts with first, the
// others with cont. The generated references use it so that no line of
// the docs is over 200 characters.
func Wrap(s, first, cont string, width int) string {
	var lines []string
	line := first
	empty := true
	for _, w := range strings.Fields(s) {
		if !empty && len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, line)
			line, empty = cont, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	return strings.Join(append(lines, line), "\n")
}
