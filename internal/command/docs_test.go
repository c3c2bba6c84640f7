package command_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/docs"
)

func repoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func trialform(t *testing.T, dir string, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "trialform"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// The repository's examples and the HCL blocks of every page of the
// docs (README.md, CONTRIBUTING.md, docs/, examples/*/README.md) are in
// the canonical format: `fmt -check` passes on what the docs show.
func TestDocsAreFormatted(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "examples", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples (%v)", err)
	}
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		if out, code := trialform(t, ".", "", "fmt", "-check", "-diff", d); code != 0 {
			t.Errorf("fmt -check %s: exit %d\n%s", d, code, out)
		}
	}
	pages, err := docs.Files(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range examples {
		rel, _ := filepath.Rel(filepath.Join("..", ".."), e)
		pages = append(pages, rel)
	}
	n := 0
	for _, doc := range pages {
		text := repoFile(t, doc)
		blocks := docs.Blocks(text, "hcl")
		n += len(blocks)
		for i, b := range blocks {
			if out, code := trialform(t, ".", b, "fmt", "-check", "-diff", "-"); code != 0 {
				t.Errorf("%s: hcl block %d is not formatted (exit %d):\n%s", doc, i+1, code, out)
			}
		}
	}
	if n < 11 {
		t.Fatalf("%d hcl blocks in the docs and examples, want at least 11 (the README held 11 before the split)", n)
	}
}

// The README states the Go version go.mod needs.
func TestReadmeGoVersion(t *testing.T) {
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(repoFile(t, "go.mod"))
	if m == nil {
		t.Fatal("no go line in go.mod")
	}
	if !strings.Contains(repoFile(t, "README.md"), "Go "+m[1]+"+") {
		t.Fatalf("README.md does not say Go %s+ (go.mod's go line)", m[1])
	}
}

// The tour's sample plan is the real plan of examples/quickstart.
func TestReadmeTourPlanIsReal(t *testing.T) {
	readme := repoFile(t, "README.md")
	tour := readme[strings.Index(readme, "## A 5-minute tour"):]
	i := strings.Index(tour, "```\ntrialform will perform")
	if i < 0 {
		t.Fatal("README's tour has no sample plan")
	}
	want := tour[i+4:]
	want = want[:strings.Index(want, "```\n")]

	dir := t.TempDir()
	src := filepath.Join("..", "..", "examples", "quickstart")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, _ := os.ReadFile(filepath.Join(src, e.Name()))
			os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
		}
	}
	got, code := trialform(t, dir, "", "plan", "-no-color")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, got)
	}
	if got != want {
		t.Fatalf("README's sample plan is stale.\nREADME:\n%s\nreal plan:\n%s", want, got)
	}
}

// import -help and the docs (docs/import.md) say the same about -all: running or
// ended trials.
func TestImportAllDocumented(t *testing.T) {
	help, code := trialform(t, ".", "", "import", "-help")
	if code != 0 {
		t.Fatalf("import -help: exit %d", code)
	}
	file, sec, err := docs.Section(filepath.Join("..", ".."), "Importing trials")
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"import -help": help, file: sec} {
		if !strings.Contains(text, "running or ended") {
			t.Errorf("%s does not say -all takes running or ended trials:\n%s", what, text)
		}
	}
}

// README.md's two set-up commands are the targets the Makefile has, and
// CI (.ci/run) runs the test command README.md documents.
func TestReadmeSetUpCommands(t *testing.T) {
	readme := repoFile(t, "README.md")
	_, sec, err := docs.Section(filepath.Join("..", ".."), "Set up")
	if err != nil {
		t.Fatal(err)
	}
	blocks := docs.Blocks(sec, "sh")
	if len(blocks) == 0 {
		t.Fatal("README.md's Set up has no sh block")
	}
	var cmds []string
	for _, l := range strings.Split(blocks[0], "\n") {
		if c, _, _ := strings.Cut(l, "#"); strings.TrimSpace(c) != "" {
			cmds = append(cmds, strings.TrimSpace(c))
		}
	}
	if len(cmds) != 2 || cmds[0] != "make demo" || cmds[1] != "make test" {
		t.Fatalf("README.md's set-up commands are %q, want make demo and make test", cmds)
	}
	makefile := repoFile(t, "Makefile")
	for _, c := range cmds {
		if !regexp.MustCompile(`(?m)^` + strings.TrimPrefix(c, "make ") + `:`).MatchString(makefile) {
			t.Errorf("README.md says %q; the Makefile has no such target", c)
		}
	}
	ci := repoFile(t, ".ci/run")
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cmds[1]) + `$`).MatchString(ci) {
		t.Errorf(".ci/run does not run %q, the test command README.md documents:\n%s", cmds[1], ci)
	}
	if !strings.Contains(readme, "](docs/cli/README.md)") || !strings.Contains(readme, "](CONTRIBUTING.md)") {
		t.Error("README.md does not link the commands' reference and CONTRIBUTING.md")
	}
}
