// Package controller holds the pure parts of `trialform controller`: the
// git source the definitions are read from, the record of approved held
// changes, which experiments of a plan the policy holds, the retry
// backoff, and the Prometheus metrics. The reconcile loop itself lives in
// internal/command, which owns loading, the backend, locking and applying.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/sys/unix"

	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/internal/fsx"
)

// Credentials for the git source. At most one of Token and SSHKey.
type Credentials struct {
	// Token is an HTTPS access token (sent as the password of basic auth,
	// with User, default "git").
	Token string
	User  string
	// SSHKey is a PEM private key for ssh:// and scp-like URLs;
	// KnownHosts a known_hosts file (empty: the user's default).
	SSHKey     []byte
	KnownHosts string
}

// Source is a git repository branch whose Path holds the definitions.
type Source struct {
	URL    string
	Branch string
	// Path is the definitions' directory inside the repository ("" or ".":
	// its root).
	Path string
	// Dir is where the repository is cloned (created if missing).
	Dir   string
	Creds Credentials
	// Log, when set, is told of the checkout's upkeep (a repack) and of
	// its failures, which do not fail a sync.
	Log *slog.Logger
}

// MaxPacks is how many pack files the checkout may hold before Sync
// repacks it into one. go-git writes one pack per fetch and never packs
// them together (git's gc.auto does, go-git has none): a controller that
// followed 300 commits held 300 packs, and a fetch and checkout took
// 120 ms instead of 9 ms, growing with every commit for as long as it ran.
const MaxPacks = 16

// Lock takes the checkout's lock, a flock of the file Dir+".lock" beside
// it, waiting for it until ctx ends; unlock gives it back. Every process
// that syncs, checks out or reads a checkout holds it meanwhile: two
// controllers given one -work-dir (one standing by beside the holder of
// the claim) share one checkout. Without it one's fetch wrote a ref
// while the other read it ("ref file is empty"), one's clone met the
// other's half-made .git ("remote already exists") and removed it, and a
// checkout failed half-way ("EOF"), which pinned the old definitions.
func (s *Source) Lock(ctx context.Context) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(s.Dir), 0o755); err != nil {
		return nil, fmt.Errorf("lock the checkout: %w", err)
	}
	path := s.Dir + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the checkout: %w: %s is the controller's own lock file (it holds nothing): remove it, or give -work-dir a directory the controller may write", err, path)
	}
	if err := fsx.FlockWait(ctx, f, unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the checkout: %w", err)
	}
	return func() { f.Close() }, nil // closing gives the flock back
}

// DefinitionsDir is the directory of the definitions in the checkout.
func (s *Source) DefinitionsDir() string {
	return filepath.Join(s.Dir, filepath.FromSlash(s.Path))
}

// remote splits s.URL into the URL kept in the checkout's .git/config
// and the credentials written in it: an http(s) URL's user and password
// (https://oauth2:TOKEN@host/..., https://TOKEN@host/...) are sent as
// basic auth (unless a token is given: it wins) and never written to
// disk. The checkout is inside what a commit may read (a code_dir of
// "../.git" is): a token in .git/config went to every trial.
func (s *Source) remote() (string, *githttp.BasicAuth) {
	u, err := url.Parse(s.URL)
	if err != nil || u.User == nil || (u.Scheme != "https" && u.Scheme != "http") {
		return s.URL, nil
	}
	pw, _ := u.User.Password()
	auth := &githttp.BasicAuth{Username: u.User.Username(), Password: pw}
	u.User = nil
	return u.String(), auth
}

func (s *Source) auth() (transport.AuthMethod, error) {
	switch {
	case len(s.Creds.SSHKey) > 0:
		user := s.Creds.User
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeys(user, s.Creds.SSHKey, "")
		if err != nil {
			return nil, fmt.Errorf("the SSH key: %w", err)
		}
		if s.Creds.KnownHosts != "" {
			cb, err := gitssh.NewKnownHostsCallback(s.Creds.KnownHosts)
			if err != nil {
				return nil, fmt.Errorf("known hosts %s: %w", s.Creds.KnownHosts, err)
			}
			keys.HostKeyCallback = cb
		}
		return keys, nil
	case s.Creds.Token != "":
		user := s.Creds.User
		if user == "" {
			user = "git"
		}
		return &githttp.BasicAuth{Username: user, Password: s.Creds.Token}, nil
	}
	if _, a := s.remote(); a != nil {
		return a, nil
	}
	return nil, nil
}

// Sync clones the repository (first call) or fetches it, and checks out
// the branch's head (see checkout). It returns the commit checked out.
// Errors never include the credentials. Processes that share the
// checkout call it under Lock (it repairs what a killed fetch left).
func (s *Source) Sync(ctx context.Context) (string, error) {
	auth, err := s.auth()
	if err != nil {
		return "", err
	}
	branch := plumbing.NewBranchReferenceName(s.Branch)
	remoteRef := plumbing.NewRemoteReferenceName("origin", s.Branch)
	remoteURL, _ := s.remote()
	s.repairPacks()
	repo, err := git.PlainOpen(s.Dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			return "", err
		}
		repo, err = git.PlainCloneContext(ctx, s.Dir, false, &git.CloneOptions{
			URL: remoteURL, Auth: auth, ReferenceName: branch, SingleBranch: true,
		})
		if err != nil {
			// A failed clone leaves a partial .git: start over next time.
			os.RemoveAll(filepath.Join(s.Dir, ".git"))
			if errors.Is(err, git.NoMatchingRefSpecError{}) || errors.Is(err, transport.ErrEmptyRemoteRepository) {
				return "", s.noBranch(ctx, auth, false, err)
			}
			return "", fmt.Errorf("clone %s (branch %s): %w%s", remoteURL, s.Branch, trimmed{err}, s.accessHint(err, auth))
		}
	} else if err != nil {
		return "", fmt.Errorf("open the checkout %s: %w: the checkout is the controller's own clone of -repo; remove it, and the next pass clones the repository again", s.Dir, err)
	} else {
		if err := s.setRemote(repo, remoteURL); err != nil {
			return "", err
		}
		fetch := func() error {
			return repo.FetchContext(ctx, &git.FetchOptions{
				RemoteName: "origin", Auth: auth, Force: true,
				RefSpecs: []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("+%s:%s", branch, remoteRef))},
			})
		}
		err = fetch()
		if errors.Is(err, dotgit.ErrEmptyRefFile) && s.repairRefs() {
			err = fetch()
		}
		if errors.Is(err, git.NoMatchingRefSpecError{}) {
			return "", s.noBranch(ctx, auth, true, err)
		}
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return "", fmt.Errorf("fetch %s (branch %s): %w%s", remoteURL, s.Branch, trimmed{err}, s.accessHint(err, auth))
		}
	}
	ref, err := repo.Reference(remoteRef, true)
	if err != nil {
		return "", fmt.Errorf("branch %s of %s: %w", s.Branch, remoteURL, err)
	}
	// The local branch follows the head (it stays where the clone left
	// it otherwise, keeping what a force-push dropped reachable).
	if err := repo.Storer.SetReference(plumbing.NewHashReference(branch, ref.Hash())); err != nil {
		return "", fmt.Errorf("update the checkout's branch %s: %w", s.Branch, err)
	}
	if s.repack(repo) {
		// (go-git keeps the list of packs it opened: read them afresh)
		if repo, err = git.PlainOpen(s.Dir); err != nil {
			return "", fmt.Errorf("open the checkout %s: %w", s.Dir, err)
		}
	}
	err = s.checkout(repo, ref.Hash())
	if err != nil && s.repairIndex(err) {
		err = s.checkout(repo, ref.Hash())
	}
	if err != nil {
		// The repository answered: the commit is what is wrong (a tree
		// with one name twice, a path git refuses), like one whose
		// definitions do not validate.
		return ref.Hash().String(), fmt.Errorf("commit %s cannot be checked out: %w; its tree is not one git can write (a name that is both a link and a directory, a path it refuses): push a commit that fixes it", short(ref.Hash().String()), err)
	}
	if fi, err := os.Stat(s.DefinitionsDir()); err != nil || !fi.IsDir() {
		return ref.Hash().String(), fmt.Errorf("commit %s has no directory %q (-path)%s", short(ref.Hash().String()), s.Path, s.pathHint())
	}
	if !hasHCL(s.DefinitionsDir()) {
		path := s.Path
		if path == "" {
			path = "."
		}
		return ref.Hash().String(), fmt.Errorf("commit %s has no *.hcl file in -path %q%s", short(ref.Hash().String()), path, s.pathHint())
	}
	return ref.Hash().String(), nil
}

// repairRefs removes the checkout's empty ref files, which a process
// killed while go-git rewrote one leaves (go-git truncates a ref file,
// then writes it): each later fetch failed with "ref file is empty", and
// the controller stayed on its old definitions for good. The refs are the
// fetch's to write again. It reports whether it removed any.
func (s *Source) repairRefs() bool {
	var empty []string
	_ = filepath.WalkDir(filepath.Join(s.Dir, ".git", "refs"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			empty = append(empty, p)
		}
		return nil
	})
	removed := 0
	for _, p := range empty {
		if os.Remove(p) == nil {
			removed++
		}
	}
	if removed > 0 && s.Log != nil {
		s.Log.Warn("git checkout repaired: removed its empty ref files (left by a process stopped while writing them); fetching again", "dir", s.Dir, "refs", removed)
	}
	return removed > 0
}

// repairPacks removes what a process killed during a fetch or a repack
// leaves in the checkout's pack directory (the caller holds the lock: no
// fetch is under way): go-git's temporary pack files (tmp_pack_*, as big
// as what was fetched; a controller in a crash loop filled its volume with
// them), and a pack index with no pack beside it (go-git writes the index
// in place, then renames the pack next to it: one killed in between left
// a truncated index, which the next fetch of the same objects kept, and
// every later checkout failed with "object not found").
func (s *Source) repairPacks() {
	dir := filepath.Join(s.Dir, ".git", "objects", "pack")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		stray := strings.HasPrefix(name, "tmp_pack_")
		if base, ok := strings.CutSuffix(name, ".idx"); ok && strings.HasPrefix(name, "pack-") {
			if _, err := os.Lstat(filepath.Join(dir, base+".pack")); errors.Is(err, os.ErrNotExist) {
				stray = true
			}
		}
		if stray && !e.IsDir() && os.Remove(filepath.Join(dir, name)) == nil {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 && s.Log != nil {
		s.Log.Warn("git checkout repaired: removed what a fetch stopped half-way left (temporary packs, a pack index without its pack)", "dir", dir, "files", strings.Join(removed, " "))
	}
}

// repairIndex removes the checkout's index after a failed checkout, for
// the checkout to be tried again without it (go-git then compares the
// files themselves): a process killed while go-git rewrote the index
// (it truncates the file, then writes it) left one every later checkout
// failed to read ("unexpected EOF"), blamed on the commit's tree, and the
// controller stayed on its old definitions until the next commit. It
// reports whether there was an index to remove.
func (s *Source) repairIndex(cause error) bool {
	if os.Remove(filepath.Join(s.Dir, ".git", "index")) != nil {
		return false
	}
	if s.Log != nil {
		s.Log.Warn("git checkout failed; checking out again without its index", "dir", s.Dir, "error", cause.Error())
	}
	return true
}

// hasHCL reports whether dir holds a *.hcl file (what schema.Load reads).
func hasHCL(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".hcl") {
			return true
		}
	}
	return false
}

// pathHint says, for a -path that holds no definitions, which
// directories of the checkout do (a newcomer's -path left at "." for
// definitions under experiments/, or misspelled), or that none does.
func (s *Source) pathHint() string {
	const most = 5
	var dirs []string
	more := false
	_ = filepath.WalkDir(s.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if d.Name() == ".git" && p != s.Dir {
			return filepath.SkipDir
		}
		if hasHCL(p) {
			if len(dirs) == most {
				more = true
				return filepath.SkipAll
			}
			rel, _ := filepath.Rel(s.Dir, p)
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	switch {
	case len(dirs) == 0:
		return ": no directory of the commit holds a *.hcl file; push the definitions (a file such as main.hcl with an experiment block), or restart the controller with -repo naming the repository that holds them"
	case len(dirs) == 1:
		return fmt.Sprintf(": the *.hcl files of the commit are in %q; restart the controller with -path %s", dirs[0], dirs[0])
	default:
		list := strings.Join(dirs, ", ")
		if more {
			list += ", …"
		}
		return fmt.Sprintf(": directories of the commit with *.hcl files: %s; restart the controller with -path naming the one that holds the definitions", list)
	}
}

// trimmed is an error whose message loses the trailing newline a git
// server's answer carries ("authentication required: unauthorized\n"),
// or the colon of an empty one ("repository not found: ").
type trimmed struct{ err error }

func (t trimmed) Error() string {
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t.err.Error()), ":"))
}
func (t trimmed) Unwrap() error { return t.err }

// accessHint says what to do when the repository refused the controller
// (no credentials, or credentials it did not accept), or was not found.
func (s *Source) accessHint(err error, auth transport.AuthMethod) string {
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired) && auth == nil:
		return ": the repository asks for credentials and none were given: give an HTTPS access token with -git-token-file " +
			"(or $TRIALFORM_GIT_TOKEN), or use an ssh:// URL with -ssh-key-file"
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return ": the credentials were refused: check that the token (-git-token-file, $TRIALFORM_GIT_TOKEN, or the one in -repo) " +
			"or SSH key is valid, not expired, and may read this repository, and -git-user if the server wants a user name (default git)"
	case errors.Is(err, transport.ErrRepositoryNotFound):
		if h := s.localHint(); h != "" {
			return h
		}
		hint := ": check -repo"
		if auth == nil && strings.Contains(s.URL, "://") && !strings.HasPrefix(s.URL, "file://") {
			hint += " (a server may answer \"not found\" for a private repository asked without credentials: -git-token-file)"
		}
		return hint
	}
	if h := s.localHint(); strings.HasPrefix(h, ": it is a file") {
		// (go-git: "unknown error: fatal: invalid gitfile format")
		return h
	}
	return ""
}

// localHint says, for a -repo on this machine that is not a repository,
// what it is instead ("" when it is not there, or not local): a newcomer's
// working copy never committed, or the definitions' directory inside a
// repository, which -path names (both were "repository not found: check
// -repo").
func (s *Source) localHint() string {
	dir := s.URL
	if strings.Contains(dir, "://") {
		u, err := url.Parse(dir)
		if err != nil || u.Scheme != "file" {
			return ""
		}
		dir = u.Path
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return ""
	}
	if !fi.IsDir() {
		return ": it is a file: -repo names a git repository (its directory, or a URL)"
	}
	for up := filepath.Dir(dir); ; up = filepath.Dir(up) {
		if _, err := os.Stat(filepath.Join(up, ".git")); err == nil {
			rel, _ := filepath.Rel(up, dir)
			return fmt.Sprintf(": it is a directory inside the git repository %s: give -repo %s and -path %s (the definitions' directory in the repository)", up, up, filepath.ToSlash(rel))
		}
		if up == filepath.Dir(up) {
			break
		}
	}
	return ": it is a directory, not a git repository: commit the definitions in a git repository (git init; git add; git commit) and name it with -repo"
}

// setRemote makes the checkout's origin remoteURL: a checkout kept from
// an earlier run (a work directory on a volume) fetched from the URL it
// was cloned with, whatever -repo said since (another repository, or a
// token rotated in the URL), and kept that URL's token on disk.
func (s *Source) setRemote(repo *git.Repository, remoteURL string) error {
	cfg, err := repo.Config()
	if err != nil {
		return fmt.Errorf("read the checkout's git config in %s: %w (delete the checkout directory to clone afresh)", s.Dir, err)
	}
	rc, ok := cfg.Remotes["origin"]
	if ok && len(rc.URLs) == 1 && rc.URLs[0] == remoteURL {
		return nil
	}
	if !ok {
		rc = &gitconfig.RemoteConfig{Name: "origin"}
		cfg.Remotes["origin"] = rc
	}
	rc.URLs = []string{remoteURL}
	if len(rc.Fetch) == 0 {
		rc.Fetch = []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", s.Branch, s.Branch))}
	}
	if err := repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("set the checkout's remote in %s: %w (delete the checkout directory to clone afresh)", s.Dir, err)
	}
	return nil
}

// noBranch is the error of a repository that answers but has no branch
// s.Branch (go-git said only `couldn't find remote ref "refs/heads/main"`),
// with the branches it has: a newcomer's -branch left at main for a
// repository whose branch is master was told "deleted or renamed?: push
// it again", of a branch that never was. fetched: the checkout had
// followed the branch.
func (s *Source) noBranch(ctx context.Context, auth transport.AuthMethod, fetched bool, err error) error {
	u, _ := s.remote()
	gone := ""
	if fetched {
		gone = " (deleted or renamed?)"
	}
	names, lerr := s.branches(ctx, auth)
	switch {
	case lerr != nil:
		return fmt.Errorf("branch %s is not in %s%s: push it, or restart the controller with -branch naming the branch to follow (%w)", s.Branch, u, gone, err)
	case len(names) == 0:
		return fmt.Errorf("branch %s is not in %s%s, which has no branch: push the definitions to branch %s (%w)", s.Branch, u, gone, s.Branch, err)
	case len(names) == 1:
		return fmt.Errorf("branch %s is not in %s%s, whose only branch is %s: restart the controller with -branch %s, or push branch %s (%w)", s.Branch, u, gone, names[0], names[0], s.Branch, err)
	}
	list := names
	if len(list) > 10 {
		list = append(list[:10:10], "…")
	}
	restart := "restart the controller with -branch naming the branch to follow"
	if near := didyoumean.Suggest(s.Branch, names); near != "" {
		restart = fmt.Sprintf("restart the controller with -branch %s (the closest name) or another of them", near)
	}
	return fmt.Errorf("branch %s is not in %s%s, whose branches are %s: %s, or push branch %s (%w)", s.Branch, u, gone, strings.Join(list, ", "), restart, s.Branch, err)
}

// branches lists the repository's branches, sorted.
func (s *Source) branches(ctx context.Context, auth transport.AuthMethod) ([]string, error) {
	u, _ := s.remote()
	r := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{u}})
	refs, err := r.ListContext(ctx, &git.ListOptions{Auth: auth})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ref := range refs {
		if ref.Name().IsBranch() {
			names = append(names, ref.Name().Short())
		}
	}
	sort.Strings(names)
	return names, nil
}

// FirstParents returns up to n commits before commit, following first
// parents (the branch's own history, not what a merge brought in),
// newest first.
func (s *Source) FirstParents(commit string, n int) ([]string, error) {
	repo, err := git.PlainOpen(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("open the checkout %s: %w", s.Dir, err)
	}
	var out []string
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	for err == nil && len(out) < n && c.NumParents() > 0 {
		if c, err = c.Parent(0); err == nil {
			out = append(out, c.Hash.String())
		}
	}
	if err != nil {
		return out, fmt.Errorf("the history of %s: %w", short(commit), err)
	}
	return out, nil
}

// Checkout checks out commit, discarding any change in the checkout.
func (s *Source) Checkout(commit string) error {
	repo, err := git.PlainOpen(s.Dir)
	if err != nil {
		return fmt.Errorf("open the checkout %s: %w", s.Dir, err)
	}
	if err := s.checkout(repo, plumbing.NewHash(commit)); err != nil {
		return fmt.Errorf("check out %s: %w", short(commit), err)
	}
	return nil
}

// checkout checks out commit (HEAD detached at it): the commit's files
// are written again whatever was changed in them, and those the checkout
// held before (its index's, its HEAD commit's) that the commit does not
// are removed. Any other file stays: on the local platform trials run in
// the checkout (their code_dir), and go-git's forced checkout removed
// every file a commit does not hold at every pass, a data set a trial
// downloaded to ./data, its checkpoint, Python's __pycache__. Only a
// *.hcl file in the definitions' directory that is not the commit's is
// removed: the definitions read are the commit's.
func (s *Source) checkout(repo *git.Repository, commit plumbing.Hash) error {
	c, err := repo.CommitObject(commit)
	if err != nil {
		return err
	}
	tree, err := c.Tree()
	if err != nil {
		return err
	}
	files := map[string]bool{}
	addTree := func(t *object.Tree) error {
		return t.Files().ForEach(func(f *object.File) error {
			files[f.Name] = true
			return nil
		})
	}
	if err := addTree(tree); err != nil {
		return err
	}
	ours := make(map[string]bool, len(files))
	for f := range files {
		ours[f] = true
	}
	// (an index or a HEAD a crash damaged is read as far as it can be)
	if idx, err := repo.Storer.Index(); err == nil {
		for _, e := range idx.Entries {
			files[e.Name] = true
		}
	}
	if head, err := repo.Head(); err == nil && head.Hash() != commit {
		if hc, err := repo.CommitObject(head.Hash()); err == nil {
			if ht, err := hc.Tree(); err == nil {
				_ = addTree(ht)
			}
		}
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, commit)); err != nil {
		return err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	list := make([]string, 0, len(files))
	for f := range files {
		list = append(list, filepath.FromSlash(f))
	}
	sort.Strings(list)
	if err := wt.Reset(&git.ResetOptions{Commit: commit, Mode: git.HardReset, Files: list}); err != nil {
		return err
	}
	entries, err := os.ReadDir(s.DefinitionsDir())
	if err != nil {
		return nil // (Sync says the commit has no such directory)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".hcl") {
			continue
		}
		p := filepath.Join(s.DefinitionsDir(), e.Name())
		if rel, err := filepath.Rel(s.Dir, p); err == nil && !ours[filepath.ToSlash(rel)] {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("remove %s, which is not the commit's: %w", p, err)
			}
		}
	}
	return nil
}

// repack packs the checkout's objects into one pack once it holds more
// than MaxPacks: only what the refs reach is kept, so the objects of
// commits a force-push dropped go too. A failure is logged, not
// returned: the checkout still works, only slower.
// It reports whether it repacked.
func (s *Source) repack(repo *git.Repository) bool {
	pos, ok := repo.Storer.(storer.PackedObjectStorer)
	if !ok {
		return false
	}
	packs, err := pos.ObjectPacks()
	if err != nil || len(packs) <= MaxPacks {
		return false
	}
	if err := repo.RepackObjects(&git.RepackConfig{}); err != nil {
		if s.Log != nil {
			s.Log.Warn("repack the git checkout; it keeps working, each fetch a little slower, and the repack is tried again at the next pass (delete the checkout directory to start afresh)", "dir", s.Dir, "packs", len(packs), "error", err.Error())
		}
		return true
	}
	if s.Log != nil {
		s.Log.Info("git checkout repacked", "packs_before", len(packs))
	}
	return true
}

// CheckURL refuses a repository URL (one with "://") that cannot be
// parsed, without quoting the credentials it may hold. A password or
// token written in it with a character a URL reserves (# / ? % or a
// space) made such a URL: its credentials were not recognised as such,
// so the whole URL, password included, was logged at start and in every
// retry of the clone (go-git quoted it in "parse ...: invalid port"),
// which could never succeed.
func CheckURL(raw string) error {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil
	}
	_, err := url.Parse(raw)
	if err == nil {
		return nil
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		return fmt.Errorf("-repo %s://****@%s cannot be parsed as a URL (the part before @ is left out: it may hold a password): "+
			"percent-encode the characters a URL reserves in the user name and password (# as %%23, / as %%2F, ? as %%3F, %% as %%25, @ as %%40, a space as %%20), "+
			"or leave the token out of -repo and give it with -git-token-file or $TRIALFORM_GIT_TOKEN", scheme, rest[i+1:])
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("-repo %s cannot be parsed as a URL: %v", raw, err)
}

// Redact removes secret from text (for errors that echo a URL with a
// token in it).
func Redact(text string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, "****")
		}
	}
	return text
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
