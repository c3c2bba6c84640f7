package gitinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDescribe: the commit git itself reports; a change below the
// directory makes it dirty, one elsewhere in the repository or in a
// skipped directory (trialform's state) does not; a directory outside any
// repository is no error.
func TestDescribe(t *testing.T) {
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q")
	write(t, filepath.Join(repo, "exp", "main.hcl"), "a")
	write(t, filepath.Join(repo, "code", "train.py"), "b")
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "-qm", "one")
	head := gitRun(t, repo, "rev-parse", "HEAD")

	info, err := Describe(filepath.Join(repo, "exp"), filepath.Join(repo, "exp", ".trialform"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Commit != head || info.Dirty() || !info.InRepo() || info.Short() != head[:12] {
		t.Fatalf("clean: %+v (short %q), want commit %s", info, info.Short(), head)
	}

	write(t, filepath.Join(repo, "exp", ".trialform", "state.json"), "{}")
	write(t, filepath.Join(repo, "code", "train.py"), "changed")
	if info, _ = Describe(filepath.Join(repo, "exp"), filepath.Join(repo, "exp", ".trialform")); info.Dirty() {
		t.Errorf("changes outside exp/ and in its state dir made it dirty: %v", info.Changed)
	}
	code, _ := Describe(filepath.Join(repo, "code"))
	if !code.Dirty() || !slices.Equal(code.Changed, []string{"code/train.py"}) || code.Short() != head[:12]+"-dirty" {
		t.Errorf("code/: %+v", code)
	}

	write(t, filepath.Join(repo, "exp", "new.hcl"), "untracked")
	if info, _ = Describe(filepath.Join(repo, "exp"), filepath.Join(repo, "exp", ".trialform")); !slices.Equal(info.Changed, []string{"exp/new.hcl"}) {
		t.Errorf("an untracked definition: %v", info.Changed)
	}
	write(t, filepath.Join(repo, ".gitignore"), "*.log\n")
	write(t, filepath.Join(repo, "exp", "run.log"), "ignored")
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "-qm", "two")
	if info, _ = Describe(filepath.Join(repo, "exp"), filepath.Join(repo, "exp", ".trialform")); info.Dirty() || info.Commit == head {
		t.Errorf("after the second commit (ignored run.log): %+v", info)
	}

	out, err := Describe(t.TempDir())
	if err != nil || out.InRepo() || out.Short() != "" {
		t.Errorf("outside a repository: %+v, %v", out, err)
	}
}
