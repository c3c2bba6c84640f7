package codedir

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/trialform/trialform/providers"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGitignoreSemantics checks git's rules (gitignore(5)) on real paths.
// The two parsers this package replaced disagreed with git: remote's made
// "**" match one directory only ("a/**/b" kept a/x/y/b) and turned
// "logs/**" into "logs" anywhere (sub/logs/x went too, and "!logs/keep"
// could not re-include); kubernetes' matched "logs/**" on logs itself, so
// "!logs/keep" could not re-include either; both dropped the space of an
// escaped trailing "\ ".
func TestGitignoreSemantics(t *testing.T) {
	cases := []struct {
		rules string
		path  string
		dir   bool
		want  bool
	}{
		// comments and blank lines are no rules; "\#" is a literal '#'
		{"# train.py\n\n   \n", "train.py", false, false},
		{"\\#notes", "#notes", false, true},
		// a name matches at any depth
		{"*.ckpt", "model.ckpt", false, true},
		{"*.ckpt", "runs/a/model.ckpt", false, true},
		// trailing spaces are dropped unless escaped
		{"model.ckpt   ", "model.ckpt", false, true},
		{"odd\\ ", "odd ", false, true},
		{"odd\\ ", "odd", false, false},
		// "dir/" matches directories only
		{"data/", "data", true, true},
		{"data/", "data", false, false},
		{"data/", "sub/data", true, true},
		// a leading or middle '/' anchors to the code dir
		{"/data", "data", true, true},
		{"/data", "sub/data", true, false},
		{"logs/*.txt", "logs/a.txt", false, true},
		{"logs/*.txt", "sub/logs/a.txt", false, false},
		{"logs/*.txt", "logs/x/a.txt", false, false},
		// "**"
		{"**/cache", "cache", true, true},
		{"**/cache", "a/b/cache", true, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "x/a/y/b", false, false},
		{"logs/**", "logs/x", false, true},
		{"logs/**", "logs/a/b", false, true},
		{"logs/** ", "logs", true, false},
		{"logs/**", "logs", true, false},
		{"logs/**", "sub/logs", true, false},
		// negation: the last matching rule wins
		{"*.log\n!keep.log", "keep.log", false, false},
		{"*.log\n!keep.log", "sub/keep.log", false, false},
		{"!keep.log\n*.log", "keep.log", false, true},
		{"logs/**\n!logs/keep.txt", "logs/keep.txt", false, false},
		// unlike git (which keeps logs/keep/a.txt out: "logs/**" matches
		// it), a re-included directory re-includes what it holds (README)
		{"logs/**\n!logs/keep/", "logs/keep/a.txt", false, false},
		// never shipped
		{"", ".git", true, true},
		{"", "sub/.trialform", true, true},
		{"!.git", ".git", true, true},
		{"", "pkg/__pycache__", true, true},
	}
	for _, c := range cases {
		root := t.TempDir()
		write(t, root, map[string]string{".trialformignore": c.rules})
		m, err := ReadIgnore(root)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Ignored(c.path, c.dir); got != c.want {
			t.Errorf("rules %q: Ignored(%q, dir=%v) = %v, want %v", c.rules, c.path, c.dir, got, c.want)
		}
	}
}

// Both ignore files count; .trialformignore's lines come last and win.
func TestBothIgnoreFiles(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		".nniignore":       "secret.txt\n*.log\n",
		".trialformignore": "data/\n!keep.log\n",
	})
	m, err := ReadIgnore(root)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"secret.txt": true, "a.log": true, "keep.log": false, "train.py": false} {
		if got := m.Ignored(p, false); got != want {
			t.Errorf("Ignored(%s) = %v, want %v", p, got, want)
		}
	}
	if !m.Ignored("data", true) {
		t.Error("data/ not ignored")
	}
	if got := IgnoreFile(root); got != filepath.Join(root, ".trialformignore") {
		t.Errorf("IgnoreFile = %s", got)
	}
	os.Remove(filepath.Join(root, ".trialformignore"))
	if got := IgnoreFile(root); got != filepath.Join(root, ".nniignore") {
		t.Errorf("IgnoreFile without .trialformignore = %s", got)
	}
}

func rels(d *Dir) []string {
	var out []string
	for _, f := range d.Files {
		if !f.Mode.IsDir() {
			out = append(out, f.Rel)
		}
	}
	sort.Strings(out)
	return out
}

func TestScan(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"train.py": "x", "lib/util.py": "y", "data/a.bin": "d", "sub/data/b.bin": "d",
		"logs/x.log": "l", "keep.log": "k", "__pycache__/c.pyc": "c", ".git/HEAD": "h",
		".trialform/state.json": "{}", "deep/x/y.tmp": "t", "mnt/shared.bin": "s",
		"logs2/keep/a.txt": "a", "logs2/keep.txt": "k",
		".nniignore": "# comment\n/data/\n*.log\n!keep.log\n**/*.tmp\nsub/data\nlogs2/**\n!logs2/keep.txt\n",
	})
	if err := os.Symlink("train.py", filepath.Join(root, "link.py")); err != nil {
		t.Fatal(err)
	}
	d, err := Scan(root, filepath.Join(root, "mnt"))
	if err != nil {
		t.Fatal(err)
	}
	want := ".nniignore keep.log lib/util.py link.py logs2/keep.txt train.py"
	if got := strings.Join(rels(d), " "); got != want {
		t.Errorf("scanned %s, want %s", got, want)
	}
	for _, f := range d.Files {
		if f.Rel == "link.py" && f.Link != "train.py" {
			t.Errorf("link.py -> %q", f.Link)
		}
	}
	d1, err := d.Digest()
	if err != nil || len(d1) != 24 {
		t.Fatalf("digest %q %v", d1, err)
	}
	// An ignored file changes nothing; a shipped one changes the digest.
	write(t, root, map[string]string{"data/a.bin": "changed", "mnt/shared.bin": "changed"})
	if d2 := digest(t, root); d2 != d1 {
		t.Errorf("ignored file changed the digest")
	}
	write(t, root, map[string]string{"train.py": "z"})
	if d3 := digest(t, root); d3 == d1 {
		t.Errorf("shipped file left the digest as it was")
	}
}

func digest(t *testing.T, root string) string {
	t.Helper()
	d, err := Scan(root, filepath.Join(root, "mnt"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLimits(t *testing.T) {
	many := t.TempDir()
	for i := 0; i <= MaxFiles; i++ {
		if err := os.WriteFile(filepath.Join(many, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Scan(many)
	if err == nil || !providers.IsPermanent(err) || !strings.Contains(err.Error(), filepath.Join(many, ".trialformignore")) || !strings.Contains(err.Error(), "2000 files") {
		t.Errorf("2001 files: %v", err)
	}
	// Ignoring them fixes it; the message names the file the dir has.
	if err := os.WriteFile(filepath.Join(many, ".nniignore"), []byte("f1*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Scan(many); err != nil {
		t.Errorf("with .nniignore: %v", err)
	}
	os.WriteFile(filepath.Join(many, ".nniignore"), []byte("nothing\n"), 0o644)
	if _, err := Scan(many); err == nil || !strings.Contains(err.Error(), filepath.Join(many, ".nniignore")) {
		t.Errorf("with a .nniignore that ignores nothing: %v", err)
	}

	big := t.TempDir()
	f, err := os.Create(filepath.Join(big, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(MaxBytes + 1) // sparse
	f.Close()
	if _, err := Scan(big); err == nil || !providers.IsPermanent(err) || !strings.Contains(err.Error(), "300 MB") || !strings.Contains(err.Error(), ".trialformignore") {
		t.Errorf("301 MB: %v", err)
	}
}
