// Package docs reads the project's documentation: README.md,
// CONTRIBUTING.md and docs/**/*.md. Tests use it to find the section that
// documents a feature wherever it lives (the HCL blocks they load, the
// tables they compare with the code) and to keep the generated parts
// (platform, tuner and command references) in step with the code.
package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Files are the documentation pages under root, relative to it, sorted:
// README.md, CONTRIBUTING.md and every .md under docs/.
func Files(root string) ([]string, error) {
	files := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			r, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(r))
		}
		return nil
	})
	sort.Strings(files[2:])
	return files, err
}

// Heading is a markdown heading outside code blocks.
type Heading struct {
	Level int
	Text  string
	Line  int // 1-based
}

var headingRe = regexp.MustCompile(`^(#{1,6}) (.+?)\s*$`)

// Headings are text's headings, code blocks left out.
func Headings(text string) []Heading {
	var hs []Heading
	fence := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "```") {
			fence = !fence
			continue
		}
		if m := headingRe.FindStringSubmatch(l); m != nil && !fence {
			hs = append(hs, Heading{Level: len(m[1]), Text: m[2], Line: i + 1})
		}
	}
	return hs
}

// Section finds the one section, in all of root's pages, whose heading
// starts with heading ("The HCL language", "CRD platforms"), at any
// level, and returns the page (relative to root) and the section's text:
// from its heading up to the next heading of the same or a higher level.
func Section(root, heading string) (file, text string, err error) {
	heading = strings.TrimLeft(heading, "# ")
	files, err := Files(root)
	if err != nil {
		return "", "", err
	}
	var found []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", "", err
		}
		lines := strings.Split(string(b), "\n")
		hs := Headings(string(b))
		for i, h := range hs {
			if !strings.HasPrefix(h.Text, heading) {
				continue
			}
			end := len(lines)
			for _, n := range hs[i+1:] {
				if n.Level <= h.Level {
					end = n.Line - 1
					break
				}
			}
			file, text = f, strings.Join(lines[h.Line-1:end], "\n")
			found = append(found, fmt.Sprintf("%s:%d", f, h.Line))
		}
	}
	switch len(found) {
	case 0:
		return "", "", fmt.Errorf("no page under %s has a section %q", root, heading)
	case 1:
		return file, text, nil
	}
	return "", "", fmt.Errorf("section %q is ambiguous: %s", heading, strings.Join(found, ", "))
}

// Blocks are the contents of text's fenced code blocks of the given
// language ("hcl", "go", "sh"). A fence indented under a list item has
// that indentation taken off its lines, as markdown does.
func Blocks(text, lang string) []string {
	var out []string
	re := regexp.MustCompile("(?ms)^([ \t]*)```" + regexp.QuoteMeta(lang) + "\n(.*?)^[ \t]*```")
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		lines := strings.SplitAfter(m[2], "\n")
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, m[1])
		}
		out = append(out, strings.Join(lines, ""))
	}
	return out
}

// Generated is the marker pair around a generated part of a page:
// "<!-- BEGIN name: generated ... -->" and "<!-- END name -->".
func markers(name, how string) (begin, end string) {
	return "<!-- BEGIN " + name + ": generated " + how + "; do not edit -->\n", "<!-- END " + name + " -->\n"
}

// CheckGenerated compares the part of the page at path (relative to the
// working directory) between the markers of name with want. With
// update it rewrites the part (the page must hold the markers) and
// reports no difference. how says how the part is made ("from the
// registry by `go test ./providers/platforms -update`"); it is written
// into the begin marker. It returns what is wrong, or "".
func CheckGenerated(path, name, how, want string, update bool) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	page := string(b)
	begin, end := markers(name, how)
	i := strings.Index(page, "<!-- BEGIN "+name+":")
	j := strings.Index(page, end)
	if i < 0 || j < i {
		return fmt.Sprintf("%s has no %s between %q and %q", path, name, begin, end), nil
	}
	k := strings.Index(page[i:], "-->\n")
	got := page[i+k+4 : j]
	if got == want && page[i:i+k+4] == begin {
		return "", nil
	}
	if update {
		return "", os.WriteFile(path, []byte(page[:i]+begin+want+page[j:]), 0o644)
	}
	return fmt.Sprintf("%s's %s is stale: %s\n--- %s\n%s\n--- want\n%s", path, name, how, path, got, want), nil
}

// Slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces as hyphens.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Anchors are the anchors of text's headings, a repeated one numbered
// as GitHub numbers it ("x", "x-1").
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, h := range Headings(text) {
		s := Slug(stripLinks(h.Text))
		if n, ok := seen[s]; ok {
			seen[s] = n + 1
			s = fmt.Sprintf("%s-%d", s, n+1)
		} else {
			seen[s] = 0
		}
		out[s] = true
	}
	return out
}

var linkInHeading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

func stripLinks(s string) string { return linkInHeading.ReplaceAllString(s, "$1") }

// Link is a markdown link outside code.
type Link struct {
	Line   int
	Target string
}

var (
	linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeRe = regexp.MustCompile("`[^`]*`")
)

// Links are text's inline links, those in code blocks and code spans
// left out.
func Links(text string) []Link {
	lines := strings.Split(text, "\n")
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "```") {
			fence = !fence
			lines[i] = ""
		} else if fence {
			lines[i] = ""
		}
	}
	// Code spans may run over a line end: blank them in the whole text,
	// keeping the line ends so that line numbers hold.
	prose := codeRe.ReplaceAllStringFunc(strings.Join(lines, "\n"), func(s string) string {
		return strings.Repeat("\n", strings.Count(s, "\n"))
	})
	var out []Link
	for i, l := range strings.Split(prose, "\n") {
		for _, m := range linkRe.FindAllStringSubmatch(l, -1) {
			out = append(out, Link{Line: i + 1, Target: m[1]})
		}
	}
	return out
}
