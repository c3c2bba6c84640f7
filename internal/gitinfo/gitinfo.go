// Package gitinfo says which git commit a directory's files are at and
// whether they have uncommitted changes there: the provenance apply
// records on every trial it creates (the definitions' directory and the
// experiment's code_dir) and the note plan prints. It reads the
// repository with go-git; no git binary is needed.
package gitinfo

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
)

// Info is what Describe found. The zero Info means "not in a git
// repository".
type Info struct {
	// Root is the repository's working tree.
	Root string
	// Commit is HEAD's commit (40 hex digits); "" in a repository with no
	// commit yet.
	Commit string
	// Changed lists the files below the directory (relative to Root,
	// sorted) that differ from HEAD: modified, added, deleted, or new and
	// not ignored by .gitignore. Dirty is len(Changed) > 0.
	Changed []string
}

// Dirty reports whether the directory has uncommitted changes.
func (i Info) Dirty() bool { return len(i.Changed) > 0 }

// InRepo reports whether the directory is in a git repository.
func (i Info) InRepo() bool { return i.Root != "" }

// Short is the commit's first 12 digits, with "-dirty" when the
// directory has uncommitted changes ("" outside a repository).
func (i Info) Short() string {
	if !i.InRepo() {
		return ""
	}
	c := i.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if c == "" {
		c = "(no commit)"
	}
	if i.Dirty() {
		c += "-dirty"
	}
	return c
}

// Describe returns the commit of the repository dir is in and the
// uncommitted changes below dir, leaving out the paths below any of skip
// (trialform's own state directory, whether or not .gitignore names it).
// A dir outside any repository gives the zero Info and no error.
func Describe(dir string, skip ...string) (Info, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Info{}, err
	}
	repo, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return Info{}, nil
	}
	if err != nil {
		return Info{}, fmt.Errorf("read the git repository of %s: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return Info{}, nil
	}
	if err != nil {
		return Info{}, fmt.Errorf("read the git repository of %s: %w", dir, err)
	}
	info := Info{Root: wt.Filesystem.Root()}
	if head, err := repo.Head(); err == nil {
		info.Commit = head.Hash().String()
	}
	st, err := wt.Status()
	if err != nil {
		return Info{}, fmt.Errorf("git status of %s: %w", info.Root, err)
	}
	rel := func(p string) string {
		// Paths inside the tree, slash-separated, "" for the root itself.
		r, err := filepath.Rel(info.Root, p)
		if err != nil || r == "." {
			return ""
		}
		return filepath.ToSlash(r)
	}
	root := rel(abs)
	if strings.HasPrefix(root, "..") {
		// dir reached through a symbolic link: compare real paths.
		if ra, err := filepath.EvalSymlinks(abs); err == nil {
			if rr, err := filepath.EvalSymlinks(info.Root); err == nil {
				if r, err := filepath.Rel(rr, ra); err == nil && r != "." {
					root = filepath.ToSlash(r)
				} else {
					root = ""
				}
			}
		}
	}
	var skips []string
	for _, s := range skip {
		if a, err := filepath.Abs(s); err == nil {
			if r := rel(a); r != "" && !strings.HasPrefix(r, "..") {
				skips = append(skips, r)
			}
		}
	}
	for path, fs := range st {
		if fs.Staging == git.Unmodified && fs.Worktree == git.Unmodified {
			continue
		}
		if !below(path, root) {
			continue
		}
		skipped := false
		for _, s := range skips {
			if below(path, s) {
				skipped = true
				break
			}
		}
		if !skipped {
			info.Changed = append(info.Changed, path)
		}
	}
	sort.Strings(info.Changed)
	return info, nil
}

// below reports whether slash path p is dir or inside it ("" is the
// whole tree).
func below(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}
