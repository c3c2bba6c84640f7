package command

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/internal/docs"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/cli from the commands' help")

const cliDocsHow = "from the commands' -help by `go test ./internal/command -run TestCLIDocs -update`"

// cliPage is the page of a command: "plan" -> plan.md, "state mv" ->
// state-mv.md.
func cliPage(name string) string { return strings.ReplaceAll(name, " ", "-") + ".md" }

// cliDoc is a command's page: its -help, as the command prints it.
func cliDoc(t *testing.T, name string) string {
	t.Helper()
	code, out, errs := runCaptured(append(strings.Fields(name), "-help")...)
	if code != 0 || errs != "" {
		t.Fatalf("%s -help: exit %d, stderr %q", name, code, errs)
	}
	return fmt.Sprintf("# trialform %s\n\n<!-- generated %s; do not edit -->\n\n[All commands](README.md)\n\n```text\n%s```\n", name, cliDocsHow, out)
}

// summary is what the index says of a command: its summary in the list
// of commands, or a state subcommand's first sentence.
func summary(name string) string {
	for _, c := range commands() {
		if c.name == name {
			return c.summary
		}
	}
	d := strings.Join(strings.Fields(helps[name].desc), " ")
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i]
	}
	return strings.TrimSuffix(d, ".")
}

// TestCLIDocs fails when a page of docs/cli is not what its command's
// -help prints, when a command has no page or a page no command, or when
// the index (docs/cli/README.md) does not list every command; -update
// rewrites them. Every command documented there is documented here,
// from the one source: its help.
func TestCLIDocs(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "cli")
	var names []string
	for name := range helps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, c := range commands() {
		if _, ok := helps[c.name]; !ok && !c.hidden {
			t.Errorf("command %s has no help, so no page in docs/cli", c.name)
		}
	}
	var index strings.Builder
	pages := map[string]bool{"README.md": true}
	for _, name := range names {
		page := cliPage(name)
		pages[page] = true
		index.WriteString(decl.Wrap(fmt.Sprintf("[`trialform %s`](%s): %s", name, page, summary(name)), "- ", "  ", 100) + "\n")
		want := cliDoc(t, name)
		path := filepath.Join(dir, page)
		got, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if string(got) == want {
			continue
		}
		if *updateDocs {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is stale (run go test ./internal/command -run TestCLIDocs -update):\n--- %s\n%s\n--- %s -help\n%s", path, path, got, name, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !pages[e.Name()] {
			if *updateDocs {
				os.Remove(filepath.Join(dir, e.Name()))
				continue
			}
			t.Errorf("docs/cli/%s documents no command (run -update to remove it)", e.Name())
		}
	}
	msg, err := docs.CheckGenerated(filepath.Join(dir, "README.md"), "command index", cliDocsHow, index.String(), *updateDocs)
	if err != nil {
		t.Fatal(err)
	}
	if msg != "" {
		t.Error(msg)
	}
}
