package docs

import (
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the pages' generated tables of contents")

const root = "../.."

func pages(t *testing.T) map[string]string {
	t.Helper()
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d pages: %v", len(files), files)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

// Every relative link of every page leads to a file or directory of the
// repository, and a link with an anchor to a heading of that page.
func TestDocLinks(t *testing.T) {
	all := pages(t)
	n := 0
	for page, text := range all {
		for _, l := range Links(text) {
			if strings.Contains(l.Target, "://") || strings.HasPrefix(l.Target, "mailto:") {
				continue
			}
			n++
			target, frag, _ := strings.Cut(l.Target, "#")
			file := page
			if target != "" {
				file = path.Join(path.Dir(page), target)
				if _, err := os.Stat(filepath.Join(root, file)); err != nil {
					t.Errorf("%s:%d: link %s: no file %s", page, l.Line, l.Target, file)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			dest, ok := all[file]
			if !ok {
				b, err := os.ReadFile(filepath.Join(root, file))
				if err != nil {
					t.Errorf("%s:%d: link %s: %v", page, l.Line, l.Target, err)
					continue
				}
				dest = string(b)
			}
			if !Anchors(dest)[frag] {
				t.Errorf("%s:%d: link %s: %s has no heading with anchor #%s", page, l.Line, l.Target, file, frag)
			}
		}
	}
	if n < 30 {
		t.Errorf("only %d relative links checked: is Links broken?", n)
	}
}

// The link checker sees what it must: a broken link and a missing anchor
// fail it, a link in code does not count.
func TestLinksAndAnchors(t *testing.T) {
	text := "# A title\n\nSee [x](a.md#b-c) and `[no](code.md)`\n```\n[no](fence.md)\n```\n## B, c?\n## B, c?\n"
	ls := Links(text)
	if len(ls) != 1 || ls[0].Target != "a.md#b-c" || ls[0].Line != 3 {
		t.Errorf("links %+v", ls)
	}
	a := Anchors(text)
	if !a["a-title"] || !a["b-c"] || !a["b-c-1"] || len(a) != 3 {
		t.Errorf("anchors %v", a)
	}
	if b := Blocks("- item:\n\n  ```hcl\n  a = 1\n    b = 2\n  ```\n```hcl\nc = 3\n```\n", "hcl"); len(b) != 2 || b[0] != "a = 1\n  b = 2\n" || b[1] != "c = 3\n" {
		t.Errorf("blocks %q", b)
	}
	if s := Slug("Platforms — status"); s != "platforms--status" {
		t.Errorf("slug %q", s)
	}
}

// No line of prose is over 200 characters (code blocks show real output
// and are left as they are).
func TestDocLineLength(t *testing.T) {
	for page, text := range pages(t) {
		fence := false
		for i, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimLeft(l, " \t"), "```") {
				fence = !fence
			}
			if !fence && len([]rune(l)) > 200 {
				t.Errorf("%s:%d: %d characters (at most 200; wrap it, or make a long table a list)", page, i+1, len([]rune(l)))
			}
		}
	}
}

// contentsLines: a page longer than this has a table of contents.
const contentsLines = 120

const contentsHow = "by `go test ./internal/docs -run TestDocContents -update`"

// Contents is the table of contents of a page: its level-2 and level-3
// headings, linked.
func Contents(text string) string {
	var b strings.Builder
	seen := map[string]int{}
	for _, h := range Headings(text) {
		s := Slug(stripLinks(h.Text))
		if n, ok := seen[s]; ok {
			seen[s] = n + 1
			s = fmt.Sprintf("%s-%d", s, n+1)
		} else {
			seen[s] = 0
		}
		if h.Level < 2 || h.Level > 3 {
			continue
		}
		fmt.Fprintf(&b, "%s- [%s](#%s)\n", strings.Repeat("  ", h.Level-2), stripLinks(h.Text), s)
	}
	return b.String()
}

// Every long page has a table of contents, generated from its headings;
// -update writes it (after the page's first paragraph when it has none).
func TestDocContents(t *testing.T) {
	for page, text := range pages(t) {
		if strings.Count(text, "\n") <= contentsLines || page == "docs/benchmarks-history.md" {
			continue
		}
		file := filepath.Join(root, page)
		if *update && !strings.Contains(text, "<!-- BEGIN contents:") {
			begin, end := markers("contents", contentsHow)
			// after the title and the paragraph under it
			i := strings.Index(text, "\n\n")
			if j := strings.Index(text[i+2:], "\n\n"); j >= 0 && !strings.HasPrefix(text[i+2:], "#") {
				i += 2 + j
			}
			text = text[:i+2] + "**Contents**\n\n" + begin + end + "\n" + text[i+2:]
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		msg, err := CheckGenerated(file, "contents", contentsHow, Contents(text), *update)
		if err != nil {
			t.Fatal(err)
		}
		if msg != "" {
			t.Error(msg)
		}
	}
}
