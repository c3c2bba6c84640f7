package controller

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/trialform/trialform/internal/testdeps"
)

// upstream is a real git repository (the git binary) the tests commit to.
type upstream struct {
	t   *testing.T
	dir string
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testdeps.Require(t, "git", "the git binary is not on PATH (scripts/deps.sh installs it)")
	}
	u := &upstream{t: t, dir: filepath.Join(t.TempDir(), "up")}
	os.MkdirAll(filepath.Join(u.dir, "defs"), 0o755)
	u.git("init", "-q", "-b", "main")
	u.commit("0")
	return u
}

func (u *upstream) git(args ...string) string {
	u.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = u.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		u.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit commits defs/main.hcl holding text and returns the commit.
func (u *upstream) commit(text string) string {
	u.t.Helper()
	if err := os.WriteFile(filepath.Join(u.dir, "defs", "main.hcl"), []byte("# "+text+"\n"), 0o644); err != nil {
		u.t.Fatal(err)
	}
	u.git("add", "-A")
	u.git("commit", "-q", "-m", text)
	return u.git("rev-parse", "HEAD")
}

func packCount(t *testing.T, dir string) int {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return len(packs)
}

// TestSyncKeepsCheckoutBounded follows 60 commits, one fetch each, as a
// controller that runs for days does: go-git wrote one pack per fetch and
// never packed them together (61 packs here; 300 commits made each
// fetch and checkout 13 times slower). The checkout now stays within
// MaxPacks (16) packs, plus the one just fetched, each sync checks out the right commit, and a commit a
// force-push dropped does not stay in the checkout.
func TestSyncKeepsCheckoutBounded(t *testing.T) {
	u := newUpstream(t)
	s := &Source{URL: u.dir, Branch: "main", Path: "defs", Dir: filepath.Join(t.TempDir(), "checkout")}
	ctx := context.Background()
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	dropped := u.commit("dropped")
	if got, err := s.Sync(ctx); err != nil || got != dropped {
		t.Fatalf("sync: %s, %v; want %s", got, err, dropped)
	}
	u.git("reset", "-q", "--hard", "HEAD~1") // a force-push
	most := 0
	for i := 1; i <= 60; i++ {
		want := u.commit(fmt.Sprint(i))
		got, err := s.Sync(ctx)
		if err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		b, _ := os.ReadFile(filepath.Join(s.DefinitionsDir(), "main.hcl"))
		if got != want || string(b) != fmt.Sprintf("# %d\n", i) {
			t.Fatalf("sync %d checked out %s holding %q, want %s", i, got, b, want)
		}
		most = max(most, packCount(t, s.Dir))
	}
	if most > 17 {
		t.Errorf("the checkout held up to %d packs after 62 fetches; want at most 17", most)
	}
	repo, err := git.PlainOpen(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CommitObject(plumbing.NewHash(dropped)); err == nil {
		t.Errorf("the checkout still holds commit %s, which a force-push dropped", dropped)
	}
}

// TestSyncBranchGone: a branch deleted or renamed in the repository is
// said in those words with what to do, for a clone as for a fetch (it
// was go-git's `couldn't find remote ref "refs/heads/main"`); once the
// branch is back, the next sync checks it out.
func TestSyncBranchGone(t *testing.T) {
	u := newUpstream(t)
	s := &Source{URL: u.dir, Branch: "main", Path: "defs", Dir: filepath.Join(t.TempDir(), "checkout")}
	ctx := context.Background()
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	u.git("branch", "-m", "main", "trunk")
	for _, what := range []string{"fetch", "clone"} {
		if what == "clone" {
			os.RemoveAll(s.Dir)
		}
		got, err := s.Sync(ctx)
		if err == nil || got != "" {
			t.Fatalf("%s of a renamed branch: %q, %v", what, got, err)
		}
		for _, want := range []string{"branch main is not in " + u.dir + " (deleted or renamed?)", "-branch"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s of a renamed branch: %v; want it to say %q", what, err, want)
			}
		}
	}
	u.git("branch", "-m", "trunk", "main")
	want := u.commit("back")
	if got, err := s.Sync(ctx); err != nil || got != want {
		t.Fatalf("sync once the branch is back: %s, %v; want %s", got, err, want)
	}
}
