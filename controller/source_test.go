package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
		want := []string{"branch main is not in " + u.dir + " (deleted or renamed?), whose only branch is trunk: restart the controller with -branch trunk, or push branch main"}
		if what == "clone" {
			// (a work directory that never followed it: nothing says it
			// was deleted)
			want = []string{"branch main is not in " + u.dir + ", whose only branch is trunk: restart the controller with -branch trunk, or push branch main"}
		}
		for _, want := range want {
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

// TestSyncNoSuchBranch: a newcomer's -branch that the repository never
// had (left at main for a repository whose branch is master, or
// misspelled), or a repository with no branch at all, is said with the
// branches it has and the -branch to give; before, "deleted or renamed?:
// push it again", of a branch that never was, and for an empty repository
// go-git's "remote repository is empty".
func TestSyncNoSuchBranch(t *testing.T) {
	u := newUpstream(t)
	u.git("branch", "-m", "main", "master")
	u.git("branch", "develop")
	ctx := context.Background()
	for _, tt := range []struct{ branch, want string }{
		{"main", "branch main is not in " + u.dir + ", whose branches are develop, master: restart the controller with -branch naming the branch to follow, or push branch main"},
		{"mastr", "branch mastr is not in " + u.dir + ", whose branches are develop, master: restart the controller with -branch master (the closest name) or another of them, or push branch mastr"},
	} {
		s := &Source{URL: u.dir, Branch: tt.branch, Path: "defs", Dir: filepath.Join(t.TempDir(), "checkout")}
		if _, err := s.Sync(ctx); err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "deleted") {
			t.Errorf("-branch %s: %v; want %q", tt.branch, err, tt.want)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	(&upstream{t: t, dir: t.TempDir()}).git("init", "-q", "-b", "main", empty)
	s := &Source{URL: empty, Branch: "main", Dir: filepath.Join(t.TempDir(), "checkout")}
	want := "branch main is not in " + empty + ", which has no branch: push the definitions to branch main"
	if _, err := s.Sync(ctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an empty repository: %v; want %q", err, want)
	}
}

// httpUpstream serves u over smart HTTP (the git binary's git-http-backend,
// as a forge does), answering only requests with basic auth user:token.
func httpUpstream(t *testing.T, u *upstream, user, token string) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		testdeps.Require(t, "git-http-backend", "the git binary has no git-http-backend (Debian's git package has it)")
	}
	u.git("config", "http.receivepack", "false")
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(u.dir), "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gotUser, gotToken, ok := r.BasicAuth(); !ok || gotUser != user || gotToken != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + filepath.Base(u.dir)
}

// TestSyncKeepsNoTokenOnDisk: a token written in the repository URL
// (https://oauth2:TOKEN@host/..., as the docs allow) is used to fetch but
// never written into the checkout. go-git kept the URL as the origin
// remote's in .git/config, inside the checkout: a commit with code_dir =
// "../.git" (inside the repository, so allowed) then shipped the token to
// every trial, in a Kubernetes ConfigMap or a remote machine's copy.
func TestSyncKeepsNoTokenOnDisk(t *testing.T) {
	const token = "glpat-in-url-secret7"
	for _, c := range []struct{ user, password, userinfo string }{
		{"oauth2", token, "oauth2:" + token},
		{token, "", token}, // https://TOKEN@host/... (GitHub, GitLab)
	} {
		u := newUpstream(t)
		base := httpUpstream(t, u, c.user, c.password)
		repoURL := strings.Replace(base, "http://", "http://"+c.userinfo+"@", 1)
		s := &Source{URL: repoURL, Branch: "main", Path: "defs", Dir: filepath.Join(t.TempDir(), "checkout")}
		ctx := context.Background()
		if _, err := s.Sync(ctx); err != nil {
			t.Fatalf("clone of %s: %v", Redact(repoURL, token), err)
		}
		want := u.commit("next")
		if got, err := s.Sync(ctx); err != nil || got != want {
			t.Fatalf("fetch: %s, %v; want %s", got, err, want)
		}
		noToken := func(when string) {
			filepath.WalkDir(s.Dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				if b, _ := os.ReadFile(p); strings.Contains(string(b), token) {
					t.Errorf("%s: %s holds the token of the URL:\n%s", when, p, b)
				}
				return nil
			})
		}
		noToken("after a clone and a fetch")
		// A checkout an earlier trialform cloned with the token in its
		// config: the next fetch takes it out.
		cmd := exec.Command("git", "-C", s.Dir, "config", "remote.origin.url", repoURL)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git config: %v\n%s", err, out)
		}
		if _, err := s.Sync(ctx); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		noToken("after a fetch into a checkout that held the token")
	}
}

// TestSyncFollowsRepoChange: a checkout kept from an earlier run (a work
// directory on a volume) fetches from the -repo given now. It fetched
// from the URL it was cloned with for ever: a controller restarted with
// another -repo (the repository moved, a token rotated in the URL) kept
// following the old one and said nothing.
func TestSyncFollowsRepoChange(t *testing.T) {
	old, moved := newUpstream(t), newUpstream(t)
	s := &Source{URL: old.dir, Branch: "main", Path: "defs", Dir: filepath.Join(t.TempDir(), "checkout")}
	ctx := context.Background()
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	old.commit("old")
	want := moved.commit("moved")
	s.URL = moved.dir
	got, err := s.Sync(ctx)
	if err != nil || got != want {
		t.Fatalf("sync after -repo changed: %s, %v; want %s (of %s)", got, err, want, moved.dir)
	}
	if b, _ := os.ReadFile(filepath.Join(s.DefinitionsDir(), "main.hcl")); string(b) != "# moved\n" {
		t.Errorf("main.hcl is %q, want the new repository's", b)
	}
}

// TestSyncWritesOnlyInCheckout: a commit cannot make the checkout write
// outside its directory through a symbolic link: neither a link that a
// later commit replaces by a directory of files, nor a crafted tree (git
// mktree takes it, and a push to a server without fsck too) holding a
// link and a directory of the same name. (go-git removes a link in the
// way before it writes; this holds it to that.)
func TestSyncWritesOnlyInCheckout(t *testing.T) {
	u := newUpstream(t)
	outside := t.TempDir()
	s := &Source{URL: u.dir, Branch: "main", Path: "defs", Dir: filepath.Join(t.TempDir(), "checkout")}
	ctx := context.Background()
	if err := os.Symlink(outside, filepath.Join(u.dir, "defs", "out")); err != nil {
		t.Fatal(err)
	}
	u.commit("link")
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(u.dir, "defs", "out"))
	os.MkdirAll(filepath.Join(u.dir, "defs", "out"), 0o755)
	os.WriteFile(filepath.Join(u.dir, "defs", "out", "pwn"), []byte("pwned\n"), 0o644)
	u.commit("dir")
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// A tree with "x" both a link out and a directory holding "pwn".
	blob := strings.TrimSpace(u.gitIn("pwned\n", "hash-object", "-w", "--stdin"))
	link := strings.TrimSpace(u.gitIn(outside, "hash-object", "-w", "--stdin"))
	sub := strings.TrimSpace(u.gitIn("100644 blob "+blob+"\tpwn\n", "mktree"))
	defs := strings.TrimSpace(u.gitIn("120000 blob "+link+"\tx\n040000 tree "+sub+"\tx\n", "mktree"))
	root := strings.TrimSpace(u.gitIn("040000 tree "+defs+"\tdefs\n", "mktree"))
	crafted := u.git("commit-tree", root, "-p", "HEAD", "-m", "crafted")
	u.git("update-ref", "refs/heads/main", crafted)
	got, err := s.Sync(ctx)
	t.Logf("the crafted commit: %s, %v", got, err)
	// The repository answered: the commit is bad, not the source
	// unreachable (it was "git sync failed", source_reachable 0 and a
	// back-off, as for a network error).
	if got != strings.TrimSpace(crafted) || err == nil || !strings.Contains(err.Error(), "cannot be checked out") {
		t.Errorf("Sync of a tree git cannot write: %q, %v; want the commit %s and an error saying it cannot be checked out", got, err, strings.TrimSpace(crafted))
	}
	entries, _ := os.ReadDir(outside)
	for _, e := range entries {
		t.Errorf("the checkout wrote %s outside its directory", filepath.Join(outside, e.Name()))
	}
}

// gitIn runs git with stdin.
func (u *upstream) gitIn(stdin string, args ...string) string {
	u.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = u.dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		u.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestSyncSaysWhatToDoWhenRefused: a repository that asks for
// credentials, refuses the ones given, or is not there says what to do
// (before: "authentication required: unauthorized\n", the server's
// answer with its newline, and nothing about -git-token-file).
func TestSyncSaysWhatToDoWhenRefused(t *testing.T) {
	u := newUpstream(t)
	base := httpUpstream(t, u, "git", "good-token")
	ctx := context.Background()
	sync := func(s *Source) string {
		t.Helper()
		_, err := s.Sync(ctx)
		if err == nil {
			t.Fatalf("sync of %s: no error", s.URL)
		}
		if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "::") {
			t.Errorf("error %q holds a newline or a doubled colon", err)
		}
		return err.Error()
	}
	dir := func() string { return filepath.Join(t.TempDir(), "checkout") }
	for _, c := range []struct {
		name string
		s    *Source
		want string
	}{
		{"no token", &Source{URL: base, Branch: "main", Dir: dir()},
			"authentication required: unauthorized: the repository asks for credentials and none were given: give an HTTPS access token with -git-token-file"},
		{"wrong token", &Source{URL: base, Branch: "main", Dir: dir(), Creds: Credentials{Token: "bad-token"}},
			"authentication required: unauthorized: the credentials were refused: check that the token"},
		{"not there", &Source{URL: filepath.Join(t.TempDir(), "nope"), Branch: "main", Dir: dir()},
			"repository not found: check -repo"},
	} {
		if got := sync(c.s); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to hold %q", c.name, got, c.want)
		}
	}
	// A fetch into a checkout cloned with the token, once it was revoked.
	s := &Source{URL: base, Branch: "main", Path: "defs", Dir: dir(), Creds: Credentials{Token: "good-token"}}
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	s.Creds.Token = "revoked"
	if got, want := sync(s), "fetch "+base+" (branch main): authentication required: unauthorized: the credentials were refused"; !strings.HasPrefix(got, want) {
		t.Errorf("fetch with a revoked token: %q, want it to start with %q", got, want)
	}
}

// TestSyncLocalNotARepository: a -repo on this machine that is not a git
// repository says what it is and what to give instead: the definitions'
// directory inside a repository (-repo its root, -path the directory), a
// working copy never committed, a file. Before, "repository not found:
// check -repo", or go-git's "invalid gitfile format".
func TestSyncLocalNotARepository(t *testing.T) {
	u := newUpstream(t)
	plain := t.TempDir()
	ctx := context.Background()
	for _, tt := range []struct{ repo, want string }{
		{filepath.Join(u.dir, "defs"), "it is a directory inside the git repository " + u.dir + ": give -repo " + u.dir + " and -path defs"},
		{"file://" + filepath.Join(u.dir, "defs"), "give -repo " + u.dir + " and -path defs"},
		{plain, "it is a directory, not a git repository: commit the definitions in a git repository"},
		{filepath.Join(u.dir, "defs", "main.hcl"), "it is a file: -repo names a git repository"},
		{filepath.Join(plain, "missing"), "repository not found: check -repo"},
	} {
		s := &Source{URL: tt.repo, Branch: "main", Dir: filepath.Join(t.TempDir(), "checkout")}
		if _, err := s.Sync(ctx); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("-repo %s: %v; want %q", tt.repo, err, tt.want)
		}
	}
}

// TestSyncTwoOnOneCheckout: two controllers given one -work-dir (one
// standing by beside the holder of the claim) sync one checkout, each
// under Lock, while commits land. Each sync succeeds and leaves the
// checkout holding one of the commits' definitions whole. Without the
// lock they failed with "ref file is empty", "remote already exists"
// and a checkout's "EOF" (the controller_claim script, once in 40 runs
// under load; here within the first rounds).
func TestSyncTwoOnOneCheckout(t *testing.T) {
	u := newUpstream(t)
	dir := filepath.Join(t.TempDir(), "checkout")
	ctx := context.Background()
	const rounds = 40
	errs := make(chan error, 2*rounds)
	done := make(chan struct{})
	for i := 0; i < 2; i++ {
		s := &Source{URL: u.dir, Branch: "main", Path: "defs", Dir: dir}
		go func() {
			defer func() { done <- struct{}{} }()
			for r := 0; r < rounds; r++ {
				unlock, err := s.Lock(ctx)
				if err != nil {
					errs <- err
					return
				}
				_, err = s.Sync(ctx)
				if err == nil {
					var b []byte
					b, err = os.ReadFile(filepath.Join(s.DefinitionsDir(), "main.hcl"))
					if err == nil && !strings.HasPrefix(string(b), "# ") {
						err = fmt.Errorf("main.hcl holds %q, no commit's", b)
					}
				}
				unlock()
				if err != nil {
					errs <- fmt.Errorf("round %d: %w", r, err)
				}
			}
		}()
	}
	for i := 0; i < rounds/2; i++ {
		u.commit(fmt.Sprintf("c%d", i))
	}
	<-done
	<-done
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	if n > 5 {
		t.Errorf("and %d more", n-5)
	}
}

// TestLockGivesUpWithItsContext: a controller stopping while another
// holds the checkout's lock stops waiting.
func TestLockGivesUpWithItsContext(t *testing.T) {
	s := &Source{Dir: filepath.Join(t.TempDir(), "checkout")}
	unlock, err := s.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second Lock while the first is held: %v, want it to give up with its context", err)
	}
	unlock()
	again, err := s.Lock(context.Background())
	if err != nil {
		t.Fatalf("Lock once given back: %v", err)
	}
	again()
}

// TestSyncRepairsWhatACrashLeaves: go-git rewrites a ref file and the
// index in place (truncate, then write), so a controller killed at that
// moment leaves an empty ref or a truncated index in its checkout. Every
// later fetch failed with "ref file is empty", or every checkout with
// "unexpected EOF" blamed on the commit's tree, and the controller kept
// its old definitions for good. Sync now repairs the checkout and checks
// out the head.
func TestSyncRepairsWhatACrashLeaves(t *testing.T) {
	cases := map[string]func(dir string) error{
		"empty remote ref": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ".git", "refs", "remotes", "origin", "main"), nil, 0o644)
		},
		"empty branch ref": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ".git", "refs", "heads", "main"), nil, 0o644)
		},
		"truncated index": func(dir string) error {
			idx := filepath.Join(dir, ".git", "index")
			b, err := os.ReadFile(idx)
			if err != nil {
				return err
			}
			return os.WriteFile(idx, b[:len(b)/2], 0o644)
		},
		"empty index": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ".git", "index"), nil, 0o644)
		},
	}
	for name, crash := range cases {
		t.Run(name, func(t *testing.T) {
			u := newUpstream(t)
			s := &Source{URL: u.dir, Branch: "main", Path: "defs", Dir: filepath.Join(t.TempDir(), "checkout")}
			ctx := context.Background()
			if _, err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if err := crash(s.Dir); err != nil {
				t.Fatal(err)
			}
			want := u.commit("after the crash")
			got, err := s.Sync(ctx)
			if err != nil || got != want {
				t.Fatalf("sync after the crash: %s, %v; want %s", got, err, want)
			}
			if b, _ := os.ReadFile(filepath.Join(s.DefinitionsDir(), "main.hcl")); string(b) != "# after the crash\n" {
				t.Errorf("main.hcl is %q, want the head's", b)
			}
			want = u.commit("next")
			if got, err := s.Sync(ctx); err != nil || got != want {
				t.Fatalf("the sync after: %s, %v; want %s", got, err, want)
			}
		})
	}
}

// TestSyncKeepsTrialFiles: on the local platform a trial runs with its
// code_dir in the checkout as working directory, and what it writes there
// (a data set it downloads to ./data, a checkpoint, Python's __pycache__)
// is not the commit's. go-git's forced checkout removed every file the
// commit does not hold, at every pass (each -interval): a trial's data set
// vanished while it read it. A sync now restores the commit's files,
// removes those an earlier commit held that this one does not, and keeps
// any other file; except a *.hcl file in the definitions' directory, where
// only the commit's definitions are read.
func TestSyncKeepsTrialFiles(t *testing.T) {
	u := newUpstream(t)
	write := func(dir, name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(u.dir, "defs/trial.py", "print(1)\n")
	write(u.dir, "defs/old.py", "old\n")
	u.commit("1")
	s := &Source{URL: u.dir, Branch: "main", Path: "defs", Dir: filepath.Join(t.TempDir(), "checkout")}
	ctx := context.Background()
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	defs := s.DefinitionsDir()
	kept := []string{"data/mnist.bin", "ckpt.pt", "__pycache__/trial.cpython-311.pyc"}
	for _, f := range kept {
		write(defs, f, "a trial's\n")
	}
	write(defs, "extra.hcl", "# not the commit's\n")
	write(defs, "main.hcl", "# edited in the checkout\n")
	os.Remove(filepath.Join(defs, "trial.py"))
	check := func(when, mainHCL string, gone ...string) {
		t.Helper()
		for _, f := range kept {
			if b, err := os.ReadFile(filepath.Join(defs, filepath.FromSlash(f))); err != nil || string(b) != "a trial's\n" {
				t.Errorf("%s: the trial's file %s: %q, %v; want it kept", when, f, b, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(defs, "main.hcl")); string(b) != mainHCL {
			t.Errorf("%s: main.hcl is %q, want %q", when, b, mainHCL)
		}
		if b, err := os.ReadFile(filepath.Join(defs, "trial.py")); err != nil || string(b) != "print(1)\n" {
			t.Errorf("%s: trial.py: %q, %v; want the commit's", when, b, err)
		}
		for _, f := range append(gone, "extra.hcl") {
			if _, err := os.Stat(filepath.Join(defs, f)); err == nil {
				t.Errorf("%s: %s is still in the checkout", when, f)
			}
		}
	}
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	check("the same commit", "# 1\n")
	write(defs, "extra.hcl", "# not the commit's\n")
	os.Remove(filepath.Join(u.dir, "defs", "old.py"))
	u.commit("2")
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	check("the next commit", "# 2\n", "old.py")
	// Without an index (a crash's, removed): what the commit before held
	// still goes.
	write(u.dir, "defs/old.py", "old\n")
	u.commit("3")
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(s.Dir, ".git", "index"))
	os.Remove(filepath.Join(u.dir, "defs", "old.py"))
	u.commit("4")
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	check("the commit after a lost index", "# 4\n", "old.py")
}

// TestSyncRepairsWhatAKilledFetchLeaves: a controller killed during a
// fetch leaves go-git's temporary pack file (tmp_pack_*, as big as what
// it fetched), which nothing removed: a controller in a crash loop (its
// memory limit, a liveness probe) filled its volume, a clone's worth per
// kill. Killed while go-git wrote the pack's index (it writes the index
// in place, then renames the pack beside it) it left a truncated index
// with no pack, which the next fetch of the same objects kept (an index
// that exists is not written again): every later checkout failed
// ("object not found", blamed on the commit) for good.
func TestSyncRepairsWhatAKilledFetchLeaves(t *testing.T) {
	u := newUpstream(t)
	ctx := context.Background()
	tmp := t.TempDir()
	s := &Source{URL: u.dir, Branch: "main", Path: "defs", Dir: filepath.Join(tmp, "checkout")}
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// killed: a copy of the checkout taken before the fetch that the
	// original then completes.
	killed := &Source{URL: u.dir, Branch: "main", Path: "defs", Dir: filepath.Join(tmp, "killed")}
	if out, err := exec.Command("cp", "-a", s.Dir, killed.Dir).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	for i := 0; i < 50; i++ {
		os.WriteFile(filepath.Join(u.dir, "defs", fmt.Sprintf("f%d.py", i)), []byte(strings.Repeat(fmt.Sprintf("x%d = 1\n", i), 200)), 0o644)
	}
	want := u.commit("fetched")
	before, _ := filepath.Glob(filepath.Join(s.Dir, ".git", "objects", "pack", "*.idx"))
	if got, err := s.Sync(ctx); err != nil || got != want {
		t.Fatalf("sync: %s, %v", got, err)
	}
	after, _ := filepath.Glob(filepath.Join(s.Dir, ".git", "objects", "pack", "*.idx"))
	var idx string
	for _, a := range after {
		if !slices.Contains(before, a) {
			idx = a
		}
	}
	if idx == "" {
		t.Fatalf("the fetch wrote no pack (before %v, after %v)", before, after)
	}
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	pack := filepath.Join(killed.Dir, ".git", "objects", "pack")
	if err := os.WriteFile(filepath.Join(pack, filepath.Base(idx)), b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pack, "tmp_pack_123456"), bytes.Repeat([]byte("P"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := killed.Sync(ctx); err != nil || got != want {
		t.Fatalf("sync after a fetch killed while it wrote the pack's index: %s, %v; want %s", got, err, want)
	}
	if b, _ := os.ReadFile(filepath.Join(killed.DefinitionsDir(), "f7.py")); !strings.HasPrefix(string(b), "x7 = 1\n") {
		t.Errorf("f7.py is %q, want the head's", b)
	}
	if _, err := os.Stat(filepath.Join(pack, "tmp_pack_123456")); err == nil {
		t.Errorf("the killed fetch's temporary pack is still there")
	}
	want = u.commit("next")
	if got, err := killed.Sync(ctx); err != nil || got != want {
		t.Fatalf("the sync after: %s, %v; want %s", got, err, want)
	}
}
