package cloudjob

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The code dir reaches the shared storage with the same ignore rules as on
// every platform: an ignored file (data, checkpoints) is not copied.
func TestShipCodeHonoursIgnoreFiles(t *testing.T) {
	code := t.TempDir()
	files := map[string]string{
		"train.py":          "print('hi')\n",
		"pkg/util.py":       "x = 1\n",
		"data/big.bin":      "data",
		"model.ckpt":        "weights",
		"secret.txt":        "s3cret",
		"logs/keep.txt":     "k",
		"logs/x.txt":        "x",
		".trialformignore":  "data/\n*.ckpt\nlogs/**\n!logs/keep.txt\n",
		".nniignore":        "secret.txt\n",
		".git/HEAD":         "ref",
		".trialform/s.json": "{}",
	}
	for name, body := range files {
		p := filepath.Join(code, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The shared storage mounted inside the code dir is not copied into itself.
	l := layout{local: filepath.Join(code, "mnt"), container: "/mnt"}
	dest, err := l.shipCode(code, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dest, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := ".nniignore .trialform-complete .trialformignore logs/keep.txt pkg/util.py train.py"
	if strings.Join(got, " ") != want {
		t.Errorf("copied %s\nwant   %s", strings.Join(got, " "), want)
	}
	// A change to an ignored file ships nothing new.
	if err := os.WriteFile(filepath.Join(code, "data", "big.bin"), []byte("more data"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := l.shipCode(code, true)
	if err != nil || again != dest {
		t.Errorf("after an ignored file changed: %s %v, want %s", again, err, dest)
	}
}
