package command_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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

// The repository's examples and the README's HCL blocks are in the
// canonical format: `fmt -check` passes on what the docs show.
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
	for _, doc := range []string{"README.md", "examples/quickstart/README.md", "examples/remote/README.md", "examples/kubernetes/README.md", "examples/kubeflow/README.md", "examples/sklearn-digits/README.md", "examples/openpai/README.md", "examples/dlts/README.md", "examples/aml/README.md"} {
		text := repoFile(t, doc)
		blocks := regexp.MustCompile("(?s)```hcl\n(.*?)```").FindAllStringSubmatch(text, -1)
		if doc == "README.md" && len(blocks) < 4 {
			t.Fatalf("README.md: %d hcl blocks, want at least 4", len(blocks))
		}
		for i, b := range blocks {
			if out, code := trialform(t, ".", b[1], "fmt", "-check", "-diff", "-"); code != 0 {
				t.Errorf("%s: hcl block %d is not formatted (exit %d):\n%s", doc, i+1, code, out)
			}
		}
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

// import -help and the README say the same about -all: running or
// ended trials.
func TestImportAllDocumented(t *testing.T) {
	help, code := trialform(t, ".", "", "import", "-help")
	if code != 0 {
		t.Fatalf("import -help: exit %d", code)
	}
	readme := repoFile(t, "README.md")
	sec := readme[strings.Index(readme, "## Importing trials"):]
	for what, text := range map[string]string{"import -help": help, "README": sec} {
		if !strings.Contains(text, "running or ended") {
			t.Errorf("%s does not say -all takes running or ended trials:\n%s", what, text)
		}
	}
}
