package schema

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestFormatDirGolden formats testdata/fmt and compares the diffs with
// testdata/fmt.golden (go test ./schema -run FormatDir -update rewrites it).
func TestFormatDirGolden(t *testing.T) {
	results, diags := FormatDir("testdata/fmt")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var b strings.Builder
	for _, r := range results {
		b.WriteString("== " + r.Name)
		if r.Changed {
			b.WriteString(" (changed)\n")
		} else {
			b.WriteString(" (unchanged)\n")
		}
		b.WriteString(UnifiedDiff(r.Name, r.Old, r.New))
	}
	got := b.String()
	const golden = "testdata/fmt.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("FormatDir diff differs from %s:\n%s", golden, got)
	}
	if len(results) != 3 || !results[0].Changed || results[1].Changed || !results[2].Changed {
		t.Errorf("Changed flags: %+v", results)
	}
	// Formatting is idempotent.
	for _, r := range results {
		if again := FormatSource(r.New); string(again) != string(r.New) {
			t.Errorf("%s: formatting twice changes it again", r.Name)
		}
	}
}

func TestFormatDirSyntaxError(t *testing.T) {
	dir := writeConfig(t, map[string]string{"bad.hcl": "locals {\n", "good.hcl": "locals {\n  a = 1\n}\n"})
	results, diags := FormatDir(dir)
	if !diags.HasErrors() || len(results) != 1 || results[0].Changed {
		t.Errorf("FormatDir = %+v, %v", results, diags)
	}
}

func TestUnifiedDiff(t *testing.T) {
	lines := func(n int, edit map[int]string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if s, ok := edit[i]; ok {
				b.WriteString(s)
				continue
			}
			b.WriteString("line" + strconv.Itoa(i) + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name, old, new, want string
	}{
		{"equal", "a\n", "a\n", ""},
		{"change one line", "a\nb\nc\n", "a\nB\nc\n",
			"--- old/f\n+++ new/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"insert into empty", "", "x\n",
			"--- old/f\n+++ new/f\n@@ -0,0 +1 @@\n+x\n"},
		{"delete all", "x\ny\n", "",
			"--- old/f\n+++ new/f\n@@ -1,2 +0,0 @@\n-x\n-y\n"},
		{"no newline at end", "a\nb", "a\nb\n",
			"--- old/f\n+++ new/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"two hunks", lines(20, nil), lines(20, map[int]string{2: "two\n", 18: "eighteen\n"}),
			"--- old/f\n+++ new/f\n" +
				"@@ -1,5 +1,5 @@\n line1\n-line2\n+two\n line3\n line4\n line5\n" +
				"@@ -15,6 +15,6 @@\n line15\n line16\n line17\n-line18\n+eighteen\n line19\n line20\n"},
		{"near changes share a hunk", lines(12, nil), lines(12, map[int]string{3: "3\n", 9: "9\n"}),
			"--- old/f\n+++ new/f\n@@ -1,12 +1,12 @@\n line1\n line2\n-line3\n+3\n line4\n line5\n line6\n line7\n line8\n-line9\n+9\n line10\n line11\n line12\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnifiedDiff("f", []byte(tt.old), []byte(tt.new)); got != tt.want {
				t.Errorf("UnifiedDiff =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
